package cache

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// labelSets are the label sets every selector of the table tests is tried
// on: absent, empty and present keys with empty, matching and other values.
var labelSets = map[string]map[string]string{
	"nil":           nil,
	"empty":         {},
	"app=web":       {"app": "web"},
	"app=db":        {"app": "db"},
	"app empty":     {"app": ""},
	"tier only":     {"tier": "front"},
	"app=web,tier":  {"app": "web", "tier": "front"},
	"app=db,tier":   {"app": "db", "tier": "back"},
	"app=cache,env": {"app": "cache", "env": "prod", "tier": "front"},
	"numbers":       {"replicas": "3", "app": "web"},
	"not a number":  {"replicas": "three", "app": "web"},
}

// labelMatchWant is the expected answer of a selector on each of labelSets
// (names of the sets it selects).
type labelMatchWant struct {
	selector string
	kinds    []labelCheckKind // compiled form; nil: not compiled
	selects  []string
}

func TestLabelMatcher_Operators(t *testing.T) {
	cases := map[string]labelMatchWant{
		"equals": {
			selector: "app=web", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app=web", "app=web,tier", "numbers", "not a number"},
		},
		"double equals": {
			selector: "app==db", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app=db", "app=db,tier"},
		},
		"equals empty value": {
			selector: "app=", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app empty"},
		},
		"in one value": {
			selector: "app in (web)", kinds: []labelCheckKind{checkEquals},
			selects: []string{"app=web", "app=web,tier", "numbers", "not a number"},
		},
		"in several values": {
			selector: "app in (db,web)", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"app=web", "app=db", "app=web,tier", "app=db,tier", "numbers", "not a number"},
		},
		"in with the empty value": {
			selector: "app in (,db)", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"app=db", "app empty", "app=db,tier"},
		},
		"not equals: missing key matches": {
			selector: "app!=web", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"nil", "empty", "app=db", "app empty", "tier only", "app=db,tier", "app=cache,env"},
		},
		"notin several values": {
			selector: "app notin (web,db)", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"nil", "empty", "app empty", "tier only", "app=cache,env"},
		},
		"exists": {
			selector: "tier", kinds: []labelCheckKind{checkExists},
			selects: []string{"tier only", "app=web,tier", "app=db,tier", "app=cache,env"},
		},
		"exists with an empty value": {
			selector: "app", kinds: []labelCheckKind{checkExists},
			selects: []string{"app=web", "app=db", "app empty", "app=web,tier", "app=db,tier", "app=cache,env", "numbers", "not a number"},
		},
		"does not exist": {
			selector: "!app", kinds: []labelCheckKind{checkAbsent},
			selects: []string{"nil", "empty", "tier only"},
		},
		"greater than": {
			selector: "replicas>2", kinds: []labelCheckKind{checkByRequirement},
			selects: []string{"numbers"},
		},
		"less than": {
			selector: "replicas<3", kinds: []labelCheckKind{checkByRequirement},
			selects: nil,
		},
		"several requirements": {
			selector: "app in (web,db),tier,!env", kinds: []labelCheckKind{checkByRequirement, checkAbsent, checkExists},
			selects: []string{"app=web,tier", "app=db,tier"},
		},
		"equals and exists": {
			selector: "app=cache,env", kinds: []labelCheckKind{checkEquals, checkExists},
			selects: []string{"app=cache,env"},
		},
		"repeated key: the second one is not the exact match": {
			selector: "app=web,app=db", kinds: []labelCheckKind{checkEquals, checkByRequirement},
			selects: nil,
		},
		"repeated key after a set requirement": {
			selector: "app notin (db),app=web", kinds: []labelCheckKind{checkByRequirement, checkByRequirement},
			selects: []string{"app=web", "app=web,tier", "numbers", "not a number"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLabelMatcher(t, listerSelector(t, tc.selector), tc)
		})
	}
}

