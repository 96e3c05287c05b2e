package cache

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ctlPod is pod ns/name at resource version rv.
func ctlPod(name string, rv int) *v1.Pod { return testPod("ns", name, fmt.Sprint(rv)) }

// ctlNoKey has no object metadata, so no key.
type ctlNoKey struct{}

// ctlNodeIndex indexes pods by node and fails for pods named "bad".
func ctlNodeIndex(obj interface{}) ([]string, error) {
	pod := obj.(*v1.Pod)
	if pod.Name == "bad" {
		return nil, errors.New("bad pods have no node")
	}
	return []string{pod.Spec.NodeName}, nil
}

// ctlStore returns an Indexer holding pods, with an index that fails for
// pods named "bad".
func ctlStore(t *testing.T, pods ...*v1.Pod) Indexer {
	t.Helper()
	s := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{"by-node": ctlNodeIndex})
	for _, p := range pods {
		if err := s.Add(p); err != nil {
			t.Fatalf("setting up the store: %v", err)
		}
	}
	return s
}

// ctlPlainStore hides its store's Transaction method.
type ctlPlainStore struct{ Store }

func TestProcessDeltas(t *testing.T) {
	tombstoneA := DeletedFinalStateUnknown{Key: "ns/a", Obj: ctlPod("a", 1)}
	cases := map[string]struct {
		stored  []*v1.Pod
		deltas  Deltas
		initial bool
		// unordered compares the calls sorted by key.
		unordered bool
		wantCalls []infEvent
		wantStore map[string]string
		// wantRV, if set, is the store's LastStoreSyncResourceVersion.
		wantRV string
		// wantErr is the exact error text; "" wants no error.
		wantErr string
		// wantPanic is the exact text of the error processDeltas panics
		// with; the other fields are not checked then.
		wantPanic string
	}{
		"added to an empty store is an add": {
			deltas:    Deltas{{Type: Added, Object: ctlPod("a", 1)}},
			wantCalls: []infEvent{{Kind: "add", Key: "ns/a", RV: "1"}},
			wantStore: map[string]string{"ns/a": "1"},
		},
		"the initial-list flag reaches the handler": {
			deltas: Deltas{{Type: Replaced, Object: ctlPod("a", 1)}}, initial: true,
			wantCalls: []infEvent{{Kind: "add", Key: "ns/a", RV: "1", Initial: true}},
			wantStore: map[string]string{"ns/a": "1"},
		},
		"a change to a stored object is an update from the stored one": {
			stored:    []*v1.Pod{ctlPod("a", 1)},
			deltas:    Deltas{{Type: Added, Object: ctlPod("a", 2)}},
			wantCalls: []infEvent{{Kind: "update", Key: "ns/a", OldRV: "1", RV: "2"}},
			wantStore: map[string]string{"ns/a": "2"},
		},
		"sync of a stored object is a same-version update": {
			stored:    []*v1.Pod{ctlPod("a", 1)},
			deltas:    Deltas{{Type: Sync, Object: ctlPod("a", 1)}},
			wantCalls: []infEvent{{Kind: "update", Key: "ns/a", OldRV: "1", RV: "1"}},
			wantStore: map[string]string{"ns/a": "1"},
		},
		"deleted removes the object and hands it over": {
			stored:    []*v1.Pod{ctlPod("a", 1), ctlPod("b", 1)},
			deltas:    Deltas{{Type: Deleted, Object: ctlPod("a", 2)}},
			wantCalls: []infEvent{{Kind: "delete", Key: "ns/a", RV: "2"}},
			wantStore: map[string]string{"ns/b": "1"},
		},
		"a tombstone is deleted by its key and handed over as is": {
			stored:    []*v1.Pod{ctlPod("a", 1)},
			deltas:    Deltas{{Type: Deleted, Object: tombstoneA}},
			wantCalls: []infEvent{{Kind: "delete", Key: "ns/a", RV: "1", Tombstone: true}},
			wantStore: map[string]string{},
		},
		"deleting an absent object still tells the handler": {
			deltas:    Deltas{{Type: Deleted, Object: ctlPod("a", 2)}},
			wantCalls: []infEvent{{Kind: "delete", Key: "ns/a", RV: "2"}},
			wantStore: map[string]string{},
		},
		"the deltas of an object apply in order": {
			deltas: Deltas{
				{Type: Added, Object: ctlPod("a", 1)}, {Type: Updated, Object: ctlPod("a", 2)},
				{Type: Deleted, Object: ctlPod("a", 3)}, {Type: Added, Object: ctlPod("a", 4)},
			},
			wantCalls: []infEvent{
				{Kind: "add", Key: "ns/a", RV: "1"}, {Kind: "update", Key: "ns/a", OldRV: "1", RV: "2"},
				{Kind: "delete", Key: "ns/a", RV: "3"}, {Kind: "add", Key: "ns/a", RV: "4"},
			},
			wantStore: map[string]string{"ns/a": "4"},
		},
		"a bookmark moves the store's version and calls nobody": {
			stored:    []*v1.Pod{ctlPod("a", 1)},
			deltas:    Deltas{{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: "9"}}},
			wantStore: map[string]string{"ns/a": "1"},
			wantRV:    "9",
		},
		"a bookmark without BookmarkInfo fails": {
			deltas:    Deltas{{Type: Bookmark, Object: ctlPod("a", 1)}},
			wantStore: map[string]string{},
			wantErr:   "bookmark delta did not contain BookmarkInfo: *v1.Pod",
		},
		"replaced all deletes the missing with tombstones, then updates and adds": {
			stored: []*v1.Pod{ctlPod("a", 1), ctlPod("b", 1)},
			deltas: Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{
				ResourceVersion: "5", Objects: []interface{}{ctlPod("b", 2), ctlPod("c", 3)},
			}}},
			wantCalls: []infEvent{
				{Kind: "delete", Key: "ns/a", RV: "1", Tombstone: true},
				{Kind: "update", Key: "ns/b", OldRV: "1", RV: "2"},
				{Kind: "add", Key: "ns/c", RV: "3"},
			},
			wantStore: map[string]string{"ns/b": "2", "ns/c": "3"},
			wantRV:    "5",
		},
		"replaced all of the initial list adds with the flag": {
			deltas: Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{
				ResourceVersion: "2", Objects: []interface{}{ctlPod("a", 1), ctlPod("b", 2)},
			}}},
			initial: true,
			wantCalls: []infEvent{
				{Kind: "add", Key: "ns/a", RV: "1", Initial: true},
				{Kind: "add", Key: "ns/b", RV: "2", Initial: true},
			},
			wantStore: map[string]string{"ns/a": "1", "ns/b": "2"},
		},
		"replaced all with nothing empties the store": {
			stored: []*v1.Pod{ctlPod("a", 1)},
			deltas: Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: "3"}}},
			wantCalls: []infEvent{
				{Kind: "delete", Key: "ns/a", RV: "1", Tombstone: true},
			},
			wantStore: map[string]string{},
			wantRV:    "3",
		},
		"replaced all without ReplacedAllInfo fails": {
			deltas:    Deltas{{Type: ReplacedAll, Object: []interface{}{ctlPod("a", 1)}}},
			wantStore: map[string]string{},
			wantErr:   "ReplacedAll did not contain ReplacedAllInfo: []interface {}",
		},
		"replaced all with a keyless object fails and changes nothing": {
			stored: []*v1.Pod{ctlPod("a", 1)},
			deltas: Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{
				ResourceVersion: "5", Objects: []interface{}{ctlPod("b", 2), ctlNoKey{}},
			}}},
			wantStore: map[string]string{"ns/a": "1"},
			wantErr:   "couldn't create key for object {}: object has no meta: object does not implement the Object interfaces",
		},
		"replaced all with an index failure panics": {
			stored: []*v1.Pod{ctlPod("a", 1)},
			deltas: Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{
				ResourceVersion: "5", Objects: []interface{}{ctlPod("bad", 2)},
			}}},
			wantPanic: `unable to calculate an index entry for key "ns/bad" on index "by-node": bad pods have no node`,
		},
		"sync all updates every stored object with itself": {
			stored:    []*v1.Pod{ctlPod("a", 1), ctlPod("b", 2)},
			deltas:    Deltas{{Type: SyncAll, Object: SyncAllInfo{}}},
			unordered: true,
			wantCalls: []infEvent{
				{Kind: "update", Key: "ns/a", OldRV: "1", RV: "1"},
				{Kind: "update", Key: "ns/b", OldRV: "2", RV: "2"},
			},
			wantStore: map[string]string{"ns/a": "1", "ns/b": "2"},
		},
		"sync all without SyncAllInfo fails": {
			deltas:    Deltas{{Type: SyncAll, Object: ctlPod("a", 1)}},
			wantStore: map[string]string{},
			wantErr:   "SyncAll did not contain SyncAllInfo: *v1.Pod",
		},
		"sync all ends the deltas, as in client-go": {
			stored:    []*v1.Pod{ctlPod("a", 1)},
			deltas:    Deltas{{Type: SyncAll, Object: SyncAllInfo{}}, {Type: Added, Object: ctlPod("b", 2)}},
			wantCalls: []infEvent{{Kind: "update", Key: "ns/a", OldRV: "1", RV: "1"}},
			wantStore: map[string]string{"ns/a": "1"},
		},
		"an index failure on add panics": {
			deltas:    Deltas{{Type: Added, Object: ctlPod("bad", 1)}},
			wantPanic: `unable to calculate an index entry for key "ns/bad" on index "by-node": bad pods have no node`,
		},
		"a keyless object ends the deltas without a call": {
			deltas:    Deltas{{Type: Added, Object: ctlNoKey{}}, {Type: Added, Object: ctlPod("a", 1)}},
			wantStore: map[string]string{},
			wantErr:   "couldn't create key for object {}: object has no meta: object does not implement the Object interfaces",
		},
		"an unknown delta type is skipped": {
			deltas:    Deltas{{Type: "Bogus", Object: ctlPod("a", 1)}, {Type: Added, Object: ctlPod("b", 2)}},
			wantCalls: []infEvent{{Kind: "add", Key: "ns/b", RV: "2"}},
			wantStore: map[string]string{"ns/b": "2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := ctlStore(t, tc.stored...)
			rec := &infRecorder{}
			var err error
			panicked := capturePanic(func() {
				err = processDeltas(klog.Background(), handlerSink{rec}, store, tc.deltas, tc.initial, DeletionHandlingMetaNamespaceKeyFunc)
			})
			if got := fmt.Sprint(panicked); (panicked != nil || tc.wantPanic != "") && got != tc.wantPanic {
				t.Fatalf("panic = %q, want %q", got, tc.wantPanic)
			}
			if tc.wantPanic != "" {
				return
			}
			if got := errText(err); got != tc.wantErr {
				t.Errorf("error = %q, want %q", got, tc.wantErr)
			}
			calls := rec.snapshot()
			if tc.unordered {
				sort.Slice(calls, func(i, j int) bool { return calls[i].Key < calls[j].Key })
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("handler calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStore, infStoreState(store)); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			if tc.wantRV != "" {
				if got := store.LastStoreSyncResourceVersion(); got != tc.wantRV {
					t.Errorf("store resource version = %q, want %q", got, tc.wantRV)
				}
			}
		})
	}
}

