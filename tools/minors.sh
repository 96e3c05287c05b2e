#!/usr/bin/env bash
# minors.sh MODULE [VERSION...]: tests a module of kcache against the newer
# Kubernetes minors it supports, beside the oldest one its go.mod requires.
#
# MODULE is root (the library, github.com/kcache/cache), clientgo (the
# bridge, github.com/kcache/cache/clientgo), membership or sharding (the
# sharding module also moves controller-runtime to the release of each
# client-go minor: v0.23.3 for v0.35, v0.24.1 for v0.36, v0.25.2 for v0.37;
# there is none for v0.38 yet). Each VERSION is a release of
# the k8s.io staging modules; the defaults are the newest patch of each
# supported minor above the one the module requires, and for the library
# the next minor's pre-release (root: v0.36.6 v0.37.2 v0.38.0-beta.0;
# clientgo and membership: v0.35.10 v0.36.6 v0.37.2 v0.38.0-beta.0;
# sharding: v0.35.10 v0.36.6 v0.37.2). A release of a minor
# from v0.38 on runs with
# GOTOOLCHAIN=go1.27.3 (releases.sh's toolchain_for). For each VERSION it
#   1. copies the module into a scratch directory (nested modules left out;
#      for a nested module, the library and the nested modules it replaces
#      with ../, beside it as in the repository);
#   2. `go get`s k8s.io/apimachinery and k8s.io/api at VERSION (nested
#      modules: k8s.io/client-go too; sharding: controller-runtime's
#      release for that minor) and tidies;
#   3. adds the module's testdata/minors/v0.N/*.go.in as tests for every
#      N up to VERSION's minor (they use what only exists from that minor
#      on: for root, ListOptions.ShardSelector from v0.36; for clientgo,
#      typed informers from v0.37 and SetShardSelector and
#      k8s.io/apimachinery/pkg/sharding from v0.38);
#   4. checks the copy kept VERSION (nothing raised it), then runs
#      `go vet ./...` and `go test -race -count=1 ./...`;
#   5. for clientgo and the first VERSION (the oldest minor by default),
#      builds a small program that requires client-go VERSION and imports
#      the bridge, and fails unless `go mod tidy` left client-go, api and
#      apimachinery at VERSION.
# It prints one line per version with the seconds it took and whether it
# passed, keeps the output of a failed version in the scratch directory
# (named in the message), and exits non-zero if any version failed.
#
# Environment: GO (default go), MINORS_TEST_RUN (a -run regexp to narrow
# the tests), MINORS_KEEP=1 to keep every scratch directory, MINORS_JOBS
# for how many versions run at once (default 4).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
GO="${GO:-go}"
# shellcheck source=releases.sh
. "$here/releases.sh"

usage() {
	echo "usage: $0 root|clientgo|membership|sharding [VERSION...]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
module="$1"
shift
case "$module" in
root)
	src="$root"
	defaults=(v0.36.6 v0.37.2 v0.38.0-beta.0)
	staging=(k8s.io/apimachinery k8s.io/api)
	;;
clientgo | membership)
	src="$root/$module"
	defaults=(v0.35.10 v0.36.6 v0.37.2 v0.38.0-beta.0)
	staging=(k8s.io/apimachinery k8s.io/api k8s.io/client-go)
	;;
sharding)
	src="$root/sharding"
	defaults=(v0.35.10 v0.36.6 v0.37.2)
	staging=(k8s.io/apimachinery k8s.io/api k8s.io/client-go)
	;;
*) usage ;;
esac

# controller_runtime_for VERSION prints the controller-runtime release
# built on client-go VERSION's minor, or nothing when there is none.
controller_runtime_for() {
	case "$(minor_of "$1")" in
	35) echo v0.23.3 ;;
	36) echo v0.24.1 ;;
	37) echo v0.25.2 ;;
	esac
}

# neighbours are the nested modules a module's go.mod replaces with
# ../NAME, copied beside it in the scratch directory.
neighbours() {
	case "$module" in
	sharding) echo clientgo membership ;;
	esac
}
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

# add_minor_tests VERSION copies, into the current directory, the tests
# kept in the module's testdata/minors/v0.N/*.go.in for every N up to
# VERSION's minor: tests of what exists only from that minor on.
add_minor_tests() {
	local minor d f
	minor="$(minor_of "$1")"
	for d in "$src"/testdata/minors/v0.*/; do
		[ -d "$d" ] || continue
		[ "$(minor_of "$(basename "$d")")" -le "$minor" ] || continue
		for f in "$d"*.go.in; do
			[ -e "$f" ] && { cp "$f" "$(basename "${f%.in}")" || return 1; }
		done
	done
	return 0
}

