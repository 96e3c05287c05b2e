package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/kcache/cache/bench/internal/harness"
)

// row holds every run of one workload.
type row struct {
	name    string
	group   harness.Group
	results map[string][]harness.Result // by library name, in round order
	errs    []string
}

// runWorkloads runs each selected workload opts.rounds times per library,
// alternating the libraries within every round so that drift in the load of
// the machine spreads over both.
func runWorkloads(ctx context.Context, opts options, libs []harness.Library, fx *harness.Fixture) []*row {
	var selected []int
	for i, w := range libs[0].Workloads {
		if opts.only.MatchString(w.Name) {
			selected = append(selected, i)
		}
	}
	total, done := len(selected)*opts.rounds*len(libs), 0
	var rows []*row
	released := false
	for _, i := range selected {
		w0 := libs[0].Workloads[i]
		if !released && usesOwnFixture(w0.Group) {
			releaseClusterFixture(libs, fx)
			released = true
		}
		r := &row{name: w0.Name, group: w0.Group, results: make(map[string][]harness.Result)}
		rows = append(rows, r)
		for round := 1; round <= opts.rounds; round++ {
			for _, lib := range libs {
				done++
				w := lib.Workloads[i]
				if w.Name != w0.Name {
					r.errs = append(r.errs, fmt.Sprintf("%s: workload %d is %s, want %s", lib.Name, i, w.Name, w0.Name))
					continue
				}
				if err := ctx.Err(); err != nil {
					r.errs = append(r.errs, err.Error())
					continue
				}
				start := time.Now()
				res, err := harness.Run(w, opts.sizes, fx)
				if err != nil {
					r.errs = append(r.errs, fmt.Sprintf("%s round %d: %v", lib.Name, round, err))
					fmt.Fprintf(opts.progress, "[%d/%d] %s %s round %d: error: %v\n", done, total, w.Name, lib.Name, round, err)
					continue
				}
				r.results[lib.Name] = append(r.results[lib.Name], res)
				fmt.Fprintf(opts.progress, "[%d/%d] %s %s round %d: %s/op, cpu %s/op, %.1f allocs/op, N=%d (%.1fs)\n",
					done, total, w.Name, lib.Name, round, fmtNs(res.NsPerOp), fmtNs(res.CPUNsPerOp), res.AllocsPerOp, res.N,
					time.Since(start).Seconds())
			}
		}
	}
	return rows
}

// usesOwnFixture reports whether a group's workloads build their own
// objects instead of using the 100k-pod cluster fixture.
func usesOwnFixture(g harness.Group) bool {
	return g == harness.GroupInformer || g == harness.GroupWriteRate
}

// releaseClusterFixture drops the cluster fixture and the indexers filled
// from it, so that the informer sections run on a heap holding only their
// own pods: their windows then see the frequent, short garbage collections
// of that heap, not the rare second-long ones of a heap ten times larger,
// which would land in some rounds and not in others.
func releaseClusterFixture(libs []harness.Library, fx *harness.Fixture) {
	for _, lib := range libs {
		if lib.Release != nil {
			lib.Release()
		}
	}
	fx.ReleaseCluster()
	runtime.GC()
	runtime.GC()
}

// memRow holds every run of the memory probe.
type memRow struct {
	results map[string][]harness.MemResult
	errs    []string
}

// runMemory runs the memory probe opts.memRounds times per library, each in
// a child process, alternating the libraries.
func runMemory(ctx context.Context, opts options, libs []harness.Library) *memRow {
	m := &memRow{results: make(map[string][]harness.MemResult)}
	for round := 1; round <= opts.memRounds; round++ {
		for _, lib := range libs {
			start := time.Now()
			res, err := spawnChild(ctx, opts, lib.Name)
			if err != nil {
				m.errs = append(m.errs, fmt.Sprintf("%s round %d: %v", lib.Name, round, err))
				fmt.Fprintf(opts.progress, "[memory] %s round %d: error: %v\n", lib.Name, round, err)
				continue
			}
			m.results[lib.Name] = append(m.results[lib.Name], res)
			fmt.Fprintf(opts.progress, "[memory] %s round %d: %s/pod, sync peak %s, relist peak %.2fx steady (%.1fs)\n",
				lib.Name, round, fmtBytes(res.PerPod()), fmtBytes(res.SyncPeakInuse),
				res.RelistPeakInuse/res.SteadyBytes, time.Since(start).Seconds())
		}
	}
	return m
}
