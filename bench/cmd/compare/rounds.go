package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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
			leaderN := 0
			for _, lib := range roundOrder(libs, round) {
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
				res, err := harness.Run(w, sizesFor(w.Group, opts.sizes, leaderN), fx)
				if err != nil {
					r.errs = append(r.errs, fmt.Sprintf("%s round %d: %v", lib.Name, round, err))
					fmt.Fprintf(opts.progress, "[%d/%d] %s %s round %d: error: %v\n", done, total, w.Name, lib.Name, round, err)
					continue
				}
				if leaderN == 0 {
					leaderN = res.N
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

// roundOrder is the order the libraries run in a round: as given in odd
// rounds, reversed in even ones, so that neither always leads.
func roundOrder(libs []harness.Library, round int) []harness.Library {
	if round%2 == 1 {
		return libs
	}
	out := slices.Clone(libs)
	slices.Reverse(out)
	return out
}

// sizesFor is what a library runs a workload of group g with in a round
// whose first library ran leaderN iterations (0: it is the first). A loop
// workload timed for a duration runs, after the round's first library,
// exactly as many iterations as that library did: both then allocate
// alike and meet alike the collections of the large fixture heap (a
// second of CPU each), which would otherwise fall mostly on whichever
// library is faster and so iterates and allocates more.
func sizesFor(g harness.Group, sizes harness.Sizes, leaderN int) harness.Sizes {
	if g.Micro() && sizes.Iterations == 0 && leaderN > 0 {
		sizes.Iterations = leaderN
	}
	return sizes
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
