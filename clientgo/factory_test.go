package clientgo

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
)

// startFactory starts f and shuts it down when the test ends.
func startFactory(t *testing.T, f informers.SharedInformerFactory) {
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	sctx, scancel := context.WithTimeout(ctx, wait.ForeverTestTimeout)
	defer scancel()
	for typ, synced := range f.WaitForCacheSync(sctx.Done()) {
		if !synced {
			t.Fatalf("WaitForCacheSync: %v did not sync", typ)
		}
	}
}

// TestFactory_InformersAndListersRunOnKcache builds the pod informer and
// lister of a generated factory through each constructor, and checks they
// run on kcache, see the objects of the factory's namespace, and deliver
// events.
func TestFactory_InformersAndListersRunOnKcache(t *testing.T) {
	tests := map[string]struct {
		build func(kubernetes.Interface) (informers.SharedInformerFactory, error)
		want  []string // pods listed at start
	}{
		"NewSharedInformerFactory": {
			build: func(c kubernetes.Interface) (informers.SharedInformerFactory, error) {
				return NewSharedInformerFactory(c, 0), nil
			},
			want: []string{"ns1/a", "ns2/b"},
		},
		"NewFilteredSharedInformerFactory": {
			build: func(c kubernetes.Interface) (informers.SharedInformerFactory, error) {
				return NewFilteredSharedInformerFactory(c, 0, "ns1", nil), nil
			},
			want: []string{"ns1/a"},
		},
		"NewSharedInformerFactoryWithOptions": {
			build: func(c kubernetes.Interface) (informers.SharedInformerFactory, error) {
				return NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace("ns1")), nil
			},
			want: []string{"ns1/a"},
		},
		"WrapFactory": {
			build: func(c kubernetes.Interface) (informers.SharedInformerFactory, error) {
				return WrapFactory(informers.NewSharedInformerFactory(c, 0))
			},
			want: []string{"ns1/a", "ns2/b"},
		},
		"WrapFactory with a tweak": {
			build: func(c kubernetes.Interface) (informers.SharedInformerFactory, error) {
				//lint:ignore SA1019 wrapping a factory built by the deprecated constructor must work too
				return WrapFactory(informers.NewFilteredSharedInformerFactory(c, 0, "", func(o *metav1.ListOptions) {
					o.LabelSelector = "app=b"
				}))
			},
			want: []string{"ns2/b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(newPod("ns1", "a"), newPod("ns2", "b"))
			watching := watchOpened(client)
			f, err := tc.build(client)
			if err != nil {
				t.Fatal(err)
			}
			pods := f.Core().V1().Pods()
			inf := pods.Informer()
			if _, ok := Unwrap(inf); !ok {
				t.Fatalf("informer %T is not on kcache", inf)
			}
			rec := newRecorder()
			if _, err := inf.AddEventHandler(rec); err != nil {
				t.Fatal(err)
			}
			lister := pods.Lister()
			startFactory(t, f)
			rec.next(t, len(tc.want))

			got, err := lister.List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			objs := make([]interface{}, len(got))
			for i, p := range got {
				objs[i] = p
			}
			if diff := cmp.Diff(tc.want, keysOf(objs)); diff != "" {
				t.Errorf("lister (-want +got):\n%s", diff)
			}

			// A pod every factory above sees (ns1, app=b): created, then
			// deleted, once the informer watches (the fake clientset does
			// not replay changes made between its list and its watch).
			select {
			case <-watching:
			case <-time.After(wait.ForeverTestTimeout):
				t.Fatal("the informer never opened its watch")
			}
			ctx := context.Background()
			p := newPod("ns1", "c")
			p.Labels["app"] = "b"
			if _, err := client.CoreV1().Pods("ns1").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := client.CoreV1().Pods("ns1").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"add ns1/c initial=false", "delete ns1/c"}, rec.next(t, 2)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFactory_OneInformerPerType checks the typed, untyped and generic
// paths share the one kcache informer the factory keeps.
func TestFactory_OneInformerPerType(t *testing.T) {
	f := NewSharedInformerFactory(fake.NewClientset(newPod("ns", "a")), 0)
	first, _ := Unwrap(f.Core().V1().Pods().Informer())
	typed, _ := Unwrap(f.Core().V1().Pods().Informer())
	gi, err := f.ForResource(v1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	generic, ok := Unwrap(gi.Informer())
	if first == nil || !ok || first != typed || first != generic {
		t.Errorf("informers differ: %p %p %p", first, typed, generic)
	}
	startFactory(t, f)
	objs, err := gi.Lister().ByNamespace("ns").List(labels.Everything())
	if err != nil || len(objs) != 1 {
		t.Errorf("generic lister = %v, %v", objs, err)
	}
}

// TestFactory_ForResourceFirst builds an informer through ForResource
// before any typed accessor, and one for an unknown resource.
func TestFactory_ForResourceFirst(t *testing.T) {
	f := NewSharedInformerFactory(fake.NewClientset(), 0)
	gi, err := f.ForResource(v1.SchemeGroupVersion.WithResource("configmaps"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Unwrap(gi.Informer()); !ok {
		t.Errorf("ForResource informer %T is not on kcache", gi.Informer())
	}
	if _, err := f.ForResource(v1.SchemeGroupVersion.WithResource("nonsense")); err == nil {
		t.Error("ForResource(nonsense): no error")
	}
	startFactory(t, f)
}

// TestFactory_KeepsFactoryOptions checks the transform option of the
// client-go factory applies to the kcache informers it keeps.
func TestFactory_KeepsFactoryOptions(t *testing.T) {
	strip := func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		p.Labels = nil
		return p, nil
	}
	f := NewSharedInformerFactoryWithOptions(fake.NewClientset(newPod("ns", "a")), 0, informers.WithTransform(strip))
	lister := f.Core().V1().Pods().Lister()
	startFactory(t, f)
	p, err := lister.Pods("ns").Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels != nil {
		t.Errorf("labels = %v, want none (transformed away)", p.Labels)
	}
}

// otherInformer is a SharedIndexInformer that is neither client-go's nor
// kcache's.
type otherInformer struct{ toolscache.SharedIndexInformer }

// otherFactory is a SharedInformerFactory that is not client-go's.
type otherFactory struct {
	informers.SharedInformerFactory
}

// TestOnKcache_KeepsWhatItCannotRebuild checks the fallbacks of the
// factory's rebuild.
func TestOnKcache_KeepsWhatItCannotRebuild(t *testing.T) {
	kc := NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.Pod{}, 0, nil)
	other := &otherInformer{}
	tests := map[string]struct {
		in         toolscache.SharedIndexInformer
		wantSame   bool
		wantKcache bool
	}{
		"kcache informer":    {in: kc, wantSame: true, wantKcache: true},
		"unknown informer":   {in: other, wantSame: true},
		"client-go informer": {in: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.Pod{}, 0, nil), wantKcache: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := onKcache(tc.in, 0)
			if same := got == tc.in; same != tc.wantSame {
				t.Errorf("returned the input: %v, want %v", same, tc.wantSame)
			}
			if _, ok := Unwrap(got); ok != tc.wantKcache {
				t.Errorf("on kcache: %v, want %v", ok, tc.wantKcache)
			}
		})
	}
	if onKcache(nil, 0) != nil {
		t.Error("onKcache(nil) is not nil")
	}
}

// TestClientGoInformerParts_ReadsWhatItWasBuiltWith checks the reflective
// read against the values a client-go informer was built with.
func TestClientGoInformerParts_ReadsWhatItWasBuiltWith(t *testing.T) {
	lw := &toolscache.ListWatch{}
	obj := &v1.Pod{}
	gotLW, gotObj, err := clientGoInformerParts(toolscache.NewSharedIndexInformer(lw, obj, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if gotLW != toolscache.ListerWatcher(lw) || gotObj != runtime.Object(obj) {
		t.Errorf("read %p %p, built with %p %p", gotLW, gotObj, lw, obj)
	}
	for name, in := range map[string]toolscache.SharedIndexInformer{
		"nil":          nil,
		"unknown type": &otherInformer{},
		"kcache":       NewSharedIndexInformer(lw, obj, 0, nil),
	} {
		if _, _, err := clientGoInformerParts(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestWrapFactory_Inputs checks what WrapFactory accepts.
func TestWrapFactory_Inputs(t *testing.T) {
	client := fake.NewClientset()
	w := NewSharedInformerFactory(client, 0)
	if got, err := WrapFactory(w); err != nil || got != w {
		t.Errorf("WrapFactory(wrapped) = %v, %v; want it back", got, err)
	}
	if _, err := WrapFactory(&otherFactory{}); !errors.Is(err, errNotClientGo) {
		t.Errorf("WrapFactory(other) error = %v, want errNotClientGo", err)
	}
	if _, err := WrapFactory(nil); err == nil {
		t.Error("WrapFactory(nil): no error")
	}
	//lint:ignore SA1019 the deprecated constructor is one of the factories whose settings must be read
	s, err := clientGoFactorySettings(informers.NewFilteredSharedInformerFactory(client, 0, "ns", nil))
	if err != nil || s.client != kubernetes.Interface(client) || s.namespace != "ns" || s.tweak != nil {
		t.Errorf("settings = %+v, %v", s, err)
	}
}

// watchOpened returns a channel closed once client served its first watch.
// The watch is the tracker's, as the fake clientset's own reactor gives.
func watchOpened(client *fake.Clientset) <-chan struct{} {
	opened := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		once.Do(func() { close(opened) })
		return true, w, nil
	})
	return opened
}
