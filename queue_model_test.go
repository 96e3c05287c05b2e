package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// This file checks DeltaFIFO and RealFIFO against deliberately naive models
// (slices and linear scans, written straight from the documented contracts)
// on random operation sequences. A consumer pops and applies the changes to
// a store, as an informer does; where the queue has KnownObjects it is that
// store, so Replace, Resync and Delete see what was consumed.

// modelNames are the object names the sequences use: few, so keys collide.
var modelNames = []string{"a", "b", "c", "d", "e"}

// modelBatchSize is the RealFIFO batch size in model runs: small, so that
// batches split on size too.
const modelBatchSize = 3

type modelOpKind int

const (
	mAdd modelOpKind = iota
	mUpdate
	mDelete
	mDeleteTombstone
	mReplace
	mResync
	mBookmark
	mPop
	mPopBatch
	numModelOpKinds
)

// modelOp is one step of a sequence.
type modelOp struct {
	kind modelOpKind
	// name is the object of Add, Update, Delete and DeleteTombstone.
	name string
	// list holds the names Replace lists (repeats allowed).
	list []string
	// withObj says whether a DeleteTombstone carries the last object.
	withObj bool
}

func (o modelOp) String() string {
	switch o.kind {
	case mAdd:
		return "add " + o.name
	case mUpdate:
		return "update " + o.name
	case mDelete:
		return "delete " + o.name
	case mDeleteTombstone:
		return fmt.Sprintf("delete-tombstone %s obj=%v", o.name, o.withObj)
	case mReplace:
		return "replace [" + strings.Join(o.list, " ") + "]"
	case mResync:
		return "resync"
	case mBookmark:
		return "bookmark"
	case mPop:
		return "pop"
	case mPopBatch:
		return "pop-batch"
	}
	return "?"
}

// modelConfig selects the queue and its options.
type modelConfig struct {
	real         bool // RealFIFO; otherwise DeltaFIFO
	atomic       bool // RealFIFO: AtomicEvents, UnlockWhileProcessing, bookmarks
	known        bool // DeltaFIFO: with KnownObjects (RealFIFO: whenever not atomic)
	emitReplaced bool // DeltaFIFO: EmitDeltaTypeReplaced
	transform    bool
}

func (c modelConfig) String() string {
	return fmt.Sprintf("%+v", struct{ Real, Atomic, Known, EmitReplaced, Transform bool }{c.real, c.atomic, c.known, c.emitReplaced, c.transform})
}

var deltaFIFOModelConfigs = func() []modelConfig {
	var out []modelConfig
	for _, known := range []bool{false, true} {
		for _, emit := range []bool{false, true} {
			for _, transform := range []bool{false, true} {
				out = append(out, modelConfig{known: known, emitReplaced: emit, transform: transform})
			}
		}
	}
	return out
}()

var realFIFOModelConfigs = []modelConfig{
	{real: true},
	{real: true, transform: true},
	{real: true, atomic: true},
	{real: true, atomic: true, transform: true},
}

// modelPop is what one Pop or PopBatch handed to the consumer.
type modelPop struct {
	Batch   bool // processBatch was called (RealFIFO PopBatch)
	Deltas  []Delta
	Initial bool
}

// render is a compact, exact description of a pop: comparing renderings is
// much cheaper than cmp.Diff, which is kept for reporting a mismatch.
func (p modelPop) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch=%v initial=%v", p.Batch, p.Initial)
	for _, d := range p.Deltas {
		fmt.Fprintf(&b, " %s:%s", d.Type, renderObj(d.Object))
	}
	return b.String()
}

