package cache

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ---- the state machine ----

func TestReflectorState_TransitionFunctionCoversEveryOutcome(t *testing.T) {
	type pos struct{ State, Resume reflectorState }
	cases := []struct {
		name        string
		from        reflectorMachine
		outcome     stepOutcome
		want        pos
		singleCycle bool
	}{
		{name: "list synced watches", from: reflectorMachine{state: reflectorListing}, outcome: outcomeSynced, want: pos{reflectorWatching, 0}},
		{name: "stream synced watches", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeSynced, want: pos{reflectorWatching, 0}},
		{name: "stream falls back to list", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeFallBackToList, want: pos{reflectorListing, 0}},
		{name: "stream retries now", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeRetryNow, want: pos{reflectorWatchListing, 0}},
		{name: "stream retries later", from: reflectorMachine{state: reflectorWatchListing}, outcome: outcomeRetryLater, want: pos{reflectorBackingOff, reflectorWatchListing}},
		{name: "watch reopens", from: reflectorMachine{state: reflectorWatching}, outcome: outcomeRetryNow, want: pos{reflectorWatching, 0}},
		{name: "watch backs off", from: reflectorMachine{state: reflectorWatching}, outcome: outcomeRetryLater, want: pos{reflectorBackingOff, reflectorWatching}},
		{name: "backoff resumes", from: reflectorMachine{state: reflectorBackingOff, resume: reflectorWatching}, outcome: outcomeWaited, want: pos{reflectorWatching, 0}},
		{name: "cycle end backs off into a new list", from: reflectorMachine{state: reflectorWatching, entry: reflectorListing}, outcome: outcomeCycleDone, want: pos{reflectorBackingOff, reflectorListing}},
		{name: "cycle end backs off into a new stream", from: reflectorMachine{state: reflectorListing, entry: reflectorWatchListing}, outcome: outcomeCycleDone, want: pos{reflectorBackingOff, reflectorWatchListing}},
		{name: "single cycle stops at its end", from: reflectorMachine{state: reflectorWatching, singleCycle: true}, outcome: outcomeCycleDone, want: pos{reflectorStopped, 0}},
		{name: "shard move relists at once", from: reflectorMachine{state: reflectorWatching, entry: reflectorListing}, outcome: outcomeRelistNow, want: pos{reflectorListing, 0}},
		{name: "shard move streams again at once", from: reflectorMachine{state: reflectorWatching, entry: reflectorWatchListing}, outcome: outcomeRelistNow, want: pos{reflectorWatchListing, 0}},
		{name: "single cycle stops at a shard move", from: reflectorMachine{state: reflectorWatching, singleCycle: true}, outcome: outcomeRelistNow, want: pos{reflectorStopped, 0}},
		{name: "cancel stops listing", from: reflectorMachine{state: reflectorListing}, outcome: outcomeCanceled, want: pos{reflectorStopped, 0}},
		{name: "cancel stops backoff", from: reflectorMachine{state: reflectorBackingOff, resume: reflectorListing}, outcome: outcomeCanceled, want: pos{reflectorStopped, 0}},
		{name: "stopped stays stopped", from: reflectorMachine{state: reflectorStopped}, outcome: outcomeWaited, want: pos{reflectorStopped, 0}},
		{name: "impossible: watching synced", from: reflectorMachine{state: reflectorWatching}, outcome: outcomeSynced, want: pos{reflectorStopped, 0}},
		{name: "impossible: list falls back", from: reflectorMachine{state: reflectorListing}, outcome: outcomeFallBackToList, want: pos{reflectorStopped, 0}},
		{name: "impossible: backoff synced", from: reflectorMachine{state: reflectorBackingOff}, outcome: outcomeSynced, want: pos{reflectorStopped, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.from.next(tc.outcome)
			if diff := cmp.Diff(tc.want, pos{got.state, got.resume}); diff != "" {
				t.Errorf("next(%v) mismatch (-want +got):\n%s", tc.outcome, diff)
			}
			if got.entry != tc.from.entry || got.singleCycle != tc.from.singleCycle {
				t.Errorf("next changed the machine's configuration: %+v -> %+v", tc.from, got)
			}
		})
	}
}

