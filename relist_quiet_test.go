package cache

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	fcache "github.com/kcache/cache/testing"
)

// setQuietRelistForTesting makes KCACHE_QUIET_RELIST read as on for what
// is built until the returned function restores it.
func setQuietRelistForTesting(on bool) (restore func()) {
	prev := quietRelistEnabled
	quietRelistEnabled = func() bool { return on }
	return func() { quietRelistEnabled = prev }
}

func TestParseQuietRelistSwitch_FailsClosed(t *testing.T) {
	cases := map[string]struct {
		raw     string
		want    bool
		wantErr bool
	}{
		"unset":             {raw: ""},
		"true":              {raw: "true", want: true},
		"TRUE with spaces":  {raw: "  TRUE ", want: true},
		"1":                 {raw: "1", want: true},
		"on":                {raw: "On", want: true},
		"yes":               {raw: "YES", want: true},
		"false":             {raw: "false"},
		"0":                 {raw: "0"},
		"off":               {raw: "off"},
		"no":                {raw: "No"},
		"typo stays off":    {raw: "ture", wantErr: true},
		"number stays off":  {raw: "2", wantErr: true},
		"spaces only is ''": {raw: "   "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseQuietRelistSwitch(tc.raw)
			if got != tc.want {
				t.Errorf("parseQuietRelistSwitch(%q) = %v, want %v", tc.raw, got, tc.want)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseQuietRelistSwitch(%q) error = %v, want error: %v", tc.raw, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.raw)) {
				t.Errorf("error %q does not name the value", err)
			}
		})
	}
}

func TestSameListedVersion_OnlyEqualNonEmptyVersions(t *testing.T) {
	cases := map[string]struct {
		held, listed interface{}
		want         bool
	}{
		"same version":            {held: testPod("ns", "p", "7"), listed: testPod("ns", "p", "7"), want: true},
		"listed nil":              {held: testPod("ns", "p", "7"), listed: nil},
		"other version":           {held: testPod("ns", "p", "7"), listed: testPod("ns", "p", "8")},
		"both versions empty":     {held: testPod("ns", "p", ""), listed: testPod("ns", "p", "")},
		"listed version empty":    {held: testPod("ns", "p", "7"), listed: testPod("ns", "p", "")},
		"held without metadata":   {held: "not an object", listed: testPod("ns", "p", "7")},
		"listed without metadata": {held: testPod("ns", "p", "7"), listed: 42},
		"held nil pointer":        {held: (*v1.Pod)(nil), listed: testPod("ns", "p", "7")},
		"listed nil pointer":      {held: testPod("ns", "p", "7"), listed: (*v1.Pod)(nil)},
		"held nil":                {held: nil, listed: testPod("ns", "p", "7")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sameListedVersion(tc.held, tc.listed); got != tc.want {
				t.Errorf("sameListedVersion = %v, want %v", got, tc.want)
			}
		})
	}
}

// infForeign is a SharedInformer this package did not make.
type infForeign struct{ SharedInformer }

func TestSetQuietRelist_RefusesStartedAndForeignInformers(t *testing.T) {
	cases := map[string]struct {
		// informer builds the informer to set, inside a synctest bubble.
		informer func(t *testing.T, src *fcache.FakeControllerSource) SharedInformer
		wantErr  string
	}{
		"not started": {informer: func(_ *testing.T, src *fcache.FakeControllerSource) SharedInformer {
			return infNewPodInformer(src)
		}},
		"typed wrapper, not started": {informer: func(_ *testing.T, src *fcache.FakeControllerSource) SharedInformer {
			return NewTypedSharedIndexInformer[*v1.Pod](infNewPodInformer(src))
		}},
		"started": {informer: func(t *testing.T, src *fcache.FakeControllerSource) SharedInformer {
			inf := infNewPodInformer(src)
			infRun(t, inf)
			synctest.Wait()
			return inf
		}, wantErr: "informer has already started"},
		"not an informer of this package": {informer: func(*testing.T, *fcache.FakeControllerSource) SharedInformer {
			return infForeign{}
		}, wantErr: "quiet relist: cache.infForeign is not an informer of this package"},
		"nil": {informer: func(*testing.T, *fcache.FakeControllerSource) SharedInformer { return nil },
			wantErr: "quiet relist: <nil> is not an informer of this package"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				err := SetQuietRelist(tc.informer(t, infSource(t, 1)), true)
				got := ""
				if err != nil {
					got = err.Error()
				}
				if got != tc.wantErr {
					t.Errorf("SetQuietRelist error = %q, want %q", got, tc.wantErr)
				}
			})
		})
	}
}

