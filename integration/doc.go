// Package integration holds kcache's end-to-end tests: informers, reflectors
// and list/watch helpers from github.com/kcache/cache run against a real
// kube-apiserver and etcd started by kas (see ../kas/README.md), next to
// client-go's own informer for comparison. README.md lists the scenarios.
//
// The tests need a running server: `make integration` at the repository root
// (integration/run.sh) starts one, runs them, and stops it. By hand:
//
//	kas/run.sh start && . kas/.cache/run/env
//	(cd integration && go test -race -count=1 -v .)
//	kas/run.sh stop
//
// Without KUBECONFIG and KAS_SERVER in the environment every test skips, so
// `go test ./...` in this module is harmless on a machine without a server.
package integration
