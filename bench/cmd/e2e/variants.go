package main

import (
	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/libclientgo"
	"github.com/kcache/cache/bench/internal/libkcache"
)

// variant is one measured column (internal/e2e, shared with cmd/scale,
// which reads the results).
type variant = e2e.Variant

// fieldsV1String is apimachinery's tag that interns managedFields'
// FieldsV1 through the unique package.
const fieldsV1String = "fieldsv1string"

// allVariants, in the order they run and are reported.
var allVariants = []variant{
	{Lib: libclientgo.LibName},
	{Lib: libkcache.LibName},
	{Lib: libkcache.LibName, NoShare: true},
	{Lib: libkcache.LibName, Quiet: true},
	{Lib: libclientgo.LibName, Tag: fieldsV1String},
	{Lib: libkcache.LibName, Tag: fieldsV1String},
}

func variantNames() string { return e2e.VariantNames(allVariants) }

// selectVariants parses -only.
func selectVariants(only string) ([]variant, error) {
	return e2e.SelectVariants("e2e", allVariants, only)
}

// libraries are the bound workload sets a child can run (a test adds a
// fake one).
var libraries = []func() harness.Library{libclientgo.Library, libkcache.Library}

// library returns the bound workload set named name.
func library(name string) (harness.Library, bool) {
	for _, lib := range libraries {
		if l := lib(); l.Name == name {
			return l, true
		}
	}
	return harness.Library{}, false
}
