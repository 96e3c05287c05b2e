package cache

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fcache "github.com/kcache/cache/testing"
)

// The informer model test drives random changes, lost watch events and
// relists through a fake API server into a shared informer with several
// handlers, and checks at quiescence that the cache equals the server's
// state and that every handler's calls, replayed, fit its state at each
// step and end in the same state. It runs in a synctest bubble: backoffs
// and the slow handler's pauses take virtual time, and quiescence is
// synctest.Wait after letting that time pass.

// modelInformerOps is the number of random operations per run.
const modelInformerOps = 1000

// modelNodes are the nodes pods are scheduled to.
var modelNodes = []string{"n0", "n1", "n2"}

// informerModel is one run: the source, the informer and its handlers, and
// the names the source holds.
type informerModel struct {
	t       *testing.T
	r       *rand.Rand
	src     *fcache.FakeControllerSource
	inf     SharedIndexInformer
	present map[string]bool
	rv      int
	// counts of each operation, logged at the end.
	counts map[string]int
}

// pod returns a new state of the pod called name, on a random node.
func (m *informerModel) pod(name string) *v1.Pod {
	namespace := "ns-a"
	if name[0] == 'b' {
		namespace = "ns-b"
	}
	m.rv++
	p := podOnNode(namespace, name, modelNodes[m.r.Intn(len(modelNodes))], 0)
	p.Labels = map[string]string{"gen": fmt.Sprint(m.rv)}
	return p
}