func TestProcessDeltasInBatch(t *testing.T) {
	cases := map[string]struct {
		stored  []*v1.Pod
		deltas  []Delta
		initial bool
		// transactionOnly runs the case only against a TransactionStore.
		transactionOnly bool
		wantCalls       []infEvent
		wantStore       map[string]string
		// wantErr is the exact error text per store kind ("transaction
		// store", "plain store"); absent wants no error.
		wantErr map[string]string
		// wantPanic is the exact text of the error processDeltasInBatch
		// panics with; the other fields are not checked then.
		wantPanic string
	}{
		"adds, updates and deletes of different objects, in order": {
			stored: []*v1.Pod{ctlPod("a", 1), ctlPod("b", 1)},
			deltas: []Delta{
				{Type: Added, Object: ctlPod("c", 2)}, {Type: Updated, Object: ctlPod("a", 3)},
				{Type: Deleted, Object: ctlPod("b", 4)}, {Type: Sync, Object: ctlPod("d", 5)},
			},
			wantCalls: []infEvent{
				{Kind: "add", Key: "ns/c", RV: "2"}, {Kind: "update", Key: "ns/a", OldRV: "1", RV: "3"},
				{Kind: "delete", Key: "ns/b", RV: "4"}, {Kind: "add", Key: "ns/d", RV: "5"},
			},
			wantStore: map[string]string{"ns/a": "3", "ns/c": "2", "ns/d": "5"},
		},
		"replaced deltas of the initial list carry the flag": {
			deltas:  []Delta{{Type: Replaced, Object: ctlPod("a", 1)}, {Type: Replaced, Object: ctlPod("b", 1)}},
			initial: true,
			wantCalls: []infEvent{
				{Kind: "add", Key: "ns/a", RV: "1", Initial: true}, {Kind: "add", Key: "ns/b", RV: "1", Initial: true},
			},
			wantStore: map[string]string{"ns/a": "1", "ns/b": "1"},
		},
		"a tombstone deletes by key": {
			stored: []*v1.Pod{ctlPod("a", 1), ctlPod("b", 1)},
			deltas: []Delta{
				{Type: Deleted, Object: DeletedFinalStateUnknown{Key: "ns/a", Obj: ctlPod("a", 1)}},
				{Type: Updated, Object: ctlPod("b", 2)},
			},
			wantCalls: []infEvent{
				{Kind: "delete", Key: "ns/a", RV: "1", Tombstone: true}, {Kind: "update", Key: "ns/b", OldRV: "1", RV: "2"},
			},
			wantStore: map[string]string{"ns/b": "2"},
		},
		"a keyless object is skipped, the others applied and told": {
			deltas:    []Delta{{Type: Added, Object: ctlPod("a", 1)}, {Type: Added, Object: ctlNoKey{}}, {Type: Added, Object: ctlPod("b", 2)}},
			wantCalls: []infEvent{{Kind: "add", Key: "ns/a", RV: "1"}, {Kind: "add", Key: "ns/b", RV: "2"}},
			wantStore: map[string]string{"ns/a": "1", "ns/b": "2"},
			wantErr: map[string]string{
				"transaction store": "not all items in the batch successfully processed: failed to execute (1/3) transactions failed due to: [couldn't create key for object {}: object has no meta: object does not implement the Object interfaces]",
				"plain store":       "unexpected error when handling deltas: [couldn't create key for object {}: object has no meta: object does not implement the Object interfaces]",
			},
		},
		"an index failure panics": {
			deltas:    []Delta{{Type: Added, Object: ctlPod("bad", 1)}, {Type: Added, Object: ctlPod("a", 1)}},
			wantPanic: `unable to calculate an index entry for key "ns/bad" on index "by-node": bad pods have no node`,
		},
		"a delta that cannot be batched fails the batch before any change": {
			stored: []*v1.Pod{ctlPod("a", 1)},
			deltas: []Delta{
				{Type: Added, Object: ctlPod("b", 1)},
				{Type: ReplacedAll, Object: ReplacedAllInfo{Objects: []interface{}{ctlPod("c", 1)}}},
			},
			transactionOnly: true,
			wantStore:       map[string]string{"ns/a": "1"},
			wantErr:         map[string]string{"transaction store": "Delta type ReplacedAll is not supported in batch processing"},
		},
	}
	stores := map[string]func(Indexer) Store{
		"transaction store": func(s Indexer) Store { return s },
		"plain store":       func(s Indexer) Store { return ctlPlainStore{s} },
	}
	for name, tc := range cases {
		for storeName, wrap := range stores {
			if tc.transactionOnly && storeName != "transaction store" {
				continue
			}
			t.Run(name+"/"+storeName, func(t *testing.T) {
				store := ctlStore(t, tc.stored...)
				rec := &infRecorder{}
				var err error
				panicked := capturePanic(func() {
					err = processDeltasInBatch(klog.Background(), handlerSink{rec}, wrap(store), tc.deltas, tc.initial, DeletionHandlingMetaNamespaceKeyFunc)
				})
				if got := fmt.Sprint(panicked); (panicked != nil || tc.wantPanic != "") && got != tc.wantPanic {
					t.Fatalf("panic = %q, want %q", got, tc.wantPanic)
				}
				if tc.wantPanic != "" {
					return
				}
				if got := errText(err); got != tc.wantErr[storeName] {
					t.Errorf("error = %q, want %q", got, tc.wantErr[storeName])
				}
				if diff := cmp.Diff(tc.wantCalls, rec.snapshot()); diff != "" {
					t.Errorf("handler calls (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantStore, infStoreState(store)); diff != "" {
					t.Errorf("store (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// ctlCheckingHandler hands every object to check, then to rec.
type ctlCheckingHandler struct {
	rec   *infRecorder
	check func(obj interface{})
}

func (h ctlCheckingHandler) OnAdd(obj interface{}, initial bool) {
	h.check(obj)
	h.rec.OnAdd(obj, initial)
}

func (h ctlCheckingHandler) OnUpdate(oldObj, newObj interface{}) {
	h.check(newObj)
	h.rec.OnUpdate(oldObj, newObj)
}

func (h ctlCheckingHandler) OnDelete(obj interface{}) {
	h.check(obj)
	h.rec.OnDelete(obj)
}

// ctlMarkTransform marks pods as transformed and drops their labels; it is
// idempotent.
func ctlMarkTransform(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	out := pod.DeepCopy()
	out.Annotations = map[string]string{"transformed": "yes"}
	out.Labels = nil
	return out, nil
}

func TestNewInformerFamily_KeepsTheStoreAndTellsTheHandler(t *testing.T) {
	indexers := Indexers{"by-node": byNodeIndex}
	cases := map[string]struct {
		build       func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller)
		indexed     bool
		transformed bool
	}{
		"NewInformer": {build: func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller) {
			return NewInformer(lw, &v1.Pod{}, 0, h)
		}},
		"NewIndexerInformer": {indexed: true, build: func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller) {
			return NewIndexerInformer(lw, &v1.Pod{}, 0, h, indexers)
		}},
		"NewInformerWithOptions": {build: func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller) {
			return NewInformerWithOptions(InformerOptions{ListerWatcher: lw, ObjectType: &v1.Pod{}, Handler: h})
		}},
		"NewInformerWithOptions with indexers and transform": {indexed: true, transformed: true, build: func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller) {
			return NewInformerWithOptions(InformerOptions{
				ListerWatcher: lw, ObjectType: &v1.Pod{}, Handler: h, Indexers: indexers, Transform: ctlMarkTransform,
			})
		}},
		"NewTransformingInformer": {transformed: true, build: func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller) {
			return NewTransformingInformer(lw, &v1.Pod{}, 0, h, ctlMarkTransform)
		}},
		"NewTransformingIndexerInformer": {indexed: true, transformed: true, build: func(lw ListerWatcher, h ResourceEventHandler) (Store, Controller) {
			return NewTransformingIndexerInformer(lw, &v1.Pod{}, 0, h, indexers, ctlMarkTransform)
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 0)
				src.Add(podOnNode("ns", "a", "n1", 0))
				src.Add(podOnNode("ns", "b", "n2", 0))
				rec := &infRecorder{}
				var untransformedMu sync.Mutex
				var untransformed []string
				check := func(obj interface{}) {
					if t, ok := obj.(DeletedFinalStateUnknown); ok {
						obj = t.Obj
					}
					pod := obj.(*v1.Pod)
					if tc.transformed && pod.Annotations["transformed"] != "yes" {
						untransformedMu.Lock()
						untransformed = append(untransformed, pod.Name)
						untransformedMu.Unlock()
					}
				}
				store, ctrl := tc.build(src, ctlCheckingHandler{rec: rec, check: check})
				if _, ok := store.(Indexer); tc.indexed && !ok {
					t.Fatalf("store is %T, want an Indexer", store)
				}
				if ctrl.HasSynced() {
					t.Errorf("controller synced before Run")
				}
				infRun(t, ctrl)
				<-ctrl.HasSyncedChecker().Done()
				src.Modify(podOnNode("ns", "a", "n2", 0))
				src.Add(podOnNode("ns", "c", "n1", 0))
				src.Delete(podOnNode("ns", "b", "n2", 0))
				synctest.Wait()

				calls := rec.snapshot()
				if len(calls) < 2 {
					t.Fatalf("handler calls: %v", calls)
				}
				sort.Slice(calls[:2], func(i, j int) bool { return calls[i].Key < calls[j].Key })
				want := []infEvent{
					{Kind: "add", Key: "ns/a", RV: "1", Initial: true},
					{Kind: "add", Key: "ns/b", RV: "2", Initial: true},
					{Kind: "update", Key: "ns/a", OldRV: "1", RV: "3"},
					{Kind: "add", Key: "ns/c", RV: "4"},
					{Kind: "delete", Key: "ns/b", RV: "5"},
				}
				if diff := cmp.Diff(want, calls); diff != "" {
					t.Errorf("handler calls (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(infTruth(t, src), infStoreState(store)); diff != "" {
					t.Errorf("store (-source +store):\n%s", diff)
				}
				if got := ctrl.LastSyncResourceVersion(); got != "5" {
					t.Errorf("LastSyncResourceVersion = %q, want 5", got)
				}
				if tc.indexed {
					got, err := store.(Indexer).ByIndex("by-node", "n2")
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff([]string{"ns/a"}, keysOf(got)); diff != "" {
						t.Errorf("ByIndex(by-node, n2) (-want +got):\n%s", diff)
					}
				}
				if tc.transformed {
					for _, obj := range store.List() {
						if obj.(*v1.Pod).Annotations["transformed"] != "yes" {
							t.Errorf("stored %s not transformed", obj.(*v1.Pod).Name)
						}
					}
				}
				if len(untransformed) > 0 {
					t.Errorf("handler got untransformed objects: %v", untransformed)
				}
			})
		})
	}
}

