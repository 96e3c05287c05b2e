package cache

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// mutationPod returns a pod "ns/<name>" with a UID, a resource version and
// a node name (the value of the test index).
func mutationPod(name string, uid types.UID, rv, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, ResourceVersion: rv},
		Spec:       v1.PodSpec{NodeName: node},
	}
}

// mutationNodeIndexers indexes pods by node; it fails on the node "explode".
var mutationNodeIndexers = Indexers{"by-node": func(obj interface{}) ([]string, error) {
	pod := obj.(*v1.Pod)
	if pod.Spec.NodeName == "explode" {
		return nil, fmt.Errorf("cannot index %s", pod.Name)
	}
	return []string{pod.Spec.NodeName}, nil
}}

// mutationCacheFixture is a mutation cache over an indexer that serves as
// both its backing store and its indexer, on a fake clock.
type mutationCacheFixture struct {
	store Indexer
	clock *testingclock.FakeClock
	cache *mutationCache
}

func newMutationCacheFixture(t *testing.T, options MutationCacheOptions, stored ...*v1.Pod) *mutationCacheFixture {
	t.Helper()
	f := &mutationCacheFixture{
		store: NewIndexer(MetaNamespaceKeyFunc, mutationNodeIndexers),
		clock: testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	for _, p := range stored {
		if err := f.store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	options.Indexer = f.store
	f.cache = newMutationCache(klog.Logger{}, f.store, options, f.clock)
	return f
}

// mutationGet renders what GetByKey returns as "rv@uid", or "missing".
func mutationGet(t *testing.T, c MutationCache, key string) string {
	t.Helper()
	obj, exists, err := c.GetByKey(key)
	if err != nil {
		t.Fatalf("GetByKey(%s): %v", key, err)
	}
	if !exists {
		return "missing"
	}
	return mutationDescribe(obj)
}

// mutationDescribe renders a pod as "rv@uid".
func mutationDescribe(obj interface{}) string {
	p := obj.(*v1.Pod)
	return p.ResourceVersion + "@" + string(p.UID)
}

func TestMutationCache_GetByKeyReturnsTheNewerCopy(t *testing.T) {
	cases := map[string]struct {
		stored      *v1.Pod // nil: the store lacks the key
		mutation    *v1.Pod // nil: no Mutation call
		includeAdds bool
		want        string
		wantKept    bool // whether the cache still remembers the key afterwards
	}{
		"store only": {
			stored: mutationPod("p", "u1", "5", ""),
			want:   "5@u1",
		},
		"newer mutation wins": {
			stored:   mutationPod("p", "u1", "5", ""),
			mutation: mutationPod("p", "u1", "7", ""),
			want:     "7@u1",
			wantKept: true,
		},
		"older mutation loses and is forgotten": {
			stored:   mutationPod("p", "u1", "7", ""),
			mutation: mutationPod("p", "u1", "5", ""),
			want:     "7@u1",
		},
		"equal versions: the store's copy, mutation forgotten": {
			stored:   mutationPod("p", "u1", "7", ""),
			mutation: mutationPod("p", "u2", "7", ""),
			want:     "7@u1",
		},
		"unparsable version: the store wins": {
			stored:   mutationPod("p", "u1", "5", ""),
			mutation: mutationPod("p", "u1", "v7", ""),
			want:     "5@u1",
		},
		"absent from the store without IncludeAdds": {
			mutation: mutationPod("p", "u1", "7", ""),
			want:     "missing",
			wantKept: true,
		},
		"absent from the store with IncludeAdds stays visible": {
			mutation:    mutationPod("p", "u1", "7", ""),
			includeAdds: true,
			want:        "7@u1",
			wantKept:    true,
		},
		"absent everywhere": {
			includeAdds: true,
			want:        "missing",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stored []*v1.Pod
			if tc.stored != nil {
				stored = append(stored, tc.stored)
			}
			f := newMutationCacheFixture(t, MutationCacheOptions{IncludeAdds: tc.includeAdds}, stored...)
			if tc.mutation != nil {
				f.cache.Mutation(tc.mutation)
			}
			for read := 1; read <= 2; read++ {
				if got := mutationGet(t, f.cache, "ns/p"); got != tc.want {
					t.Errorf("read %d: got %s, want %s", read, got, tc.want)
				}
			}
			_, kept := f.cache.recent.items["ns/p"]
			if kept != tc.wantKept {
				t.Errorf("key remembered = %v, want %v", kept, tc.wantKept)
			}
		})
	}
}

// mutationEvent is one call on a MutationCache in a sequence test.
type mutationEvent func(c MutationCache)

func mutationWrite(p *v1.Pod) mutationEvent   { return func(c MutationCache) { c.Mutation(p) } }
func mutationSeen(p *v1.Pod) mutationEvent    { return func(c MutationCache) { c.OnAddOrUpdate(p) } }
func mutationDeleted(p *v1.Pod) mutationEvent { return func(c MutationCache) { c.OnDelete(p) } }

func TestMutationCache_EventSequences(t *testing.T) {
	// Every case reads "ns/p" with IncludeAdds from an empty store, so the
	// answer is what the cache itself remembers.
	cases := map[string]struct {
		events []mutationEvent
		want   string
	}{
		"latest write is remembered": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationWrite(mutationPod("p", "u1", "6", ""))},
			want:   "6@u1",
		},
		"an older write is ignored": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationWrite(mutationPod("p", "u1", "3", ""))},
			want:   "5@u1",
		},
		"an equal write replaces": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "a")), mutationWrite(mutationPod("p", "u2", "5", "b"))},
			want:   "5@u2",
		},
		"store catching up to the same version forgets the write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationSeen(mutationPod("p", "u1", "5", ""))},
			want:   "missing",
		},
		"store reaching a newer version forgets the write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationSeen(mutationPod("p", "u1", "6", ""))},
			want:   "missing",
		},
		"store still older keeps the write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationSeen(mutationPod("p", "u1", "4", ""))},
			want:   "5@u1",
		},
		"unparsable store version forgets the write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationSeen(mutationPod("p", "u1", "x", ""))},
			want:   "missing",
		},
		"deletion of the same object, even at an older version, hides the write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationDeleted(mutationPod("p", "u1", "3", ""))},
			want:   "missing",
		},
		"deletion at a newer version hides another object's write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u1", "5", "")), mutationDeleted(mutationPod("p", "u2", "6", ""))},
			want:   "missing",
		},
		"older deletion of another object keeps the write": {
			events: []mutationEvent{mutationWrite(mutationPod("p", "u2", "5", "")), mutationDeleted(mutationPod("p", "u1", "3", ""))},
			want:   "5@u2",
		},
		"a write of the deleted version stays hidden": {
			events: []mutationEvent{mutationDeleted(mutationPod("p", "u1", "5", "")), mutationWrite(mutationPod("p", "u9", "5", ""))},
			want:   "missing",
		},
		"a newer write of the deleted object stays hidden": {
			events: []mutationEvent{mutationDeleted(mutationPod("p", "u1", "5", "")), mutationWrite(mutationPod("p", "u1", "6", ""))},
			want:   "missing",
		},
		"a newer write of a new object after a deletion is remembered": {
			events: []mutationEvent{mutationDeleted(mutationPod("p", "u1", "5", "")), mutationWrite(mutationPod("p", "u2", "6", ""))},
			want:   "6@u2",
		},
		"store moving past a deletion forgets it": {
			events: []mutationEvent{
				mutationDeleted(mutationPod("p", "u1", "5", "")),
				mutationSeen(mutationPod("p", "u2", "7", "")),
				mutationWrite(mutationPod("p", "u1", "6", "")), // no tombstone left to stop it
			},
			want: "6@u1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newMutationCacheFixture(t, MutationCacheOptions{IncludeAdds: true})
			for _, event := range tc.events {
				event(f.cache)
			}
			if got := mutationGet(t, f.cache, "ns/p"); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMutationCache_StaleDeletionInTheStoreIsNotReturned(t *testing.T) {
	// The store still holds version 5 while the cache already saw the
	// deletion at 6: the store's copy is returned, never the tombstone, and
	// the tombstone stays to block stale writes.
	f := newMutationCacheFixture(t, MutationCacheOptions{}, mutationPod("p", "u1", "5", ""))
	f.cache.OnDelete(mutationPod("p", "u1", "6", ""))
	if got := mutationGet(t, f.cache, "ns/p"); got != "5@u1" {
		t.Errorf("got %s, want the store's 5@u1", got)
	}
	f.cache.Mutation(mutationPod("p", "u1", "7", ""))
	if got := mutationGet(t, f.cache, "ns/p"); got != "5@u1" {
		t.Errorf("after a stale write: got %s, want the store's 5@u1", got)
	}
}

func TestMutationCache_ByIndex(t *testing.T) {
	stored := []*v1.Pod{
		mutationPod("a", "ua", "5", "n1"),
		mutationPod("b", "ub", "5", "n1"),
		mutationPod("c", "uc", "5", "n2"),
	}
	cases := map[string]struct {
		includeAdds bool
		events      []mutationEvent
		index       string
		value       string
		want        []string // "name:rv", sorted
		wantErr     string
	}{
		"store objects with a newer write replaced": {
			events: []mutationEvent{mutationWrite(mutationPod("a", "ua", "9", "n1")), mutationWrite(mutationPod("b", "ub", "2", "n1"))},
			index:  "by-node", value: "n1",
			want: []string{"a:9", "b:5"},
		},
		"remembered-only writes are left out without IncludeAdds": {
			events: []mutationEvent{mutationWrite(mutationPod("new", "un", "9", "n1"))},
			index:  "by-node", value: "n1",
			want: []string{"a:5", "b:5"},
		},
		"remembered-only writes filed under the value are added with IncludeAdds": {
			includeAdds: true,
			events: []mutationEvent{
				mutationWrite(mutationPod("new", "un", "9", "n1")),
				mutationWrite(mutationPod("other", "uo", "9", "n2")),
				mutationWrite(mutationPod("broken", "ux", "9", "explode")),
				mutationDeleted(mutationPod("gone", "ug", "9", "n1")),
			},
			index: "by-node", value: "n1",
			want: []string{"a:5", "b:5", "new:9"},
		},
		"unknown index": {
			index: "by-zone", value: "z",
			wantErr: "by-zone",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newMutationCacheFixture(t, MutationCacheOptions{IncludeAdds: tc.includeAdds}, stored...)
			for _, event := range tc.events {
				event(f.cache)
			}
			items, err := f.cache.ByIndex(tc.index, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, podNamesAndVersions(items)); diff != "" {
				t.Errorf("ByIndex (-want +got):\n%s", diff)
			}
		})
	}
}

