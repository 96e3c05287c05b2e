package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	fcache "github.com/kcache/cache/testing"
)

// transformCall is one recorded call of a transformLog's transform.
type transformCall struct {
	// desc is "name@rv#n": the pod's name and resource version, and n the
	// number of transforms the result has been through.
	desc string
	// in and out are the argument and the result.
	in, out *v1.Pod
}

// transformLog is a TransformFunc that records every call. Each call
// returns a new pod counting, in an annotation, the transforms it has been
// through.
type transformLog struct {
	// mu guards calls.
	mu    sync.Mutex
	calls []transformCall
}

func (l *transformLog) transform(obj interface{}) (interface{}, error) {
	in, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	out := in.DeepCopy()
	n, _ := strconv.Atoi(in.Annotations["transforms"])
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations["transforms"] = strconv.Itoa(n + 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, transformCall{desc: fmt.Sprintf("%s@%s#%d", in.Name, in.ResourceVersion, n+1), in: in, out: out})
	return out, nil
}

// take returns the calls recorded since the last take.
func (l *transformLog) take() []transformCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := l.calls
	l.calls = nil
	return calls
}

func describeCalls(calls []transformCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.desc
	}
	return out
}

// checkStreamedTransforms checks the calls made for a streaming list whose
// events transformed, in order, the object states arrived (each "name@rv"):
// one call per state as it arrived, then, in no particular order, one more
// per object of the complete list (final), each given the result of the
// first call for that object's state.
func checkStreamedTransforms(t *testing.T, calls []transformCall, arrived, final []string) {
	t.Helper()
	n := len(arrived)
	if len(calls) != n+len(final) {
		t.Fatalf("transform calls %v, want %d as the objects arrive then %d once the list is complete", describeCalls(calls), n, len(final))
	}
	var wantFirst, wantSecond []string
	for _, s := range arrived {
		wantFirst = append(wantFirst, s+"#1")
	}
	for _, s := range final {
		wantSecond = append(wantSecond, s+"#2")
	}
	if diff := cmp.Diff(wantFirst, describeCalls(calls[:n])); diff != "" {
		t.Errorf("transform calls as the objects arrive (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sorted(wantSecond), sorted(describeCalls(calls[n:]))); diff != "" {
		t.Errorf("transform calls once the list is complete (-want +got):\n%s", diff)
	}
	firstResult := map[*v1.Pod]bool{}
	for _, c := range calls[:n] {
		firstResult[c.out] = true
	}
	for _, c := range calls[n:] {
		if !firstResult[c.in] {
			t.Errorf("second transform of %s was not given the result of the first", c.desc)
		}
	}
}

// checkTransformedOnce checks that calls transformed each of the object
// states want ("name@rv") once, in no particular order.
func checkTransformedOnce(t *testing.T, what string, calls []transformCall, want ...string) {
	t.Helper()
	var wantDescs []string
	for _, s := range want {
		wantDescs = append(wantDescs, s+"#1")
	}
	if diff := cmp.Diff(sorted(wantDescs), sorted(describeCalls(calls))); diff != "" {
		t.Errorf("transform calls for %s (-want +got):\n%s", what, diff)
	}
}

// uidPod is a pod with a UID, as the server would give it.
func uidPod(name string) *v1.Pod {
	p := testPod("ns", name, "")
	p.UID = types.UID("uid-" + name)
	return p
}

// notifications is a handler that passes on every notification it gets,
// described, through a channel; it notes whether an update's new object is
// the old one.
type notifications chan string

func (n notifications) OnAdd(obj interface{}, _ bool) { n <- "add " + obj.(*v1.Pod).Name }
func (n notifications) OnUpdate(oldObj, newObj interface{}) {
	same := ""
	if oldObj == newObj {
		same = " (cached)"
	}
	n <- "update " + newObj.(*v1.Pod).Name + same
}
func (n notifications) OnDelete(obj interface{}) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		n <- "delete " + d.Key
		return
	}
	n <- "delete " + obj.(*v1.Pod).Name
}

// next returns the next k notifications, sorted.
func (n notifications) next(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = <-n
	}
	return sorted(out)
}

// TestSharedInformer_TransformCallsMatchTheReference drives an informer
// through an initial list, a watch event and a relist that finds an object
// unchanged, one changed, one deleted and one new, and checks every call of
// its transform. A streaming list transforms each object twice, as the
// reference does: as it arrives, then, on that result, once the list is
// complete. A paginated list and watch events transform once.
func TestSharedInformer_TransformCallsMatchTheReference(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		for _, atomicFIFO := range []bool{true, false} {
			t.Run(fmt.Sprintf("streaming=%v/atomic=%v", streaming, atomicFIFO), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					t.Cleanup(setFeatureForTesting(featureWatchListClient, streaming))
					t.Cleanup(setFeatureForTesting(featureAtomicFIFO, atomicFIFO))
					testTransformCalls(t, streaming, atomicFIFO)
				})
			})
		}
	}
}