func TestNewInformer_ResyncHandsEveryObjectAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 2)
		rec := &infRecorder{}
		_, ctrl := NewInformer(src, &v1.Pod{}, time.Minute, rec)
		infRun(t, ctrl)
		<-ctrl.HasSyncedChecker().Done()
		// Virtual time: the bubble's clock jumps to the resync timer.
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		var resyncs []string
		for _, e := range rec.snapshot() {
			if e.Kind == "update" && e.OldRV == e.RV {
				resyncs = append(resyncs, e.Key)
			}
		}
		sort.Strings(resyncs)
		if diff := cmp.Diff([]string{"ns/p0", "ns/p1"}, resyncs); diff != "" {
			t.Errorf("objects resynced after one period (-want +got):\n%s", diff)
		}
	})
}

func TestController_ProcessErrorsDoNotStopTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := infSource(t, 0)
		queue := NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, KnownObjects: NewStore(MetaNamespaceKeyFunc)})
		var mu sync.Mutex
		var processed []string
		ctrl := New(&Config{
			Queue:         queue,
			ListerWatcher: src,
			ObjectType:    &v1.Pod{},
			Process: func(obj interface{}, _ bool) error {
				key := infKey(obj.(Deltas).Newest().Object)
				mu.Lock()
				processed = append(processed, key)
				mu.Unlock()
				if key == "ns/bad" {
					return errors.New("refused")
				}
				return nil
			},
		})
		stop := infRun(t, ctrl)
		<-ctrl.HasSyncedChecker().Done()
		src.Add(testPod("ns", "bad", ""))
		src.Add(testPod("ns", "good", ""))
		synctest.Wait()
		stop()
		if diff := cmp.Diff([]string{"ns/bad", "ns/good"}, processed); diff != "" {
			t.Errorf("processed (-want +got):\n%s", diff)
		}
		if !queue.IsClosed() {
			t.Errorf("queue still open after the controller stopped")
		}
	})
}