// relistPath builds something that lists and watches src into a cache and
// tells rec of every change: an informer on one of the queues informers
// use, or a controller on a DeltaFIFO with KnownObjects.
type relistPath struct {
	gates map[featureName]bool
	// deltaFIFO builds a controller on a DeltaFIFO instead of an informer;
	// its quiet relists come from the variable alone.
	deltaFIFO bool
}

func relistPaths() map[string]relistPath {
	return map[string]relistPath{
		"RealFIFO, whole replacements, streaming list": {},
		"RealFIFO, whole replacements, paginated list": {gates: map[featureName]bool{featureWatchListClient: false}},
		"RealFIFO with known objects, batches":         {gates: map[featureName]bool{featureAtomicFIFO: false}},
		"RealFIFO with known objects, one at a time": {gates: map[featureName]bool{
			featureAtomicFIFO: false, featureInOrderInformersBatchProcess: false, featureWatchListClient: false,
		}},
		"DeltaFIFO with known objects": {deltaFIFO: true},
	}
}

// relistSetup is how a run chooses quiet relists, and what else it turns on.
type relistSetup struct {
	// env is KCACHE_QUIET_RELIST as read; set, if not nil, is the
	// informer's SetQuietRelist choice (informers only).
	env bool
	set *bool
	// transform copies every object, keeping its resource version.
	transform bool
	// noSharing turns value sharing off for the informer.
	noSharing bool
	// resync is the informer's (or controller's) resync period.
	resync time.Duration
}

// quiet says whether the setup should give quiet relists.
func (s relistSetup) quiet() bool {
	if s.set != nil {
		return *s.set
	}
	return s.env
}

// annotateCopy is a transform that copies each pod and annotates the
// copy, keeping its resource version: a relist's objects are then never
// the cached ones until the queue reuses them.
func annotateCopy(obj interface{}) (interface{}, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	p = p.DeepCopy()
	p.Annotations = map[string]string{"transformed": "yes"}
	return p, nil
}

// quietRun is what relistPath.start returns: the cache and the recorder.
type quietRun struct {
	store Store
	rec   *infRecorder
}

// start builds and runs the path over src with setup; it runs until the
// test ends. Call it inside a synctest bubble.
func (p relistPath) start(t *testing.T, src *fcache.FakeControllerSource, setup relistSetup) quietRun {
	t.Helper()
	for gate, on := range p.gates {
		t.Cleanup(setFeatureForTesting(gate, on))
	}
	t.Cleanup(setQuietRelistForTesting(setup.env))
	var transform TransformFunc
	if setup.transform {
		transform = annotateCopy
	}
	rec := &infRecorder{}
	if p.deltaFIFO {
		store := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{})
		logger := klog.Background()
		ctrl := New(&Config{
			Queue:            NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: store, EmitDeltaTypeReplaced: true, Transformer: transform}),
			ListerWatcher:    src,
			ObjectType:       &v1.Pod{},
			FullResyncPeriod: setup.resync,
			// What a caller's own process function does: apply each
			// change to the store and tell the handler.
			Process: func(obj interface{}, isInInitialList bool) error {
				return processDeltas(logger, handlerSink{handler: rec}, store, obj.(Deltas), isInInitialList, DeletionHandlingMetaNamespaceKeyFunc)
			},
		})
		infRun(t, ctrl)
		return quietRun{store: store, rec: rec}
	}
	inf := NewSharedIndexInformer(src, &v1.Pod{}, setup.resync, Indexers{})
	if setup.set != nil {
		if err := SetQuietRelist(inf, *setup.set); err != nil {
			t.Fatalf("SetQuietRelist: %v", err)
		}
	}
	if transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			t.Fatalf("SetTransform: %v", err)
		}
	}
	if setup.noSharing {
		if err := SetValueSharing(inf, false); err != nil {
			t.Fatalf("SetValueSharing: %v", err)
		}
	}
	infAdd(t, inf, rec)
	infRun(t, inf)
	return quietRun{store: inf.GetStore(), rec: rec}
}