func renderObj(obj interface{}) string {
	switch o := obj.(type) {
	case nil:
		return "nil"
	case *v1.Pod:
		return fmt.Sprintf("%s/%s@%s%v", o.Namespace, o.Name, o.ResourceVersion, o.Labels)
	case DeletedFinalStateUnknown:
		return fmt.Sprintf("tombstone(%s,%s)", o.Key, renderObj(o.Obj))
	case ReplacedAllInfo:
		parts := make([]string, len(o.Objects))
		for i, x := range o.Objects {
			parts[i] = renderObj(x)
		}
		return fmt.Sprintf("all(%s,[%s])", o.ResourceVersion, strings.Join(parts, " "))
	case BookmarkInfo:
		return "bookmark(" + o.ResourceVersion + ")"
	case SyncAllInfo:
		return "syncall"
	}
	return fmt.Sprintf("%T(%v)", obj, obj)
}

func renderPops(ps []modelPop) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.render()
	}
	return out
}

// modelTransform is the transform of model runs: Pods get a label.
func modelTransform(obj interface{}) (interface{}, error) {
	if p, ok := obj.(*v1.Pod); ok {
		return transformedPod(p), nil
	}
	return obj, nil
}

// modelKey is the key of a change's object.
func modelKey(obj interface{}) string {
	switch o := obj.(type) {
	case DeletedFinalStateUnknown:
		return o.Key
	case *v1.Pod:
		return podKey(o.Name)
	}
	return ""
}

// consume applies popped changes to store, as an informer would.
func consume(store *fakeKnown, deltas []Delta) {
	for _, d := range deltas {
		switch d.Type {
		case Added, Updated, Replaced, Sync:
			store.set(modelKey(d.Object), d.Object)
		case Deleted:
			store.remove(modelKey(d.Object))
		case ReplacedAll:
			for _, key := range store.ListKeys() {
				store.remove(key)
			}
			for _, obj := range d.Object.(ReplacedAllInfo).Objects {
				store.set(modelKey(obj), obj)
			}
		}
	}
}

// modelSync is the naive initial-sync rule.
type modelSync struct {
	populated bool
	owed      int
	done      bool
}

func (s *modelSync) check() {
	if s.populated && s.owed == 0 {
		s.done = true
	}
}

func (s *modelSync) touch() { s.populated = true; s.check() }

func (s *modelSync) replaced(queued int) {
	if !s.populated {
		s.populated = true
		s.owed = queued
		s.check()
	}
}

func (s *modelSync) popped(n int) {
	s.owed = max(0, s.owed-n)
	s.check()
}

// queueModel is the naive side of a run.
type queueModel interface {
	add(t DeltaType, obj interface{})
	delete(obj interface{})
	replace(list []interface{}, rv string)
	resync()
	bookmark(rv string)
	pop() (modelPop, bool)
	popBatch() (modelPop, bool)
	synced() bool
	len() int
}

// deltaFIFOModel models DeltaFIFO.
type deltaFIFOModel struct {
	cfg   modelConfig
	store *fakeKnown
	queue []deltaModelEntry
	sync  modelSync
}

type deltaModelEntry struct {
	key    string
	deltas Deltas
}

func (m *deltaFIFOModel) transformed(obj interface{}) interface{} {
	if !m.cfg.transform {
		return obj
	}
	out, _ := modelTransform(obj)
	return out
}

func (m *deltaFIFOModel) find(key string) int {
	return slices.IndexFunc(m.queue, func(e deltaModelEntry) bool { return e.key == key })
}

func (m *deltaFIFOModel) push(key string, d Delta) {
	i := m.find(key)
	if i < 0 {
		m.queue = append(m.queue, deltaModelEntry{key: key, deltas: Deltas{d}})
		return
	}
	ds := m.queue[i].deltas
	last := &ds[len(ds)-1]
	if last.Type == Deleted && d.Type == Deleted {
		if _, lastIsTombstone := last.Object.(DeletedFinalStateUnknown); lastIsTombstone {
			*last = d
		}
		return
	}
	m.queue[i].deltas = append(ds, d)
}

func (m *deltaFIFOModel) add(t DeltaType, obj interface{}) {
	m.sync.touch()
	m.push(modelKey(obj), Delta{Type: t, Object: m.transformed(obj)})
}

func (m *deltaFIFOModel) delete(obj interface{}) {
	m.sync.touch()
	key := modelKey(obj)
	_, known, _ := m.store.GetByKey(key)
	if m.find(key) < 0 && !(m.cfg.known && known) {
		return
	}
	m.push(key, Delta{Type: Deleted, Object: m.transformed(obj)})
}

