package cache

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"
)

// expiringPod returns a pod in namespace "ns".
func expiringPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// ttlCacheOnFakeClock returns an ExpirationCache with a TTLPolicy where
// both the cache and the policy read clock.
func ttlCacheOnFakeClock(ttl time.Duration, clock *testingclock.FakeClock) Store {
	return NewFakeExpirationStore(MetaNamespaceKeyFunc, nil, &TTLPolicy{TTL: ttl, Clock: clock}, clock)
}

// expiringPodNames returns the sorted names of pods.
func expiringPodNames(objs []interface{}) []string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.(*v1.Pod).Name)
	}
	sort.Strings(out)
	return out
}

// expiryStep writes or advances the clock, then records what reads see.
type expiryStep struct {
	advance time.Duration
	write   func(s Store) error
}

func TestExpirationCache_TTLExpiresEntriesOnRead(t *testing.T) {
	const ttl = time.Minute
	add := func(name string) func(Store) error { return func(s Store) error { return s.Add(expiringPod(name)) } }
	cases := map[string]struct {
		ttl       time.Duration
		steps     []expiryStep
		wantList  []string
		wantKeys  []string // ListKeys before List purges
		wantAfter []string // ListKeys after List purged
	}{
		"entry at exactly the ttl is still valid": {
			ttl:       ttl,
			steps:     []expiryStep{{write: add("a")}, {advance: ttl}},
			wantList:  []string{"a"},
			wantKeys:  []string{"ns/a"},
			wantAfter: []string{"ns/a"},
		},
		"entry past the ttl is gone and purged by List": {
			ttl:       ttl,
			steps:     []expiryStep{{write: add("a")}, {advance: ttl + time.Nanosecond}},
			wantList:  []string{},
			wantKeys:  []string{"ns/a"},
			wantAfter: []string{},
		},
		"update refreshes the timestamp": {
			ttl: ttl,
			steps: []expiryStep{
				{write: add("a")},
				{write: add("b")},
				{advance: 50 * time.Second, write: func(s Store) error { return s.Update(expiringPod("a")) }},
				{advance: 50 * time.Second},
			},
			wantList:  []string{"a"},
			wantKeys:  []string{"ns/a", "ns/b"},
			wantAfter: []string{"ns/a"},
		},
		"zero ttl never expires": {
			ttl:       0,
			steps:     []expiryStep{{write: add("a")}, {advance: 1000 * time.Hour}},
			wantList:  []string{"a"},
			wantKeys:  []string{"ns/a"},
			wantAfter: []string{"ns/a"},
		},
		"replace stamps every object with one time": {
			ttl: ttl,
			steps: []expiryStep{
				{write: add("old")},
				{advance: 30 * time.Second, write: func(s Store) error {
					return s.Replace([]interface{}{expiringPod("x"), expiringPod("y")}, "7")
				}},
				{advance: 45 * time.Second},
			},
			wantList:  []string{"x", "y"},
			wantKeys:  []string{"ns/x", "ns/y"},
			wantAfter: []string{"ns/x", "ns/y"},
		},
		"delete removes at once": {
			ttl: ttl,
			steps: []expiryStep{
				{write: add("a")},
				{write: func(s Store) error { return s.Delete(expiringPod("a")) }},
				{write: func(s Store) error { return s.Delete(expiringPod("never-added")) }},
			},
			wantList:  []string{},
			wantKeys:  []string{},
			wantAfter: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			s := ttlCacheOnFakeClock(tc.ttl, clock)
			for i, step := range tc.steps {
				clock.Step(step.advance)
				if step.write != nil {
					if err := step.write(s); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			}
			keys := s.ListKeys()
			sort.Strings(keys)
			if diff := cmp.Diff(tc.wantKeys, keys, emptyAsNilSlices); diff != "" {
				t.Errorf("ListKeys before reads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantList, expiringPodNames(s.List()), emptyAsNilSlices); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			keys = s.ListKeys()
			sort.Strings(keys)
			if diff := cmp.Diff(tc.wantAfter, keys, emptyAsNilSlices); diff != "" {
				t.Errorf("ListKeys after List (-want +got):\n%s", diff)
			}
		})
	}
}

// emptyAsNilSlices makes cmp.Diff treat nil and empty slices alike.
var emptyAsNilSlices = cmp.Transformer("emptyAsNil", func(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return in
})

func TestExpirationCache_GetRemovesAnExpiredEntry(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	s := ttlCacheOnFakeClock(time.Minute, clock)
	a := expiringPod("a")
	if err := s.Add(a); err != nil {
		t.Fatal(err)
	}

	got, ok, err := s.Get(expiringPod("a"))
	if err != nil || !ok || got != a {
		t.Fatalf("Get before expiry = %v, %v, %v; want the stored pod", got, ok, err)
	}
	got, ok, err = s.GetByKey("ns/a")
	if err != nil || !ok || got != a {
		t.Fatalf("GetByKey before expiry = %v, %v, %v; want the stored pod", got, ok, err)
	}

	clock.Step(2 * time.Minute)
	if _, ok, err := s.GetByKey("ns/a"); ok || err != nil {
		t.Fatalf("GetByKey after expiry = _, %v, %v; want absent", ok, err)
	}
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Errorf("ListKeys after the expired read = %v, want none", keys)
	}
	if _, ok, err := s.Get(expiringPod("zz")); ok || err != nil {
		t.Errorf("Get of an absent key = _, %v, %v; want absent", ok, err)
	}
}

func TestExpirationCache_KeyFailuresAreKeyErrors(t *testing.T) {
	s := NewTTLStore(MetaNamespaceKeyFunc, time.Minute)
	ops := map[string]func() error{
		"add":     func() error { return s.Add(42) },
		"update":  func() error { return s.Update(42) },
		"delete":  func() error { return s.Delete(42) },
		"replace": func() error { return s.Replace([]interface{}{expiringPod("a"), 42}, "1") },
		"get": func() error {
			_, _, err := s.Get(42)
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			var keyErr KeyError
			if err := op(); !errors.As(err, &keyErr) {
				t.Errorf("got %v, want a KeyError", err)
			}
			if keys := s.ListKeys(); len(keys) != 0 {
				t.Errorf("a failed write changed the content: %v", keys)
			}
		})
	}
}