// relistCounts are the calls a handler got, by kind.
type relistCounts struct {
	Adds, Deletes, Tombstones   int
	Updates, UnchangedUpdates   int
	InitialAdds, UpdatesChanged int
}

func countCalls(events []infEvent) relistCounts {
	var c relistCounts
	for _, e := range events {
		switch e.Kind {
		case "add":
			c.Adds++
			if e.Initial {
				c.InitialAdds++
			}
		case "update":
			c.Updates++
			if e.OldRV == e.RV {
				c.UnchangedUpdates++
			} else {
				c.UpdatesChanged++
			}
		case "delete":
			c.Deletes++
			if e.Tombstone {
				c.Tombstones++
			}
		}
	}
	return c
}

// quietPods is how many pods the sources start with.
const quietPods = 6

// relistTrigger forces a relist of src, changing what the relist will find
// on the way, and returns the calls a quiet relist must give: a default
// relist gives these plus one unchanged update per object it found again
// unchanged (unchangedLeft).
type relistTrigger struct {
	force         func(t *testing.T, src *fcache.FakeControllerSource)
	want          relistCounts
	unchangedLeft int
}

func relistTriggers() map[string]relistTrigger {
	return map[string]relistTrigger{
		"compaction, nothing changed": {
			force:         func(t *testing.T, src *fcache.FakeControllerSource) { mustOK(t, src.Expire(nil)) },
			unchangedLeft: quietPods,
		},
		"compaction, one changed, one added, one deleted": {
			force: func(t *testing.T, src *fcache.FakeControllerSource) {
				mustOK(t, src.Expire(func(tx fcache.Tx) error {
					if _, err := tx.Update(testPod("ns", "p1", "", "changed", "yes")); err != nil {
						return err
					}
					if _, err := tx.Create(testPod("ns", "new", "")); err != nil {
						return err
					}
					return tx.Remove("ns", "p2")
				}))
			},
			want:          relistCounts{Updates: 1, UpdatesChanged: 1, Adds: 1, Deletes: 1, Tombstones: 1},
			unchangedLeft: quietPods - 2,
		},
		"watches dropped after a lost add and a compaction": {
			force: func(t *testing.T, src *fcache.FakeControllerSource) {
				src.AddDropWatch(testPod("ns", "lost", ""))
				src.Compact()
				src.DropWatches()
			},
			want:          relistCounts{Adds: 1},
			unchangedLeft: quietPods,
		},
	}
}

