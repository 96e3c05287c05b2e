package cache

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// handlerEvent is one call a recording handler received, reduced to what
// the tests compare: objects are named by key.
type handlerEvent struct {
	Kind      string // "add", "update" or "delete"
	Key       string
	OldKey    string `json:",omitempty"`
	Initial   bool   // isInInitialList, for adds
	Tombstone bool   // deletes: a tombstone (untyped) or FinalStateUnknown set (typed)
	NoObject  bool   // typed deletes: OptionalObj is the zero T
}

// recordedKey names any object a handler may get, including tombstones and
// objects without metadata.
func recordedKey(obj interface{}) string {
	if tombstone, ok := obj.(DeletedFinalStateUnknown); ok {
		return tombstone.Key
	}
	if pod, ok := obj.(*v1.Pod); ok && pod == nil {
		return "<nil pod>"
	}
	key, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return key
}

// handlerRecorder is an untyped handler that records what it receives.
type handlerRecorder struct {
	events []handlerEvent
}

func (r *handlerRecorder) OnAdd(obj interface{}, isInInitialList bool) {
	r.events = append(r.events, handlerEvent{Kind: "add", Key: recordedKey(obj), Initial: isInInitialList})
}

func (r *handlerRecorder) OnUpdate(oldObj, newObj interface{}) {
	r.events = append(r.events, handlerEvent{Kind: "update", Key: recordedKey(newObj), OldKey: recordedKey(oldObj)})
}

func (r *handlerRecorder) OnDelete(obj interface{}) {
	_, tombstone := obj.(DeletedFinalStateUnknown)
	r.events = append(r.events, handlerEvent{Kind: "delete", Key: recordedKey(obj), Tombstone: tombstone})
}

// typedHandlerRecorder is a typed handler for pods that records what it
// receives.
type typedHandlerRecorder struct {
	events []handlerEvent
}

func (r *typedHandlerRecorder) OnAdd(obj *v1.Pod, isInInitialList bool) {
	r.events = append(r.events, handlerEvent{Kind: "add", Key: recordedKey(obj), Initial: isInInitialList})
}

func (r *typedHandlerRecorder) OnUpdate(oldObj, newObj *v1.Pod) {
	r.events = append(r.events, handlerEvent{Kind: "update", Key: recordedKey(newObj), OldKey: recordedKey(oldObj)})
}

func (r *typedHandlerRecorder) OnDelete(obj DeletedObject[*v1.Pod]) {
	r.events = append(r.events, handlerEvent{
		Kind:      "delete",
		Key:       obj.GetKey(),
		Tombstone: obj.FinalStateUnknown != nil,
		NoObject:  obj.OptionalObj == nil,
	})
}

// handlerCall is one call to make on a handler under test.
type handlerCall struct {
	kind    string // "add", "update" or "delete"
	obj     interface{}
	old     interface{} // updates only
	initial bool        // adds only
}

func deliverCalls(h ResourceEventHandler, events []handlerCall) {
	for _, e := range events {
		switch e.kind {
		case "add":
			h.OnAdd(e.obj, e.initial)
		case "update":
			h.OnUpdate(e.old, e.obj)
		case "delete":
			h.OnDelete(e.obj)
		default:
			panic("unknown test event kind " + e.kind)
		}
	}
}

func deliverTypedCalls(h TypedResourceEventHandler[*v1.Pod], events []handlerCall) {
	for _, e := range events {
		switch e.kind {
		case "add":
			h.OnAdd(e.obj.(*v1.Pod), e.initial)
		case "update":
			h.OnUpdate(e.old.(*v1.Pod), e.obj.(*v1.Pod))
		case "delete":
			h.OnDelete(e.obj.(DeletedObject[*v1.Pod]))
		default:
			panic("unknown test event kind " + e.kind)
		}
	}
}

// oneCallOfEachKind is one call of each kind; the add is from the initial list.
func oneCallOfEachKind(p *v1.Pod) []handlerCall {
	return []handlerCall{
		{kind: "add", obj: p, initial: true},
		{kind: "update", old: p, obj: p},
		{kind: "delete", obj: p},
	}
}