func (m *deltaFIFOModel) replace(list []interface{}, _ string) {
	action := Sync
	if m.cfg.emitReplaced {
		action = Replaced
	}
	listed := map[string]bool{}
	for _, obj := range list {
		listed[modelKey(obj)] = true
		m.push(modelKey(obj), Delta{Type: action, Object: m.transformed(obj)})
	}
	for _, e := range slices.Clone(m.queue) {
		if listed[e.key] {
			continue
		}
		last := m.queue[m.find(e.key)].deltas.Newest().Object
		if t, ok := last.(DeletedFinalStateUnknown); ok {
			last = t.Obj
		}
		m.push(e.key, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: e.key, Obj: last}})
	}
	if m.cfg.known {
		for _, key := range m.store.ListKeys() {
			if listed[key] || m.find(key) >= 0 {
				continue
			}
			obj, _, _ := m.store.GetByKey(key)
			m.push(key, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: obj}})
		}
	}
	m.sync.replaced(len(m.queue))
}

func (m *deltaFIFOModel) resync() {
	if !m.cfg.known {
		return
	}
	for _, key := range m.store.ListKeys() {
		if m.find(key) < 0 {
			obj, _, _ := m.store.GetByKey(key)
			m.push(key, Delta{Type: Sync, Object: obj})
		}
	}
}

func (m *deltaFIFOModel) bookmark(string) {}

func (m *deltaFIFOModel) pop() (modelPop, bool) {
	if len(m.queue) == 0 {
		return modelPop{}, false
	}
	initial := !m.sync.done
	e := m.queue[0]
	m.queue = m.queue[1:]
	consume(m.store, e.deltas)
	m.sync.popped(1)
	return modelPop{Deltas: e.deltas, Initial: initial}, true
}

func (m *deltaFIFOModel) popBatch() (modelPop, bool) { return m.pop() }
func (m *deltaFIFOModel) synced() bool               { return m.sync.done }
func (m *deltaFIFOModel) len() int                   { return len(m.queue) }

// realFIFOModel models RealFIFO.
type realFIFOModel struct {
	cfg   modelConfig
	store *fakeKnown
	queue []Delta
	sync  modelSync
}

func (m *realFIFOModel) transformed(obj interface{}) interface{} {
	if !m.cfg.transform {
		return obj
	}
	out, _ := modelTransform(obj)
	return out
}

func (m *realFIFOModel) add(t DeltaType, obj interface{}) {
	m.sync.touch()
	m.queue = append(m.queue, Delta{Type: t, Object: m.transformed(obj)})
}

func (m *realFIFOModel) delete(obj interface{}) { m.add(Deleted, obj) }

func (m *realFIFOModel) replace(list []interface{}, rv string) {
	if m.cfg.atomic {
		objs := make([]interface{}, len(list))
		for i, obj := range list {
			objs[i] = m.transformed(obj)
		}
		m.queue = append(m.queue, Delta{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: rv, Objects: objs}})
		m.sync.replaced(len(m.queue))
		return
	}
	listed := map[string]bool{}
	for _, obj := range list {
		listed[modelKey(obj)] = true
	}
	var order []string
	last := map[string]Delta{}
	for _, d := range m.queue {
		key := modelKey(d.Object)
		if _, seen := last[key]; !seen {
			order = append(order, key)
		}
		last[key] = d
	}
	var added []Delta
	for _, key := range order {
		if !listed[key] && last[key].Type != Deleted {
			added = append(added, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: last[key].Object}})
		}
	}
	for _, key := range m.store.ListKeys() {
		if _, queued := last[key]; !listed[key] && !queued {
			obj, _, _ := m.store.GetByKey(key)
			added = append(added, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: obj}})
		}
	}
	for _, obj := range list {
		added = append(added, Delta{Type: Replaced, Object: m.transformed(obj)})
	}
	m.queue = append(m.queue, added...)
	m.sync.replaced(len(m.queue))
}