// testTransformCalls is the test for one informer. Only with AtomicFIFO
// does the relist keep the cached p0 (reuse); without it the queue gets the
// list as listed, as client-go's does, and p0 is a fresh copy.
func testTransformCalls(t *testing.T, streaming, reuses bool) {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	for _, name := range []string{"p0", "p1", "p2"} {
		src.Add(uidPod(name)) // resource versions 1, 2, 3
	}
	inf := infNewPodInformer(src)
	log := &transformLog{}
	if err := inf.SetTransform(log.transform); err != nil {
		t.Fatal(err)
	}
	events := make(notifications, 16)
	infAdd(t, inf, events)
	infRun(t, inf)

	if diff := cmp.Diff([]string{"add p0", "add p1", "add p2"}, events.next(3)); diff != "" {
		t.Errorf("initial notifications (-want +got):\n%s", diff)
	}
	synctest.Wait()
	if streaming {
		checkStreamedTransforms(t, log.take(), []string{"p0@1", "p1@2", "p2@3"}, []string{"p0@1", "p1@2", "p2@3"})
	} else {
		checkTransformedOnce(t, "the initial list", log.take(), "p0@1", "p1@2", "p2@3")
	}
	checkCachedTransforms(t, inf, streaming)

	src.Modify(uidPod("p1")) // 4
	if diff := cmp.Diff([]string{"update p1"}, events.next(1)); diff != "" {
		t.Errorf("notifications of a watch event (-want +got):\n%s", diff)
	}
	synctest.Wait()
	checkTransformedOnce(t, "a watch event", log.take(), "p1@4")

	// The relist finds p0 unchanged, p1 changed, p2 deleted and p3 new.
	cachedP0, _, _ := inf.GetStore().GetByKey("ns/p0")
	src.ModifyDropWatch(uidPod("p1")) // 5
	src.DeleteDropWatch(uidPod("p2")) // 6
	src.AddDropWatch(uidPod("p3"))    // 7
	src.ResetWatch()
	want := []string{"add p3", "delete ns/p2", "update p0", "update p1"}
	if reuses {
		want[2] = "update p0 (cached)"
	}
	if diff := cmp.Diff(want, events.next(4)); diff != "" {
		t.Errorf("notifications of the relist (-want +got):\n%s", diff)
	}
	synctest.Wait()
	if streaming {
		checkStreamedTransforms(t, log.take(), []string{"p0@1", "p1@5", "p3@7"}, []string{"p0@1", "p1@5", "p3@7"})
	} else {
		checkTransformedOnce(t, "the relist", log.take(), "p0@1", "p1@5", "p3@7")
	}
	if p0, _, _ := inf.GetStore().GetByKey("ns/p0"); (p0 == cachedP0) != reuses {
		t.Errorf("the relist kept the cached p0: %v, want %v", p0 == cachedP0, reuses)
	}
	checkCachedTransforms(t, inf, streaming)
	select {
	case e := <-events:
		t.Errorf("unexpected notification %q", e)
	default:
	}
}

// checkCachedTransforms checks that every object the informer caches went
// through two transforms if it came from a streaming list, one otherwise
// (p1@4, from a watch event, and everything a paginated list gave).
func checkCachedTransforms(t *testing.T, inf SharedIndexInformer, streaming bool) {
	t.Helper()
	for _, obj := range inf.GetStore().List() {
		p := obj.(*v1.Pod)
		want := "1"
		if streaming && p.ResourceVersion != "4" {
			want = "2"
		}
		if got := p.Annotations["transforms"]; got != want {
			t.Errorf("cached %s@%s went through %s transforms, want %s", p.Name, p.ResourceVersion, got, want)
		}
	}
}

// With value sharing, an informer's queue shares the parts of the objects
// it caches. A streaming list must still give the second transform the
// result of the first, not a copy sharing its parts with cached objects.
func TestInformerQueue_StreamingListSharesAfterTheSecondTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		log := &transformLog{}
		q := newDedupInformerQueue(klog.Background(), &v1.Pod{}, NewStore(MetaNamespaceKeyFunc), log.transform, InformerNameAndResource{}, nil, eagerSharing()).(*RealFIFO)
		defer q.Close()
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false,
			rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")), rfEndBookmark("2"))})}
		r := NewReflector(lw, &v1.Pod{}, q, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		calls := log.take()
		checkStreamedTransforms(t, calls, []string{"p1@1", "p2@2"}, []string{"p1@1", "p2@2"})
		var queued []string
		for _, obj := range listedObjects(drainObjs(t, q)) {
			queued = append(queued, rfDescribe(obj)+" transforms="+obj.(*v1.Pod).Annotations["transforms"])
			for _, c := range calls {
				if obj == interface{}(c.out) {
					t.Errorf("%s was queued as the transform returned it, not as a shared copy", rfDescribe(obj))
				}
			}
		}
		if diff := cmp.Diff([]string{"p1@1 transforms=2", "p2@2 transforms=2"}, sorted(queued)); diff != "" {
			t.Errorf("queued (-want +got):\n%s", diff)
		}
	})
}

