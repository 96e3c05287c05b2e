#!/usr/bin/env bash
# minors.sh MODULE [VERSION...]: tests a module of kcache against the newer
# Kubernetes minors it supports, beside the oldest one its go.mod requires.
#
# MODULE is root (the library, github.com/kcache/cache) or clientgo (the
# bridge, github.com/kcache/cache/clientgo). Each VERSION is a release of
# the k8s.io staging modules; the defaults are the newest patch of each
# supported minor above the one the module requires (root: v0.36.6 v0.37.2;
# clientgo: v0.35.10 v0.36.6 v0.37.2). For each VERSION it
#   1. copies the module into a scratch directory (nested modules left out;
#      for clientgo, github.com/kcache/cache is replaced by this checkout);
#   2. `go get`s k8s.io/apimachinery and k8s.io/api at VERSION (clientgo:
#      k8s.io/client-go too) and tidies;
#   3. for root on v0.37 or later, adds testdata/minors/*.go.in as tests
#      (they import what only exists from v0.37 on, such as
#      k8s.io/apimachinery/pkg/sharding);
#   4. checks the copy kept VERSION (nothing raised it), then runs
#      `go vet ./...` and `go test -race -count=1 ./...`.
# It prints one line per version with the seconds it took and whether it
# passed, keeps the output of a failed version in the scratch directory
# (named in the message), and exits non-zero if any version failed.
#
# Environment: GO (default go), MINORS_TEST_RUN (a -run regexp to narrow
# the tests), MINORS_KEEP=1 to keep every scratch directory.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
GO="${GO:-go}"

usage() {
	echo "usage: $0 root|clientgo [VERSION...]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
module="$1"
shift
case "$module" in
root)
	src="$root"
	defaults=(v0.36.6 v0.37.2)
	staging=(k8s.io/apimachinery k8s.io/api)
	;;
clientgo)
	src="$root/clientgo"
	defaults=(v0.35.10 v0.36.6 v0.37.2)
	staging=(k8s.io/apimachinery k8s.io/api k8s.io/client-go)
	;;
*) usage ;;
esac
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${defaults[@]}")

# copy_module SRC DST copies the files of the module at SRC into DST,
# leaving out nested modules, hidden directories and bin/.
copy_module() {
	local from="$1" to="$2" skip=()
	mkdir -p "$to" || return 1
	while IFS= read -r gomod; do
		skip+=(--exclude="./$(dirname "$gomod")")
	done < <(cd "$from" && find . -mindepth 2 -name go.mod -type f -printf '%P\n')
	(cd "$from" && tar -cf - --exclude='./.?*' --exclude=./bin "${skip[@]}" .) | tar -xf - -C "$to"
}

# minor_of v0.X.Y prints X.
minor_of() {
	local rest="${1#v0.}"
	echo "${rest%%.*}"
}

# run_version VERSION DIR tests the module at VERSION in DIR; its output
# goes to DIR.log.
run_version() {
	local version="$1" dir="$2" mod
	copy_module "$src" "$dir" || return 1
	cd "$dir" || return 1
	if [ "$module" = clientgo ]; then
		"$GO" mod edit -replace "github.com/kcache/cache=$root" || return 1
	fi
	local gets=()
	for mod in "${staging[@]}"; do gets+=("$mod@$version"); done
	"$GO" get "${gets[@]}" || return 1
	if [ "$module" = root ] && [ "$(minor_of "$version")" -ge 37 ]; then
		for f in "$root"/testdata/minors/*.go.in; do
			[ -e "$f" ] && cp "$f" "$(basename "${f%.in}")"
		done
	fi
	"$GO" mod tidy || return 1
	for mod in "${staging[@]}"; do
		local got
		got="$("$GO" list -m -f '{{.Version}}' "$mod")" || return 1
		if [ "$got" != "$version" ]; then
			echo "minors: $mod is $got after go get $version and tidy" >&2
			return 1
		fi
	done
	"$GO" vet ./... || return 1
	local run=()
	[ -n "${MINORS_TEST_RUN:-}" ] && run=(-run "$MINORS_TEST_RUN")
	"$GO" test -race -count=1 "${run[@]}" ./...
}

failed=0
for version in "${versions[@]}"; do
	dir="$(mktemp -d "${TMPDIR:-/tmp}/kcache-minors-$module-$version.XXXXXX")"
	start=$SECONDS
	if (run_version "$version" "$dir/mod") >"$dir/log" 2>&1; then
		echo "minors: $module on $version: ok ($((SECONDS - start))s)"
		[ "${MINORS_KEEP:-}" = 1 ] || rm -rf "$dir"
	else
		echo "minors: $module on $version: FAILED ($((SECONDS - start))s); output in $dir/log:" >&2
		tail -n 40 "$dir/log" >&2
		failed=1
	fi
done
exit $failed
