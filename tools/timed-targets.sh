#!/usr/bin/env bash
# Runs make targets one after another, as `make test` lists them, and says
# how long each took and how long the run has taken so far, so that a run
# stopped from outside (CI's time limit) still shows where its time went.
# Beside each target's time it gives the CPU time (user and system) of
# the processes it ran and waited for: a target whose CPU time is well
# below twice its time on two cores mostly waits.
# The first failing target ends the run with its exit status; a table of
# every target's time closes a run that passed.
#
#   tools/timed-targets.sh fmt-check vet unit ...
#   tools/timed-targets.sh overlay-test OVERLAY_E2E_VERSIONS=
#
# An argument with "=" is a make variable, passed to every target's make.
# MAKE names the make to call (the Makefile passes its own); TIMED_LABEL
# starts every line (default "make test").
set -uo pipefail

MAKE=${MAKE:-make}
label=${TIMED_LABEL:-make test}
start=$SECONDS
rows=()
vars=()
scratch=$(mktemp)
trap 'rm -f "$scratch"' EXIT

# children_cpu sets cpu_now to the CPU seconds (user and system) of the
# processes this shell ran and waited for so far: the second line of the
# builtin times, which must run in this shell (in a command substitution's
# subshell it would count that subshell's children).
children_cpu() {
  times >"$scratch"
  cpu_now=$(awk 'NR == 2 {
    n = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] }
    printf "%d", n
  }' "$scratch")
}
targets=()
for arg in "$@"; do
  case $arg in
    *=*) vars+=("$arg") ;;
    *) targets+=("$arg") ;;
  esac
done
for target in "${targets[@]}"; do
  began=$SECONDS
  children_cpu
  cpu_began=$cpu_now
  echo "$label: $target: starting at $((began - start)) s" >&2
  "$MAKE" --no-print-directory "$target" ${vars[@]+"${vars[@]}"}
  rc=$?
  took=$((SECONDS - began))
  children_cpu
  cpu=$((cpu_now - cpu_began))
  if ((rc != 0)); then
    echo "$label: $target: FAILED (exit $rc) after $took s; $((SECONDS - start)) s in all" >&2
    exit "$rc"
  fi
  echo "$label: $target: passed in $took s (CPU $cpu s); $((SECONDS - start)) s in all" >&2
  rows+=("$(printf '%-22s %6d s   CPU %6d s' "$target" "$took" "$cpu")")
done
echo "$label: every target passed in $((SECONDS - start)) s:" >&2
printf '  %s\n' "${rows[@]}" >&2