# run_version VERSION DIR tests the module at VERSION in DIR; its output
# goes to DIR.log.
run_version() {
	local version="$1" dir="$2" mod toolchain
	toolchain="$(toolchain_for "$version")"
	[ -n "$toolchain" ] && export GOTOOLCHAIN="$toolchain"
	copy_module "$root" "$dir" || return 1
	cd "$dir" || return 1
	if [ "$module" != root ]; then
		# The library beside the module, as in the repository: the
		# module's go.mod replaces it with ../, and the library names
		# reflectors after the first caller outside itself and the bridge,
		# which it recognises by that layout (or by the module cache's).
		local n
		for n in $(neighbours); do
			copy_module "$root/$n" "$dir/$n" || return 1
		done
		copy_module "$src" "$dir/$module" && cd "$dir/$module" || return 1
	fi
	local gets=()
	for mod in "${staging[@]}"; do gets+=("$mod@$version"); done
	if [ "$module" = sharding ]; then
		local cr
		cr="$(controller_runtime_for "$version")"
		if [ -z "$cr" ]; then
			echo "minors: no controller-runtime release is known for client-go $version" >&2
			return 1
		fi
		gets+=("sigs.k8s.io/controller-runtime@$cr")
	fi
	pin_proxy_gaps || return 1
	"$GO" get "${gets[@]}" || return 1
	add_minor_tests "$version" || return 1
	tidy "$version" || return 1
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

# check_program_stays VERSION DIR writes into DIR a program on client-go
# VERSION that adopts the bridge (controller-runtime's option and the
# generated factory), tidies it, and fails unless client-go, api and
# apimachinery are still at VERSION: the bridge must not raise a program's
# Kubernetes minor. kcache and the bridge come from this checkout (replace).
check_program_stays() {
	local version="$1" dir="$2" mod got
	mkdir -p "$dir" && cd "$dir" || return 1
	cat >go.mod <<-EOF
	module example.com/adopter

	go 1.26.0

	require (
		k8s.io/api $version
		k8s.io/apimachinery $version
		k8s.io/client-go $version
		github.com/kcache/cache/clientgo v0.0.0
	)

	replace (
		github.com/kcache/cache => $root
		github.com/kcache/cache/clientgo => $root/clientgo
	)
	EOF
	cat >main.go <<-'EOF'
	// Command adopter is a program on an older client-go that runs its
	// informers on kcache through the bridge.
	package main

	import (
		"github.com/kcache/cache/clientgo"
		"k8s.io/client-go/kubernetes/fake"
	)

	func main() {
		f := clientgo.NewSharedInformerFactory(fake.NewClientset(), 0)
		_ = f.Core().V1().Pods().Lister()
	}
	EOF
	pin_proxy_gaps && tidy "$version" || return 1
	for mod in "${staging[@]}"; do
		got="$("$GO" list -m -f '{{.Version}}' "$mod")" || return 1
		if [ "$got" != "$version" ]; then
			echo "minors: a program on $version that imports the bridge gets $mod $got" >&2
			return 1
		fi
	done
	"$GO" vet ./... && "$GO" build -o /dev/null .
}

# test_version VERSION DIR runs one version in DIR (run_version, and for
# the bridge's oldest minor check_program_stays) with its output in
# DIR/log, and writes into DIR/result its line: ok or FAILED, with seconds.
test_version() {
	local version="$1" dir="$2" start=$SECONDS program=false
	[ "$module" = clientgo ] && [ "$version" = "${versions[0]}" ] && program=true
	if (run_version "$version" "$dir/mod" && if $program; then check_program_stays "$version" "$dir/program"; fi) >"$dir/log" 2>&1; then
		echo "ok ($((SECONDS - start))s)" >"$dir/result"
	else
		echo "FAILED ($((SECONDS - start))s)" >"$dir/result"
	fi
}

# The versions run MINORS_JOBS at a time (default 4, every default
# version at once): each one's tests spend much of their time waiting (for
# deliveries, timeouts, a relist), so even on two cores they end sooner
# together than one after another (make test's closing table gives each
# target's time and CPU time). Their lines come in the order of the
# versions, once all have ended.
jobs_max="${MINORS_JOBS:-4}"
case "$jobs_max" in '' | *[!0-9]* | 0) echo "minors: MINORS_JOBS=$jobs_max: want a positive number" >&2; exit 2 ;; esac
dirs=()
running=0
for version in "${versions[@]}"; do
	dir="$(mktemp -d "${TMPDIR:-/tmp}/kcache-minors-$module-$version.XXXXXX")"
	dirs+=("$dir")
	if [ "$running" -ge "$jobs_max" ]; then
		wait -n
		running=$((running - 1))
	fi
	test_version "$version" "$dir" &
	running=$((running + 1))
done
wait

failed=0
for i in "${!versions[@]}"; do
	version="${versions[$i]}" dir="${dirs[$i]}"
	result="$(cat "$dir/result" 2>/dev/null || echo "FAILED (no result)")"
	case "$result" in
	ok*)
		echo "minors: $module on $version: $result"
		[ "${MINORS_KEEP:-}" = 1 ] || rm -rf "$dir"
		;;
	*)
		echo "minors: $module on $version: $result; output in $dir/log:" >&2
		# A failing test's report is usually far above the log's end, under
		# other tests' klog lines: show it first.
		grep -a -A 30 -- '--- FAIL' "$dir/log" | head -n 120 >&2
		tail -n 40 "$dir/log" >&2
		failed=1
		;;
	esac
done
exit $failed
