package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/simcluster"
)

// barWidth is the number of cells of the progress bar.
const barWidth = 30

// syncView draws list progress: a bar for the initial sync, one line for
// each later relist. report is called on the reflector's goroutine.
type syncView struct {
	con *console

	// mu guards drawn and lastDecile.
	mu sync.Mutex
	// drawn says a line of the initial list was drawn; lastDecile is the
	// tenth of the list it showed. They matter when the console is not a
	// terminal, where each drawing is a line of its own.
	drawn      bool
	lastDecile int
}

func (v *syncView) report(p listProgress) {
	if !p.initial {
		if p.done {
			how := fmt.Sprintf("%d pages", p.pages)
			if p.streamed {
				how = "streamed"
			}
			v.con.Linef("RELIST", "listed %s pods again in %.2fs (%s)", thousands(p.items), p.elapsed.Seconds(), how)
		}
		return
	}
	if !v.con.tty && !p.done && !v.newDecile(p) {
		return
	}
	verb, unit := "listing", fmt.Sprintf("page %d", p.pages)
	if p.streamed {
		verb, unit = "streaming", "watch stream"
	}
	total := "?"
	if p.total >= 0 {
		total = thousands(p.total)
	}
	line := fmt.Sprintf("%s pods %s %6s/%s  %s", verb, progressBar(p.items, p.total, barWidth), thousands(p.items), total, unit)
	if p.done {
		line += fmt.Sprintf(", done in %.2fs", p.elapsed.Seconds())
	}
	v.con.Bar(line, p.done)
}

// newDecile reports whether p is worth a line of its own on a console
// that is not a terminal: the first report, then one per tenth of the
// list. A report of an unknown total always is; a full list that is not
// done yet never is, since the done report follows.
func (v *syncView) newDecile(p listProgress) bool {
	if p.total <= 0 {
		return true
	}
	if p.items >= p.total {
		return false
	}
	d := p.items * 10 / p.total
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.drawn && d == v.lastDecile {
		return false
	}
	v.drawn, v.lastDecile = true, d
	return true
}

// statusLine prints the periodic one-line status.
type statusLine struct {
	con     *console
	inf     cache.SharedIndexInformer
	stats   *podStats
	printer *eventPrinter
	metrics *informerMetrics
	obs     *listObserver
	// sim is the simulated cluster, nil for a real one.
	sim *simcluster.Cluster
}

// loop prints the status every period until ctx is done.
func (s statusLine) loop(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	lastTotal, lastTime := s.stats.total.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			total := s.stats.total.Load()
			rate := float64(total-lastTotal) / now.Sub(lastTime).Seconds()
			lastTotal, lastTime = total, now
			s.con.Linef("STATUS", "%s", s.render(rate))
		}
	}
}

func (s statusLine) render(rate float64) string {
	var b strings.Builder
	if !s.inf.HasSynced() {
		b.WriteString("syncing: ")
	}
	fmt.Fprintf(&b, "cached=%s (", thousands(len(s.inf.GetStore().ListKeys())))
	for i, phase := range allPhases[:4] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", phase, thousands(s.stats.phaseCount(phase)))
	}
	fmt.Fprintf(&b, ")  %.1f events/s  relists=%d", rate, s.obs.relists())
	if s.sim != nil {
		st := s.sim.Stats()
		fmt.Fprintf(&b, "  drops=%d  410s=%d", st.WatchesDropped, st.GoneErrors)
	}
	b.WriteString("  backlog")
	for _, hb := range s.metrics.backlogSnapshot() {
		fmt.Fprintf(&b, " %s=%s", hb.handler, thousands(hb.pending))
		if hb.merged > 0 {
			fmt.Fprintf(&b, " (merged %s)", thousands(hb.merged))
		}
	}
	if hidden := s.printer.takeHidden(); hidden > 0 {
		fmt.Fprintf(&b, "  (+%s not printed: over --print-rate)", thousands(hidden))
	}
	return b.String()
}
