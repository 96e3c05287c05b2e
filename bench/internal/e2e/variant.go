package e2e

import (
	"fmt"
	"strings"
)

// Variant is one measured column of the end-to-end benchmark: a library,
// built with or without a tag, with kcache's switches as it names them.
type Variant struct {
	Lib string // the library's LibName: "client-go" or "kcache"
	Tag string // build tag of the child binary, "" for none
	// NoShare runs kcache with KCACHE_SHARE_VALUES=false: without sharing
	// equal parts of cached objects, in client-go's memory layout.
	NoShare bool
	// Quiet runs kcache with KCACHE_QUIET_RELIST=true: a relist delivers
	// nothing for an object whose resourceVersion did not change.
	Quiet bool `json:",omitempty"`
}

// Name is how the variant is named in flags and reports: the library,
// then -noshare, -quiet and +tag as they apply.
func (v Variant) Name() string {
	name := v.Lib
	if v.NoShare {
		name += "-noshare"
	}
	if v.Quiet {
		name += "-quiet"
	}
	if v.Tag != "" {
		name += "+" + v.Tag
	}
	return name
}

// SelectVariants returns the variants of all that only names, a
// comma-separated list of names, in the order named; all of them when only
// is empty. An unknown name is an error naming prog and the known names.
func SelectVariants(prog string, all []Variant, only string) ([]Variant, error) {
	if only == "" {
		return all, nil
	}
	var out []Variant
	for name := range strings.SplitSeq(only, ",") {
		found := false
		for _, v := range all {
			if v.Name() == strings.TrimSpace(name) {
				out, found = append(out, v), true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: unknown variant %q (have %s)", prog, name, VariantNames(all))
		}
	}
	return out, nil
}

// VariantNames lists the names of vs, comma-separated.
func VariantNames(vs []Variant) string {
	names := make([]string, len(vs))
	for k, v := range vs {
		names[k] = v.Name()
	}
	return strings.Join(names, ",")
}
