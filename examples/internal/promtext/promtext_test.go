package promtext

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistry_WritesTextFormat(t *testing.T) {
	tests := map[string]struct {
		fill func(*Registry)
		want string
	}{
		"empty": {fill: func(*Registry) {}, want: ""},
		"counter with labels, sorted": {
			fill: func(r *Registry) {
				r.Counter("events_total", "Events seen.", "type", "modified").Add(2)
				r.Counter("events_total", "Events seen.", "type", "added").Inc()
			},
			want: `# HELP events_total Events seen.
# TYPE events_total counter
events_total{type="added"} 1
events_total{type="modified"} 2
`,
		},
		"gauge and gauge func, families sorted": {
			fill: func(r *Registry) {
				r.GaugeFunc("b_cached", "Cached.", func() float64 { return 42 })
				r.Gauge("a_backlog", "Backlog.", "handler", `say "hi"\now`).Set(1.5)
			},
			want: `# HELP a_backlog Backlog.
# TYPE a_backlog gauge
a_backlog{handler="say \"hi\"\\now"} 1.5
# HELP b_cached Cached.
# TYPE b_cached gauge
b_cached 42
`,
		},
		"counter func": {
			fill: func(r *Registry) {
				r.CounterFunc("drops_total", "Drops.", func() float64 { return 3 }, "source", "sim")
			},
			want: `# HELP drops_total Drops.
# TYPE drops_total counter
drops_total{source="sim"} 3
`,
		},
		"summary": {
			fill: func(r *Registry) {
				s := r.Summary("list_seconds", "List time.", "name", "r")
				s.Observe(0.25)
				s.Observe(0.5)
			},
			want: `# HELP list_seconds List time.
# TYPE list_seconds summary
list_seconds_sum{name="r"} 0.75
list_seconds_count{name="r"} 2
`,
		},
		"histogram buckets are cumulative": {
			fill: func(r *Registry) {
				h := r.Histogram("latency_seconds", "Latency.", []float64{1, 0.1})
				for _, v := range []float64{0.05, 0.1, 0.5, 3} {
					h.Observe(v)
				}
			},
			want: `# HELP latency_seconds Latency.
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 2
latency_seconds_bucket{le="1"} 3
latency_seconds_bucket{le="+Inf"} 4
latency_seconds_sum 3.65
latency_seconds_count 4
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry()
			tc.fill(r)
			var b strings.Builder
			n, err := r.WriteTo(&b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if int(n) != b.Len() {
				t.Errorf("WriteTo returned %d, wrote %d bytes", n, b.Len())
			}
		})
	}
}

func TestRegistry_SameSeriesSameMetric(t *testing.T) {
	r := NewRegistry()
	first, again := r.Counter("c", "h", "a", "1"), r.Counter("c", "h", "a", "1")
	if first != again {
		t.Error("two calls for one series returned different counters")
	}
	if r.Counter("c", "h", "a", "1") == r.Counter("c", "h", "a", "2") {
		t.Error("two series share a counter")
	}
}

func TestCounter_ConcurrentAdds(t *testing.T) {
	c := NewRegistry().Counter("c", "h")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Inc()
			}
		})
	}
	wg.Wait()
	if got := c.Value(); got != 8000 {
		t.Errorf("Value() = %v, want 8000", got)
	}
}