func (m *realFIFOModel) resync() {
	if m.cfg.atomic {
		m.queue = append(m.queue, Delta{Type: SyncAll, Object: SyncAllInfo{}})
		return
	}
	queued := map[string]bool{}
	for _, d := range m.queue {
		queued[modelKey(d.Object)] = true
	}
	for _, key := range m.store.ListKeys() {
		if !queued[key] {
			obj, _, _ := m.store.GetByKey(key)
			m.queue = append(m.queue, Delta{Type: Sync, Object: obj})
		}
	}
}

func (m *realFIFOModel) bookmark(rv string) {
	if m.cfg.atomic {
		m.queue = append(m.queue, Delta{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: rv}})
	}
}

func (m *realFIFOModel) take(n int, batch bool) modelPop {
	initial := !m.sync.done
	out := slices.Clone(m.queue[:n])
	m.queue = m.queue[n:]
	consume(m.store, out)
	m.sync.popped(n)
	return modelPop{Batch: batch, Deltas: out, Initial: initial}
}

func (m *realFIFOModel) pop() (modelPop, bool) {
	if len(m.queue) == 0 {
		return modelPop{}, false
	}
	return m.take(1, false), true
}

func (m *realFIFOModel) popBatch() (modelPop, bool) {
	if len(m.queue) == 0 {
		return modelPop{}, false
	}
	limit := modelBatchSize
	if m.sync.owed > 0 {
		limit = min(limit, m.sync.owed)
	}
	n := 0
	seen := map[string]bool{}
	for _, d := range m.queue[:min(limit, len(m.queue))] {
		isObjectChange := d.Type == Added || d.Type == Updated || d.Type == Deleted || d.Type == Replaced || d.Type == Sync
		if !isObjectChange {
			if n == 0 {
				n = 1
			}
			break
		}
		if seen[modelKey(d.Object)] {
			break
		}
		seen[modelKey(d.Object)] = true
		n++
	}
	return m.take(n, n > 1), true
}

func (m *realFIFOModel) synced() bool { return m.sync.done }
func (m *realFIFOModel) len() int     { return len(m.queue) }

// queueHarness is the real side of a run: the queue and its consumer.
type queueHarness struct {
	q     Queue
	store *fakeKnown
}

func newQueueHarness(cfg modelConfig) *queueHarness {
	h := &queueHarness{store: newFakeKnown()}
	var transform TransformFunc
	if cfg.transform {
		transform = modelTransform
	}
	if cfg.real {
		opts := RealFIFOOptions{Transformer: transform, AtomicEvents: cfg.atomic}
		if cfg.atomic {
			opts.UnlockWhileProcessing = true
			opts.EmitDeltaTypeBookmark = true
		} else {
			opts.KnownObjects = h.store
		}
		f := NewRealFIFOWithOptions(opts)
		f.batchSize = modelBatchSize
		h.q = f
		return h
	}
	opts := DeltaFIFOOptions{EmitDeltaTypeReplaced: cfg.emitReplaced, Transformer: transform}
	if cfg.known {
		opts.KnownObjects = h.store
	}
	h.q = NewDeltaFIFOWithOptions(opts)
	return h
}

func (h *queueHarness) pop() (modelPop, error) {
	var got modelPop
	_, err := h.q.Pop(func(obj interface{}, isInInitialList bool) error {
		ds := obj.(Deltas)
		got = modelPop{Deltas: slices.Clone(ds), Initial: isInInitialList}
		consume(h.store, ds)
		return nil
	})
	return got, err
}

func (h *queueHarness) popBatch() (modelPop, error) {
	f, ok := h.q.(*RealFIFO)
	if !ok {
		return h.pop()
	}
	var got modelPop
	err := f.PopBatch(
		func(deltas []Delta, isInInitialList bool) error {
			got = modelPop{Batch: true, Deltas: slices.Clone(deltas), Initial: isInInitialList}
			consume(h.store, deltas)
			return nil
		},
		func(obj interface{}, isInInitialList bool) error {
			ds := obj.(Deltas)
			got = modelPop{Deltas: slices.Clone(ds), Initial: isInInitialList}
			consume(h.store, ds)
			return nil
		})
	return got, err
}

