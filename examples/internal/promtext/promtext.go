// Package promtext is a minimal metrics registry that writes the Prometheus
// text exposition format (version 0.0.4) by hand: counters, gauges,
// summaries (sum and count only), histograms, and gauges computed when
// scraped. It exists so that the kcache demo can serve /metrics without a
// Prometheus client dependency.
package promtext

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the media type of what WriteTo writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Registry holds metric families. It is safe for concurrent use.
type Registry struct {
	// mu guards families and the series maps inside them.
	mu       sync.Mutex
	families map[string]*family
}

// family is the metrics of one name.
type family struct {
	name, help, kind string
	// series maps rendered labels ("{a=\"b\"}") to a metric.
	series map[string]writer
}

// writer writes one series' sample lines.
type writer interface {
	write(w io.Writer, name, labels string) error
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{families: map[string]*family{}} }

// Counter returns the counter name{labels}, creating it on first use.
// labels are key, value pairs.
func (r *Registry) Counter(name, help string, labels ...string) *Counter {
	return get(r, name, help, "counter", labels, func() *Counter { return &Counter{} })
}

// Gauge returns the gauge name{labels}, creating it on first use.
func (r *Registry) Gauge(name, help string, labels ...string) *Gauge {
	return get(r, name, help, "gauge", labels, func() *Gauge { return &Gauge{} })
}

// GaugeFunc registers a gauge whose value f computes at each scrape. f
// must be safe to call from any goroutine. A second registration of the
// same series replaces the first.
func (r *Registry) GaugeFunc(name, help string, f func() float64, labels ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.familyLocked(name, help, "gauge").series[renderLabels(labels)] = gaugeFunc(f)
}

// CounterFunc registers a counter whose value f computes at each scrape,
// for totals kept elsewhere. f must never decrease and must be safe to call
// from any goroutine.
func (r *Registry) CounterFunc(name, help string, f func() float64, labels ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.familyLocked(name, help, "counter").series[renderLabels(labels)] = gaugeFunc(f)
}

// Summary returns the summary name{labels}, creating it on first use. It
// reports the sum and count of observations, no quantiles.
func (r *Registry) Summary(name, help string, labels ...string) *Summary {
	return get(r, name, help, "summary", labels, func() *Summary { return &Summary{} })
}

// Histogram returns the histogram name{labels} with the given upper
// bounds, creating it on first use; later calls ignore bounds.
func (r *Registry) Histogram(name, help string, bounds []float64, labels ...string) *Histogram {
	return get(r, name, help, "histogram", labels, func() *Histogram {
		b := slices.Clone(bounds)
		slices.Sort(b)
		return &Histogram{bounds: b, counts: make([]uint64, len(b))}
	})
}

func get[M writer](r *Registry, name, help, kind string, labels []string, create func() M) M {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.familyLocked(name, help, kind)
	key := renderLabels(labels)
	if m, ok := f.series[key].(M); ok {
		return m
	}
	m := create()
	f.series[key] = m
	return m
}

// familyLocked returns the family name, creating it. The caller holds
// r.mu. Reusing a name with another kind is a programming error.
func (r *Registry) familyLocked(name, help, kind string) *family {
	f, ok := r.families[name]
	if !ok {
		f = &family{name: name, help: help, kind: kind, series: map[string]writer{}}
		r.families[name] = f
	}
	if f.kind != kind {
		panic(fmt.Sprintf("promtext: metric %s registered as %s and %s", name, f.kind, kind))
	}
	return f
}

