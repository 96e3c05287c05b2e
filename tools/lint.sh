#!/usr/bin/env bash
# lint.sh [ROOT]: the lint gate of `make lint` (and so of `make test`).
#
# For every Go module under ROOT (default: the repository), found by its
# go.mod, it runs
#   1. `go mod tidy -diff`: fails when go.mod or go.sum is not tidy;
#   2. staticcheck with its default checks over ./..., tests included:
#      fails on any finding.
# Modules are discovered, not listed, so a new nested module is checked the
# day it is added. Skipped: directories named testdata (fixtures), hidden
# directories such as kas/.cache and .git, bin/, and any module whose path is
# not under github.com/kcache/cache (a generated client-go overlay written
# into the tree, for example, is client-go's code, not ours).
#
# staticcheck is pinned by the tools module next to this script (its go.mod
# `tool` directive and go.sum) and built from the module proxy into
# ROOT/bin/staticcheck unless STATICCHECK names a binary.
#
# It prints one line per module with the seconds each step took, and exits
# non-zero if any module failed either step.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "${1:-$here/..}" && pwd)"
GO="${GO:-go}"
prefix="${LINT_MODULE_PREFIX:-github.com/kcache/cache}"

if [ -z "${STATICCHECK:-}" ]; then
	STATICCHECK="$here/../bin/staticcheck"
	if ! "$GO" build -C "$here" -o "$STATICCHECK" honnef.co/go/tools/cmd/staticcheck; then
		echo "lint: building staticcheck from $here/go.mod failed" >&2
		exit 2
	fi
fi

modules=()
while IFS= read -r gomod; do
	modules+=("$(dirname "$gomod")")
done < <(cd "$root" && find . \( -name testdata -o -name bin -o -name '.?*' \) -prune -o -name go.mod -type f -print | LC_ALL=C sort)

if [ "${#modules[@]}" -eq 0 ]; then
	echo "lint: no go.mod under $root" >&2
	exit 2
fi

failed=()
checked=0
total_start=$SECONDS
for dir in "${modules[@]}"; do
	mod="$(awk '$1 == "module" { gsub(/"/, "", $2); print $2; exit }' "$root/$dir/go.mod")"
	case "$mod" in
	"$prefix" | "$prefix"/*) ;;
	*)
		echo "lint: skip $dir (module ${mod:-?} is not under $prefix)"
		continue
		;;
	esac
	checked=$((checked + 1))

	start=$SECONDS
	if ! (cd "$root/$dir" && "$GO" mod tidy -diff); then
		echo "lint: FAIL $dir: go.mod/go.sum not tidy (run: cd $dir && go mod tidy)" >&2
		failed+=("$dir (tidy)")
	fi
	tidy_s=$((SECONDS - start))

	start=$SECONDS
	if (cd "$root/$dir" && "$STATICCHECK" ./...); then
		sc="ok"
	else
		echo "lint: FAIL $dir: staticcheck findings above" >&2
		failed+=("$dir (staticcheck)")
		sc="FAIL"
	fi
	echo "lint: $dir ($mod): tidy ${tidy_s}s, staticcheck ${sc} $((SECONDS - start))s"
done

echo "lint: modules checked: $checked, in $((SECONDS - total_start))s"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "lint: FAILED: ${failed[*]}" >&2
	exit 1
fi