func newQueueModel(cfg modelConfig) queueModel {
	if cfg.real {
		return &realFIFOModel{cfg: cfg, store: newFakeKnown()}
	}
	return &deltaFIFOModel{cfg: cfg, store: newFakeKnown()}
}

// runQueueModel runs ops through the queue chosen by cfg and through its
// model, comparing every pop, HasSynced and the backlog after every step,
// then what is left.
func runQueueModel(t *testing.T, cfg modelConfig, ops []modelOp) {
	t.Helper()
	h := newQueueHarness(cfg)
	m := newQueueModel(cfg)
	latest := map[string]*v1.Pod{}
	fail := func(step int, format string, args ...interface{}) {
		t.Helper()
		var b strings.Builder
		for i, op := range ops[:step+1] {
			fmt.Fprintf(&b, "\n  %3d %s", i, op)
		}
		t.Fatalf("config %v, step %d (%s): %s\nsteps:%s", cfg, step, ops[step], fmt.Sprintf(format, args...), b.String())
	}
	for step, op := range ops {
		rv := strconv.Itoa(step + 1)
		var err error
		switch op.kind {
		case mAdd, mUpdate, mDelete:
			obj := queuePod(op.name, rv)
			latest[op.name] = obj
			switch op.kind {
			case mAdd:
				err = h.q.Add(obj)
				m.add(Added, obj)
			case mUpdate:
				err = h.q.Update(obj)
				m.add(Updated, obj)
			default:
				err = h.q.Delete(obj)
				m.delete(obj)
			}
		case mDeleteTombstone:
			ts := DeletedFinalStateUnknown{Key: podKey(op.name)}
			if p, ok := latest[op.name]; ok && op.withObj {
				ts.Obj = p
			}
			err = h.q.Delete(ts)
			m.delete(ts)
		case mReplace:
			list := make([]interface{}, len(op.list))
			for i, name := range op.list {
				p := queuePod(name, rv)
				latest[name] = p
				list[i] = p
			}
			err = h.q.Replace(list, rv)
			m.replace(list, rv)
		case mResync:
			err = h.q.Resync()
			m.resync()
		case mBookmark:
			if f, ok := h.q.(*RealFIFO); ok {
				err = f.Bookmark(rv)
			}
			m.bookmark(rv)
		case mPop, mPopBatch:
			var want modelPop
			var ok bool
			if op.kind == mPop {
				want, ok = m.pop()
			} else {
				want, ok = m.popBatch()
			}
			if !ok {
				break // the queue would block
			}
			var got modelPop
			if op.kind == mPop {
				got, err = h.pop()
			} else {
				got, err = h.popBatch()
			}
			if want.render() != got.render() {
				fail(step, "popped (-model +queue):\n%s", cmp.Diff(want, got))
			}
		}
		if err != nil {
			fail(step, "unexpected error: %v", err)
		}
		if got, want := h.q.HasSynced(), m.synced(); got != want {
			fail(step, "HasSynced() = %v, model says %v", got, want)
		}
		if got, want := queuedLen(h.q), m.len(); got != want {
			fail(step, "%d items queued, model says %d", got, want)
		}
	}

	var want []modelPop
	for {
		p, ok := m.pop()
		if !ok {
			break
		}
		want = append(want, p)
	}
	h.q.Close()
	var got []modelPop
	for {
		p, err := h.pop()
		if errors.Is(err, ErrFIFOClosed) {
			break
		}
		if err != nil {
			t.Fatalf("config %v: draining: %v", cfg, err)
		}
		got = append(got, p)
	}
	if !slices.Equal(renderPops(want), renderPops(got)) {
		t.Fatalf("config %v: left in the queue after %d steps (-model +queue):\n%s", cfg, len(ops), cmp.Diff(want, got))
	}
}

