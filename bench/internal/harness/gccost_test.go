package harness

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestCPUPerEventGCAmortized(t *testing.T) {
	// 1,000 events for 2 s of CPU, 0.5 s of it GC; a cycle costs 0.1 s at
	// a live heap of 100 MB, so with GOGC=100 a byte allocated costs 1 ns
	// of GC; 300 MB allocated: 0.3 s of GC amortized.
	base := ChurnResult{Events: 1000, CPUSeconds: 2, GCSeconds: 0.5, AllocBytes: 300e6,
		GCCycleSeconds: 0.1, GCLive: 100e6, GOGC: 100}
	tests := map[string]struct {
		edit func(r *ChurnResult)
		want float64
	}{
		"window GC replaced by its share":        {edit: func(*ChurnResult) {}, want: (1.5 + 0.3) / 1000},
		"no GC in the window: the share added":   {edit: func(r *ChurnResult) { r.GCSeconds = 0 }, want: (2 + 0.3) / 1000},
		"GOGC=50: cycles twice as often":         {edit: func(r *ChurnResult) { r.GOGC = 50 }, want: (1.5 + 0.6) / 1000},
		"a heap 3x larger: a third of the share": {edit: func(r *ChurnResult) { r.GCLive = 300e6 }, want: (1.5 + 0.1) / 1000},
		"nothing allocated: no GC share":         {edit: func(r *ChurnResult) { r.AllocBytes = 0 }, want: 1.5 / 1000},
		"GC off: no GC share":                    {edit: func(r *ChurnResult) { r.GOGC = -1 }, want: 1.5 / 1000},
		"GOGC=0: no runway, no GC share":         {edit: func(r *ChurnResult) { r.GOGC = 0 }, want: 1.5 / 1000},
		"no events: 0":                           {edit: func(r *ChurnResult) { r.Events = 0 }, want: 0},
		"no live heap measured: 0":               {edit: func(r *ChurnResult) { r.GCLive = 0 }, want: 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			if got := r.CPUPerEventGCAmortized(); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("CPUPerEventGCAmortized = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestAllocPerEvent(t *testing.T) {
	if got := (ChurnResult{Events: 4, AllocBytes: 1000}).AllocPerEvent(); got != 250 {
		t.Errorf("AllocPerEvent = %g, want 250", got)
	}
	if got := (ChurnResult{AllocBytes: 1000}).AllocPerEvent(); got != 0 {
		t.Errorf("AllocPerEvent without events = %g, want 0", got)
	}
}

func TestSetGCWindow(t *testing.T) {
	var r ChurnResult
	r.setGCWindow(gcCounters{CPU: 1.25, Cycles: 7, Allocs: 1000}, gcCounters{CPU: 1.75, Cycles: 9, Allocs: 4000})
	if r.GCSeconds != 0.5 || r.GCCycles != 2 || r.AllocBytes != 3000 {
		t.Errorf("GC %g s, %d cycles, %g B allocated; want 0.5 s, 2, 3000 B", r.GCSeconds, r.GCCycles, r.AllocBytes)
	}
}

// TestMeasureGCCycleReadsGOGC: the GOGC in force is read, not changed, and
// every forced cycle counts.
func TestMeasureGCCycleReadsGOGC(t *testing.T) {
	for _, gogc := range []int{50, 100, -1} {
		prev := debug.SetGCPercent(gogc)
		m := newGCMeter()
		before := m.read()
		c := MeasureGCCycle(3)
		after := m.read()
		now := debug.SetGCPercent(prev)
		if c.GOGC != gogc || now != gogc {
			t.Errorf("GOGC %d: read %d, in force after %d", gogc, c.GOGC, now)
		}
		if cycles := after.Cycles - before.Cycles; cycles < 3 {
			t.Errorf("GOGC %d: %d GC cycles, want at least the 3 forced", gogc, cycles)
		}
		if c.Live == 0 || c.Seconds <= 0 {
			t.Errorf("GOGC %d: live heap %d B, cycle %g s; want both above 0", gogc, c.Live, c.Seconds)
		}
	}
}
