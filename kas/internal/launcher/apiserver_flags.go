package launcher

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// apiserverCompactionInterval is longer than any test run.
const apiserverCompactionInterval = "720h"

// apiserverFlags are the kube-apiserver flags of every child: loopback only,
// static credentials from the run directory, and settings for a control plane
// without controllers. extra comes last, so the user's flags win.
func apiserverFlags(l layout, etcdEndpoint string, port int, extra []string) []string {
	flags := []string{
		// Serving. The socket itself is inherited; the port is repeated for
		// the server's own bookkeeping (advertised endpoints, logs).
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + l.servingCert(),
		"--tls-private-key-file=" + l.servingKey(),
		"--cert-dir=" + filepath.Join(l.root, "apiserver-certs"),

		// Storage. Only the launcher compacts (POST /compact): the API server's
		// own five-minute compaction would make 410s appear at random. The
		// interval is pushed out of reach rather than set to 0, because 0 also
		// stops the API server from watching for compactions done by others,
		// and its watch cache would then keep serving compacted revisions.
		"--etcd-servers=" + etcdEndpoint,
		"--etcd-compaction-interval=" + apiserverCompactionInterval,

		// Authentication and authorization: one static token in the group
		// system:masters, every authenticated request allowed.
		"--token-auth-file=" + l.tokenFile(),
		"--anonymous-auth=false",
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kas.kcache.local",
		"--service-account-key-file=" + l.serviceAccountKey(),
		"--service-account-signing-key-file=" + l.serviceAccountKey(),

		// Nothing reconciles the kubernetes Service's endpoints either.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",

		// Shutdown: without this, SIGTERM makes the HTTP server wait for
		// every open connection to go idle for up to the request timeout
		// (60 s), and a client's open watch keeps its connection busy, so a
		// restart with informers running overran the stop grace period and
		// ended in SIGKILL. With it, the server drains the short requests
		// (answering new ones 429 with Retry-After, which clients retry) and
		// then gives the HTTP shutdown 2 s, which cuts the watches.
		"--shutdown-send-retry-after=true",

		// Streaming lists (watch with sendInitialEvents=true) for client-go's
		// WatchListClient. Beta and on by default in 1.36; stated so that a
		// change of default cannot silently turn the tests' code path off.
		"--feature-gates=WatchList=true",
	}
	// No controller manager runs, so no "default" ServiceAccount ever
	// appears; with ServiceAccount admission every Pod would be rejected.
	// A caller that creates its ServiceAccounts itself turns it back on with
	// --enable-admission-plugins naming it (bench/e2e.sh does).
	if !enablesAdmission(extra, "ServiceAccount") {
		flags = append(flags, "--disable-admission-plugins=ServiceAccount")
	}
	return append(flags, extra...)
}

// enablesAdmission reports whether the flags enable the admission plugin
// named plugin, in one --enable-admission-plugins list or another.
func enablesAdmission(flags []string, plugin string) bool {
	for i, f := range flags {
		value, ok := strings.CutPrefix(f, "--enable-admission-plugins=")
		if !ok && f == "--enable-admission-plugins" && i+1 < len(flags) {
			value, ok = flags[i+1], true
		}
		if ok && slices.Contains(strings.Split(value, ","), plugin) {
			return true
		}
	}
	return false
}
