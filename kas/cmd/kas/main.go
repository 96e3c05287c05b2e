// Command kas runs a real kube-apiserver backed by an embedded etcd on the
// loopback interface, for kcache's integration tests.
//
//	kas --kubeconfig-out FILE [--control-addr 127.0.0.1:0] [--data-dir DIR]
//	    [--log-file FILE] [timeouts] [-- extra kube-apiserver flags]
//
// When the API server answers /readyz, kas writes the kubeconfig and prints a
// single line on standard output:
//
//	KAS READY kubeconfig=FILE server=https://127.0.0.1:PORT control=http://127.0.0.1:PORT pid=PID took=DURATION
//
// It then serves until SIGTERM, SIGINT or SIGHUP, stops everything and
// removes its temporary files. A failed startup prints "KAS FAILED step=..."
// on standard error and exits with status 1. See kas/README.md for the
// control API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kcache/cache/kas/internal/apiserver"
	"github.com/kcache/cache/kas/internal/handoff"
	"github.com/kcache/cache/kas/internal/launcher"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == handoff.ChildCommand {
		if err := apiserver.Run(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kas apiserver:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run())
}

// Exit statuses of the launcher.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitStopped = 3 // interrupted during startup
)

func run() int {
	opts, err := launcher.ParseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(os.Stderr, "kas:", err)
		return exitUsage
	}

	// Signals are caught before anything starts, so that an early SIGTERM
	// still leads to a clean teardown instead of leaked temporary files.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)

	l, interrupted, err := startInterruptibly(opts, signals)
	switch {
	case err != nil && interrupted != nil:
		fmt.Fprintf(os.Stderr, "KAS STOPPED during startup: %v\n", interrupted)
		return exitStopped
	case err != nil:
		fmt.Fprintf(os.Stderr, "KAS FAILED %s log=%s\n", describe(err), logName(opts))
		return exitFailed
	case interrupted == nil:
		fmt.Printf("KAS READY kubeconfig=%s server=%s control=%s pid=%d took=%v\n",
			l.Kubeconfig(), l.Server(), l.ControlURL(), os.Getpid(), l.StartupTime().Round(time.Millisecond))
		<-signals
	}

	go func() {
		<-signals
		fmt.Fprintln(os.Stderr, "kas: second signal, killing the API server")
		l.Kill()
		os.Exit(exitFailed)
	}()
	if err := l.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kas: stop: %v\n", err)
		return exitFailed
	}
	if interrupted != nil {
		return exitStopped
	}
	return exitOK
}

// startInterruptibly starts the launcher; a signal during startup cancels
// it. interrupted is non-nil when a signal arrived, even if Start succeeded
// just before (the caller must then stop at once).
func startInterruptibly(opts launcher.Options, signals <-chan os.Signal) (l *launcher.Launcher, interrupted, err error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		select {
		case sig := <-signals:
			interrupted = fmt.Errorf("interrupted by %v", sig)
			cancel(interrupted)
		case <-ctx.Done():
		}
	}()
	l, err = launcher.Start(ctx, opts)
	cancel(nil)
	<-watcherDone // after this, interrupted is settled
	return l, interrupted, err
}

// describe renders a startup error as step="..." error="...".
func describe(err error) string {
	var stepErr *launcher.StepError
	if errors.As(err, &stepErr) {
		return fmt.Sprintf("step=%q after=%v error=%q", stepErr.Step, stepErr.Elapsed.Round(time.Millisecond), stepErr.Err.Error())
	}
	return fmt.Sprintf("step=%q error=%q", "setup", err.Error())
}

func logName(opts launcher.Options) string {
	if opts.LogFile == "" {
		return "stderr"
	}
	return opts.LogFile
}