// pick returns a random name, present or not as asked, and false if there
// is none.
func (m *informerModel) pick(wantPresent bool) (string, bool) {
	var names []string
	for i := range 24 {
		name := fmt.Sprintf("%c%d", "ab"[i%2], i/2)
		if m.present[name] == wantPresent {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	return names[m.r.Intn(len(names))], true
}

// change makes one random add, modify or delete; lost ones are not sent to
// open watches.
func (m *informerModel) change(lost bool) {
	add, modify, del := m.src.Add, m.src.Modify, m.src.Delete
	if lost {
		add, modify, del = m.src.AddDropWatch, m.src.ModifyDropWatch, m.src.DeleteDropWatch
	}
	switch k := m.r.Intn(10); {
	case k < 5:
		if name, ok := m.pick(true); ok {
			modify(m.pod(name))
			m.counts["modify"]++
			return
		}
		fallthrough
	case k < 8:
		if name, ok := m.pick(false); ok {
			add(m.pod(name))
			m.present[name] = true
			m.counts["add"]++
			return
		}
		fallthrough
	default:
		if name, ok := m.pick(true); ok {
			del(m.pod(name))
			m.present[name] = false
			m.counts["delete"]++
		}
	}
}

// step does one random operation.
func (m *informerModel) step() {
	switch k := m.r.Intn(100); {
	case k < 86:
		m.change(false)
	case k < 91:
		m.src.ResetWatch()
		m.counts["relist"]++
	case k < 96:
		// Changes the informer's watch misses, then a relist that must
		// bring it up to date, deletions included.
		for range 1 + m.r.Intn(3) {
			m.change(true)
		}
		m.src.ResetWatch()
		m.counts["lossy relist"]++
	default:
		time.Sleep(time.Duration(m.r.Intn(2000)) * time.Millisecond)
		m.counts["pause"]++
	}
}

func TestInformerModel(t *testing.T) {
	seed := testSeed(t)
	cases := map[string]map[featureName]bool{
		"default gates":                {},
		"paginated lists":              {featureWatchListClient: false},
		"plain FIFO reading the store": {featureAtomicFIFO: false},
		"no batches, locked processing": {
			featureInOrderInformersBatchProcess: false, featureUnlockWhileProcessingFIFO: false,
		},
		"plain FIFO, paginated lists, no batches": {
			featureAtomicFIFO: false, featureWatchListClient: false, featureInOrderInformersBatchProcess: false,
		},
	}
	for name, gates := range cases {
		t.Run(name, func(t *testing.T) {
			for gate, on := range gates {
				defer setFeatureForTesting(gate, on)()
			}
			synctest.Test(t, func(t *testing.T) {
				runInformerModel(t, rand.New(rand.NewSource(seed)))
			})
		})
	}
}

func runInformerModel(t *testing.T, r *rand.Rand) {
	m := &informerModel{t: t, r: r, src: infSource(t, 0), present: map[string]bool{}, counts: map[string]int{}}
	for range 8 {
		m.change(false)
	}
	m.inf = NewSharedIndexInformer(m.src, &v1.Pod{}, 0, Indexers{"by-node": byNodeIndex})

	fast := &infRecorder{}
	// The slow handler is held back for the first half of the run, then
	// pauses on every call (only its listener's goroutine uses slowRand);
	// with a tiny backlog limit, its pending notifications get merged.
	slowRand := rand.New(rand.NewSource(r.Int63()))
	held := newInfLatch()
	slow := &infRecorder{before: func(infEvent) {
		held.wait()
		time.Sleep(time.Duration(slowRand.Intn(1000)) * time.Millisecond)
	}}
	removed := &infRecorder{}
	infAdd(t, m.inf, fast)
	prev := SetListenerBacklogLimit(4)
	slowReg := infAdd(t, m.inf, slow)
	SetListenerBacklogLimit(prev)
	removedReg := infAdd(t, m.inf, removed)
	infRun(t, m.inf)
	t.Cleanup(held.open)

	lateAt, removeAt := r.Intn(modelInformerOps), r.Intn(modelInformerOps)
	late := &infRecorder{}
	for i := range modelInformerOps {
		if i == lateAt {
			infAdd(t, m.inf, late)
		}
		if i == modelInformerOps/2 {
			held.open()
		}
		if i == removeAt {
			if err := m.inf.RemoveEventHandler(removedReg); err != nil {
				t.Fatalf("RemoveEventHandler: %v", err)
			}
		}
		m.step()
	}
	// Let backoffs, relists and the slow handler run their course.
	time.Sleep(time.Hour)
	synctest.Wait()

	l := slowReg.(*processorListener)
	l.mu.Lock()
	merged := l.pending.merged
	l.mu.Unlock()
	t.Logf("operations %v; slow handler: %d notifications merged", m.counts, merged)
	if merged == 0 {
		t.Errorf("the slow handler's backlog never merged: the run did not exercise merging")
	}

	truth := infTruth(t, m.src)
	if diff := cmp.Diff(truth, infStoreState(m.inf.GetStore())); diff != "" {
		t.Errorf("cache differs from the source (-source +cache):\n%s", diff)
	}
	checkModelIndex(t, m.src, m.inf.GetIndexer())
	fastEvents := fast.snapshot()
	checkInfReplay(t, "fast handler", truth, fastEvents)
	checkInfReplay(t, "slow handler", truth, slow.snapshot())
	checkLateHandler(t, "late handler", truth, fastEvents, late.snapshot())
	if p := replayAll(removed.snapshot()).problems; len(p) > 0 {
		t.Errorf("removed handler's calls do not fit its state: %v", p)
	}
	for name, rec := range map[string]*infRecorder{"fast": fast, "slow": slow, "removed": removed} {
		checkInitialAddsFirst(t, name, rec.snapshot())
	}
}

// checkInitialAddsFirst checks that no initial-list add follows another
// kind of call.
func checkInitialAddsFirst(t *testing.T, who string, events []infEvent) {
	t.Helper()
	live := false
	for _, e := range events {
		if e.Initial && live {
			t.Errorf("%s handler: initial-list add %v after live calls", who, e)
			return
		}
		live = live || !e.Initial
	}
}

// checkModelIndex checks the by-node index against the source's pods.
func checkModelIndex(t *testing.T, src *fcache.FakeControllerSource, idx Indexer) {
	t.Helper()
	list, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, obj := range objs {
		pod := obj.(*v1.Pod)
		want[pod.Spec.NodeName] = append(want[pod.Spec.NodeName], infKey(pod))
	}
	for _, node := range modelNodes {
		got, err := idx.ByIndex("by-node", node)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(want[node])
		if diff := cmp.Diff(want[node], keysOf(got), cmp.Transformer("nilAsEmpty", func(s []string) []string {
			if s == nil {
				return []string{}
			}
			return s
		})); diff != "" {
			t.Errorf("ByIndex(by-node, %s) (-source +cache):\n%s", node, diff)
		}
	}
}
