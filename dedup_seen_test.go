package cache

import "testing"

// eagerDeduper is a deduper that shares a value from its first
// sighting, without the filter of values seen once: for tests of how
// values are shared, which compare the first objects they cache.
func eagerDeduper() *deduper {
	s := newDeduper()
	s.seen.Store(&seenFilter{})
	return s
}

// eagerDedup makes every sharer made during the test share values from
// their first sighting (eagerDeduper).
func eagerDedup(t *testing.T) {
	t.Helper()
	onNewDeduper = func(s *deduper) { s.seen.Store(&seenFilter{}) }
	t.Cleanup(func() { onNewDeduper = nil })
}

// tableSize counts the sharer's table entries.
func tableSize(s *deduper) int {
	n := 0
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		n += len(st.table)
		st.mu.Unlock()
	}
	return n
}

// A value seen once stays its object's own and takes no table entry; from
// the second object on, equal values are one, the second object's copy.
func TestDeduper_SharesFromTheSecondSighting(t *testing.T) {
	s := newDeduper()
	first := dedupPod(1, 1)
	labels := first.Labels
	a := dedupObj(s, first)
	if !sameMap(a.Labels, labels) {
		t.Error("the first pod's labels were replaced: a value seen once must stay its own")
	}
	unique := tableSize(s)
	b, c := dedupObj(s, dedupPod(1, 2)), dedupObj(s, dedupPod(1, 3))
	tests := []struct {
		name string
		one  bool
		want bool
	}{
		{"labels of the first and second pods", sameMap(a.Labels, b.Labels), false},
		{"labels of the second and third pods", sameMap(b.Labels, c.Labels), true},
		{"env of the second and third pods", sameSlice(b.Spec.Containers[0].Env, c.Spec.Containers[0].Env), true},
		{"probe of the second and third pods", b.Spec.Containers[0].ReadinessProbe == c.Spec.Containers[0].ReadinessProbe, true},
		{"pod IPs (their own)", stringData(b.Status.PodIP) == stringData(c.Status.PodIP), false},
	}
	for _, tt := range tests {
		if tt.one != tt.want {
			t.Errorf("%s: one value = %v, want %v", tt.name, tt.one, tt.want)
		}
	}
	if unique != 0 {
		t.Errorf("the first pod put %d values in the table, want none", unique)
	}
	if tableSize(s) == 0 {
		t.Error("no value in the table after three equal pods")
	}
}

// Values that occur once each (pods whose labels are their own) leave the
// table as empty as it started, however many there are.
func TestDeduper_UniqueValuesTakeNoEntries(t *testing.T) {
	s := newDeduper()
	for i := range 2000 {
		p := dedupPod(i, i)
		p.Labels = map[string]string{"app": p.Name}
		dedupObj(s, p)
	}
	// Equal parts (probe, resources) repeat across the pods: at most one
	// entry each; the labels, names, IPs and images of their own none.
	if n := tableSize(s); n > 100 {
		t.Errorf("table holds %d entries after 2000 pods of their own, want the few repeated parts", n)
	}
}

// The filter says "seen" for a key added before and grows when a quarter
// of its bits are set; at its bound it starts again empty.
func TestSeenFilter(t *testing.T) {
	f := newSeenFilter(tuning.seenMinBits)
	if f.sawBefore(42) {
		t.Error("a new filter saw key 42")
	}
	if !f.sawBefore(42) {
		t.Error("the filter forgot key 42")
	}
	s := newDeduper()
	start := len(s.seen.Load().words)
	for k := range uint64(tuning.seenMinBits) {
		s.admit(k * 0x9e3779b97f4a7c15)
	}
	if got := len(s.seen.Load().words); got <= start {
		t.Errorf("filter of %d words did not grow after %d keys (now %d)", start, tuning.seenMinBits, got)
	}
	big := newSeenFilter(tuning.seenMaxBits)
	s.seen.Store(big)
	big.set.Store(int64(tuning.seenMaxBits / 4))
	s.admit(1)
	if got := s.seen.Load(); got == big || len(got.words)*64 != tuning.seenMaxBits {
		t.Errorf("a full filter at the bound was not replaced by an empty one of the same size")
	}
}
