package main

import (
	"fmt"
	"strings"

	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
)

// variant is one measured column: a library, and for kcache whether it
// shares equal parts of cached objects.
type variant struct {
	Lib string // libclientgo.LibName or libkcache.LibName
	// NoShare runs kcache with KCACHE_SHARE_VALUES=false: without sharing
	// equal parts of cached objects, in client-go's memory layout.
	NoShare bool
}

// Name is how the variant is named in flags and reports.
func (v variant) Name() string {
	if v.NoShare {
		return v.Lib + "-noshare"
	}
	return v.Lib
}

// allVariants, in the order they run and are reported.
var allVariants = []variant{
	{Lib: libclientgo.LibName},
	{Lib: libkcache.LibName},
	{Lib: libkcache.LibName, NoShare: true},
}

func variantNames() string {
	names := make([]string, len(allVariants))
	for k, v := range allVariants {
		names[k] = v.Name()
	}
	return strings.Join(names, ",")
}

// selectVariants parses -only.
func selectVariants(only string) ([]variant, error) {
	if only == "" {
		return allVariants, nil
	}
	var out []variant
	for name := range strings.SplitSeq(only, ",") {
		found := false
		for _, v := range allVariants {
			if v.Name() == strings.TrimSpace(name) {
				out, found = append(out, v), true
			}
		}
		if !found {
			return nil, fmt.Errorf("scale-sim: unknown variant %q (have %s)", name, variantNames())
		}
	}
	return out, nil
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