func TestReflectorState_NamesAreLogged(t *testing.T) {
	want := []string{"listing", "watchListing", "watching", "backingOff", "stopped"}
	var got []string
	for s := reflectorListing; s <= reflectorStopped; s++ {
		got = append(got, s.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state names (-want +got):\n%s", diff)
	}
}

// ---- construction ----

func TestNewReflector_DescribesTheExpectedType(t *testing.T) {
	withGVK := &unstructured.Unstructured{}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	withGVK.SetGroupVersionKind(gvk)
	cases := map[string]struct {
		expected interface{}
		wantDesc string
		wantGVK  *schema.GroupVersionKind
	}{
		"nil":                        {expected: nil, wantDesc: "<unspecified>"},
		"typed":                      {expected: &v1.Pod{}, wantDesc: "*v1.Pod"},
		"unstructured without kind":  {expected: &unstructured.Unstructured{}, wantDesc: "*unstructured.Unstructured"},
		"unstructured naming a kind": {expected: withGVK, wantDesc: gvk.String(), wantGVK: &gvk},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReflector(&rfLW{}, tc.expected, newRFStore(), 0)
			if r.TypeDescription() != tc.wantDesc {
				t.Errorf("TypeDescription() = %q, want %q", r.TypeDescription(), tc.wantDesc)
			}
			if diff := cmp.Diff(tc.wantGVK, r.expectedGVK); diff != "" {
				t.Errorf("expected GVK (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewReflector_NamesAfterCallerUnlessNamed(t *testing.T) {
	cases := map[string]struct {
		build func() *Reflector
		want  func(string) bool
	}{
		"NewReflector is named after the calling test file": {
			build: func() *Reflector { return NewReflector(&rfLW{}, &v1.Pod{}, newRFStore(), 0) },
			// Test files live in the package directory, so the first caller
			// outside it is the testing package.
			want: func(name string) bool { return name != "" && !strings.HasPrefix(name, "reflector.go") },
		},
		"NewNamedReflector keeps its name": {
			build: func() *Reflector { return NewNamedReflector("pods", &rfLW{}, &v1.Pod{}, newRFStore(), 0) },
			want:  func(name string) bool { return name == "pods" },
		},
		"options name and description win": {
			build: func() *Reflector {
				return NewReflectorWithOptions(&rfLW{}, &v1.Pod{}, newRFStore(), ReflectorOptions{Name: "n", TypeDescription: "d"})
			},
			want: func(name string) bool { return name == "n" },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.build().Name(); !tc.want(got) {
				t.Errorf("Name() = %q", got)
			}
		})
	}
}

// rfCapableLW is a ListerWatcher that says nothing about streaming lists.
type rfCapableLW struct{ ListerWatcher }

func TestNewReflector_StreamsOnlyWhenGateOnAndClientCapable(t *testing.T) {
	cases := map[string]struct {
		gate bool
		lw   ListerWatcher
		want bool
	}{
		"gate off":                       {gate: false, lw: &rfLW{streaming: true}, want: false},
		"gate on, capable client":        {gate: true, lw: &rfLW{streaming: true}, want: true},
		"gate on, client says it cannot": {gate: true, lw: &rfLW{streaming: false}, want: false},
		"gate on, client says nothing":   {gate: true, lw: rfCapableLW{}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(setFeatureForTesting(featureWatchListClient, tc.gate))
			r := NewReflectorWithOptions(tc.lw, &v1.Pod{}, newRFStore(), ReflectorOptions{})
			if r.useWatchList != tc.want {
				t.Errorf("useWatchList = %v, want %v", r.useWatchList, tc.want)
			}
		})
	}
}

func TestNewReflector_WatchTimeoutIsRandomWithinMinAndTwiceMin(t *testing.T) {
	cases := map[string]struct {
		min     time.Duration
		wantMin int64
	}{
		"default":                 {min: 0, wantMin: 300},
		"below default is raised": {min: time.Second, wantMin: 300},
		"above default is kept":   {min: 30 * time.Minute, wantMin: 1800},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReflectorWithOptions(&rfLW{}, &v1.Pod{}, newRFStore(), ReflectorOptions{MinWatchTimeout: tc.min})
			for range 100 {
				got := r.watchTimeoutSeconds()
				if got < tc.wantMin || got >= 2*tc.wantMin {
					t.Fatalf("watch timeout %ds outside [%d, %d)", got, tc.wantMin, 2*tc.wantMin)
				}
			}
		})
	}
}
