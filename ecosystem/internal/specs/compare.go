package specs

import (
	"fmt"
	"sort"
)

// Counts tallies specs by state.
type Counts map[State]int

// Count tallies specs by state.
func Count(specs []Spec) Counts {
	c := make(Counts)
	for _, s := range specs {
		c[s.State]++
	}
	return c
}

// Run is one variant's results: its specs and plain Go tests. A run whose
// Pending field is set was not made (its reason says why) and takes no part
// in the comparison.
type Run struct {
	Variant string
	Specs   []Spec
	Tests   map[string]State
	Pending string
}

// Difference is one spec or test whose state is not the same in every run
// that was made; States is indexed like the runs given to Compare.
type Difference struct {
	Name     string
	States   []State
	Messages []string
}

// Compare lists every spec and Go test whose state differs between the runs
// that were made (Pending runs are left out), sorted by name. A spec missing
// from one run counts as state "missing" there.
func Compare(runs []Run) []Difference {
	type entry struct {
		states   []State
		messages []string
	}
	all := make(map[string]*entry)
	get := func(name string) *entry {
		e := all[name]
		if e == nil {
			e = &entry{states: make([]State, len(runs)), messages: make([]string, len(runs))}
			for i := range e.states {
				e.states[i] = "missing"
			}
			all[name] = e
		}
		return e
	}
	for i, r := range runs {
		if r.Pending != "" {
			continue
		}
		for _, s := range r.Specs {
			e := get(s.Name)
			e.states[i], e.messages[i] = s.State, s.Message
		}
		for name, st := range r.Tests {
			get("go test " + name).states[i] = st
		}
	}
	var out []Difference
	for name, e := range all {
		var first State
		differs := false
		for i, r := range runs {
			if r.Pending != "" {
				continue
			}
			if first == "" {
				first = e.states[i]
			} else if e.states[i] != first {
				differs = true
			}
		}
		if differs {
			out = append(out, Difference{Name: name, States: e.states, Messages: e.messages})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Verdict says why a set of runs is not a success, or returns nil: every
// run that was made has at least one passed spec, no failed spec or test,
// and the same number of passed specs as the others, and no spec differs.
func Verdict(runs []Run, diffs []Difference) error {
	passed := -1
	made := 0
	for _, r := range runs {
		if r.Pending != "" {
			continue
		}
		made++
		c := Count(r.Specs)
		if c[Passed] == 0 {
			return fmt.Errorf("variant %s: no spec passed", r.Variant)
		}
		if c[Failed] > 0 {
			return fmt.Errorf("variant %s: %d spec(s) failed", r.Variant, c[Failed])
		}
		for name, st := range r.Tests {
			if st == Failed {
				return fmt.Errorf("variant %s: go test %s failed", r.Variant, name)
			}
		}
		if passed >= 0 && c[Passed] != passed {
			return fmt.Errorf("variant %s: %d specs passed, an earlier variant %d", r.Variant, c[Passed], passed)
		}
		passed = c[Passed]
	}
	if made == 0 {
		return fmt.Errorf("no variant was run")
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%d spec(s) or test(s) differ between variants", len(diffs))
	}
	return nil
}