// TestQuietRelist_HandlerCallsAfterAForcedRelist counts a handler's calls
// after a relist forced on the fake server, with quiet relists chosen in
// each way and not, on each queue path.
func TestQuietRelist_HandlerCallsAfterAForcedRelist(t *testing.T) {
	on, off := true, false
	setups := map[string]relistSetup{
		"default":                            {},
		"variable on":                        {env: true},
		"SetQuietRelist(true)":               {set: &on},
		"variable on, SetQuietRelist(false)": {env: true, set: &off},
		"SetQuietRelist(true), transform":    {set: &on, transform: true},
		"variable on, transform":             {env: true, transform: true},
		"SetQuietRelist(true), no sharing":   {set: &on, noSharing: true},
		"default, transform, no sharing":     {transform: true, noSharing: true},
	}
	for pname, path := range relistPaths() {
		for sname, setup := range setups {
			if path.deltaFIFO && (setup.set != nil || setup.noSharing) {
				continue // informers only
			}
			for tname, trigger := range relistTriggers() {
				t.Run(pname+"/"+sname+"/"+tname, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						src := infSource(t, quietPods)
						run := path.start(t, src, setup)
						time.Sleep(time.Second)
						synctest.Wait()
						initial := countCalls(run.rec.snapshot())
						if diff := cmp.Diff(relistCounts{Adds: quietPods, InitialAdds: quietPods}, initial); diff != "" {
							t.Fatalf("initial list (-want +got):\n%s", diff)
						}
						before := len(run.rec.snapshot())
						trigger.force(t, src)
						time.Sleep(time.Minute) // the reflector's backoff, then the relist
						synctest.Wait()
						want := trigger.want
						if !setup.quiet() {
							want.Updates += trigger.unchangedLeft
							want.UnchangedUpdates += trigger.unchangedLeft
						}
						if diff := cmp.Diff(want, countCalls(run.rec.snapshot()[before:])); diff != "" {
							t.Errorf("calls after the relist (-want +got):\n%s", diff)
						}
						if diff := cmp.Diff(infTruth(t, src), infStoreState(run.store)); diff != "" {
							t.Errorf("cache differs from the source (-source +cache):\n%s", diff)
						}
						if diff := cmp.Diff(infTruth(t, src), replayAll(run.rec.snapshot()).state); diff != "" {
							t.Errorf("handler's state differs from the source (-source +handler):\n%s", diff)
						}
					})
				})
			}
		}
	}
}

// TestQuietRelist_ResyncsStillDeliver checks that periodic resyncs hand
// every cached object to the handler with quiet relists as without.
func TestQuietRelist_ResyncsStillDeliver(t *testing.T) {
	for pname, path := range relistPaths() {
		t.Run(pname, func(t *testing.T) {
			got := map[bool]relistCounts{}
			for _, quiet := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					src := infSource(t, quietPods)
					run := path.start(t, src, relistSetup{env: quiet, resync: 10 * time.Second})
					time.Sleep(time.Second)
					synctest.Wait()
					before := len(run.rec.snapshot())
					time.Sleep(25 * time.Second)
					synctest.Wait()
					got[quiet] = countCalls(run.rec.snapshot()[before:])
				})
			}
			want := relistCounts{Updates: 2 * quietPods, UnchangedUpdates: 2 * quietPods}
			for quiet, c := range got {
				if diff := cmp.Diff(want, c); diff != "" {
					t.Errorf("quiet=%v: calls in two resync periods (-want +got):\n%s", quiet, diff)
				}
			}
		})
	}
}

