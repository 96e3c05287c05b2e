package e2e

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
