package launcher

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// ParseFlags parses the kas command line (without the program name) into
// Options. Arguments after "--" become APIServerFlags. It returns
// flag.ErrHelp after printing usage for -h; usage and errors go to out.
func ParseFlags(args []string, out io.Writer) (Options, error) {
	var opts Options
	fs := flag.NewFlagSet("kas", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: kas --kubeconfig-out FILE [flags] [-- kube-apiserver flags]")
		fs.PrintDefaults()
	}
	fs.StringVar(&opts.KubeconfigOut, "kubeconfig-out", "", "write the kubeconfig to this `file` (required; removed on exit)")
	fs.StringVar(&opts.ControlAddr, "control-addr", "127.0.0.1:0", "loopback `host:port` of the control API (port 0: any free port)")
	fs.StringVar(&opts.DataDir, "data-dir", "", "etcd data `directory` to use and keep (default: a temporary one, removed on exit)")
	fs.StringVar(&opts.LogFile, "log-file", "", "append all logs (kas, etcd, kube-apiserver) to this `file` (default: stderr)")
	fs.DurationVar(&opts.EtcdTimeout, "etcd-timeout", time.Minute, "limit for etcd to start")
	fs.DurationVar(&opts.ReadyTimeout, "ready-timeout", 3*time.Minute, "limit for each kube-apiserver start, up to ready")
	fs.DurationVar(&opts.StopTimeout, "stop-timeout", 30*time.Second, "limit for a graceful stop of kube-apiserver, and of etcd")
	fs.Int64Var(&opts.EtcdQuotaBytes, "etcd-quota-bytes", 0, "etcd's backend quota in `bytes` (0: etcd's default); a large cluster raises it")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if opts.EtcdQuotaBytes < 0 {
		return Options{}, fmt.Errorf("--etcd-quota-bytes %d: must not be negative", opts.EtcdQuotaBytes)
	}
	if opts.KubeconfigOut == "" {
		return Options{}, errors.New("--kubeconfig-out is required")
	}
	// flag stops at "--" and drops it; anything left before a "--" is a
	// stray argument.
	if rest := fs.Args(); len(rest) > 0 {
		at := len(args) - len(rest)
		if at == 0 || args[at-1] != "--" {
			return Options{}, fmt.Errorf("unexpected argument %q (kube-apiserver flags go after --)", rest[0])
		}
		opts.APIServerFlags = rest
	}
	return opts, nil
}
