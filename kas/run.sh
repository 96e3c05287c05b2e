#!/usr/bin/env bash
# Builds and runs the kas launcher (kube-apiserver + embedded etcd) in the
# background, for integration tests. See kas/README.md.
#
#   kas/run.sh build    build the launcher, print the binary's path
#   kas/run.sh start    build, start in the background, wait until ready,
#                       print the kubeconfig path
#   kas/run.sh stop     SIGTERM, wait for a clean exit (SIGKILL as last resort)
#   kas/run.sh status   say whether it runs
#   kas/run.sh env      print export lines (KUBECONFIG, KAS_CONTROL_URL, KAS_SERVER,
#                       KAS_APISERVER_ARGS)
#   kas/run.sh smoke    build, then run the smoke test against the binary
#
# Environment:
#   KAS_CACHE_DIR      where the binary and run files go (default: kas/.cache)
#   KAS_READY_TIMEOUT  seconds to wait for the ready line (default: 300)
#   KAS_STOP_TIMEOUT   seconds to wait after SIGTERM (default: 90)
#   KAS_APISERVER_ARGS extra kube-apiserver flags, space separated
#   KAS_ETCD_QUOTA_BYTES etcd's backend quota in bytes (default: etcd's own)
set -euo pipefail

KAS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${KAS_CACHE_DIR:-$KAS_DIR/.cache}
BIN=$CACHE/bin/kas
RUN=$CACHE/run
PIDFILE=$RUN/kas.pid
READY_TIMEOUT=${KAS_READY_TIMEOUT:-300}
STOP_TIMEOUT=${KAS_STOP_TIMEOUT:-90}

# /version reports the Kubernetes release instead of v0.0.0-master. Link-time
# only: changing these never recompiles anything.
K8S_VERSION=v1.36.4
LDFLAGS="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"

say() { echo "kas/run.sh: $*" >&2; }

build() {
  mkdir -p "$(dirname "$BIN")"
  local began=$SECONDS
  # No -race (a second, much slower server) and no -trimpath.
  (cd "$KAS_DIR" && go build -ldflags "$LDFLAGS" -o "$BIN" ./cmd/kas)
  say "built $BIN in $((SECONDS - began)) s"
}

# running_pid prints the launcher's pid if it is alive and really ours.
running_pid() {
  [[ -f $PIDFILE ]] || return 1
  local pid
  pid=$(<"$PIDFILE")
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--kubeconfig-out $RUN/kubeconfig" || return 1
  echo "$pid"
}

start() {
  if pid=$(running_pid); then
    say "already running (pid $pid); run 'kas/run.sh stop' first"
    return 1
  fi
  build
  rm -rf "$RUN"
  mkdir -p "$RUN/tmp"
  local extra=()
  if [[ -n ${KAS_APISERVER_ARGS:-} ]]; then
    read -r -a extra <<<"$KAS_APISERVER_ARGS"
    extra=(-- "${extra[@]}")
  fi
  # TMPDIR confines every temporary file of the launcher to $RUN/tmp, so a
  # forced stop can clean up after it.
  TMPDIR=$RUN/tmp "$BIN" --kubeconfig-out "$RUN/kubeconfig" --log-file "$RUN/kas.log" \
    --control-addr 127.0.0.1:0 ${KAS_ETCD_QUOTA_BYTES:+--etcd-quota-bytes "$KAS_ETCD_QUOTA_BYTES"} "${extra[@]}" >"$RUN/ready" 2>"$RUN/stderr" </dev/null &
  local pid=$!
  echo "$pid" >"$PIDFILE"
  local began=$SECONDS
  until grep -qs '^KAS READY ' "$RUN/ready"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "launcher exited before it was ready:"
      cat "$RUN/stderr" >&2
      say "last lines of $RUN/kas.log:"
      tail -n 30 "$RUN/kas.log" >&2 || true
      rm -f "$PIDFILE"
      return 1
    fi
    if ((SECONDS - began >= READY_TIMEOUT)); then
      say "not ready after ${READY_TIMEOUT} s; stopping it. Log: $RUN/kas.log"
      stop || true
      return 1
    fi
    sleep 0.2
  done
  local line
  line=$(grep '^KAS READY ' "$RUN/ready")
  field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
  {
    echo "export KUBECONFIG=$(field kubeconfig)"
    echo "export KAS_SERVER=$(field server)"
    echo "export KAS_CONTROL_URL=$(field control)"
    # Tests read how the server was started (e.g. --watch-cache=false).
    echo "export KAS_APISERVER_ARGS=$(printf '%q' "${KAS_APISERVER_ARGS:-}")"
  } >"$RUN/env"
  say "ready in $((SECONDS - began)) s (launcher: took=$(field took)); env file: $RUN/env"
  field kubeconfig
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    say "not running"
    rm -f "$PIDFILE"
    return 0
  fi
  kill -TERM "$pid"
  local began=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - began >= STOP_TIMEOUT)); then
      say "still running ${STOP_TIMEOUT} s after SIGTERM; killing it. Log: $RUN/kas.log"
      kill -KILL "$pid" 2>/dev/null || true
      # The API server child dies with it (parent-death signal); the run
      # directory stays behind, so remove it here.
      rm -rf "$RUN/tmp"/kas-run-*
      rm -f "$PIDFILE"
      return 1
    fi
    sleep 0.2
  done
  rm -f "$PIDFILE"
  say "stopped in $((SECONDS - began)) s"
}

status() {
  if pid=$(running_pid); then
    say "running (pid $pid)"
    cat "$RUN/ready"
  else
    say "not running"
    return 1
  fi
}

case ${1:-} in
  build) build && echo "$BIN" ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) cat "$RUN/env" ;;
  smoke) build && (cd "$KAS_DIR" && KAS_BINARY=$BIN go test -count=1 -v ./smoke) ;;
  *)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
