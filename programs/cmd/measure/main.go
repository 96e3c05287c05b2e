// Command measure runs a program with the Go runtime's GC trace on and
// records what it cost: wall time, CPU (user + system), peak RSS and every
// collection's heap figures. Its stderr goes on to -log; SIGTERM and SIGINT
// are passed on to it. When it ends, measure writes -out (runstats.Process
// as JSON) and exits with its exit code.
//
//	measure -out run.json -log run.log -- descheduler --dry-run ...
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/kcache/cache/programs/internal/runstats"
)

func main() {
	out := flag.String("out", "", "where to write the figures (JSON)")
	logPath := flag.String("log", "", "where the program's stdout and stderr go")
	flag.Parse()
	if *out == "" || *logPath == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: measure -out FILE -log FILE -- COMMAND [ARG...]")
		os.Exit(2)
	}
	p, err := run(flag.Args(), *logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "measure: %v\n", err)
		os.Exit(1)
	}
	if err := runstats.Write(*out, p); err != nil {
		fmt.Fprintf(os.Stderr, "measure: %v\n", err)
		os.Exit(1)
	}
	os.Exit(p.ExitCode)
}

// run starts args with gctrace on, copies its output to logPath while
// reading the trace, and returns the figures once it has ended.
func run(args []string, logPath string) (runstats.Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return runstats.Process{}, fmt.Errorf("creating the log: %w", err)
	}
	defer logFile.Close()
	pr, pw := io.Pipe()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runstats.Process{}, fmt.Errorf("starting %s: %w", args[0], err)
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s)
		}
	}()
	gcs := make(chan []runstats.GC, 1)
	go func() { gcs <- readTrace(pr, logFile, start) }()
	waitErr := cmd.Wait()
	pw.Close()
	signal.Stop(signals)
	p := runstats.Process{Command: args, Wall: time.Since(start), GCs: <-gcs}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return p, fmt.Errorf("waiting for %s: %w", args[0], waitErr)
	}
	st := cmd.ProcessState
	p.ExitCode = st.ExitCode()
	p.CPU = st.UserTime() + st.SystemTime()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		p.MaxRSSMB = float64(ru.Maxrss) / 1024 // Linux reports KiB
	}
	return p, nil
}

// readTrace copies r to log line by line and collects the GC trace lines.
func readTrace(r io.Reader, log io.Writer, start time.Time) []runstats.GC {
	var gcs []runstats.GC
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if gc, ok := runstats.ParseGC(line, time.Since(start)); ok {
			gcs = append(gcs, gc)
		}
	}
	_, _ = io.Copy(io.Discard, r) // a line too long ends the scan; keep the child unblocked
	return gcs
}
