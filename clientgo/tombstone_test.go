package clientgo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

func TestKcacheTombstone(t *testing.T) {
	p := newPod("ns", "a")
	tests := map[string]struct {
		in, want interface{}
	}{
		"client-go tombstone becomes kcache's": {
			in:   toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p},
			want: kcache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p},
		},
		"kcache tombstone unchanged": {
			in:   kcache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p},
			want: kcache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p},
		},
		"client-go tombstone without object": {
			in:   toolscache.DeletedFinalStateUnknown{Key: "ns/a"},
			want: kcache.DeletedFinalStateUnknown{Key: "ns/a"},
		},
		"pointer to a client-go tombstone unchanged (informers never deliver one)": {
			in:   &toolscache.DeletedFinalStateUnknown{Key: "ns/a"},
			want: &toolscache.DeletedFinalStateUnknown{Key: "ns/a"},
		},
		"object unchanged": {in: p, want: p},
		"nil unchanged":    {in: nil, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, KcacheTombstone(tc.in)); diff != "" {
				t.Errorf("KcacheTombstone (-want +got):\n%s", diff)
			}
		})
	}
}

// deleteHandler is the body of a delete handler written against kcache
// (the import-change path): it says what it made of obj.
type deleteHandler func(obj interface{}) string

// finalPod is a delete handler as written for client-go, with kcache's
// types after the import change: a pod, or the pod in a tombstone.
func finalPod(obj interface{}) string {
	if tombstone, ok := obj.(kcache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if p, ok := obj.(*v1.Pod); ok {
		return "pod " + p.Namespace + "/" + p.Name
	}
	return "missed " + describe(obj)
}

// TestTombstones_MixedProgram runs a program that changed its import to
// kcache and also runs an informer client-go builds (as a generated
// factory does): the same delete handler, written with kcache's types, on
// both informers, each of which misses a delete and delivers a tombstone
// on relist. Written as before, the handler misses client-go's tombstone;
// README's one-line fix (KcacheTombstone, or matching both types) makes it
// see both.
func TestTombstones_MixedProgram(t *testing.T) {
	tests := map[string]struct {
		handler deleteHandler
		want    map[string]string // informer kind -> what the handler made of the tombstone
	}{
		"kcache's type only: the trap": {
			handler: finalPod,
			want: map[string]string{
				"built by client-go": "missed client-go tombstone ns/b",
				"built by kcache":    "pod ns/b",
			},
		},
		"KcacheTombstone first": {
			handler: func(obj interface{}) string { return finalPod(KcacheTombstone(obj)) },
			want: map[string]string{
				"built by client-go": "pod ns/b",
				"built by kcache":    "pod ns/b",
			},
		},
		"KcacheTombstone first, key from kcache's DeletionHandlingMetaNamespaceKeyFunc": {
			handler: func(obj interface{}) string {
				key, err := kcache.DeletionHandlingMetaNamespaceKeyFunc(KcacheTombstone(obj))
				if err != nil {
					return "error " + err.Error()
				}
				return "key " + key
			},
			want: map[string]string{
				"built by client-go": "key ns/b",
				"built by kcache":    "key ns/b",
			},
		},
		"both types matched": {
			handler: func(obj interface{}) string {
				switch t := obj.(type) {
				case kcache.DeletedFinalStateUnknown:
					obj = t.Obj
				case toolscache.DeletedFinalStateUnknown:
					obj = t.Obj
				}
				return finalPod(obj)
			},
			want: map[string]string{
				"built by client-go": "pod ns/b",
				"built by kcache":    "pod ns/b",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			for kind, build := range mixedInformers {
				got[kind] = missedDelete(t, build, tc.handler)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("what the handler made of each tombstone (-want +got):\n%s", diff)
			}
		})
	}
}

// mixedInformers builds, over lw, an informer of each kind a mixed
// program runs, with h added: one client-go builds and one kcache builds.
// Both take kcache's handler type, as code after the import change has it.
var mixedInformers = map[string]func(t *testing.T, lw toolscache.ListerWatcher, h kcache.ResourceEventHandler) toolscache.InformerSynced{
	"built by client-go": func(t *testing.T, lw toolscache.ListerWatcher, h kcache.ResourceEventHandler) toolscache.InformerSynced {
		inf := toolscache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, toolscache.Indexers{})
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatalf("add handler: %v", err)
		}
		run(t, inf)
		return inf.HasSynced
	},
	"built by kcache": func(t *testing.T, lw toolscache.ListerWatcher, h kcache.ResourceEventHandler) toolscache.InformerSynced {
		inf := kcache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, kcache.Indexers{})
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatalf("add handler: %v", err)
		}
		run(t, inf)
		return inf.HasSynced
	},
}

// missedDelete builds an informer with build over a source holding one
// pod, deletes the pod behind the watch's back so that the relist delivers
// a tombstone, and returns what handler made of it.
func missedDelete(t *testing.T, build func(*testing.T, toolscache.ListerWatcher, kcache.ResourceEventHandler) toolscache.InformerSynced, handler deleteHandler) string {
	t.Helper()
	b := newPod("ns", "b")
	src := newSource(t, b)
	rec := newRecorder()
	synced := build(t, src, kcache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) { rec.events <- handler(obj) },
	})
	waitSynced(t, synced)
	src.DeleteDropWatch(b.DeepCopy())
	src.ResetWatch()
	return rec.next(t, 1)[0]
}
