package clientgo

import (
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// namedChecker is client-go's DoneChecker (v0.36 on), named here by its
// methods so that the tests compile on v0.35 too.
type namedChecker interface {
	Name() string
	Done() <-chan struct{}
}

// checkerOf calls x's HasSyncedChecker, if x has one.
func checkerOf(t *testing.T, x any) (namedChecker, bool) {
	t.Helper()
	m := reflect.ValueOf(x).MethodByName("HasSyncedChecker")
	if !m.IsValid() {
		return nil, false
	}
	c, ok := m.Call(nil)[0].Interface().(namedChecker)
	if !ok {
		t.Fatalf("%T's HasSyncedChecker returns no DoneChecker", x)
	}
	return c, true
}

// clientGoMinor returns the minor of the k8s.io/client-go this module's
// go.mod requires, which is the one built in (tools/minors.sh edits the
// go.mod of a copy to test others).
func clientGoMinor(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatalf("reading go.mod: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/client-go" {
			minor, _, _ := strings.Cut(strings.TrimPrefix(f[1], "v0."), ".")
			n, err := strconv.Atoi(minor)
			if err != nil {
				t.Fatalf("client-go version %q: %v", f[1], err)
			}
			return n
		}
	}
	t.Fatal("go.mod does not require k8s.io/client-go")
	return 0
}

// exportedMethods lists the exported methods of t.
func exportedMethods(t reflect.Type) []string {
	var names []string
	for i := range t.NumMethod() {
		names = append(names, t.Method(i).Name)
	}
	slices.Sort(names)
	return names
}

// TestSyncedChecker_PromotesHasSyncedCheckerExactlyWhereClientGoHasIt pins
// checker.go's promotion trick: a latch adds HasSyncedChecker from client-go
// v0.36 on and nothing before, and no other DeltaFIFO method; so the
// informer's method set is client-go's interface, no more.
func TestSyncedChecker_PromotesHasSyncedCheckerExactlyWhereClientGoHasIt(t *testing.T) {
	want := clientGoMinor(t) >= 36
	if clientGoHasCheckers != want {
		t.Fatalf("clientGoHasCheckers = %v on client-go v0.%d", clientGoHasCheckers, clientGoMinor(t))
	}
	var wantLatch []string
	if want {
		wantLatch = []string{"HasSyncedChecker"}
	}
	if diff := cmp.Diff(wantLatch, exportedMethods(reflect.TypeFor[*syncedChecker]())); diff != "" {
		t.Errorf("latch methods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(exportedMethods(reflect.TypeFor[toolscache.SharedIndexInformer]()), exportedMethods(reflect.TypeFor[*informer]())); diff != "" {
		t.Errorf("informer methods (-client-go's interface +ours):\n%s", diff)
	}
	if diff := cmp.Diff(exportedMethods(reflect.TypeFor[toolscache.Controller]()), exportedMethods(reflect.TypeFor[controller]())); diff != "" {
		t.Errorf("controller methods (-client-go's interface +ours):\n%s", diff)
	}
	_, regHas := reflect.TypeFor[*registration]().MethodByName("HasSyncedChecker")
	if regHas != want {
		t.Errorf("registration has HasSyncedChecker: %v, want %v", regHas, want)
	}
}

// TestHasSyncedChecker_DoneAfterSyncAndNamedAsClientGo checks the checkers
// of the informer, its controller and a handler's registration (client-go
// v0.36 on): open before Run, closed once synced, and named as client-go's
// own informer names them.
func TestHasSyncedChecker_DoneAfterSyncAndNamedAsClientGo(t *testing.T) {
	if !clientGoHasCheckers {
		t.Skip("client-go before v0.36 has no HasSyncedChecker; the test above pins its absence")
	}
	lw := newSource(t, newPod("ns", "a"))
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	theirs := toolscache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	h := toolscache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		t.Fatal(err)
	}
	theirReg, err := theirs.AddEventHandler(h)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]any{"informer": inf, "controller": inf.GetController(), "registration": reg}
	want := map[string]any{"informer": theirs, "controller": theirs, "registration": theirReg}
	checkers := map[string]namedChecker{}
	for name, x := range ours {
		c, ok := checkerOf(t, x)
		if !ok {
			t.Fatalf("%s has no HasSyncedChecker", name)
		}
		w, _ := checkerOf(t, want[name])
		if c.Name() != w.Name() {
			t.Errorf("%s checker name = %q, client-go's = %q", name, c.Name(), w.Name())
		}
		select {
		case <-c.Done():
			t.Errorf("%s checker done before Run", name)
		default:
		}
		checkers[name] = c
	}
	run(t, inf)
	waitSynced(t, inf.HasSynced, reg.HasSynced)
	for name, c := range checkers {
		<-c.Done() // the test times out if it never closes
		_ = name
	}
}

// TestRegistration_NamesAsClientGo compares the names of the handler sync
// checkers with those client-go's own informer gives the same handlers.
func TestRegistration_NamesAsClientGo(t *testing.T) {
	if !clientGoHasCheckers {
		t.Skip("client-go before v0.36 names no handler checkers")
	}
	rec := newRecorder()
	handlers := map[string]toolscache.ResourceEventHandler{
		"struct pointer":   rec,
		"funcs value":      toolscache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}},
		"funcs pointer":    &toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(interface{}) {}},
		"method funcs":     toolscache.ResourceEventHandlerFuncs{UpdateFunc: rec.OnUpdate, DeleteFunc: rec.OnDelete},
		"mixed funcs":      toolscache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}, DeleteFunc: rec.OnDelete},
		"empty funcs":      toolscache.ResourceEventHandlerFuncs{},
		"detailed funcs":   toolscache.ResourceEventHandlerDetailedFuncs{},
		"filtering":        toolscache.FilteringResourceEventHandler{Handler: rec},
		"filtering by ptr": &toolscache.FilteringResourceEventHandler{Handler: rec},
	}
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			lw := &toolscache.ListWatch{}
			ours, err := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil).AddEventHandler(h)
			if err != nil {
				t.Fatalf("kcache: %v", err)
			}
			theirs, err := toolscache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil).AddEventHandler(h)
			if err != nil {
				t.Fatalf("client-go: %v", err)
			}
			got, _ := checkerOf(t, ours)
			want, _ := checkerOf(t, theirs)
			if got, want := got.Name(), want.Name(); got != want {
				t.Errorf("name = %q, client-go says %q", got, want)
			}
		})
	}
}
