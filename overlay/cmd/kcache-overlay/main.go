// Command kcache-overlay writes a copy of the k8s.io/client-go module whose
// tools/cache package is kcache, so a controller switches every informer in
// its binary (generated factories, listers, controller-runtime) to kcache
// with one replace directive:
//
//	kcache-overlay -o third_party/client-go
//	go mod edit -replace k8s.io/client-go=./third_party/client-go
//
// From a kcache checkout, `make overlay DIR=third_party/client-go` runs it.
// Elsewhere, `go run github.com/kcache/cache/overlay/cmd/kcache-overlay@VERSION`
// takes kcache VERSION from the module cache.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/kcache/cache/overlay/internal/overlay"
)

func main() {
	var o overlay.Options
	flag.StringVar(&o.Out, "o", "", "directory to write the client-go module to (must not exist, be empty, or hold an overlay written earlier with -force)")
	flag.StringVar(&o.ClientGoVersion, "client-go-version", overlay.ReferenceClientGoVersion, "client-go release to copy: "+overlay.SupportedReleases()+"; tools/cache presents that release's API")
	flag.StringVar(&o.KcacheDir, "kcache", "", "kcache checkout to take tools/cache from (default: the version this tool was built at, else the checkout containing the current directory)")
	flag.StringVar(&o.KcacheVersion, "kcache-version", "", "kcache module version or revision to take from the module cache instead of -kcache")
	flag.BoolVar(&o.Force, "force", false, "replace a directory written earlier by kcache-overlay")
	flag.BoolVar(&o.Check, "check", true, "build the new tools/cache before replacing anything")
	quiet := flag.Bool("q", false, "print nothing but errors")
	toolchain := flag.Bool("toolchain", false, "print the Go toolchain (GOTOOLCHAIN) -client-go-version needs, empty for this one, and exit; the tool must run on it (make overlay does)")
	releases := flag.Bool("releases", false, "list the newest client-go release of each supported minor and of the next one (from the module proxy), say which the overlay was not checked against, and exit")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: kcache-overlay -o DIR [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *toolchain {
		fmt.Println(overlay.ToolchainFor(o.ClientGoVersion))
		return
	}
	if *releases {
		listReleases()
		return
	}
	if o.KcacheDir != "" && o.KcacheVersion != "" {
		fmt.Fprintln(os.Stderr, "kcache-overlay: -kcache and -kcache-version are exclusive")
		os.Exit(2)
	}
	if !*quiet {
		o.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "kcache-overlay: "+format+"\n", args...)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := overlay.Generate(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kcache-overlay: error:", err)
		os.Exit(1)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "kcache-overlay: k8s.io/client-go %s with tools/cache from kcache %s is in %s\n", res.Marker.ClientGo, res.Marker.Kcache, res.Dir)
		fmt.Fprintf(os.Stderr, "kcache-overlay: use it with: go mod edit -replace k8s.io/client-go=%s\n", res.Dir)
	}
}

// listReleases prints ListReleases' lines and a summary.
func listReleases() {
	list, err := overlay.ListReleases(context.Background(), overlay.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kcache-overlay: error:", err)
		os.Exit(1)
	}
	var unchecked []string
	for _, r := range list {
		fmt.Println(r)
		if !r.UpToDate() && r.Newest != "" {
			unchecked = append(unchecked, r.Newest)
		}
	}
	if len(unchecked) == 0 {
		fmt.Println("the overlay was checked against the newest release of every supported minor")
		return
	}
	fmt.Printf("not checked: %s\n", strings.Join(unchecked, " "))
}
