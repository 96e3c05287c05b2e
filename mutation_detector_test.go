package cache

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// detectorPod returns a small pod with one container.
func detectorPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx:1"}}},
	}
}

// recordingDetector returns an enabled detector whose failure action
// records reports instead of panicking.
func recordingDetector(t *testing.T) (*cacheMutationDetector, *[]string) {
	t.Helper()
	d := newCacheMutationDetector("pods", klog.Logger{})
	var reports []string
	d.onMutation = func(report string) { reports = append(reports, report) }
	return d, &reports
}

func TestMutationDetector_EnvironmentSwitch(t *testing.T) {
	cases := map[string]struct {
		value string
		want  bool
	}{
		"true":          {"true", true},
		"1":             {"1", true},
		"TRUE":          {"TRUE", true},
		"false":         {"false", false},
		"empty":         {"", false},
		"not a boolean": {"yes please", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBE_CACHE_MUTATION_DETECTOR", tc.value)
			if got := mutationDetectorEnvEnabled(); got != tc.want {
				t.Errorf("mutationDetectorEnvEnabled() = %v with %q, want %v", got, tc.value, tc.want)
			}
		})
	}
}

func TestNewCacheMutationDetector_FollowsTheSwitch(t *testing.T) {
	restore := mutationDetectionEnabled
	t.Cleanup(func() { mutationDetectionEnabled = restore })

	mutationDetectionEnabled = false
	off := NewCacheMutationDetector("pods")
	if _, ok := off.(noopMutationDetector); !ok {
		t.Fatalf("detection off: got %T, want noopMutationDetector", off)
	}
	off.AddObject(detectorPod("a"))
	off.Run(make(chan struct{})) // must return at once although never stopped

	mutationDetectionEnabled = true
	on, ok := NewCacheMutationDetector("pods").(*cacheMutationDetector)
	if !ok {
		t.Fatalf("detection on: got %T, want *cacheMutationDetector", on)
	}
	if on.name != "pods" || on.period != mutationCheckPeriod || on.retention != mutationWatchRetention {
		t.Errorf("detector = %q every %v for %v, want the defaults", on.name, on.period, on.retention)
	}
}

func TestMutationDetector_ReportsOnlyMutatedRuntimeObjects(t *testing.T) {
	cases := map[string]struct {
		add        func(d *cacheMutationDetector) (mutate func())
		wantReport []string // substrings of the one report; nil: no report
	}{
		"untouched pod is not reported": {
			add: func(d *cacheMutationDetector) func() {
				d.AddObject(detectorPod("a"))
				return func() {}
			},
		},
		"changed image is reported with its path": {
			add: func(d *cacheMutationDetector) func() {
				p := detectorPod("a")
				d.AddObject(p)
				return func() { p.Spec.Containers[0].Image = "nginx:2" }
			},
			wantReport: []string{"cache pods modified", "*v1.Pod ns/a", `.Spec.Containers[0].Image: "nginx:1" -> "nginx:2"`},
		},
		"added and removed labels are both listed": {
			add: func(d *cacheMutationDetector) func() {
				p := detectorPod("a")
				d.AddObject(p)
				return func() { p.Labels = map[string]string{"tier": "db"} }
			},
			wantReport: []string{`.ObjectMeta.Labels["app"]: "web" -> (absent)`, `.ObjectMeta.Labels["tier"]: (absent) -> "db"`},
		},
		"only the mutated one of several pods is named": {
			add: func(d *cacheMutationDetector) func() {
				a, b := detectorPod("a"), detectorPod("b")
				d.AddObject(a)
				d.AddObject(b)
				return func() { b.Spec.NodeName = "node-1" }
			},
			wantReport: []string{"1 cached object(s)", "ns/b", `.Spec.NodeName: "" -> "node-1"`},
		},
		"deletion tombstones are ignored": {
			add: func(d *cacheMutationDetector) func() {
				p := detectorPod("a")
				d.AddObject(DeletedFinalStateUnknown{Key: "ns/a", Obj: p})
				return func() { p.Name = "changed" }
			},
		},
		"values that are not runtime objects are ignored": {
			add: func(d *cacheMutationDetector) func() {
				m := map[string]string{"a": "b"}
				d.AddObject(m)
				return func() { m["a"] = "c" }
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, reports := recordingDetector(t)
			now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			mutate := tc.add(d)
			d.check(now)
			mutate()
			d.check(now.Add(time.Second))
			if tc.wantReport == nil {
				if len(*reports) != 0 {
					t.Fatalf("unexpected reports:\n%s", strings.Join(*reports, "\n"))
				}
				return
			}
			if len(*reports) != 1 {
				t.Fatalf("got %d reports, want 1: %q", len(*reports), *reports)
			}
			for _, want := range tc.wantReport {
				if !strings.Contains((*reports)[0], want) {
					t.Errorf("report lacks %q:\n%s", want, (*reports)[0])
				}
			}
			d.check(now.Add(2 * time.Second))
			if len(*reports) != 1 {
				t.Errorf("a mutation was reported %d times, want once", len(*reports))
			}
		})
	}
}

