package main

import (
	"strings"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
)

// variant is one measured column: a library, and for kcache whether it
// shares equal parts of cached objects (NoShare; Tag and Quiet stay unset).
type variant = e2e.Variant

// allVariants, in the order they run and are reported.
var allVariants = []variant{
	{Lib: libclientgo.LibName},
	{Lib: libkcache.LibName},
	{Lib: libkcache.LibName, NoShare: true},
}

func variantNames() string { return e2e.VariantNames(allVariants) }

// selectVariants parses -only.
func selectVariants(only string) ([]variant, error) {
	return e2e.SelectVariants("scale-sim", allVariants, only)
}

// library returns the bound workload set named name.
func library(name string) (harness.Library, bool) {
	for _, lib := range []func() harness.Library{libclientgo.Library, libkcache.Library} {
		if l := lib(); l.Name == name {
			return l, true
		}
	}
	return harness.Library{}, false
}

// shareValuesEnv is kcache's switch for sharing equal parts of cached
// objects.
const shareValuesEnv = "KCACHE_SHARE_VALUES"

// childEnv is the environment of v's child: the parent's, with
// KCACHE_SHARE_VALUES=false for a -noshare variant and without any
// KCACHE_SHARE_VALUES otherwise, so that kcache runs as it does by default.
func childEnv(parent []string, v variant) []string {
	env := make([]string, 0, len(parent)+1)
	for _, kv := range parent {
		if !strings.HasPrefix(kv, shareValuesEnv+"=") {
			env = append(env, kv)
		}
	}
	if v.NoShare {
		env = append(env, shareValuesEnv+"=false")
	}
	return env
}
