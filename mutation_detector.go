package cache

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// mutationDetectionEnabled is the value of KUBE_CACHE_MUTATION_DETECTOR,
// read once when the package is initialised: a boolean as strconv.ParseBool
// reads it; anything else, or no value, means off.
var mutationDetectionEnabled = mutationDetectorEnvEnabled()

// mutationDetectorEnvEnabled reads KUBE_CACHE_MUTATION_DETECTOR.
func mutationDetectorEnvEnabled() bool {
	on, err := strconv.ParseBool(os.Getenv("KUBE_CACHE_MUTATION_DETECTOR"))
	return err == nil && on
}

// MutationDetector catches code that modifies objects it got from a cache,
// which every reader must treat as read-only. It keeps a deep copy of each
// object it is given and, while Run runs, periodically compares the two.
type MutationDetector interface {
	// AddObject starts watching obj, a runtime.Object, for a few minutes.
	// Other values, including DeletedFinalStateUnknown, are ignored.
	AddObject(obj interface{})

	// Run compares watched objects with their copies periodically and
	// returns once stopCh is closed.
	Run(stopCh <-chan struct{})
}

// NewCacheMutationDetector returns the detector for the cache called name.
// Unless KUBE_CACHE_MUTATION_DETECTOR was true when the program started, it
// returns a detector that does nothing and costs nothing. Otherwise the
// detector keeps a copy of every object for minutes (a real memory cost,
// meant for tests and CI), and a detected mutation is fatal: Run panics,
// listing what changed, since no result computed from a corrupted cache
// can be trusted.
func NewCacheMutationDetector(name string) MutationDetector {
	if !mutationDetectionEnabled {
		return noopMutationDetector{}
	}
	logger := klog.Background().WithValues("cache", name)
	logger.Info("Warning: the cache mutation detector is on; it keeps a copy of every cached object, use it only in tests")
	return newCacheMutationDetector(name, logger)
}

// noopMutationDetector is the MutationDetector used when detection is off.
type noopMutationDetector struct{}

// AddObject does nothing.
func (noopMutationDetector) AddObject(interface{}) {}

// Run returns at once: there is nothing to watch.
func (noopMutationDetector) Run(<-chan struct{}) {}

// Defaults of the detector that NewCacheMutationDetector builds.
const (
	mutationCheckPeriod    = time.Second
	mutationWatchRetention = 2 * time.Minute
)

// cacheMutationDetector is the MutationDetector used when detection is on.
//
// Objects are watched in generations: new objects join the current
// generation; every retention period the current generation becomes the
// previous one and the previous one is dropped. So each object is watched
// for between one and two retention periods.
//
// It has two locks so that AddObject, called on the informer's hot path,
// never waits for a comparison pass, which may take long on a big cache.
// Lock order: checkMu, then pendingMu.
type cacheMutationDetector struct {
	// pendingMu guards pending.
	pendingMu sync.Mutex
	// pending holds objects added since the last comparison pass.
	pending []watchedObject

	// checkMu guards current, previous and rotatedAt; it is held for a
	// whole comparison pass.
	checkMu sync.Mutex
	// current and previous are the two watched generations.
	current, previous []watchedObject
	// rotatedAt is when current began; zero before the first pass.
	rotatedAt time.Time

	name      string
	logger    klog.Logger
	period    time.Duration
	retention time.Duration
	// onMutation is the failure action, called with a report listing the
	// differences; it panics unless a test replaced it.
	onMutation func(report string)
}

// watchedObject is a cached object and the copy taken when it was added.
type watchedObject struct {
	cached runtime.Object
	copy   runtime.Object
}

// newCacheMutationDetector returns an enabled detector with the default
// period and retention and the fatal failure action.
func newCacheMutationDetector(name string, logger klog.Logger) *cacheMutationDetector {
	return &cacheMutationDetector{
		name:       name,
		logger:     logger,
		period:     mutationCheckPeriod,
		retention:  mutationWatchRetention,
		onMutation: func(report string) { panic(report) },
	}
}

// AddObject copies obj and queues it for the next comparison pass. The copy
// is made before any lock is taken.
func (d *cacheMutationDetector) AddObject(obj interface{}) {
	if _, ok := obj.(DeletedFinalStateUnknown); ok {
		return
	}
	object, ok := obj.(runtime.Object)
	if !ok {
		return
	}
	w := watchedObject{cached: object, copy: object.DeepCopyObject()}
	d.pendingMu.Lock()
	defer d.pendingMu.Unlock()
	d.pending = append(d.pending, w)
}

// Run makes a comparison pass at once and then once per period, until
// stopCh is closed.
func (d *cacheMutationDetector) Run(stopCh <-chan struct{}) {
	ticker := time.NewTicker(d.period)
	defer ticker.Stop()
	for {
		d.check(time.Now())
		select {
		case <-stopCh:
			return
		case <-ticker.C:
		}
	}
}

// check makes one comparison pass at time now: it rotates generations when
// due, takes in the pending objects and compares every watched object with
// its copy. Mutated objects are reported once, through onMutation, and then
// no longer watched.
func (d *cacheMutationDetector) check(now time.Time) {
	d.checkMu.Lock()
	defer d.checkMu.Unlock()

	switch {
	case d.rotatedAt.IsZero():
		d.rotatedAt = now
	case now.Sub(d.rotatedAt) > d.retention:
		d.previous, d.current = d.current, nil
		d.rotatedAt = now
	}
	d.current = append(d.current, d.takePending()...)

	var findings []string
	d.previous = d.keepUnmutated(d.previous, &findings)
	d.current = d.keepUnmutated(d.current, &findings)
	if len(findings) == 0 {
		return
	}
	report := fmt.Sprintf("cache %s modified: %d cached object(s) changed after they were stored:\n%s",
		d.name, len(findings), strings.Join(findings, "\n"))
	d.logger.Error(nil, "Cached objects were modified", "count", len(findings), "report", report)
	d.onMutation(report)
}

