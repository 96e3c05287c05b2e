package cache

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// echoShardSelector sets lm.ShardInfo to say selector was applied, as a
// server with the ShardedListAndWatch feature does. With an apimachinery
// older than v0.36 (no such field) it does nothing.
func echoShardSelector(lm *metav1.ListMeta, selector string) {
	f := reflect.ValueOf(lm).Elem().FieldByName("ShardInfo")
	if !f.IsValid() {
		return
	}
	info := reflect.New(f.Type().Elem())
	info.Elem().FieldByName("Selector").SetString(selector)
	f.Set(info)
}

// modeInThisBuild is the mode a test expects where it would expect want
// with apimachinery v0.36 or later: without a way to send the selector, every
// server seems to ignore it.
func modeInThisBuild(want ShardMode) ShardMode {
	if want == ShardModeServer && !canSendShardSelector() {
		return ShardModeClient
	}
	return want
}

// TestShardWire_FieldsAreFoundExactlyWhenApimachineryHasThem pins the
// reflection on the apimachinery this test was built with: from v0.36 the
// fields must be found (a rename would otherwise silently turn sharding
// into client filtering), before it they must not.
func TestShardWire_FieldsAreFoundExactlyWhenApimachineryHasThem(t *testing.T) {
	version := apimachineryVersion(t)
	want := minorOf(t, version) >= 36
	if got := canSendShardSelector(); got != want {
		t.Fatalf("with k8s.io/apimachinery %s canSendShardSelector() = %v, want %v", version, got, want)
	}

	var o metav1.ListOptions
	if got := setShardSelector(&o, firstHalf); got != want {
		t.Errorf("setShardSelector reported %v, want %v", got, want)
	}
	wantSel := ""
	if want {
		wantSel = firstHalf
	}
	if got := shardSelectorOf(o); got != wantSel {
		t.Errorf("shardSelectorOf after setShardSelector = %q, want %q", got, wantSel)
	}

	var lm metav1.ListMeta
	echoShardSelector(&lm, firstHalf)
	sel, ok := shardInfoOf(&metav1.List{ListMeta: lm})
	if ok != want || sel != wantSel {
		t.Errorf("shardInfoOf a list echoing the selector = %q, %v; want %q, %v", sel, ok, wantSel, want)
	}
	if sel, ok := shardInfoOf(&metav1.List{}); ok || sel != "" {
		t.Errorf("shardInfoOf a list echoing nothing = %q, %v; want none", sel, ok)
	}
}

// apimachineryVersion returns the version of k8s.io/apimachinery this
// module's go.mod requires, which is the one built in: the module is a
// root, and the scripts that test it on newer minors edit the go.mod of a
// copy.
func apimachineryVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatalf("reading go.mod: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "k8s.io/apimachinery" {
			return fields[1]
		}
	}
	t.Fatal("go.mod does not require k8s.io/apimachinery")
	return ""
}

// minorOf returns the minor of a v0.x.y module version.
func minorOf(t *testing.T, version string) int {
	t.Helper()
	rest, ok := strings.CutPrefix(version, "v0.")
	if !ok {
		t.Fatalf("version %q is not v0.x.y", version)
	}
	minor, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(minor)
	if err != nil {
		t.Fatalf("version %q: minor: %v", version, err)
	}
	return n
}