// TestQuietRelist_InitialListAndSyncUnchanged checks that the first list
// is delivered whole, as adds in the initial list, and that HasSynced
// follows it, with quiet relists on.
func TestQuietRelist_InitialListAndSyncUnchanged(t *testing.T) {
	for pname, path := range relistPaths() {
		if path.deltaFIFO {
			continue
		}
		t.Run(pname, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for gate, on := range path.gates {
					t.Cleanup(setFeatureForTesting(gate, on))
				}
				src := infSource(t, quietPods)
				inf := infNewPodInformer(src)
				mustOK(t, SetQuietRelist(inf, true))
				rec := &infRecorder{}
				reg := infAdd(t, inf, rec)
				infRun(t, inf)
				time.Sleep(time.Second)
				synctest.Wait()
				if !inf.HasSynced() || !reg.HasSynced() {
					t.Errorf("HasSynced: informer %v, handler %v; want both true", inf.HasSynced(), reg.HasSynced())
				}
				if diff := cmp.Diff(relistCounts{Adds: quietPods, InitialAdds: quietPods}, countCalls(rec.snapshot())); diff != "" {
					t.Errorf("initial list (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestQuietRelist_DeltaFIFOQueuesOnlyChangedObjects pins the DeltaFIFO
// rule: a listed object is left out when its version is the newest pending
// one or, with none pending, the known one.
func TestQuietRelist_DeltaFIFOQueuesOnlyChangedObjects(t *testing.T) {
	cases := map[string]struct {
		known   []*v1.Pod
		pending []queueOp
		list    []interface{}
		quiet   bool
		want    []string
	}{
		"known at the listed version: nothing queued": {
			known: []*v1.Pod{queuePod("a", "1"), queuePod("b", "2")},
			list:  objs(queuePod("a", "1"), queuePod("b", "2")),
			quiet: true,
		},
		"known, off: every object queued": {
			known: []*v1.Pod{queuePod("a", "1")},
			list:  objs(queuePod("a", "1")),
			want:  []string{"ns/a: Replaced"},
		},
		"changed, added and vanished objects as before": {
			known: []*v1.Pod{queuePod("a", "1"), queuePod("b", "2"), queuePod("c", "3")},
			list:  objs(queuePod("a", "1"), queuePod("b", "5"), queuePod("d", "6")),
			quiet: true,
			want:  []string{"ns/b: Replaced", "ns/d: Replaced", "ns/c: Deleted"},
		},
		"pending update at the listed version: nothing more queued": {
			known:   []*v1.Pod{queuePod("a", "1")},
			pending: []queueOp{opUpdate(queuePod("a", "4"))},
			list:    objs(queuePod("a", "4")),
			quiet:   true,
			want:    []string{"ns/a: Updated"},
		},
		"pending update older than the list: queued": {
			known:   []*v1.Pod{queuePod("a", "1")},
			pending: []queueOp{opUpdate(queuePod("a", "4"))},
			list:    objs(queuePod("a", "1")),
			quiet:   true,
			want:    []string{"ns/a: Updated Replaced"},
		},
		"pending deletion: queued again": {
			known:   []*v1.Pod{queuePod("a", "1")},
			pending: []queueOp{opDelete(queuePod("a", "1"))},
			list:    objs(queuePod("a", "1")),
			quiet:   true,
			want:    []string{"ns/a: Deleted Replaced"},
		},
		"empty resource version: queued": {
			known: []*v1.Pod{queuePod("a", "")},
			list:  objs(queuePod("a", "")),
			quiet: true,
			want:  []string{"ns/a: Replaced"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer setQuietRelistForTesting(tc.quiet)()
			q := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: newFakeKnown(tc.known...), EmitDeltaTypeReplaced: true})
			runOps(t, q, tc.pending)
			mustOK(t, q.Replace(tc.list, "9"))
			var got []string
			for _, p := range drain(t, q) {
				got = append(got, deltaTypesOf(p.Obj.(Deltas)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
	}
}

// deltaTypesOf describes ds as "key: Type Type...".
func deltaTypesOf(ds Deltas) string {
	types := make([]string, len(ds))
	for i, d := range ds {
		types[i] = string(d.Type)
	}
	key, _ := DeletionHandlingMetaNamespaceKeyFunc(ds.Newest().Object)
	return key + ": " + strings.Join(types, " ")
}

// TestQuietRelist_Model drives random changes, lost changes and forced
// relists through the fake server into two informers (or controllers on a
// DeltaFIFO), one with quiet relists and one without, and checks after every step that the quiet
// one's handler got exactly the default one's calls less the updates that
// changed nothing, and at the end that both caches and both handlers'
// states equal the server's.
func TestQuietRelist_Model(t *testing.T) {
	seed := testSeed(t)
	paths := relistPaths()
	for pname, path := range paths {
		t.Run(pname, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runQuietModel(t, path, rand.New(rand.NewSource(seed)))
			})
		})
	}
}

// quietModelSteps is the number of random steps per run, and
// quietModelNames how many pod names they use.
const (
	quietModelSteps = 150
	quietModelNames = 12
)

// quietModelWriter is what quietModelChange writes through: the source,
// or the transaction of an Expire.
type quietModelWriter interface {
	Get(namespace, name string) (runtime.Object, bool)
	Create(obj runtime.Object) (runtime.Object, error)
	Update(obj runtime.Object) (runtime.Object, error)
	Remove(namespace, name string) error
}

// quietModelChange creates, updates or removes a random pod through w;
// gen labels the new state.
func quietModelChange(r *rand.Rand, w quietModelWriter, gen int) error {
	name := fmt.Sprint("q", r.Intn(quietModelNames))
	pod := testPod("ns", name, "", "gen", fmt.Sprint(gen))
	var err error
	switch _, ok := w.Get("ns", name); {
	case !ok:
		_, err = w.Create(pod)
	case r.Intn(4) == 0:
		err = w.Remove("ns", name)
	default:
		_, err = w.Update(pod)
	}
	return err
}

func runQuietModel(t *testing.T, path relistPath, r *rand.Rand) {
	src := infSource(t, 0)
	gen := 0
	for range quietModelNames {
		gen++
		mustOK(t, quietModelChange(r, src, gen))
	}
	on, off := true, false
	quietSetup, loudSetup := relistSetup{env: true}, relistSetup{}
	if !path.deltaFIFO {
		quietSetup, loudSetup = relistSetup{set: &on}, relistSetup{env: true, set: &off}
		quietSetup.noSharing = r.Intn(2) == 0
	}
	quietSetup.transform = r.Intn(2) == 0
	loudSetup.transform = quietSetup.transform
	quiet, loud := path.start(t, src, quietSetup), path.start(t, src, loudSetup)
	quietRec, loudRec := quiet.rec, loud.rec
	time.Sleep(time.Second)
	synctest.Wait()

	counts := map[string]int{}
	seenQuiet, seenLoud := 0, 0
	for step := range quietModelSteps {
		switch k := r.Intn(10); {
		case k < 5:
			for range 1 + r.Intn(3) {
				gen++
				mustOK(t, quietModelChange(r, src, gen))
			}
			counts["changes"]++
		case k < 8:
			// A relist that finds the changes the watches never saw.
			mustOK(t, src.Expire(func(tx fcache.Tx) error {
				for range r.Intn(4) {
					gen++
					if err := quietModelChange(r, tx, gen); err != nil {
						return err
					}
				}
				return nil
			}))
			counts["relists"]++
		default:
			// Watches end; they resume where they were, no relist.
			src.DropWatches()
			counts["dropped watches"]++
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		quietEvents, loudEvents := quietRec.snapshot(), loudRec.snapshot()
		var want []infEvent
		for _, e := range loudEvents[seenLoud:] {
			if e.Kind == "update" && e.OldRV == e.RV {
				counts["unchanged updates left out"]++
				continue
			}
			want = append(want, e)
		}
		got := quietEvents[seenQuiet:]
		if path.deltaFIFO {
			want, got = byKeyInOrder(want), byKeyInOrder(got)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("step %d: quiet handler's calls differ from the default handler's less its unchanged updates (-want +got):\n%s", step, diff)
		}
		seenQuiet, seenLoud = len(quietEvents), len(loudEvents)
	}
	t.Logf("steps: %v", counts)
	if counts["unchanged updates left out"] == 0 {
		t.Errorf("no relist found an unchanged object: the run did not exercise quiet relists")
	}
	truth := infTruth(t, src)
	for name, run := range map[string]quietRun{"quiet": quiet, "default": loud} {
		if diff := cmp.Diff(truth, infStoreState(run.store)); diff != "" {
			t.Errorf("%s informer's cache differs from the source (-source +cache):\n%s", name, diff)
		}
		replay := replayAll(run.rec.snapshot())
		if diff := cmp.Diff(truth, replay.state); diff != "" {
			t.Errorf("%s handler's state differs from the source (-source +handler):\n%s", name, diff)
		}
		if len(replay.problems) > 0 {
			t.Errorf("%s handler's calls do not fit its state: %v", name, replay.problems)
		}
	}
}

// byKeyInOrder returns events grouped by key, each key's events in the
// order they came. Two controllers on DeltaFIFOs agree only on that: a
// key's deltas still queued when another change to it arrives are popped
// together, ahead of keys queued after its first, so how calls for
// different keys interleave depends on when each controller popped.
func byKeyInOrder(events []infEvent) []infEvent {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b infEvent) int { return strings.Compare(a.Key, b.Key) })
	return out
}
