package cache

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// The behaviour the overlay of client-go v0.38 switches on through
// releaseBehaviour, checked both ways: off is v0.37.2's (kcache's default).

// withReleaseBehaviour runs set, which changes releaseBehaviour, and
// restores it after the test.
func withReleaseBehaviour(t *testing.T, set func()) {
	saved := releaseBehaviour
	set()
	t.Cleanup(func() { releaseBehaviour = saved })
}

// vanishingIndexer answers IndexKeys with one more key, whose object was
// deleted between the index lookup and the read.
type vanishingIndexer struct {
	Indexer
	vanished string
}

func (v vanishingIndexer) IndexKeys(name, value string) ([]string, error) {
	keys, err := v.Indexer.IndexKeys(name, value)
	return append(keys, v.vanished), err
}

func TestMutationCache_ByIndexWithAKeyDeletedMeanwhile(t *testing.T) {
	for name, tc := range map[string]struct {
		skipVanished bool
		want         []string
	}{
		"v0.37: the deleted key counts as indexed, its remembered write is left out": {want: []string{"a:5"}},
		"v0.38: the deleted key does not count, its remembered write is returned":    {skipVanished: true, want: []string{"a:5", "gone:9"}},
	} {
		t.Run(name, func(t *testing.T) {
			withReleaseBehaviour(t, func() { releaseBehaviour.mutationCacheSkipsVanished = tc.skipVanished })
			store := NewIndexer(MetaNamespaceKeyFunc, mutationNodeIndexers)
			if err := store.Add(mutationPod("a", "ua", "5", "n1")); err != nil {
				t.Fatal(err)
			}
			clk := testingclock.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			c := newMutationCache(klog.Logger{}, store, MutationCacheOptions{IncludeAdds: true, Indexer: vanishingIndexer{store, "ns/gone"}}, clk)
			c.Mutation(mutationPod("gone", "ug", "9", "n1"))
			items, err := c.ByIndex("by-node", "n1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, podNamesAndVersions(items)); diff != "" {
				t.Errorf("ByIndex (-want +got):\n%s", diff)
			}
		})
	}
}

// countingRVProvider counts the gauges asked of it.
type countingRVProvider struct {
	noopInformerMetricsProvider
	made  *int
	gauge *recordingGauge
}

func (p countingRVProvider) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	*p.made++
	return p.gauge
}

func TestStore_ResourceVersionGaugeIsMadeLazilyOnV038(t *testing.T) {
	for name, lazy := range map[string]bool{"v0.37: made with the store": false, "v0.38: made at its first Set": true} {
		t.Run(name, func(t *testing.T) {
			withReleaseBehaviour(t, func() { releaseBehaviour.lazyStoreRVMetric = lazy })
			defer ResetInformerNamesForTesting()
			informer, err := NewInformerName("lazy-rv-test")
			if err != nil {
				t.Fatal(err)
			}
			made, g := 0, &recordingGauge{}
			s := NewStore(MetaNamespaceKeyFunc, WithStoreMetrics(informer.WithResource(podsGVR), countingRVProvider{made: &made, gauge: g}))
			if want := map[bool]int{false: 1, true: 0}[lazy]; made != want {
				t.Errorf("gauges made with the store: %d, want %d", made, want)
			}
			_ = s.Add(testPod("ns", "a", "42"))
			_ = s.Add(testPod("ns", "b", "43"))
			if made != 1 || g.last != 43 {
				t.Errorf("after two adds: %d gauges made, value %v; want 1 and 43", made, g.last)
			}
		})
	}
}

// TestRealFIFO_ResyncOfAKnownObjectItsKeyFunctionRefuses checks the error of
// each release: v0.37.2's text keeps the prefix and wraps nothing; v0.38's
// wraps the KeyError.
func TestRealFIFO_ResyncOfAKnownObjectItsKeyFunctionRefuses(t *testing.T) {
	refused := errors.New("no key for you")
	for name, tc := range map[string]struct {
		wrapsKeyError bool
		want          string
		wantKeyError  bool
	}{
		"v0.37": {want: "couldn't queue object: %!w(<nil>)"},
		"v0.38": {wrapsKeyError: true, want: "couldn't queue object: couldn't create key for object ns/a: no key for you", wantKeyError: true},
	} {
		t.Run(name, func(t *testing.T) {
			withReleaseBehaviour(t, func() { releaseBehaviour.resyncQueueErrorWrapsKeyError = tc.wrapsKeyError })
			known := newFakeKnown()
			known.objs["ns/a"] = "ns/a"
			f := NewRealFIFOWithOptions(RealFIFOOptions{
				KeyFunction:  func(interface{}) (string, error) { return "", refused },
				KnownObjects: known,
			})
			err := f.Resync()
			if err == nil {
				t.Fatal("Resync returned no error")
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("Resync error = %q, want %q", got, tc.want)
			}
			var keyErr KeyError
			if got := errors.As(err, &keyErr); got != tc.wantKeyError {
				t.Errorf("errors.As(KeyError) = %v, want %v", got, tc.wantKeyError)
			}
			if got := errors.Is(err, refused); got != tc.wantKeyError {
				t.Errorf("errors.Is(the key function's error) = %v, want %v", got, tc.wantKeyError)
			}
		})
	}
}