// checkLabelMatcher compiles selector, compares the compiled form with
// want.kinds and its answers on labelSets with want.selects and with
// selector.Matches.
func checkLabelMatcher(t *testing.T, selector labels.Selector, want labelMatchWant) {
	t.Helper()
	m := newLabelMatcher(selector)
	if diff := cmp.Diff(want.kinds, compiledKinds(&m)); diff != "" {
		t.Errorf("compiled checks (-want +got):\n%s", diff)
	}
	if m.compiled && m.matchesNoLabels != selector.Matches(labels.Set(nil)) {
		t.Errorf("matchesNoLabels is %v, the selector says %v", m.matchesNoLabels, !m.matchesNoLabels)
	}
	var selects []string
	for name, set := range labelSets {
		got := m.matches(set, len(set))
		if ref := selector.Matches(labels.Set(set)); got != ref {
			t.Errorf("on %s: matcher says %v, selector %v", name, got, ref)
		}
		if got {
			selects = append(selects, name)
		}
	}
	if diff := cmp.Diff(sortedStrings(want.selects), sortedStrings(selects)); diff != "" {
		t.Errorf("selected label sets (-want +got):\n%s", diff)
	}
}

// compiledKinds returns the kinds of m's checks, or nil when m is not
// compiled.
func compiledKinds(m *labelMatcher) []labelCheckKind {
	if !m.compiled {
		return nil
	}
	kinds := make([]labelCheckKind, m.n)
	for i := range m.n {
		kinds[i] = m.reqs[i].kind
	}
	return kinds
}

// sortedStrings returns a sorted copy of s; nil for an empty s.
func sortedStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// invertedSelector is a Selector of its own whose Matches is the opposite
// of its requirements: a matcher must ask it, not its requirements.
type invertedSelector struct{ labels.Selector }

func (s invertedSelector) Matches(l labels.Labels) bool { return !s.Selector.Matches(l) }

// mustRequirement builds a requirement, even one NewRequirement reports as
// invalid (it still returns it, and callers may use it).
func mustRequirement(key string, op selection.Operator, values ...string) labels.Requirement {
	r, _ := labels.NewRequirement(key, op, values)
	return *r
}

func TestLabelMatcher_SelectorsItDoesNotCompile(t *testing.T) {
	many := make([]string, maxCompiledRequirements+1)
	for i := range many {
		many[i] = "k" + string(rune('a'+i)) + "!=x"
	}
	cases := map[string]struct {
		selector labels.Selector
		want     labelMatchWant
	}{
		"another selector implementation": {
			selector: invertedSelector{listerSelector(t, "app=web")},
			want:     labelMatchWant{selects: []string{"nil", "empty", "app=db", "app empty", "tier only", "app=db,tier", "app=cache,env"}},
		},
		"more requirements than held inline": {
			selector: listerSelector(t, strings.Join(many, ",")+",app=web"),
			want:     labelMatchWant{selects: []string{"app=web", "app=web,tier", "numbers", "not a number"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLabelMatcher(t, tc.selector, tc.want)
		})
	}
}

func TestLabelMatcher_InvalidRequirementsBehaveAsTheSelector(t *testing.T) {
	cases := map[string]struct {
		req  labels.Requirement
		want labelMatchWant
	}{
		"zero requirement matches nothing": {
			req:  labels.Requirement{},
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement}},
		},
		"in without values matches nothing": {
			req:  mustRequirement("app", selection.In),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement}},
		},
		"equals with two values is an in": {
			req: mustRequirement("app", selection.Equals, "web", "db"),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement},
				selects: []string{"app=web", "app=db", "app=web,tier", "app=db,tier", "numbers", "not a number"}},
		},
		"not equals without values matches all": {
			req: mustRequirement("app", selection.NotEquals),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement},
				selects: []string{"nil", "empty", "app=web", "app=db", "app empty", "tier only", "app=web,tier", "app=db,tier", "app=cache,env", "numbers", "not a number"}},
		},
		"greater than a word": {
			req:  mustRequirement("replicas", selection.GreaterThan, "two"),
			want: labelMatchWant{kinds: []labelCheckKind{checkByRequirement}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLabelMatcher(t, labels.NewSelector().Add(tc.req), tc.want)
		})
	}
}

