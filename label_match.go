package cache

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// maxCompiledRequirements bounds the requirements a labelMatcher holds
// inline, so that compiling a selector allocates nothing; selectors with
// more are matched through the selector itself.
const maxCompiledRequirements = 8

// apimachinerySelectorType is the dynamic type of the selectors the labels
// package builds (Parse, SelectorFromSet, NewSelector().Add...). Only those
// are compiled: their Matches is known to be the conjunction of their
// Requirements, which another Selector implementation need not promise.
var apimachinerySelectorType = reflect.TypeOf(labels.NewSelector())

// labelMatcher is a label selector taken apart once per listing, so that
// testing one object costs a few map lookups instead of interface calls
// through the selector and each of its requirements.
//
// Invariant: when compiled is false, selector is not nil and decides alone;
// otherwise reqs[:n] decide, and an object matches when it meets them all,
// and matchesNoLabels is their answer for an empty label set.
type labelMatcher struct {
	selector        labels.Selector
	compiled        bool
	matchesNoLabels bool
	n               int
	reqs            [maxCompiledRequirements]labelCheck
}

// labelCheck is one requirement of a compiled selector.
type labelCheck struct {
	kind  labelCheckKind
	key   string
	value string
	// req is the requirement itself, for kind checkByRequirement.
	req *labels.Requirement
}

// labelCheckKind says how a labelCheck tests a label set.
type labelCheckKind uint8

const (
	// checkEquals: key is present with exactly value (=, == and a
	// one-value in).
	checkEquals labelCheckKind = iota
	// checkExists: key is present, whatever its value.
	checkExists
	// checkAbsent: key is not present.
	checkAbsent
	// checkByRequirement: req.Matches decides (!=, notin, in with several
	// values, gt, lt and operators this file does not know). Their values
	// cannot be read from a Requirement without copying them, so they are
	// left to it; it is still called directly, not through the selector.
	checkByRequirement
)

// newLabelMatcher compiles selector, which must not be nil. It allocates
// nothing: values are read through RequiresExactMatch, which returns the
// selector's own strings.
func newLabelMatcher(selector labels.Selector) labelMatcher {
	m := labelMatcher{selector: selector}
	if reflect.TypeOf(selector) != apimachinerySelectorType {
		return m
	}
	reqs, selectable := selector.Requirements()
	if !selectable || len(reqs) > maxCompiledRequirements {
		return m
	}
	m.matchesNoLabels = true
	for i := range reqs {
		m.reqs[i] = compileRequirement(selector, reqs, i)
		m.matchesNoLabels = m.matchesNoLabels && m.reqs[i].matchesNoLabels()
	}
	m.n, m.compiled = len(reqs), true
	return m
}

// compileRequirement turns reqs[i], a requirement of selector, into a
// labelCheck.
func compileRequirement(selector labels.Selector, reqs labels.Requirements, i int) labelCheck {
	r := &reqs[i]
	key := r.Key()
	switch r.Operator() {
	case selection.Exists:
		return labelCheck{kind: checkExists, key: key}
	case selection.DoesNotExist:
		return labelCheck{kind: checkAbsent, key: key}
	case selection.Equals, selection.DoubleEquals, selection.In:
		// RequiresExactMatch reports the first requirement on key, so its
		// answer is about r only when no earlier one has the same key.
		if !keyRepeatsBefore(reqs, i) {
			if value, ok := selector.RequiresExactMatch(key); ok {
				return labelCheck{kind: checkEquals, key: key, value: value}
			}
		}
	}
	return labelCheck{kind: checkByRequirement, key: key, req: r}
}

// keyRepeatsBefore reports whether a requirement before reqs[i] has its key.
func keyRepeatsBefore(reqs labels.Requirements, i int) bool {
	key := reqs[i].Key()
	for j := range i {
		if reqs[j].Key() == key {
			return true
		}
	}
	return false
}

// matches reports whether the label set lbls, which holds size labels,
// satisfies the selector. It is the one call per object of a listing, so
// the checks are evaluated here rather than through a method per check.
func (m *labelMatcher) matches(lbls map[string]string, size int) bool {
	if !m.compiled {
		return m.selector.Matches(labels.Set(lbls))
	}
	if size == 0 {
		return m.matchesNoLabels
	}
	for i := range m.n {
		c := &m.reqs[i]
		switch c.kind {
		case checkEquals:
			if value, ok := lbls[c.key]; !ok || value != c.value {
				return false
			}
		case checkExists:
			if _, ok := lbls[c.key]; !ok {
				return false
			}
		case checkAbsent:
			if _, ok := lbls[c.key]; ok {
				return false
			}
		default:
			if !c.req.Matches(labels.Set(lbls)) {
				return false
			}
		}
	}
	return true
}

// matchesNoLabels reports whether an empty label set meets the check.
func (c *labelCheck) matchesNoLabels() bool {
	switch c.kind {
	case checkEquals, checkExists:
		return false
	case checkAbsent:
		return true
	default:
		return c.req.Matches(labels.Set(nil))
	}
}

// objectLabels returns the labels of obj, which must have object metadata
// (metav1.Object, or a metav1.ObjectMetaAccessor with metadata); the error
// is meta.Accessor's.
func objectLabels(obj interface{}) (map[string]string, error) {
	if object, ok := obj.(metav1.Object); ok {
		return object.GetLabels(), nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return accessor.GetLabels(), nil
}
