// Package apiserver runs one kube-apiserver inside the current process.
//
// It is the body of the launcher's child process: the launcher re-executes
// its own binary with handoff.ChildCommand as first argument, hands over the
// listening socket as an inherited file descriptor, and passes ordinary
// kube-apiserver flags. A restart of the API server is therefore a fresh
// process with fresh global state (feature gates, metrics registries, watch
// cache), exactly as in a real cluster, while the listening port never
// changes hands.
package apiserver

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/kcache/cache/kas/internal/handoff"
)

// Run parses args as kube-apiserver flags, serves on the inherited listener
// and returns once the server has shut down after SIGTERM or SIGINT. It must be
// called at most once per process: it installs the API server's signal handler.
func Run(args []string) error {
	opts := options.NewServerRunOptions()
	flags := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range opts.Flags().FlagSets {
		flags.AddFlagSet(set)
	}
	if err := flags.Parse(args); err != nil {
		return fmt.Errorf("parse kube-apiserver flags: %w", err)
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("parse kube-apiserver flags: unexpected arguments %q", flags.Args())
	}

	registry := opts.GenericServerRunOptions.ComponentGlobalsRegistry
	if err := registry.Set(); err != nil {
		return fmt.Errorf("apply feature gates and versions: %w", err)
	}
	gate := registry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, gate); err != nil {
		return fmt.Errorf("apply logging options: %w", err)
	}
	// The server's own loopback clients would otherwise log the deprecation
	// warnings the server sends to itself.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})

	listener, err := inheritedListener()
	if err != nil {
		return err
	}
	opts.SecureServing.Listener = listener
	opts.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port

	ctx := genericapiserver.SetupSignalContext()
	completed, err := opts.Complete(ctx)
	if err != nil {
		return fmt.Errorf("complete kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fmt.Errorf("validate kube-apiserver options: %w", errors.Join(errs...))
	}
	if mutable, ok := gate.(featuregate.MutableFeatureGate); ok {
		mutable.AddMetrics()
	}
	registry.AddMetrics()
	if err := app.Run(ctx, completed); err != nil {
		return fmt.Errorf("run kube-apiserver: %w", err)
	}
	return nil
}

// inheritedListener turns descriptor handoff.ListenerFD into a TCP listener.
func inheritedListener() (net.Listener, error) {
	file := os.NewFile(handoff.ListenerFD, "kas-apiserver-listener")
	if file == nil {
		return nil, fmt.Errorf("inherit listener: descriptor %d is not open", handoff.ListenerFD)
	}
	defer file.Close() // FileListener keeps its own duplicate
	listener, err := net.FileListener(file)
	if err != nil {
		return nil, fmt.Errorf("inherit listener from descriptor %d: %w", handoff.ListenerFD, err)
	}
	if _, ok := listener.Addr().(*net.TCPAddr); !ok {
		listener.Close()
		return nil, fmt.Errorf("inherit listener: descriptor %d is not a TCP socket", handoff.ListenerFD)
	}
	return listener, nil
}
