#!/usr/bin/env bash
# Runs make targets one after another, as `make test` lists them, and says
# how long each took and how long the run has taken so far, so that a run
# stopped from outside (CI's time limit) still shows where its time went.
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
targets=()
for arg in "$@"; do
  case $arg in
    *=*) vars+=("$arg") ;;
    *) targets+=("$arg") ;;
  esac
done
for target in "${targets[@]}"; do
  began=$SECONDS
  echo "$label: $target: starting at $((began - start)) s" >&2
  "$MAKE" --no-print-directory "$target" ${vars[@]+"${vars[@]}"}
  rc=$?
  took=$((SECONDS - began))
  if ((rc != 0)); then
    echo "$label: $target: FAILED (exit $rc) after $took s; $((SECONDS - start)) s in all" >&2
    exit "$rc"
  fi
  echo "$label: $target: passed in $took s; $((SECONDS - start)) s in all" >&2
  rows+=("$(printf '%-22s %6d s' "$target" "$took")")
done
echo "$label: every target passed in $((SECONDS - start)) s:" >&2
printf '  %s\n' "${rows[@]}" >&2