// takePending empties and returns pending.
func (d *cacheMutationDetector) takePending() []watchedObject {
	d.pendingMu.Lock()
	defer d.pendingMu.Unlock()
	out := d.pending
	d.pending = nil
	return out
}

// keepUnmutated filters watched in place, dropping mutated objects and
// adding a description of each to findings.
func (d *cacheMutationDetector) keepUnmutated(watched []watchedObject, findings *[]string) []watchedObject {
	kept := watched[:0]
	for _, w := range watched {
		if reflect.DeepEqual(w.cached, w.copy) {
			kept = append(kept, w)
			continue
		}
		*findings = append(*findings, fmt.Sprintf("%T %s:\n  %s",
			w.cached, describeObject(w.cached), strings.Join(objectDifferences(w.copy, w.cached), "\n  ")))
	}
	clear(watched[len(kept):])
	return kept
}

// describeObject names obj by its key, or says it has none.
func describeObject(obj runtime.Object) string {
	if key, err := MetaNamespaceKeyFunc(obj); err == nil {
		return key
	}
	return "(no metadata)"
}

// maxReportedDifferences bounds the lines reported per object.
const maxReportedDifferences = 20

// objectDifferences lists where after differs from before, one
// "path: before -> after" line per differing leaf, at most
// maxReportedDifferences of them.
func objectDifferences(before, after interface{}) []string {
	w := diffWalker{}
	w.walk("", reflect.ValueOf(before), reflect.ValueOf(after), 0)
	return w.lines
}

// diffWalker walks two values of the same type side by side.
type diffWalker struct {
	lines []string
}

// maxDiffDepth stops the walk on pathologically deep or cyclic values.
const maxDiffDepth = 64

// walk compares before and after at path, descending where they differ.
func (w *diffWalker) walk(path string, before, after reflect.Value, depth int) {
	if len(w.lines) >= maxReportedDifferences {
		return
	}
	switch {
	case !before.IsValid() || !after.IsValid():
		if before.IsValid() != after.IsValid() {
			w.report(path, before, after)
		}
		return
	case before.Type() != after.Type():
		w.report(path, before, after)
		return
	case reflect.DeepEqual(before.Interface(), after.Interface()):
		return
	case depth > maxDiffDepth:
		w.report(path, before, after)
		return
	}
	switch before.Kind() {
	case reflect.Pointer, reflect.Interface:
		if before.IsNil() || after.IsNil() {
			w.report(path, before, after)
			return
		}
		w.walk(path, before.Elem(), after.Elem(), depth+1)
	case reflect.Struct:
		w.walkStruct(path, before, after, depth)
	case reflect.Slice, reflect.Array:
		if before.Len() != after.Len() || before.Kind() == reflect.Slice && before.IsNil() != after.IsNil() {
			w.report(path, before, after)
			return
		}
		for i := range before.Len() {
			w.walk(fmt.Sprintf("%s[%d]", path, i), before.Index(i), after.Index(i), depth+1)
		}
	case reflect.Map:
		if before.IsNil() != after.IsNil() {
			w.report(path, before, after)
			return
		}
		for _, key := range unionOfMapKeys(before, after) {
			w.walk(fmt.Sprintf("%s[%v]", path, formatValue(key)), before.MapIndex(key), after.MapIndex(key), depth+1)
		}
	default:
		w.report(path, before, after)
	}
}

// walkStruct compares structs field by field. A struct with unexported
// fields (time.Time, resource.Quantity) is compared and reported whole.
func (w *diffWalker) walkStruct(path string, before, after reflect.Value, depth int) {
	t := before.Type()
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			w.report(path, before, after)
			return
		}
	}
	for i := range t.NumField() {
		w.walk(path+"."+t.Field(i).Name, before.Field(i), after.Field(i), depth+1)
	}
}

// report adds one difference line.
func (w *diffWalker) report(path string, before, after reflect.Value) {
	if path == "" {
		path = "(object)"
	}
	w.lines = append(w.lines, fmt.Sprintf("%s: %s -> %s", path, formatValue(before), formatValue(after)))
}

// unionOfMapKeys returns the keys of both maps, each once, in a stable
// order.
func unionOfMapKeys(a, b reflect.Value) []reflect.Value {
	seen := map[string]reflect.Value{}
	for _, m := range []reflect.Value{a, b} {
		for _, key := range m.MapKeys() {
			seen[formatValue(key)] = key
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	keys := make([]reflect.Value, len(names))
	for i, name := range names {
		keys[i] = seen[name]
	}
	return keys
}

// formatValue renders a value for a difference line: absent values and
// nils are named, pointers are followed, strings are quoted.
func formatValue(v reflect.Value) string {
	if !v.IsValid() {
		return "(absent)"
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		if v.IsNil() {
			return "nil"
		}
	}
	if v.Kind() == reflect.Pointer {
		return "&" + formatValue(v.Elem())
	}
	if v.Kind() == reflect.String {
		return strconv.Quote(v.String())
	}
	return fmt.Sprintf("%+v", v.Interface())
}
