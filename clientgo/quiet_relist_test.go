package clientgo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
	kfake "github.com/kcache/cache/testing"
)

func TestSetQuietRelist_Refusals(t *testing.T) {
	tests := map[string]struct {
		informer func(t *testing.T) toolscache.SharedInformer
		wantErr  string
	}{
		"NewSharedIndexInformer": {informer: func(t *testing.T) toolscache.SharedInformer {
			return NewSharedIndexInformer(newSource(t), newPod("", ""), 0, nil)
		}},
		"Wrap": {informer: func(t *testing.T) toolscache.SharedInformer {
			return Wrap(kcache.NewSharedIndexInformer(newSource(t), newPod("", ""), 0, nil))
		}},
		"a factory's informer, behind client-go's typed adapter": {informer: func(*testing.T) toolscache.SharedInformer {
			return NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
		}},
		"client-go's informer": {informer: func(t *testing.T) toolscache.SharedInformer {
			return informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
		}, wantErr: "does not run on kcache"},
		"started": {informer: func(t *testing.T) toolscache.SharedInformer {
			inf := NewSharedIndexInformer(newSource(t, newPod("ns", "a")), newPod("", ""), 0, nil)
			run(t, inf)
			waitSynced(t, inf.HasSynced)
			return inf
		}, wantErr: "informer has already started"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := SetQuietRelist(tc.informer(t), true)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("SetQuietRelist: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("SetQuietRelist error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestSetQuietRelist_ARelistWithNothingChangedTellsNothing forces a relist
// (the history compacted while the watch was open) of an unchanged set of
// pods, then adds a marker pod: a quiet informer's handler sees only the
// marker, a default one an update per pod first.
func TestSetQuietRelist_ARelistWithNothingChangedTellsNothing(t *testing.T) {
	const pods = 4
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			src := kfake.NewFakeControllerSource()
			t.Cleanup(src.Shutdown)
			for i := range pods {
				if _, err := src.Create(newPod("ns", fmt.Sprint("p", i))); err != nil {
					t.Fatal(err)
				}
			}
			inf := NewSharedIndexInformer(src, newPod("", ""), 0, nil)
			if err := SetQuietRelist(inf, quiet); err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			run(t, inf)
			rec.next(t, pods)
			if err := src.Expire(nil); err != nil {
				t.Fatal(err)
			}
			// zz sorts after every pod: a relist that lists it tells of
			// it last.
			if _, err := src.Create(newPod("ns", "zz-marker")); err != nil {
				t.Fatal(err)
			}
			var want []string
			if !quiet {
				for i := range pods {
					want = append(want, fmt.Sprintf("update ns/p%d", i))
				}
			}
			want = append(want, "add ns/zz-marker initial=false")
			if diff := cmp.Diff(want, rec.next(t, len(want))); diff != "" {
				t.Errorf("events after the relist (-want +got):\n%s", diff)
			}
		})
	}
}