func TestMutationDetector_WatchesEachObjectForOneToTwoRetentionPeriods(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		mutateAfter time.Duration // checks run every minute up to this point
		wantReports int
	}{
		"within the first period":        {mutateAfter: time.Minute, wantReports: 1},
		"after one rotation":             {mutateAfter: 3 * time.Minute, wantReports: 1},
		"after two rotations it is gone": {mutateAfter: 6 * time.Minute, wantReports: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, reports := recordingDetector(t)
			p := detectorPod("a")
			d.AddObject(p)
			now := start
			for ; now.Sub(start) < tc.mutateAfter; now = now.Add(time.Minute) {
				d.check(now)
			}
			p.Spec.NodeName = "node-1"
			d.check(now)
			if len(*reports) != tc.wantReports {
				t.Errorf("got %d reports, want %d", len(*reports), tc.wantReports)
			}
		})
	}
}

func TestMutationDetector_DefaultFailureActionPanicsWithTheReport(t *testing.T) {
	d := newCacheMutationDetector("pods", klog.Logger{})
	p := detectorPod("a")
	d.AddObject(p)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	d.check(now)
	p.Spec.NodeName = "node-1"

	var recovered interface{}
	func() {
		defer func() { recovered = recover() }()
		d.check(now.Add(time.Second))
	}()
	msg, _ := recovered.(string)
	if !strings.Contains(msg, "cache pods modified") || !strings.Contains(msg, ".Spec.NodeName") {
		t.Errorf("recovered %v, want a report naming the cache and the field", recovered)
	}
}

func TestMutationDetector_RunChecksPeriodicallyAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newCacheMutationDetector("pods", klog.Logger{})
		found := make(chan string, 1)
		d.onMutation = func(report string) { found <- report }
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Run(stop)
		}()

		p := detectorPod("a")
		d.AddObject(p)
		time.Sleep(d.period) // virtual time: the next pass takes the pod in
		synctest.Wait()
		p.Spec.NodeName = "node-1"
		// The mutation is a data race by nature; adding another object
		// orders it before the next pass (AddObject and the pass share
		// pendingMu), so the race detector stays quiet.
		d.AddObject(detectorPod("b"))
		select {
		case report := <-found:
			t.Fatalf("reported before the next pass: %s", report)
		default:
		}
		time.Sleep(d.period)
		synctest.Wait()
		select {
		case <-found:
		default:
			t.Fatal("mutation not reported one period later")
		}

		close(stop)
		<-done
	})
}

func TestObjectDifferences_NamesEachChangedLeaf(t *testing.T) {
	cases := map[string]struct {
		mutate func(p *v1.Pod)
		want   []string
	}{
		"no change": {
			mutate: func(*v1.Pod) {},
			want:   nil,
		},
		"scalar field": {
			mutate: func(p *v1.Pod) { p.Spec.Hostname = "h" },
			want:   []string{`.Spec.Hostname: "" -> "h"`},
		},
		"pointer set": {
			mutate: func(p *v1.Pod) { p.Spec.Priority = new(int32(7)) },
			want:   []string{`.Spec.Priority: nil -> &7`},
		},
		"slice grown": {
			mutate: func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d"}) },
			want:   []string{".Spec.Containers: [{Name:c Image:nginx:1"},
		},
		"struct with hidden state is reported whole": {
			mutate: func(p *v1.Pod) {
				p.CreationTimestamp = metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			},
			want: []string{".ObjectMeta.CreationTimestamp.Time: 0001-01-01 00:00:00 +0000 UTC -> 2024-01-01 00:00:00 +0000 UTC"},
		},
		"quantity changed": {
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
			},
			want: []string{".Spec.Containers[0].Resources.Limits: nil -> map[cpu:"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := detectorPod("a")
			after := before.DeepCopy()
			tc.mutate(after)
			got := objectDifferences(before, after)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d lines %q, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("line %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestObjectDifferences_StopsAtTheLimit(t *testing.T) {
	before := &v1.Pod{}
	after := &v1.Pod{}
	for i := range 2 * maxReportedDifferences {
		name := string(rune('a' + i))
		before.Spec.Containers = append(before.Spec.Containers, v1.Container{Name: name})
		after.Spec.Containers = append(after.Spec.Containers, v1.Container{Name: name + "x"})
	}
	got := objectDifferences(before, after)
	if diff := cmp.Diff(maxReportedDifferences, len(got)); diff != "" {
		t.Errorf("line count (-want +got):\n%s", diff)
	}
}