// podNamesAndVersions renders pods as sorted "name:rv" strings.
func podNamesAndVersions(items []interface{}) []string {
	var got []string
	for _, obj := range items {
		p := obj.(*v1.Pod)
		got = append(got, p.Name+":"+p.ResourceVersion)
	}
	sort.Strings(got)
	return got
}

func TestMutationCache_ByIndexWithoutIndexerFails(t *testing.T) {
	c := NewIntegerResourceVersionMutationCache(klog.Logger{}, NewStore(MetaNamespaceKeyFunc), nil, time.Minute, true)
	if _, err := c.ByIndex("by-node", "n1"); err == nil {
		t.Error("ByIndex without an indexer should fail")
	}
}

func TestMutationCache_ForgetsByAgeAndBySize(t *testing.T) {
	const ttl = time.Minute
	cases := map[string]struct {
		size    int
		run     func(f *mutationCacheFixture)
		missing []string
		present []string
	}{
		"valid up to the ttl": {
			run: func(f *mutationCacheFixture) {
				f.cache.Mutation(mutationPod("a", "u", "1", ""))
				f.clock.Step(ttl)
			},
			present: []string{"a"},
		},
		"gone after the ttl": {
			run: func(f *mutationCacheFixture) {
				f.cache.Mutation(mutationPod("a", "u", "1", ""))
				f.clock.Step(ttl + time.Nanosecond)
			},
			missing: []string{"a"},
		},
		"a newer write restarts the ttl": {
			run: func(f *mutationCacheFixture) {
				f.cache.Mutation(mutationPod("a", "u", "1", ""))
				f.clock.Step(ttl / 2)
				f.cache.Mutation(mutationPod("a", "u", "2", ""))
				f.clock.Step(ttl * 3 / 4)
			},
			present: []string{"a"},
		},
		"deletions expire too": {
			run: func(f *mutationCacheFixture) {
				f.cache.OnDelete(mutationPod("a", "u", "5", ""))
				f.clock.Step(ttl + time.Nanosecond)
				f.cache.Mutation(mutationPod("a", "u", "5", ""))
			},
			present: []string{"a"},
		},
		"least recently used is evicted first": {
			size: 2,
			run: func(f *mutationCacheFixture) {
				f.cache.Mutation(mutationPod("a", "u", "1", ""))
				f.cache.Mutation(mutationPod("b", "u", "1", ""))
				_, _, _ = f.cache.GetByKey("ns/a") // a is now more recent than b
				f.cache.Mutation(mutationPod("c", "u", "1", ""))
			},
			present: []string{"a", "c"},
			missing: []string{"b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newMutationCacheFixture(t, MutationCacheOptions{IncludeAdds: true, TTL: ttl, MaxCacheSize: tc.size})
			tc.run(f)
			for _, name := range tc.present {
				if got := mutationGet(t, f.cache, "ns/"+name); got == "missing" {
					t.Errorf("%s was forgotten", name)
				}
			}
			for _, name := range tc.missing {
				if got := mutationGet(t, f.cache, "ns/"+name); got != "missing" {
					t.Errorf("%s is still remembered as %s", name, got)
				}
			}
		})
	}
}