func TestController_ProcessBatchFollowsTheGate(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("InOrderInformersBatchProcess=%t", gate), func(t *testing.T) {
			defer setFeatureForTesting(featureInOrderInformersBatchProcess, gate)()
			synctest.Test(t, func(t *testing.T) {
				src := infSource(t, 5)
				known := NewStore(MetaNamespaceKeyFunc)
				queue := NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, KnownObjects: known})
				var mu sync.Mutex
				var sizes []int
				record := func(n int) {
					mu.Lock()
					defer mu.Unlock()
					sizes = append(sizes, n)
				}
				ctrl := New(&Config{
					Queue:         queue,
					ListerWatcher: src,
					ObjectType:    &v1.Pod{},
					Process: func(obj interface{}, _ bool) error {
						record(len(obj.(Deltas)))
						return nil
					},
					ProcessBatch: func(deltas []Delta, _ bool) error {
						record(len(deltas))
						return nil
					},
				})
				stop := infRun(t, ctrl)
				<-ctrl.HasSyncedChecker().Done()
				stop()
				want := []int{5}
				if !gate {
					want = []int{1, 1, 1, 1, 1}
				}
				if diff := cmp.Diff(want, sizes); diff != "" {
					t.Errorf("sizes of the processed runs (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestNewInformerQueue_FollowsTheGates(t *testing.T) {
	cases := map[string]struct {
		atomic, unlock bool
		wantKnown      bool
	}{
		"atomic FIFO, unlocked processing": {atomic: true, unlock: true},
		"atomic FIFO, locked processing":   {atomic: true, unlock: false},
		"plain FIFO reads the store":       {atomic: false, unlock: true, wantKnown: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer setFeatureForTesting(featureAtomicFIFO, tc.atomic)()
			defer setFeatureForTesting(featureUnlockWhileProcessingFIFO, tc.unlock)()
			store := NewStore(MetaNamespaceKeyFunc)
			q := newInformerQueue(klog.Background(), &v1.Pod{}, store, ctlMarkTransform, InformerNameAndResource{}, nil, true).(*RealFIFO)
			got := []bool{q.atomicEvents, q.emitDeltaTypeBookmark, q.unlockWhileProcessing, q.knownObjects != nil, q.transformer != nil}
			want := []bool{tc.atomic, tc.atomic, tc.atomic && tc.unlock, tc.wantKnown, true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(atomic, bookmarks, unlocked, known objects, transform) (-want +got):\n%s", diff)
			}
			if q.Name() != "RealFIFO *v1.Pod" {
				t.Errorf("queue name = %q", q.Name())
			}
		})
	}
}
