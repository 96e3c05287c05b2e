package clientgo

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kcache/cache"
)

// promotedInformerMethods are the methods of client-go's SharedIndexInformer
// the bridge's informer does not declare: each is promoted from an embedded
// latch, and exists where client-go has it.
var promotedInformerMethods = map[string]string{
	"HasSyncedChecker": "syncedChecker (checker.go)",
	"SetShardSelector": "shardLatch's held client-go informer (shard.go)",
}

// declaredMethods returns the exported methods declared in this package's
// non-test files on the named receiver type.
func declaredMethods(t *testing.T, recv string) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok && id.Name == recv {
				names = append(names, fn.Name.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// TestInformer_EveryClientGoMethodIsTheBridgesOwn guards shard.go's
// promotion: a method of client-go's SharedIndexInformer the bridge neither
// declares nor promotes on purpose would be promoted from the held client-go
// informer, which never runs. A client-go minor that adds one fails here.
func TestInformer_EveryClientGoMethodIsTheBridgesOwn(t *testing.T) {
	declared := declaredMethods(t, "informer")
	for _, name := range exportedMethods(reflect.TypeFor[toolscache.SharedIndexInformer]()) {
		if _, ok := slices.BinarySearch(declared, name); ok {
			continue
		}
		if from, ok := promotedInformerMethods[name]; ok {
			t.Logf("%s comes from the %s", name, from)
			continue
		}
		t.Errorf("client-go's SharedIndexInformer has %s, which the bridge's informer does not declare: it would come from the held client-go informer, which never runs", name)
	}
}

// TestShardLatch_PromotesSetShardSelectorExactlyWhereClientGoHasIt pins the
// latch per minor: from client-go v0.38 on the informer has
// SetShardSelector and holds a client-go informer; before, neither.
func TestShardLatch_PromotesSetShardSelectorExactlyWhereClientGoHasIt(t *testing.T) {
	want := clientGoMinor(t) >= 38
	if clientGoHasShardSelector != want {
		t.Fatalf("clientGoHasShardSelector = %v on client-go v0.%d", clientGoHasShardSelector, clientGoMinor(t))
	}
	_, has := reflect.TypeFor[*informer]().MethodByName("SetShardSelector")
	if has != want {
		t.Errorf("informer has SetShardSelector: %v, want %v", has, want)
	}
	inf := NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.Pod{}, 0, nil).(*informer)
	if held := inf.shardLatch.clientGoInformer != nil; held != want {
		t.Errorf("holds a client-go informer: %v, want %v", held, want)
	}
	if stands := inf.shardLatch.lw != nil; stands != want {
		t.Errorf("kcache lists through the bridge's stand-in: %v, want %v", stands, want)
	}
}

// TestShardLatch_StartListsNothing runs informers of every kind the latch
// meets and checks the held informer's run never called its ListerWatcher
// (goleak, in TestMain, checks it left no goroutine).
func TestShardLatch_StartListsNothing(t *testing.T) {
	if !clientGoHasShardSelector {
		t.Skip("client-go before v0.38 has no SetShardSelector: there is no held informer")
	}
	sharded, err := kcache.NewShardedListerWatcher(newSource(t), "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		inf        toolscache.SharedIndexInformer
		wantStands bool
	}{
		"over a client-go ListerWatcher":        {inf: NewSharedIndexInformer(newSource(t, newPod("ns", "a")), &v1.Pod{}, 0, nil), wantStands: true},
		"over a kcache ShardedListerWatcher":    {inf: NewSharedIndexInformer(sharded, &v1.Pod{}, 0, nil)},
		"Wrap of a kcache informer":             {inf: Wrap(kcache.NewSharedIndexInformer(newSource(t), &v1.Pod{}, 0, nil))},
		"from a factory of a client-go factory": {inf: onKcache(toolscache.NewSharedIndexInformer(newSource(t), &v1.Pod{}, 0, nil), 0), wantStands: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inf := tc.inf.(*informer)
			if stands := inf.shardLatch.lw != nil; stands != tc.wantStands {
				t.Errorf("kcache lists through the bridge's stand-in: %v, want %v", stands, tc.wantStands)
			}
			run(t, inf)
			waitSynced(t, inf.HasSynced)
			if n := inf.shardLatch.refusals.calls.Load(); n != 0 {
				t.Errorf("the held informer called its ListerWatcher %d times", n)
			}
			if sel, err := clientGoShardSelector(inf.shardLatch.clientGoInformer); err != nil || sel != nil {
				t.Errorf("held selector = %v, %v; want nil, nil", sel, err)
			}
		})
	}
}

// countingLW counts the calls of each method through which a list or watch
// goes.
type countingLW struct {
	toolscache.ListerWatcher
	calls map[string]int
}

func (c *countingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	c.calls["List"]++
	//lint:ignore SA1019 a ListerWatcher with only the legacy methods is the case tested.
	return c.ListerWatcher.List(o)
}

// TestShardableLW_PassesThroughUntilRestricted checks the stand-in changes
// nothing while no selector is in force: calls reach the caller's
// ListerWatcher (its legacy methods, if it has no others) and the
// streaming-list probe is answered as it answers.
func TestShardableLW_PassesThroughUntilRestricted(t *testing.T) {
	src := newSource(t, newPod("ns", "a"))
	c := &countingLW{ListerWatcher: src, calls: map[string]int{}}
	s := newShardableLW(c)
	list, err := s.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"List": 1}, c.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if items, err := meta.ExtractList(list); err != nil || len(items) != 1 {
		t.Errorf("listed %d items (%v), want 1", len(items), err)
	}
	probes := map[string]struct {
		lw   toolscache.ListerWatcher
		want bool
	}{
		"no probe":   {lw: &toolscache.ListWatch{}},
		"fake probe": {lw: src, want: reportsNoWatchList(src)},
	}
	for name, p := range probes {
		if got := newShardableLW(p.lw).IsWatchListSemanticsUnSupported(); got != p.want {
			t.Errorf("%s: IsWatchListSemanticsUnSupported = %v, want %v", name, got, p.want)
		}
	}
}

// reportsNoWatchList asks lw's own streaming-list probe.
func reportsNoWatchList(lw toolscache.ListerWatcher) bool {
	r, ok := lw.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && r.IsWatchListSemanticsUnSupported()
}
