package dedup

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// watchPods has r follow n freshly allocated pods and returns them; the
// caller keeps them or drops them.
func watchPods(r *retention, n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = dedupPod(7, i)
		r.watch(pods[i])
	}
	return pods
}

// collect runs the garbage collector often enough for every probe taken
// so far to be judged.
func collect() {
	for range retentionGCs + 1 {
		runtime.GC()
	}
}

// A window of replaced objects is judged only once it is full and each of
// them has lived through retentionGCs collections; most of them still held
// means kept, most of them gone starts a new window.
func TestRetention_Verdict(t *testing.T) {
	tests := []struct {
		name      string
		held      int // of a full window, how many the test keeps
		probes    int
		collected bool
		want      bool
	}{
		{"every replaced object kept", retentionWindow, retentionWindow, true, true},
		{"most kept", retentionWindow*3/4 + 1, retentionWindow, true, true},
		{"half kept is not most", retentionWindow / 2, retentionWindow, true, false},
		{"none kept", 0, retentionWindow, true, false},
		{"kept but no collection yet", retentionWindow, retentionWindow, false, false},
		{"kept but the window not full", retentionWindow - 1, retentionWindow - 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRetention()
			if !tt.collected {
				r.gcCount = func() uint64 { return 5 }
			}
			pods := watchPods(r, tt.probes)
			kept := append([]*v1.Pod(nil), pods[:tt.held]...)
			clear(pods)
			collect()
			if got := r.verdict(); got != tt.want {
				t.Errorf("verdict = %v, want %v", got, tt.want)
			}
			runtime.KeepAlive(kept)
		})
	}
}

// A window found not kept is forgotten: the next window is judged on its
// own, so a program whose handlers start keeping objects later is found.
func TestRetention_NextWindowAfterFreed(t *testing.T) {
	r := newRetention()
	watchPods(r, retentionWindow)
	collect()
	if r.verdict() {
		t.Fatal("freed objects judged kept")
	}
	kept := watchPods(r, retentionWindow)
	collect()
	if !r.verdict() {
		t.Error("a kept window after a freed one was not judged kept")
	}
	runtime.KeepAlive(kept)
}

// Probes beyond a window are not taken: watching stays cheap however many
// objects are compacted between two verdicts.
func TestRetention_WindowBoundsProbes(t *testing.T) {
	r := newRetention()
	watchPods(r, 3*retentionWindow)
	if n := len(r.probes); n != retentionWindow {
		t.Errorf("%d probes taken, want %d", n, retentionWindow)
	}
}

// The compactor asks for sharing on arrival once the objects its
// compactions replaced are kept by someone else (a handler's own cache),
// and not while they are freed.
func TestCompactor_ShareOnArrivalWhenReplacedObjectsAreKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "handlers drop", true: "handlers keep"}[keep]
		t.Run(name, func(t *testing.T) {
			s := eagerDeduper()
			store := newObjectStore()
			c := NewCompactor(s, store)
			var handlerCache []interface{}
			for i := range retentionWindow {
				twin := s.Share(dedupPod(2, i))
				updated := dedupPod(2, i)
				updated.ResourceVersion = "2"
				store.add(updated)
				if keep {
					handlerCache = append(handlerCache, updated)
				}
				key, _ := objectKey(updated)
				c.Note(key, twin, time.Now())
			}
			if n := c.CompactAll(); n != retentionWindow {
				t.Fatalf("CompactAll replaced %d objects, want %d", n, retentionWindow)
			}
			collect()
			c.judgeRetention(context.Background())
			if got := c.ShareOnArrival(); got != keep {
				t.Errorf("ShareOnArrival = %v, want %v", got, keep)
			}
			runtime.KeepAlive(handlerCache)
		})
	}
}

// Once its window is full, the retention takes no more probes: objects
// replaced then cost neither a weak pointer nor a reading of the
// collection count, until a verdict starts the next window.
func TestRetention_FullWindowTakesNoProbe(t *testing.T) {
	for _, n := range []int{0, 1, retentionWindow} {
		t.Run(fmt.Sprintf("%d more", n), func(t *testing.T) {
			r := newRetention()
			reads := 0
			r.gcCount = func() uint64 { reads++; return 1 }
			pods := watchPods(r, retentionWindow+n)
			if len(r.probes) != retentionWindow {
				t.Errorf("%d probes, want %d", len(r.probes), retentionWindow)
			}
			if reads != retentionWindow {
				t.Errorf("the collection count was read %d times, want %d", reads, retentionWindow)
			}
			runtime.KeepAlive(pods)
		})
	}
}