func TestMutationCache_OptionDefaults(t *testing.T) {
	cases := map[string]struct {
		options  MutationCacheOptions
		wantTTL  time.Duration
		wantSize int
	}{
		"zero values":   {MutationCacheOptions{}, defaultMutationCacheTTL, defaultMutationCacheSize},
		"given values":  {MutationCacheOptions{TTL: time.Second, MaxCacheSize: 3}, time.Second, 3},
		"negative ttl":  {MutationCacheOptions{TTL: -time.Second}, -time.Second, defaultMutationCacheSize},
		"size only set": {MutationCacheOptions{MaxCacheSize: 1}, defaultMutationCacheTTL, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewIntegerResourceVersionMutationCacheWithOptions(klog.Logger{}, NewStore(MetaNamespaceKeyFunc), tc.options).(*mutationCache)
			if c.ttl != tc.wantTTL || c.recent.capacity != tc.wantSize {
				t.Errorf("ttl %v, size %d; want %v, %d", c.ttl, c.recent.capacity, tc.wantTTL, tc.wantSize)
			}
		})
	}

	legacy := NewIntegerResourceVersionMutationCache(klog.Logger{}, NewStore(MetaNamespaceKeyFunc), nil, 0, false).(*mutationCache)
	if legacy.recent.capacity != defaultMutationCacheSize || legacy.ttl != defaultMutationCacheTTL {
		t.Errorf("legacy constructor: ttl %v, size %d", legacy.ttl, legacy.recent.capacity)
	}

	defer func() {
		if recover() == nil {
			t.Error("a negative MaxCacheSize should panic in the constructor")
		}
	}()
	NewIntegerResourceVersionMutationCacheWithOptions(klog.Logger{}, NewStore(MetaNamespaceKeyFunc), MutationCacheOptions{MaxCacheSize: -1})
}

