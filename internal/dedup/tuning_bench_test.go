package dedup

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// The BenchmarkTuning_* benchmarks show what changing a value of tuning.go
// costs: each runs one sub-benchmark per value tried, the package's own
// value among them (marked "now"), and restores tuning before it returns.
// They are not timed assertions: they report, and a person compares.

// withTuning runs b's body with tuning changed by set, and puts it back.
func withTuning(b *testing.B, set func(*tunables), body func(b *testing.B)) {
	saved := tuning
	set(&tuning)
	defer func() { tuning = saved }()
	body(b)
}

// BenchmarkTuning_DedupTrial tries other trials of a position
// (siteTrial, siteMinHitRate, siteMaxBackoff) on BenchmarkDeduper_Pods'
// pods: heapB/pod is what a trial that gives up too soon costs, ns/pod
// what looking up too long costs.
func BenchmarkTuning_DedupTrial(b *testing.B) {
	wire := dedupBenchWire(b, 2000)
	for _, tt := range []struct {
		name                   string
		trial, rate, maxBackof int
	}{
		{"trial=128", 128, 8, 6},
		{"now:trial=512,rate=1/8,backoff=64x", 512, 8, 6},
		{"trial=2048", 2048, 8, 6},
		{"rate=1/4", 512, 4, 6},
		{"rate=1/32", 512, 32, 6},
		{"backoff=1x", 512, 8, 0},
		{"backoff=1024x", 512, 8, 10},
	} {
		b.Run(tt.name, func(b *testing.B) {
			withTuning(b, func(t *tunables) { t.siteTrial, t.siteMinHitRate, t.siteMaxBackoff = tt.trial, tt.rate, tt.maxBackof },
				func(b *testing.B) { benchDedupPods(b, wire, true) })
		})
	}
}

// BenchmarkTuning_SeenFilter tries other sizes of the filter of values
// seen once (seenMinBits, seenMaxBits) on BenchmarkDeduper_Pods' workload:
// heapB/pod and ns/pod as there; "off" shares every value from its first
// sighting (each value seen once then costs an entry).
func BenchmarkTuning_SeenFilter(b *testing.B) {
	wire := dedupBenchWire(b, 2000)
	for _, tt := range []struct {
		name     string
		min, max int
	}{
		{"off", 0, 0},
		{"min=2^8", 1 << 8, 1 << 22},
		{"now:min=2^12,max=2^22", 1 << 12, 1 << 22},
		{"min=2^16", 1 << 16, 1 << 22},
		{"max=2^14", 1 << 12, 1 << 14},
	} {
		b.Run(tt.name, func(b *testing.B) {
			withTuning(b, func(t *tunables) { t.seenMinBits, t.seenMaxBits = tt.min, tt.max },
				func(b *testing.B) { benchDedupPods(b, wire, true) })
		})
	}
}

// BenchmarkTuning_Guard tries other paces of the guard over the
// table of 20,000 pods. guardBatch: ns/value of the guard's pass, its
// pauses counted but not made. guardBudget: the
// seconds a round takes to cover the table (how long a write may go
// unfound) against the share of a core. guardRoundPause: on a small table
// (1,000 pods), the share of a core the rounds take against the seconds
// before a round starts.
func BenchmarkTuning_Guard(b *testing.B) {
	ctx := context.Background()
	g, values := dedupBenchGuard(b, 20000)
	for _, batch := range []int{16, 64, 256} {
		name := fmt.Sprintf("batch=%d", batch)
		if batch == 64 {
			name = "now:" + name
		}
		b.Run(name, func(b *testing.B) {
			withTuning(b, func(t *tunables) { t.guardBatch = batch }, func(b *testing.B) {
				pauses := 0
				for b.Loop() {
					pauses = 0
					g.pass(ctx, func(time.Duration) bool { pauses++; return true })
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(values), "ns/value")
				b.ReportMetric(float64(pauses), "pauses/round")
			})
		})
	}
	round := dedupBenchRoundTime(b, g)
	for _, budget := range []float64{0.001, 0.0025, 0.01} {
		name := fmt.Sprintf("budget=%g", budget)
		if budget == 0.0025 {
			name = "now:" + name
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(round.Seconds()/budget, "s-to-cover")
			b.ReportMetric(budget, "core-share")
		})
	}
	small, _ := dedupBenchGuard(b, 1000)
	smallRound := dedupBenchRoundTime(b, small)
	for _, pause := range []time.Duration{time.Second, 5 * time.Second, 20 * time.Second} {
		name := "roundPause=" + pause.String()
		if pause == 5*time.Second {
			name = "now:" + name
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
			}
			cover := max(smallRound.Seconds()/tuning.guardBudget, pause.Seconds())
			b.ReportMetric(smallRound.Seconds()/cover, "core-share")
			b.ReportMetric(cover, "s-between-rounds")
		})
	}
}