// WriteTo writes every family, sorted by name, each series sorted by
// labels.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	names := make([]string, 0, len(r.families))
	for name := range r.families {
		names = append(names, name)
	}
	slices.Sort(names)
	type entry struct {
		labels string
		m      writer
	}
	type snapshot struct {
		f      *family
		series []entry
	}
	snaps := make([]snapshot, 0, len(names))
	for _, name := range names {
		f := r.families[name]
		s := snapshot{f: f}
		for labels, m := range f.series {
			s.series = append(s.series, entry{labels, m})
		}
		slices.SortFunc(s.series, func(a, b entry) int { return strings.Compare(a.labels, b.labels) })
		snaps = append(snaps, s)
	}
	r.mu.Unlock()

	cw := &countingWriter{w: w}
	for _, s := range snaps {
		fmt.Fprintf(cw, "# HELP %s %s\n# TYPE %s %s\n", s.f.name, escapeHelp(s.f.help), s.f.name, s.f.kind)
		for _, e := range s.series {
			if err := e.m.write(cw, s.f.name, e.labels); err != nil {
				return cw.n, err
			}
		}
	}
	return cw.n, cw.err
}

// Counter is a value that only goes up.
type Counter struct{ bits atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Add adds v, which must not be negative.
func (c *Counter) Add(v float64) {
	for {
		old := c.bits.Load()
		if c.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Value returns the current value.
func (c *Counter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

func (c *Counter) write(w io.Writer, name, labels string) error {
	_, err := fmt.Fprintf(w, "%s%s %s\n", name, labels, formatFloat(c.Value()))
	return err
}

// Gauge is a value that goes up and down.
type Gauge struct{ bits atomic.Uint64 }

// Set sets the value.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Value returns the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func (g *Gauge) write(w io.Writer, name, labels string) error {
	_, err := fmt.Fprintf(w, "%s%s %s\n", name, labels, formatFloat(g.Value()))
	return err
}

type gaugeFunc func() float64

func (f gaugeFunc) write(w io.Writer, name, labels string) error {
	_, err := fmt.Fprintf(w, "%s%s %s\n", name, labels, formatFloat(f()))
	return err
}

// Summary records the sum and count of observations.
type Summary struct {
	// mu guards sum and count.
	mu    sync.Mutex
	sum   float64
	count uint64
}

// Observe records v.
func (s *Summary) Observe(v float64) {
	s.mu.Lock()
	s.sum += v
	s.count++
	s.mu.Unlock()
}

func (s *Summary) write(w io.Writer, name, labels string) error {
	s.mu.Lock()
	sum, count := s.sum, s.count
	s.mu.Unlock()
	_, err := fmt.Fprintf(w, "%s_sum%s %s\n%s_count%s %d\n", name, labels, formatFloat(sum), name, labels, count)
	return err
}

// Histogram counts observations into buckets.
type Histogram struct {
	bounds []float64
	// mu guards counts, sum and count.
	mu     sync.Mutex
	counts []uint64
	sum    float64
	count  uint64
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.mu.Lock()
	if i < len(h.counts) {
		h.counts[i]++
	}
	h.sum += v
	h.count++
	h.mu.Unlock()
}

func (h *Histogram) write(w io.Writer, name, labels string) error {
	h.mu.Lock()
	counts, sum, count := slices.Clone(h.counts), h.sum, h.count
	h.mu.Unlock()
	var cumulative uint64
	for i, bound := range h.bounds {
		cumulative += counts[i]
		if _, err := fmt.Fprintf(w, "%s_bucket%s %d\n", name, withLabel(labels, "le", formatFloat(bound)), cumulative); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s_bucket%s %d\n%s_sum%s %s\n%s_count%s %d\n",
		name, withLabel(labels, "le", "+Inf"), count, name, labels, formatFloat(sum), name, labels, count)
	return err
}

// renderLabels renders key, value pairs as {k="v",...}; an odd trailing
// key is ignored.
func renderLabels(kv []string) string {
	if len(kv) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(kv[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// withLabel adds key="value" to rendered labels.
func withLabel(labels, key, value string) string {
	pair := key + `="` + escapeLabel(value) + `"`
	if labels == "" {
		return "{" + pair + "}"
	}
	return labels[:len(labels)-1] + "," + pair + "}"
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// countingWriter counts bytes and keeps the first error.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