func TestMutationCache_ObjectsWithoutKeysAreIgnored(t *testing.T) {
	f := newMutationCacheFixture(t, MutationCacheOptions{IncludeAdds: true})
	f.cache.Mutation(42)
	f.cache.Mutation(nil)
	f.cache.OnAddOrUpdate(&metav1.Status{})
	f.cache.OnDelete(&metav1.Status{})
	if n := len(f.cache.recent.items); n != 0 {
		t.Errorf("cache remembers %d entries, want none", n)
	}
}

func TestMutationCache_ConcurrentUse(t *testing.T) {
	f := newMutationCacheFixture(t, MutationCacheOptions{IncludeAdds: true, MaxCacheSize: 16},
		mutationPod("p0", "u", "1", "n1"), mutationPod("p1", "u", "1", "n1"))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				name := fmt.Sprintf("p%d", i%20)
				rv := fmt.Sprint(i + 2)
				switch (w + i) % 5 {
				case 0:
					f.cache.Mutation(mutationPod(name, "u", rv, "n1"))
				case 1:
					f.cache.OnAddOrUpdate(mutationPod(name, "u", rv, "n1"))
				case 2:
					f.cache.OnDelete(mutationPod(name, "u", rv, "n1"))
				case 3:
					_, _, _ = f.cache.GetByKey("ns/" + name)
				case 4:
					if _, err := f.cache.ByIndex("by-node", "n1"); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := len(f.cache.recent.items); n > 16 {
		t.Errorf("cache holds %d entries, over its size of 16", n)
	}
}

func TestExpiringLRU_OrderAndExpiry(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newExpiringLRU[int](3, clock)
	l.add("a", 1, time.Minute)
	l.add("b", 2, 2*time.Minute)
	l.add("c", 3, 3*time.Minute)
	if diff := cmp.Diff([]string{"a", "b", "c"}, l.keysOldestFirst()); diff != "" {
		t.Errorf("insertion order (-want +got):\n%s", diff)
	}
	if v, ok := l.get("a"); !ok || v != 1 {
		t.Errorf("get(a) = %d, %v", v, ok)
	}
	if diff := cmp.Diff([]string{"b", "c", "a"}, l.keysOldestFirst()); diff != "" {
		t.Errorf("after using a (-want +got):\n%s", diff)
	}
	l.add("d", 4, time.Minute) // full: evicts b
	if _, ok := l.get("b"); ok {
		t.Error("b should have been evicted")
	}
	clock.Step(90 * time.Second) // a and d expired, c valid
	if diff := cmp.Diff([]string{"c"}, l.keysOldestFirst()); diff != "" {
		t.Errorf("after expiry (-want +got):\n%s", diff)
	}
	if _, ok := l.get("a"); ok {
		t.Error("a should have expired")
	}
	if _, ok := l.items["a"]; ok {
		t.Error("an expired entry found by get should be removed")
	}
	l.remove("c")
	l.remove("never-there")
	if diff := cmp.Diff([]string{}, l.keysOldestFirst()); diff != "" {
		t.Errorf("after removal (-want +got):\n%s", diff)
	}
	if len(l.items) != l.order.Len() {
		t.Errorf("items has %d entries, order %d", len(l.items), l.order.Len())
	}
}