// dedupBenchRoundTime returns the median time of a few rounds of g.
func dedupBenchRoundTime(b *testing.B, g *Guard) time.Duration {
	ctx := context.Background()
	var times []time.Duration
	for range 5 {
		start := time.Now()
		if n := g.Round(ctx); n != 0 {
			b.Fatalf("%d values reported changed", n)
		}
		times = append(times, time.Since(start))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[len(times)/2]
}

// BenchmarkTuning_Compactor tries other waits of the compactor
// (compactQuiet, compactLongest, compactTick) on simulated update streams,
// with the compactor's own bookkeeping (note, due) and a clock of the
// simulation's making: compactions/update times
// BenchmarkDedupCompactor_Compact is the CPU it costs, wait-s how long an
// updated object stays unshared (its memory held twice), scans/update the
// pending keys the ticks look through.
func BenchmarkTuning_Compactor(b *testing.B) {
	streams := map[string][]compactBenchEvent{
		// ten updates per pod in a burst, as bench-compare's informer workload
		"burst": compactBenchStream(1000, func(pod int, add func(time.Duration)) {
			for u := range 10 {
				add(time.Duration(pod)*time.Millisecond + time.Duration(u)*10*time.Millisecond)
			}
		}),
		// an apply and a status update within milliseconds, every 30 s, as
		// bench-e2e's churn phase
		"pairs": compactBenchStream(1000, func(pod int, add func(time.Duration)) {
			for at := time.Duration(pod) * 30 * time.Millisecond; at < time.Minute; at += 30 * time.Second {
				add(at)
				add(at + 5*time.Millisecond)
			}
		}),
		// a pod updated every half second for a minute
		"busy": compactBenchStream(100, func(pod int, add func(time.Duration)) {
			for at := time.Duration(pod) * time.Millisecond; at < time.Minute; at += 500 * time.Millisecond {
				add(at)
			}
		}),
	}
	settings := []struct {
		name                 string
		quiet, longest, tick time.Duration
	}{
		{"quiet=250ms", 250 * time.Millisecond, 10 * time.Second, 250 * time.Millisecond},
		{"now:quiet=1s,longest=10s,tick=250ms", time.Second, 10 * time.Second, 250 * time.Millisecond},
		{"quiet=4s", 4 * time.Second, 10 * time.Second, 250 * time.Millisecond},
		{"longest=2.5s", time.Second, 2500 * time.Millisecond, 250 * time.Millisecond},
		{"longest=40s", time.Second, 40 * time.Second, 250 * time.Millisecond},
		{"tick=50ms", time.Second, 10 * time.Second, 50 * time.Millisecond},
		{"tick=1s", time.Second, 10 * time.Second, time.Second},
	}
	names := make([]string, 0, len(streams))
	for name := range streams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, stream := range names {
		for _, st := range settings {
			b.Run(stream+"/"+st.name, func(b *testing.B) {
				withTuning(b, func(t *tunables) { t.compactQuiet, t.compactLongest, t.compactTick = st.quiet, st.longest, st.tick },
					func(b *testing.B) {
						var r compactBenchResult
						for b.Loop() {
							r = compactBenchRun(b, streams[stream])
						}
						b.ReportMetric(r.compactions/r.updates, "compactions/update")
						b.ReportMetric(r.wait/r.compactions, "wait-s")
						b.ReportMetric(r.scanned/r.updates, "scans/update")
					})
			})
		}
	}
}

// compactBenchEvent is one update of a simulated stream: its key and when.
type compactBenchEvent struct {
	at  time.Duration
	key string
}

// compactBenchStream returns the updates of pods pods, each made by
// updates, in time order.
func compactBenchStream(pods int, updates func(pod int, add func(time.Duration))) []compactBenchEvent {
	var out []compactBenchEvent
	for pod := range pods {
		key := fmt.Sprintf("ns/pod-%d", pod)
		updates(pod, func(at time.Duration) { out = append(out, compactBenchEvent{at: at, key: key}) })
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// compactBenchResult sums a simulated run: updates noted, compactions
// done, seconds waited from a key's first update to its compaction, and
// pending keys looked through by the ticks.
type compactBenchResult struct{ updates, compactions, wait, scanned float64 }

// compactBenchRun plays stream through a compactor's note and due, a tick
// every tuning.compactTick, until nothing waits.
func compactBenchRun(b *testing.B, stream []compactBenchEvent) compactBenchResult {
	c := NewCompactor(New(Options{}), newObjectStore())
	var r compactBenchResult
	base := time.Unix(0, 0)
	first := map[string]time.Duration{}
	next := 0
	for now := tuning.compactTick; next < len(stream) || len(first) > 0; now += tuning.compactTick {
		for ; next < len(stream) && stream[next].at < now; next++ {
			e := stream[next]
			c.Note(e.key, nil, base.Add(e.at))
			if _, ok := first[e.key]; !ok {
				first[e.key] = e.at
			}
			r.updates++
		}
		r.scanned += float64(len(first))
		for key := range c.due(base.Add(now), false) {
			r.compactions++
			r.wait += (now - first[key]).Seconds()
			delete(first, key)
		}
	}
	return r
}