func TestExpirationCache_ResourceVersionAndResync(t *testing.T) {
	restore := setFeatureForTesting(featureAtomicFIFO, true)
	defer restore()
	s := NewTTLStore(MetaNamespaceKeyFunc, time.Minute)
	if err := s.Replace([]interface{}{expiringPod("a")}, "10"); err != nil {
		t.Fatal(err)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "10" {
		t.Errorf("after Replace: %q, want 10", got)
	}
	s.Bookmark("12")
	if got := s.LastStoreSyncResourceVersion(); got != "12" {
		t.Errorf("after Bookmark: %q, want 12", got)
	}
	if err := s.Resync(); err != nil {
		t.Errorf("Resync: %v", err)
	}
}

func TestTTLPolicy_IsExpired(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakeClock(now)
	cases := map[string]struct {
		policy TTLPolicy
		age    time.Duration
		want   bool
	}{
		"younger than ttl":     {TTLPolicy{TTL: time.Minute, Clock: clock}, 59 * time.Second, false},
		"exactly ttl":          {TTLPolicy{TTL: time.Minute, Clock: clock}, time.Minute, false},
		"older than ttl":       {TTLPolicy{TTL: time.Minute, Clock: clock}, time.Minute + 1, true},
		"zero ttl keeps":       {TTLPolicy{TTL: 0, Clock: clock}, time.Hour, false},
		"negative ttl keeps":   {TTLPolicy{TTL: -time.Second, Clock: clock}, time.Hour, false},
		"nil clock: real time": {TTLPolicy{TTL: time.Minute}, 0, true}, // stamped at 2024-01-01, long ago
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			entry := &TimestampedEntry{Obj: expiringPod("a"), Timestamp: now.Add(-tc.age)}
			if got := tc.policy.IsExpired(entry); got != tc.want {
				t.Errorf("IsExpired = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFakeExpirationStore_ReportsExpiredKeysOnly(t *testing.T) {
	entryKey := func(obj interface{}) (string, error) {
		return MetaNamespaceKeyFunc(obj.(*TimestampedEntry).Obj)
	}
	cases := map[string]struct {
		policy      *FakeExpirationPolicy
		wantList    []string
		wantDeleted []string
	}{
		"keys in NeverExpire stay": {
			policy:      &FakeExpirationPolicy{NeverExpire: sets.New("ns/keep"), RetrieveKeyFunc: entryKey},
			wantList:    []string{"keep"},
			wantDeleted: []string{"ns/drop1", "ns/drop2"},
		},
		"nil RetrieveKeyFunc uses the store key": {
			policy:      &FakeExpirationPolicy{NeverExpire: sets.New("ns/keep", "ns/drop2")},
			wantList:    []string{"drop2", "keep"},
			wantDeleted: []string{"ns/drop1"},
		},
		"nil NeverExpire expires everything": {
			policy:      &FakeExpirationPolicy{RetrieveKeyFunc: entryKey},
			wantList:    []string{},
			wantDeleted: []string{"ns/drop1", "ns/drop2", "ns/keep"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			deleted := make(chan string, 10)
			clock := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			s := NewFakeExpirationStore(MetaNamespaceKeyFunc, deleted, tc.policy, clock)
			for _, name := range []string{"keep", "drop1", "drop2", "explicit"} {
				if err := s.Add(expiringPod(name)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Delete(expiringPod("explicit")); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantList, expiringPodNames(s.List()), emptyAsNilSlices); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			close(deleted)
			var got []string
			for key := range deleted {
				got = append(got, key)
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.wantDeleted, got, emptyAsNilSlices); diff != "" {
				t.Errorf("reported deletions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFakeExpirationStore_NilChannelStillExpires(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	s := NewFakeExpirationStore(MetaNamespaceKeyFunc, nil, &FakeExpirationPolicy{}, clock)
	if err := s.Add(expiringPod("a")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetByKey("ns/a"); ok {
		t.Error("entry should have expired")
	}
	if keys := s.ListKeys(); len(keys) != 0 {
		t.Errorf("expired entry not removed: %v", keys)
	}
}

// staleWhenLabelled expires entries whose pod carries the "stale" label.
type staleWhenLabelled struct{}

func (staleWhenLabelled) IsExpired(e *TimestampedEntry) bool {
	_, stale := e.Obj.(*v1.Pod).Labels["stale"]
	return stale
}

// TestExpirationCache_ExpiryNeverRemovesAFresherWrite races readers that
// remove stale entries with a writer that replaces each stale entry by a
// fresh one: the fresh entries must all survive.
func TestExpirationCache_ExpiryNeverRemovesAFresherWrite(t *testing.T) {
	const keys = 200
	s := NewExpirationStore(MetaNamespaceKeyFunc, staleWhenLabelled{})
	stale := func(name string) *v1.Pod {
		p := expiringPod(name)
		p.Labels = map[string]string{"stale": ""}
		return p
	}

	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range keys {
					_, _, _ = s.GetByKey(fmt.Sprintf("ns/p%d", i))
				}
				_ = s.List()
			}
		})
	}
	for i := range keys {
		name := fmt.Sprintf("p%d", i)
		if err := s.Add(stale(name)); err != nil {
			t.Fatal(err)
		}
		if err := s.Add(expiringPod(name)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	readers.Wait()

	if got := len(s.List()); got != keys {
		t.Errorf("%d fresh entries survived, want %d", got, keys)
	}
}

// BenchmarkExpirationCache_GetByKeyParallel measures concurrent reads of
// valid entries, which take no lock of the cache itself.
func BenchmarkExpirationCache_GetByKeyParallel(b *testing.B) {
	const n = 1000
	s := NewTTLStore(MetaNamespaceKeyFunc, time.Hour)
	keys := make([]string, n)
	for i := range keys {
		p := expiringPod(fmt.Sprintf("p%04d", i))
		keys[i] = "ns/" + p.Name
		if err := s.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok, _ := s.GetByKey(keys[i%n]); !ok {
				b.Error("entry missing")
				return
			}
			i++
		}
	})
}