// The streaming-list consistency check transforms the objects of its LIST,
// as the reference's does, between the two transforms of the streamed
// objects: after the stream, before the queue takes the list.
func TestReflectorWatchList_ConsistencyCheckTransformsBetweenTheTwoPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		t.Cleanup(setWatchListConsistencyCheckForTesting(true))
		log := &transformLog{}
		queue := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, Transformer: log.transform})
		defer queue.Close()
		lw := &rfLW{
			streaming: true,
			listFn:    rfLists(rfReply{obj: rfPodList("2", "", rfPod("p1", "1"), rfPod("p2", "2"))}),
			watchFn: rfWatches(rfWatchReply{stream: newRFStream(false,
				rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")), rfEndBookmark("2"))}),
		}
		r := NewReflector(lw, &v1.Pod{}, queue, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		calls := log.take()
		if len(calls) != 6 {
			t.Fatalf("transform calls %v, want 6", describeCalls(calls))
		}
		checkStreamedTransforms(t, append(calls[:2:2], calls[4:]...), []string{"p1@1", "p2@2"}, []string{"p1@1", "p2@2"})
		if diff := cmp.Diff([]string{"p1@1#1", "p2@2#1"}, describeCalls(calls[2:4])); diff != "" {
			t.Errorf("transform calls of the check (-want +got):\n%s", diff)
		}
		streamed := map[*v1.Pod]bool{calls[0].in: true, calls[1].in: true}
		for _, c := range calls[2:4] {
			if streamed[c.in] {
				t.Errorf("the check transformed the streamed %s, not the listed one", c.desc)
			}
		}
	})
}

// An object whose first transform fails is reported as client-go's
// temporary store reports it and left out of the list: it gets no second
// transform.
func TestReflectorWatchList_FirstTransformFailureLeavesTheObjectOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		var mu sync.Mutex // guards reported
		var reported []string
		saved := utilruntime.ErrorHandlers
		utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...interface{}) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, fmt.Sprintf("%s: %v", msg, err))
		}}
		t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
		log := &transformLog{}
		queue := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: func(obj interface{}) (interface{}, error) {
			if p := obj.(*v1.Pod); p.Name == "p2" {
				return nil, errors.New("p2 refused")
			}
			return log.transform(obj)
		}})
		defer queue.Close()
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false,
			rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")), rfEndBookmark("2"))})}
		r := NewReflector(lw, &v1.Pod{}, queue, 0)
		stop := rfRun(r)
		synctest.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		checkStreamedTransforms(t, log.take(), []string{"p1@1"}, []string{"p1@1"})
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff([]string{"Unable to add watch event object to store: transforming: p2 refused"}, reported); diff != "" {
			t.Errorf("reported errors (-want +got):\n%s", diff)
		}
		var queued []string
		for _, obj := range listedObjects(drainObjs(t, queue)) {
			queued = append(queued, rfDescribe(obj))
		}
		if diff := cmp.Diff([]string{"p1@1"}, queued); diff != "" {
			t.Errorf("queued (-want +got):\n%s", diff)
		}
	})
}

// A second transform that fails is the queue's Replace failing: the cycle
// ends with client-go's error and nothing is queued.
func TestReflectorWatchList_SecondTransformFailureFailsTheReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rfSetup(t, true)
		log := &transformLog{}
		queue := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: func(obj interface{}) (interface{}, error) {
			if p := obj.(*v1.Pod); p.Name == "p2" && p.Annotations["transforms"] == "1" {
				return nil, errors.New("p2 refused")
			}
			return log.transform(obj)
		}})
		defer queue.Close()
		lw := &rfLW{streaming: true, watchFn: rfWatches(rfWatchReply{stream: newRFStream(false,
			rfEvent(watch.Added, rfPod("p1", "1")), rfEvent(watch.Added, rfPod("p2", "2")), rfEndBookmark("2"))})}
		r := NewReflector(lw, &v1.Pod{}, queue, 0)
		err := r.ListAndWatchWithContext(context.Background())
		if err == nil || err.Error() != "unable to sync watch-list result: p2 refused" {
			t.Errorf("ListAndWatch error = %v, want the queue's replace error", err)
		}
		if got := queuedLen(queue); got != 0 {
			t.Errorf("%d changes queued after a failed replace, want none", got)
		}
		if got := r.LastSyncResourceVersion(); got != "" {
			t.Errorf("LastSyncResourceVersion = %q after a failed replace, want \"\"", got)
		}
	})
}
