# releases.sh: shell functions for building a kcache module against a
# release of the Kubernetes staging modules (k8s.io/client-go, api,
# apimachinery), sourced by tools/minors.sh and integration/run.sh. The
# caller sets GO (the go command).

# minor_of v0.X.Y prints X.
minor_of() {
	local rest="${1#v0.}"
	echo "${rest%%.*}"
}

# toolchain_for VERSION prints the Go toolchain a release needs when it is
# newer than the machine's: the k8s.io staging modules of v0.38 require Go
# 1.27, which the go command fetches from the module proxy (GOTOOLCHAIN).
toolchain_for() {
	[ "$(minor_of "$1")" -ge 38 ] && echo go1.27.3
	return 0
}

# proxyGaps are module versions a supported release requires that the
# module proxy does not serve (it answers 403 "not available"; checked
# 2026-11-28), each with the newest version it serves: MODULE NEEDED SERVED.
# Each becomes a replace of that exact version, which changes nothing for
# releases that do not require it. apimachinery v0.38.0-beta.0 requires
# structured-merge-diff/v7 v7.0.1.
proxyGaps=(
	"sigs.k8s.io/structured-merge-diff/v7 v7.0.1 v7.0.0"
)

# pin_proxy_gaps replaces, in the module of the current directory, every
# module version of proxyGaps with the version the proxy serves.
pin_proxy_gaps() {
	local gap m needed served
	for gap in "${proxyGaps[@]}"; do
		read -r m needed served <<<"$gap"
		"$GO" mod edit -replace="$m@$needed=$m@$served" || return 1
	done
}

# tidy VERSION tidies the module of the current directory, moved to that
# release. On a release that needs a newer toolchain, the tests of the
# staging modules import a module the proxy does not serve at that release
# (k8s.io/ktesting v0.38.0-beta.0), so tidy goes on past that error (-e):
# it only concerns their tests, which nothing here builds.
tidy() {
	if [ -n "$(toolchain_for "$1")" ]; then
		"$GO" mod tidy -e
	else
		"$GO" mod tidy
	fi
}
