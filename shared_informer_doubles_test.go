package cache

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fcache "github.com/kcache/cache/testing"
)

// Most tests here run the informer inside a synctest bubble: after
// synctest.Wait every goroutine of the informer, the fake source and the
// handlers is blocked, so "everything that can happen has happened" without
// a single sleep or poll.

// infEvent is one handler call, reduced to what the tests compare.
type infEvent struct {
	Kind      string // "add", "update" or "delete"
	Key       string
	RV        string // of the new object (add, update) or the deleted one
	OldRV     string // update only
	Initial   bool   // add only: isInInitialList
	Tombstone bool   // delete only: the object was a DeletedFinalStateUnknown
}

func (e infEvent) String() string {
	switch e.Kind {
	case "add":
		return fmt.Sprintf("add %s@%s initial=%t", e.Key, e.RV, e.Initial)
	case "update":
		return fmt.Sprintf("update %s@%s->%s", e.Key, e.OldRV, e.RV)
	default:
		return fmt.Sprintf("delete %s@%s tombstone=%t", e.Key, e.RV, e.Tombstone)
	}
}

// infRV returns obj's resource version; a tombstone's is that of the object
// it carries, "" when it carries none.
func infRV(obj interface{}) string {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return ""
		}
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// infKey returns obj's store key, "" when it has none.
func infKey(obj interface{}) string {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	return key
}

// infRecorder is a ResourceEventHandler that records its calls. before, if
// set, runs at the start of every call: tests use it to block or panic (a
// call that panics in before is not recorded).
type infRecorder struct {
	before func(infEvent)

	// mu guards events.
	mu     sync.Mutex
	events []infEvent
}

var _ ResourceEventHandler = (*infRecorder)(nil)

func (r *infRecorder) OnAdd(obj interface{}, isInInitialList bool) {
	r.record(infEvent{Kind: "add", Key: infKey(obj), RV: infRV(obj), Initial: isInInitialList})
}

func (r *infRecorder) OnUpdate(oldObj, newObj interface{}) {
	r.record(infEvent{Kind: "update", Key: infKey(newObj), RV: infRV(newObj), OldRV: infRV(oldObj)})
}

func (r *infRecorder) OnDelete(obj interface{}) {
	_, tombstone := obj.(DeletedFinalStateUnknown)
	r.record(infEvent{Kind: "delete", Key: infKey(obj), RV: infRV(obj), Tombstone: tombstone})
}

func (r *infRecorder) record(e infEvent) {
	if r.before != nil {
		r.before(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// snapshot returns a copy of the calls recorded so far.
func (r *infRecorder) snapshot() []infEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]infEvent(nil), r.events...)
}

// count returns how many calls of kind were recorded.
func (r *infRecorder) count(kind string) int {
	n := 0
	for _, e := range r.snapshot() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// infReplay applies a handler's calls to a key -> resource version map,
// as a handler mirroring the cache would, and notes every call that does
// not fit: an add of a present key, an update or delete of an absent one,
// an update whose old object is not the one the handler holds, or a
// resource version older than one already seen for the key.
type infReplay struct {
	state    map[string]string
	newest   map[string]int
	problems []string
}

func newInfReplay() *infReplay {
	return &infReplay{state: map[string]string{}, newest: map[string]int{}}
}

// replayAll replays events into a fresh state.
func replayAll(events []infEvent) *infReplay {
	p := newInfReplay()
	for _, e := range events {
		p.apply(e)
	}
	return p
}

func (p *infReplay) apply(e infEvent) {
	cur, present := p.state[e.Key]
	switch e.Kind {
	case "add":
		if present {
			p.notef(e, "add of a key the handler holds at %s", cur)
		}
		p.state[e.Key] = e.RV
	case "update":
		if !present {
			p.notef(e, "update of a key the handler does not hold")
		} else if e.OldRV != cur {
			p.notef(e, "old object is at %s, the handler holds %s", e.OldRV, cur)
		}
		p.state[e.Key] = e.RV
	case "delete":
		if !present {
			p.notef(e, "delete of a key the handler does not hold")
		}
		delete(p.state, e.Key)
	}
	if e.RV == "" {
		return
	}
	rv, err := strconv.Atoi(e.RV)
	if err != nil {
		p.notef(e, "resource version is not a number")
		return
	}
	if rv < p.newest[e.Key] {
		p.notef(e, "resource version goes back from %d", p.newest[e.Key])
	}
	p.newest[e.Key] = rv
}

func (p *infReplay) notef(e infEvent, format string, args ...interface{}) {
	p.problems = append(p.problems, e.String()+": "+fmt.Sprintf(format, args...))
}

// infStoreState returns the store's content as key -> resource version.
func infStoreState(s Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		out[infKey(obj)] = infRV(obj)
	}
	return out
}

// infTruth returns the fake source's content as key -> resource version.
func infTruth(t *testing.T, src *fcache.FakeControllerSource) map[string]string {
	t.Helper()
	list, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the fake source: %v", err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		t.Fatalf("reading the fake source's list: %v", err)
	}
	out := map[string]string{}
	for _, obj := range objs {
		out[infKey(obj)] = infRV(obj)
	}
	return out
}

// infSource returns a fake source holding pods named p0, p1, ... in
// namespace ns; it is shut down when the test ends.
func infSource(t *testing.T, pods int) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for i := range pods {
		src.Add(testPod("ns", fmt.Sprint("p", i), ""))
	}
	return src
}

// infRunner is an informer or a controller.
type infRunner interface{ RunWithContext(ctx context.Context) }

// infRun runs inf until the returned stop is called or the test ends; stop
// waits for Run to return.
func infRun(t testing.TB, inf infRunner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// infLatch holds handlers back until it is opened; opening it again does
// nothing. Tests open it in a cleanup registered after infRun's, so that a
// failing test does not leave Run waiting for a blocked handler.
type infLatch struct {
	ch   chan struct{}
	once sync.Once
}

func newInfLatch() *infLatch { return &infLatch{ch: make(chan struct{})} }

func (l *infLatch) wait() { <-l.ch }

func (l *infLatch) open() { l.once.Do(func() { close(l.ch) }) }

// infAdd registers h and fails the test on error.
func infAdd(t *testing.T, inf SharedInformer, h ResourceEventHandler) ResourceEventHandlerRegistration {
	t.Helper()
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	return reg
}

// infNewPodInformer returns a pod informer over src, without resync.
func infNewPodInformer(src *fcache.FakeControllerSource) SharedIndexInformer {
	return NewSharedIndexInformer(src, &v1.Pod{}, 0, Indexers{})
}

// infChurn makes n random changes through src to pods named q0..q(names-1)
// in namespace ns: changes to present pods (most often), deletions, and
// (re)creations. present tracks which pods exist; after is called after
// every change with its index.
func infChurn(r *rand.Rand, src *fcache.FakeControllerSource, present map[string]bool, names, n int, after func(i int)) {
	for i := range n {
		name := fmt.Sprint("q", r.Intn(names))
		pod := testPod("ns", name, "", "gen", strconv.Itoa(i))
		switch {
		case !present[name]:
			src.Add(pod)
			present[name] = true
		case r.Intn(4) == 0:
			src.Delete(pod)
			present[name] = false
		default:
			src.Modify(pod)
		}
		if after != nil {
			after(i)
		}
	}
}