// labelsOnly is a value with labels that is not a metav1.Object but gives
// access to one.
type labelsOnly struct{ meta *metav1.ObjectMeta }

func (l labelsOnly) GetObjectMeta() metav1.Object {
	if l.meta == nil {
		return nil
	}
	return l.meta
}

func TestObjectLabels(t *testing.T) {
	cases := map[string]struct {
		obj     interface{}
		want    map[string]string
		wantErr bool
	}{
		"pod":                       {obj: listerPod("a", "p", map[string]string{"app": "web"}), want: map[string]string{"app": "web"}},
		"pod without labels":        {obj: listerPod("a", "p", nil)},
		"object meta accessor":      {obj: labelsOnly{&metav1.ObjectMeta{Labels: map[string]string{"x": "y"}}}, want: map[string]string{"x": "y"}},
		"accessor without metadata": {obj: labelsOnly{}, wantErr: true},
		"value without metadata":    {obj: "nope", wantErr: true},
		"nil":                       {obj: nil, wantErr: true},
		"pod list is not an object": {obj: &v1.PodList{}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := objectLabels(tc.obj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

// parseFuzzLabels reads "k=v,k2,k3=" as a label set: an entry without '='
// has the empty value.
func parseFuzzLabels(s string) map[string]string {
	if s == "" {
		return nil
	}
	set := map[string]string{}
	for _, entry := range strings.Split(s, ",") {
		key, value, _ := strings.Cut(entry, "=")
		set[key] = value
	}
	return set
}

func FuzzLabelMatch_AgreesWithSelector(f *testing.F) {
	seeds := [][2]string{
		{"app=web", "app=web,tier=front"},
		{"app==web,tier", "app=web"},
		{"app in (web,db),!env", "app=db,env="},
		{"app notin (web),tier!=back", "tier=back"},
		{"app=,x", "app=,x=1"},
		{"replicas>2,replicas<10", "replicas=5"},
		{"a=1,a=2", "a=1"},
		{"a in (1),a notin (2),!b", "a=1,b"},
		{"", "a=b"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, selectorText, labelText string) {
		selector, err := labels.Parse(selectorText)
		if err != nil {
			t.Skip()
		}
		set := parseFuzzLabels(labelText)
		m := newLabelMatcher(selector)
		want := selector.Matches(labels.Set(set))
		if got := m.matches(set, len(set)); got != want {
			t.Fatalf("selector %q on %v: matcher says %v, selector %v", selector, set, got, want)
		}
		if m.compiled && m.matchesNoLabels != selector.Matches(labels.Set(nil)) {
			t.Fatalf("selector %q: matchesNoLabels is %v, the selector says %v", selector, m.matchesNoLabels, !m.matchesNoLabels)
		}
	})
}

// BenchmarkLabelMatch compares, on label sets already in cache, the
// selector's own Matches with the compiled matcher, to show the cost of
// matching apart from memory.
func BenchmarkLabelMatch(b *testing.B) {
	sets := make([]map[string]string, 0, 64)
	for i := range cap(sets) {
		sets = append(sets, map[string]string{
			"app":               fmt.Sprintf("app-%d", i%8),
			"tier":              listerBenchTiers[i%len(listerBenchTiers)],
			"pod-template-hash": fmt.Sprintf("h%05d", i),
			"revision":          "v1",
		})
	}
	for _, text := range []string{"tier=web", "tier in (web,api)", "tier!=web", "tier", "app=app-1,tier=web,!canary"} {
		selector := listerSelector(b, text)
		b.Run(text+"/selector", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, set := range sets {
					if selector.Matches(labels.Set(set)) {
						n++
					}
				}
			}
		})
		b.Run(text+"/compiled", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			m := newLabelMatcher(selector)
			for b.Loop() {
				for _, set := range sets {
					if m.matches(set, len(set)) {
						n++
					}
				}
			}
		})
	}
}