func TestResourceEventHandlerFuncs_CallsOnlyTheFunctionsThatAreSet(t *testing.T) {
	pod := testPod("ns", "a", "")
	tests := map[string]struct {
		makeHandler func(r *handlerRecorder) ResourceEventHandler
		want        []handlerEvent
	}{
		"no functions": {
			makeHandler: func(r *handlerRecorder) ResourceEventHandler { return ResourceEventHandlerFuncs{} },
		},
		"all functions, initial flag dropped": {
			makeHandler: func(r *handlerRecorder) ResourceEventHandler {
				return ResourceEventHandlerFuncs{
					AddFunc:    func(obj interface{}) { r.OnAdd(obj, false) },
					UpdateFunc: r.OnUpdate,
					DeleteFunc: r.OnDelete,
				}
			},
			want: []handlerEvent{
				{Kind: "add", Key: "ns/a"},
				{Kind: "update", Key: "ns/a", OldKey: "ns/a"},
				{Kind: "delete", Key: "ns/a"},
			},
		},
		"update only": {
			makeHandler: func(r *handlerRecorder) ResourceEventHandler {
				return ResourceEventHandlerFuncs{UpdateFunc: r.OnUpdate}
			},
			want: []handlerEvent{{Kind: "update", Key: "ns/a", OldKey: "ns/a"}},
		},
		"detailed, no functions": {
			makeHandler: func(r *handlerRecorder) ResourceEventHandler { return ResourceEventHandlerDetailedFuncs{} },
		},
		"detailed, all functions, initial flag kept": {
			makeHandler: func(r *handlerRecorder) ResourceEventHandler {
				return ResourceEventHandlerDetailedFuncs{AddFunc: r.OnAdd, UpdateFunc: r.OnUpdate, DeleteFunc: r.OnDelete}
			},
			want: []handlerEvent{
				{Kind: "add", Key: "ns/a", Initial: true},
				{Kind: "update", Key: "ns/a", OldKey: "ns/a"},
				{Kind: "delete", Key: "ns/a"},
			},
		},
		"detailed, delete only": {
			makeHandler: func(r *handlerRecorder) ResourceEventHandler {
				return ResourceEventHandlerDetailedFuncs{DeleteFunc: r.OnDelete}
			},
			want: []handlerEvent{{Kind: "delete", Key: "ns/a"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &handlerRecorder{}
			deliverCalls(tc.makeHandler(rec), oneCallOfEachKind(pod))
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTypedResourceEventHandlerFuncs_CallsOnlyTheFunctionsThatAreSet(t *testing.T) {
	pod := testPod("ns", "a", "")
	typedEvents := []handlerCall{
		{kind: "add", obj: pod, initial: true},
		{kind: "update", old: pod, obj: pod},
		{kind: "delete", obj: DeletedObject[*v1.Pod]{OptionalObj: pod}},
	}
	tests := map[string]struct {
		makeHandler func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod]
		want        []handlerEvent
	}{
		"no functions": {
			makeHandler: func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod] {
				return TypedResourceEventHandlerFuncs[*v1.Pod]{}
			},
		},
		"all functions, initial flag dropped": {
			makeHandler: func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod] {
				return TypedResourceEventHandlerFuncs[*v1.Pod]{
					AddFunc:    func(obj *v1.Pod) { r.OnAdd(obj, false) },
					UpdateFunc: r.OnUpdate,
					DeleteFunc: r.OnDelete,
				}
			},
			want: []handlerEvent{
				{Kind: "add", Key: "ns/a"},
				{Kind: "update", Key: "ns/a", OldKey: "ns/a"},
				{Kind: "delete", Key: "ns/a"},
			},
		},
		"add only": {
			makeHandler: func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod] {
				return TypedResourceEventHandlerFuncs[*v1.Pod]{AddFunc: func(obj *v1.Pod) { r.OnAdd(obj, false) }}
			},
			want: []handlerEvent{{Kind: "add", Key: "ns/a"}},
		},
		"detailed, no functions": {
			makeHandler: func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod] {
				return TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{}
			},
		},
		"detailed, all functions, initial flag kept": {
			makeHandler: func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod] {
				return TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{AddFunc: r.OnAdd, UpdateFunc: r.OnUpdate, DeleteFunc: r.OnDelete}
			},
			want: []handlerEvent{
				{Kind: "add", Key: "ns/a", Initial: true},
				{Kind: "update", Key: "ns/a", OldKey: "ns/a"},
				{Kind: "delete", Key: "ns/a"},
			},
		},
		"detailed, update only": {
			makeHandler: func(r *typedHandlerRecorder) TypedResourceEventHandler[*v1.Pod] {
				return TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{UpdateFunc: r.OnUpdate}
			},
			want: []handlerEvent{{Kind: "update", Key: "ns/a", OldKey: "ns/a"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &typedHandlerRecorder{}
			deliverTypedCalls(tc.makeHandler(rec), typedEvents)
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// Filter tests: "in" pods carry the label the filters look for.
var (
	filterPodIn     = testPod("ns", "in", "", "pick", "yes")
	filterPodInToo  = testPod("ns", "in-too", "", "pick", "yes")
	filterPodOut    = testPod("ns", "out", "")
	filterPodOutToo = testPod("ns", "out-too", "")
	podIsPicked     = func(p *v1.Pod) bool { return p != nil && p.Labels["pick"] == "yes" }
	objIsPicked     = func(obj interface{}) bool { p, _ := obj.(*v1.Pod); return podIsPicked(p) }
	filterCases     = []struct {
		name   string
		events []handlerCall
		want   []handlerEvent
	}{
		{
			name:   "accepted add keeps its initial flag",
			events: []handlerCall{{kind: "add", obj: filterPodIn, initial: true}},
			want:   []handlerEvent{{Kind: "add", Key: "ns/in", Initial: true}},
		},
		{
			name:   "rejected add is dropped",
			events: []handlerCall{{kind: "add", obj: filterPodOut, initial: true}},
		},
		{
			name:   "update accepted before and after stays an update",
			events: []handlerCall{{kind: "update", old: filterPodIn, obj: filterPodInToo}},
			want:   []handlerEvent{{Kind: "update", Key: "ns/in-too", OldKey: "ns/in"}},
		},
		{
			name:   "update accepted only after becomes a non-initial add of the new object",
			events: []handlerCall{{kind: "update", old: filterPodOut, obj: filterPodIn}},
			want:   []handlerEvent{{Kind: "add", Key: "ns/in"}},
		},
		{
			name:   "update accepted only before becomes a delete of the old object",
			events: []handlerCall{{kind: "update", old: filterPodIn, obj: filterPodOut}},
			want:   []handlerEvent{{Kind: "delete", Key: "ns/in"}},
		},
		{
			name:   "update rejected before and after is dropped",
			events: []handlerCall{{kind: "update", old: filterPodOut, obj: filterPodOutToo}},
		},
		{
			name:   "accepted delete goes through",
			events: []handlerCall{{kind: "delete", obj: filterPodIn}},
			want:   []handlerEvent{{Kind: "delete", Key: "ns/in"}},
		},
		{
			name:   "rejected delete is dropped",
			events: []handlerCall{{kind: "delete", obj: filterPodOut}},
		},
	}
)

func TestFilteringResourceEventHandler_TurnsUpdatesIntoAddsAndDeletesAtTheFilterEdge(t *testing.T) {
	for _, tc := range filterCases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &handlerRecorder{}
			deliverCalls(FilteringResourceEventHandler{FilterFunc: objIsPicked, Handler: rec}, tc.events)
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilteringResourceEventHandler_FilterSeesTombstones(t *testing.T) {
	tombstone := DeletedFinalStateUnknown{Key: "ns/gone", Obj: filterPodIn}
	var filtered []interface{}
	rec := &handlerRecorder{}
	handler := FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool { filtered = append(filtered, obj); return true },
		Handler:    rec,
	}
	handler.OnDelete(tombstone)
	if diff := cmp.Diff([]interface{}{tombstone}, filtered); diff != "" {
		t.Errorf("filter input (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]handlerEvent{{Kind: "delete", Key: "ns/gone", Tombstone: true}}, rec.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestFilteringResourceEventHandler_NilFilterAcceptsAndNilHandlerDrops(t *testing.T) {
	t.Run("nil filter", func(t *testing.T) {
		rec := &handlerRecorder{}
		deliverCalls(FilteringResourceEventHandler{Handler: rec}, oneCallOfEachKind(filterPodOut))
		want := []handlerEvent{
			{Kind: "add", Key: "ns/out", Initial: true},
			{Kind: "update", Key: "ns/out", OldKey: "ns/out"},
			{Kind: "delete", Key: "ns/out"},
		}
		if diff := cmp.Diff(want, rec.events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("nil handler", func(t *testing.T) {
		calls := 0
		countingFilter := func(interface{}) bool { calls++; return true }
		deliverCalls(FilteringResourceEventHandler{FilterFunc: countingFilter}, oneCallOfEachKind(filterPodIn))
		if calls != 0 {
			t.Errorf("filter called %d times without a handler, want 0", calls)
		}
	})
}

func TestTypedFilteringResourceEventHandler_TurnsUpdatesIntoAddsAndDeletesAtTheFilterEdge(t *testing.T) {
	for _, tc := range filterCases {
		t.Run(tc.name, func(t *testing.T) {
			// Typed deletes carry a DeletedObject.
			events := make([]handlerCall, len(tc.events))
			for i, e := range tc.events {
				if e.kind == "delete" {
					e.obj = DeletedObject[*v1.Pod]{OptionalObj: e.obj.(*v1.Pod)}
				}
				events[i] = e
			}
			rec := &typedHandlerRecorder{}
			deliverTypedCalls(TypedFilteringResourceEventHandler[*v1.Pod]{FilterFunc: podIsPicked, Handler: rec}, events)
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTypedFilteringResourceEventHandler_FiltersDeletesOnOptionalObj(t *testing.T) {
	tests := map[string]struct {
		deleted DeletedObject[*v1.Pod]
		want    []handlerEvent
	}{
		"accepted object": {
			deleted: DeletedObject[*v1.Pod]{OptionalObj: filterPodIn},
			want:    []handlerEvent{{Kind: "delete", Key: "ns/in"}},
		},
		"accepted stale object from a tombstone": {
			deleted: DeletedObject[*v1.Pod]{OptionalObj: filterPodIn, FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/in", Obj: filterPodIn}},
			want:    []handlerEvent{{Kind: "delete", Key: "ns/in", Tombstone: true}},
		},
		"rejected object": {
			deleted: DeletedObject[*v1.Pod]{OptionalObj: filterPodOut},
		},
		"tombstone without object: filter gets nil and decides": {
			deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/in"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &typedHandlerRecorder{}
			TypedFilteringResourceEventHandler[*v1.Pod]{FilterFunc: podIsPicked, Handler: rec}.OnDelete(tc.deleted)
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTypedFilteringResourceEventHandler_NilFilterAcceptsAndNilHandlerDrops(t *testing.T) {
	typedAllKinds := []handlerCall{
		{kind: "add", obj: filterPodOut},
		{kind: "update", old: filterPodOut, obj: filterPodOut},
		{kind: "delete", obj: DeletedObject[*v1.Pod]{OptionalObj: filterPodOut}},
	}
	t.Run("nil filter", func(t *testing.T) {
		rec := &typedHandlerRecorder{}
		deliverTypedCalls(TypedFilteringResourceEventHandler[*v1.Pod]{Handler: rec}, typedAllKinds)
		want := []handlerEvent{
			{Kind: "add", Key: "ns/out"},
			{Kind: "update", Key: "ns/out", OldKey: "ns/out"},
			{Kind: "delete", Key: "ns/out"},
		}
		if diff := cmp.Diff(want, rec.events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("nil handler", func(t *testing.T) {
		calls := 0
		countingFilter := func(*v1.Pod) bool { calls++; return true }
		deliverTypedCalls(TypedFilteringResourceEventHandler[*v1.Pod]{FilterFunc: countingFilter}, typedAllKinds)
		if calls != 0 {
			t.Errorf("filter called %d times without a handler, want 0", calls)
		}
	})
}

// deletedView is what DeletedObject's accessors report.
type deletedView struct {
	Key, Name, Namespace string
	ObjectName           ObjectName
}

func viewDeleted[T Object](d DeletedObject[T]) deletedView {
	return deletedView{
		Key:        d.GetKey(),
		Name:       d.GetName(),
		Namespace:  d.GetNamespace(),
		ObjectName: d.GetObjectName(),
	}
}

func TestDeletedObject_NamesTheObjectWithOrWithoutTombstone(t *testing.T) {
	tests := map[string]struct {
		deleted DeletedObject[*v1.Pod]
		want    deletedView
	}{
		"namespaced object": {
			deleted: DeletedObject[*v1.Pod]{OptionalObj: testPod("ns", "a", "")},
			want:    deletedView{Key: "ns/a", Name: "a", Namespace: "ns", ObjectName: ObjectName{Namespace: "ns", Name: "a"}},
		},
		"cluster-scoped object": {
			deleted: DeletedObject[*v1.Pod]{OptionalObj: testPod("", "a", "")},
			want:    deletedView{Key: "a", Name: "a", ObjectName: ObjectName{Name: "a"}},
		},
		"no object, no tombstone": {
			deleted: DeletedObject[*v1.Pod]{},
		},
		"tombstone key wins over the stale object": {
			deleted: DeletedObject[*v1.Pod]{
				OptionalObj:       testPod("old-ns", "old", ""),
				FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/a", Obj: testPod("old-ns", "old", "")},
			},
			want: deletedView{Key: "ns/a", Name: "a", Namespace: "ns", ObjectName: ObjectName{Namespace: "ns", Name: "a"}},
		},
		"tombstone without object": {
			deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/a"}},
			want:    deletedView{Key: "ns/a", Name: "a", Namespace: "ns", ObjectName: ObjectName{Namespace: "ns", Name: "a"}},
		},
		"tombstone key without slash is cluster-scoped": {
			deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "a"}},
			want:    deletedView{Key: "a", Name: "a", ObjectName: ObjectName{Name: "a"}},
		},
		"tombstone key with extra slashes keeps them in the name": {
			deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/a/b"}},
			want:    deletedView{Key: "ns/a/b", Name: "a/b", Namespace: "ns", ObjectName: ObjectName{Namespace: "ns", Name: "a/b"}},
		},
		"empty tombstone key": {
			deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, viewDeleted(tc.deleted)); diff != "" {
				t.Errorf("accessors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeletedObject_InterfaceTypeHoldingNilPointerDoesNotPanic(t *testing.T) {
	// T is an interface; OptionalObj holds a typed nil pointer, so it is not
	// the zero T, and the pod's promoted methods would dereference nil.
	var nilPod *v1.Pod
	deleted := DeletedObject[metav1.Object]{OptionalObj: nilPod}
	if diff := cmp.Diff(deletedView{}, viewDeleted(deleted)); diff != "" {
		t.Errorf("accessors (-want +got):\n%s", diff)
	}
}

// capturedLog is a log line reduced to what tests compare: the error as text,
// the call's key/value pairs printed with %v.
type capturedLog struct {
	Type    ktesting.LogType
	Message string
	Err     string
	Values  map[string]string
}

// newCapturingLogger returns a logger that records what it is given, and a
// function that returns the records so far.
func newCapturingLogger(t *testing.T) (klog.Logger, func() []capturedLog) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	underlier, ok := logger.GetSink().(ktesting.Underlier)
	if !ok {
		t.Fatalf("ktesting logger sink %T has no buffer", logger.GetSink())
	}
	return logger, func() []capturedLog {
		var entries []capturedLog
		for _, entry := range underlier.GetBuffer().Data() {
			e := capturedLog{Type: entry.Type, Message: entry.Message}
			if entry.Err != nil {
				e.Err = entry.Err.Error()
			}
			for i := 0; i+1 < len(entry.ParameterKVList); i += 2 {
				if e.Values == nil {
					e.Values = map[string]string{}
				}
				e.Values[fmt.Sprint(entry.ParameterKVList[i])] = fmt.Sprint(entry.ParameterKVList[i+1])
			}
			entries = append(entries, e)
		}
		return entries
	}
}

func TestTypedHandlerAdapter_ConvertsObjectsAndTombstones(t *testing.T) {
	pod := testPod("ns", "a", "")
	newer := testPod("ns", "a", "", "v", "2")
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	tests := map[string]struct {
		events     []handlerCall
		want       []handlerEvent
		wantPanics int
	}{
		"add keeps the initial flag": {
			events: []handlerCall{{kind: "add", obj: pod, initial: true}, {kind: "add", obj: newer}},
			want:   []handlerEvent{{Kind: "add", Key: "ns/a", Initial: true}, {Kind: "add", Key: "ns/a"}},
		},
		"update": {
			events: []handlerCall{{kind: "update", old: pod, obj: newer}},
			want:   []handlerEvent{{Kind: "update", Key: "ns/a", OldKey: "ns/a"}},
		},
		"delete of a known object": {
			events: []handlerCall{{kind: "delete", obj: pod}},
			want:   []handlerEvent{{Kind: "delete", Key: "ns/a"}},
		},
		"tombstone with the last known object": {
			events: []handlerCall{{kind: "delete", obj: DeletedFinalStateUnknown{Key: "ns/a", Obj: pod}}},
			want:   []handlerEvent{{Kind: "delete", Key: "ns/a", Tombstone: true}},
		},
		"tombstone without object": {
			events: []handlerCall{{kind: "delete", obj: DeletedFinalStateUnknown{Key: "ns/a"}}},
			want:   []handlerEvent{{Kind: "delete", Key: "ns/a", Tombstone: true, NoObject: true}},
		},
		"tombstone with an object of the wrong type panics": {
			events:     []handlerCall{{kind: "delete", obj: DeletedFinalStateUnknown{Key: "ns/s", Obj: secret}}},
			wantPanics: 1,
		},
		"add of the wrong type panics": {
			events:     []handlerCall{{kind: "add", obj: secret}, {kind: "add", obj: pod}},
			want:       []handlerEvent{{Kind: "add", Key: "ns/a"}},
			wantPanics: 1,
		},
		"update with the wrong old type panics": {
			events:     []handlerCall{{kind: "update", old: secret, obj: pod}},
			wantPanics: 1,
		},
		"update with the wrong new type panics": {
			events:     []handlerCall{{kind: "update", old: pod, obj: secret}},
			wantPanics: 1,
		},
		"delete of the wrong type panics": {
			events:     []handlerCall{{kind: "delete", obj: secret}},
			wantPanics: 1,
		},
		"untyped nil panics": {
			events:     []handlerCall{{kind: "add", obj: nil}, {kind: "delete", obj: nil}},
			wantPanics: 2,
		},
		"typed nil pod is a pod": {
			events: []handlerCall{{kind: "add", obj: (*v1.Pod)(nil)}},
			want:   []handlerEvent{{Kind: "add", Key: "<nil pod>"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := &typedHandlerRecorder{}
			adapter := newTypedHandlerAdapter[*v1.Pod](rec)
			panics := 0
			for _, call := range tc.events {
				if capturePanic(func() { deliverCalls(adapter, []handlerCall{call}) }) != nil {
					panics++
				}
			}
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if panics != tc.wantPanics {
				t.Errorf("%d deliveries panicked, want %d", panics, tc.wantPanics)
			}
		})
	}
}

func TestTypedHandlerAdapter_TombstoneIsCopiedPerDelivery(t *testing.T) {
	var got []*DeletedFinalStateUnknown
	handler := TypedResourceEventHandlerFuncs[*v1.Pod]{
		DeleteFunc: func(obj DeletedObject[*v1.Pod]) { got = append(got, obj.FinalStateUnknown) },
	}
	adapter := newTypedHandlerAdapter[*v1.Pod](handler)
	adapter.OnDelete(DeletedFinalStateUnknown{Key: "ns/a"})
	adapter.OnDelete(DeletedFinalStateUnknown{Key: "ns/b"})
	want := []*DeletedFinalStateUnknown{{Key: "ns/a"}, {Key: "ns/b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tombstones (-want +got):\n%s", diff)
	}
}

func TestTypedHandlerAdapter_NilHandlerPanicsOnEveryCall(t *testing.T) {
	adapter := newTypedHandlerAdapter[*v1.Pod](nil)
	pod := testPod("ns", "a", "")
	calls := append(oneCallOfEachKind(pod), handlerCall{kind: "delete", obj: DeletedFinalStateUnknown{Key: "ns/a"}})
	for _, call := range calls {
		if p := capturePanic(func() { deliverCalls(adapter, []handlerCall{call}) }); p == nil {
			t.Errorf("%s: no panic", call.kind)
		}
	}
}

func BenchmarkTypedHandlerAdapter(b *testing.B) {
	pod := testPod("ns", "a", "")
	tombstone := DeletedFinalStateUnknown{Key: "ns/a", Obj: pod}
	handler := TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{
		AddFunc:    func(*v1.Pod, bool) {},
		UpdateFunc: func(_, _ *v1.Pod) {},
		DeleteFunc: func(DeletedObject[*v1.Pod]) {},
	}
	adapter := newTypedHandlerAdapter[*v1.Pod](handler)
	b.Run("add", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			adapter.OnAdd(pod, false)
		}
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			adapter.OnUpdate(pod, pod)
		}
	})
	b.Run("delete-tombstone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			adapter.OnDelete(tombstone)
		}
	})
}

func BenchmarkFilteringResourceEventHandler_Update(b *testing.B) {
	handler := FilteringResourceEventHandler{FilterFunc: objIsPicked, Handler: ResourceEventHandlerFuncs{}}
	b.ReportAllocs()
	for b.Loop() {
		handler.OnUpdate(filterPodIn, filterPodOut)
	}
}