// randomOps draws a sequence of n operations.
func randomOps(r *rand.Rand, n int) []modelOp {
	weights := []struct {
		kind   modelOpKind
		weight int
	}{
		{mAdd, 18}, {mUpdate, 14}, {mDelete, 12}, {mDeleteTombstone, 5}, {mReplace, 6},
		{mResync, 6}, {mBookmark, 4}, {mPop, 22}, {mPopBatch, 13},
	}
	total := 0
	for _, w := range weights {
		total += w.weight
	}
	ops := make([]modelOp, n)
	for i := range ops {
		pick := r.IntN(total)
		var kind modelOpKind
		for _, w := range weights {
			if pick < w.weight {
				kind = w.kind
				break
			}
			pick -= w.weight
		}
		op := modelOp{kind: kind, name: modelNames[r.IntN(len(modelNames))], withObj: r.IntN(2) == 0}
		if kind == mReplace {
			for _, name := range modelNames {
				if r.IntN(10) < 6 {
					op.list = append(op.list, name)
				}
			}
			r.Shuffle(len(op.list), func(i, j int) { op.list[i], op.list[j] = op.list[j], op.list[i] })
			if len(op.list) > 0 && r.IntN(8) == 0 {
				op.list = append(op.list, op.list[0]) // a repeated key
			}
		}
		ops[i] = op
	}
	return ops
}

// modelSeed returns the seed from SEED, or a fresh one.
func modelSeed(t *testing.T) uint64 {
	if s := os.Getenv("SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SEED=%q: %v", s, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

func TestQueueModel_RandomSequences(t *testing.T) {
	seed := modelSeed(t)
	t.Logf("seed %d (rerun with SEED=%d)", seed, seed)
	const sequences, length = 60, 80
	configs := append(slices.Clone(deltaFIFOModelConfigs), realFIFOModelConfigs...)
	for _, cfg := range configs {
		t.Run(cfg.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(len(cfg.String()))))
			for range sequences {
				runQueueModel(t, cfg, randomOps(r, length))
			}
		})
	}
}

// decodeModelOps turns fuzz input into operations: one byte per operation
// (kind and name), plus one byte of names for a Replace.
func decodeModelOps(data []byte) []modelOp {
	var ops []modelOp
	for i := 0; i < len(data) && len(ops) < 300; i++ {
		b := int(data[i])
		op := modelOp{
			kind:    modelOpKind(b % int(numModelOpKinds)),
			name:    modelNames[(b/int(numModelOpKinds))%len(modelNames)],
			withObj: b >= 128,
		}
		if op.kind == mReplace && i+1 < len(data) {
			i++
			mask := data[i]
			for j, name := range modelNames {
				if mask&(1<<j) != 0 {
					op.list = append(op.list, name)
				}
			}
			if mask&0x80 != 0 {
				slices.Reverse(op.list)
			}
		}
		ops = append(ops, op)
	}
	return ops
}

// modelFuzzSeeds are starting inputs: a config byte, then operations.
var modelFuzzSeeds = [][]byte{
	{0, 0, 7, 9, 7},
	{1, 4, 0x1f, 0, 2, 7, 4, 0x03, 7, 7, 7},
	{2, 0, 9, 18, 27, 4, 0x85, 5, 7, 8, 8, 8},
	{3, 4, 0x07, 2, 3, 4, 0x00, 7, 5, 6, 8},
	{7, 0, 2, 3, 12, 4, 0x1e, 7, 7, 5, 7, 7},
}

func FuzzDeltaFIFO_MatchesModel(f *testing.F) {
	for _, s := range modelFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		cfg := deltaFIFOModelConfigs[int(data[0])%len(deltaFIFOModelConfigs)]
		runQueueModel(t, cfg, decodeModelOps(data[1:]))
	})
}

func FuzzRealFIFO_MatchesModel(f *testing.F) {
	for _, s := range modelFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		cfg := realFIFOModelConfigs[int(data[0])%len(realFIFOModelConfigs)]
		runQueueModel(t, cfg, decodeModelOps(data[1:]))
	})
}
