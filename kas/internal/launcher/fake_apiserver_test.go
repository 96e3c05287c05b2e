package launcher

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kcache/cache/kas/internal/handoff"
)

// The launcher tests run the test binary itself as the API server child: in
// that role it is a tiny HTTPS server that speaks just enough of the API
// server's protocol (readiness, the default namespace) to be supervised.

// fakeModeEnv selects the fake's behaviour; a child reads it when it starts.
const fakeModeEnv = "KAS_FAKE_APISERVER_MODE"

// Fake modes.
const (
	fakeReady    = ""         // ready at once, exits on SIGTERM
	fakeCrash    = "crash"    // exits with status 7 before serving
	fakeUnready  = "unready"  // serves, but /readyz never succeeds
	fakeStubborn = "stubborn" // ready, but ignores SIGTERM
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == handoff.ChildCommand {
		os.Exit(runFakeAPIServer(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func runFakeAPIServer(args []string) int {
	mode := os.Getenv(fakeModeEnv)
	if mode == fakeCrash {
		fmt.Fprintln(os.Stderr, "fake apiserver: crashing as asked")
		return 7
	}
	flags := fakeFlagValues(args)
	token, err := os.ReadFile(flags["--token-auth-file"])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake apiserver:", err)
		return 1
	}
	wantAuth := "Bearer " + strings.SplitN(string(token), ",", 2)[0]
	cert, err := tls.LoadX509KeyPair(flags["--tls-cert-file"], flags["--tls-private-key-file"])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake apiserver:", err)
		return 1
	}
	inner, err := net.FileListener(os.NewFile(handoff.ListenerFD, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake apiserver:", err)
		return 1
	}
	listener := tls.NewListener(inner, &tls.Config{Certificates: []tls.Certificate{cert}})

	stop := make(chan os.Signal, 1)
	if mode == fakeStubborn {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(stop, syscall.SIGTERM)
	}
	server := &http.Server{Handler: fakeHandler(mode, wantAuth)}
	go server.Serve(listener)
	<-stop
	server.Shutdown(context.Background())
	return 0
}

// fakeFlagValues collects --name=value arguments.
func fakeFlagValues(args []string) map[string]string {
	values := map[string]string{}
	for _, arg := range args {
		if name, value, ok := strings.Cut(arg, "="); ok {
			values[name] = value
		}
	}
	return values
}

func fakeHandler(mode, wantAuth string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if mode == fakeUnready {
			http.Error(w, "[+]ping ok\n[-]poststarthook/fake-hook failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /api/v1/namespaces/default", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"kind":"Namespace"}`)
	})
	// /pid tells tests which process answered.
	mux.HandleFunc("GET /pid", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strconv.Itoa(os.Getpid()))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != wantAuth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
