package stats

import (
	"math"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name       string
		in         []float64
		wantCenter float64
		wantFinite bool // a finite confidence interval
	}{
		{name: "odd", in: []float64{5, 1, 3}, wantCenter: 3},
		{name: "even", in: []float64{4, 1, 3, 2}, wantCenter: 2.5},
		{name: "one", in: []float64{7}, wantCenter: 7},
		{name: "six samples bound the median", in: []float64{6, 5, 4, 3, 2, 1}, wantCenter: 3.5, wantFinite: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			s := Summarize(in)
			if s.Center != tc.wantCenter {
				t.Errorf("median(%v) = %v, want %v", tc.in, s.Center, tc.wantCenter)
			}
			finite := !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0)
			if finite != tc.wantFinite {
				t.Errorf("interval [%v, %v] finite = %t, want %t", s.Lo, s.Hi, finite, tc.wantFinite)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("Summarize sorted its argument: %v", in)
				}
			}
		})
	}
	if s := Summarize(nil); !math.IsNaN(s.Center) || len(s.Warnings) == 0 {
		t.Errorf("summary of nothing = %+v, want a NaN centre and a warning", s)
	}
}

func TestDelta(t *testing.T) {
	tests := []struct {
		name       string
		base, next []float64
		want       string
	}{
		{name: "five rounds apart are significant", base: []float64{10, 11, 12, 10, 11}, next: []float64{5, 6, 5, 6, 5},
			want: "-54.55% (p=0.008 n=5)"},
		{name: "two rounds never are", base: []float64{10, 11}, next: []float64{5, 6}, want: "~ (p=0.333 n=2)"},
		{name: "a missing side", base: []float64{1}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Delta(tc.base, tc.next); got != tc.want {
				t.Errorf("Delta = %q, want %q", got, tc.want)
			}
		})
	}
	c, _ := Compare([]float64{10, 11}, []float64{5, 6})
	if w := Warnings(c.Warnings); len(w) != 1 || !strings.Contains(w[0], "need >= 4 samples") {
		t.Errorf("warnings %q, want the one that asks for 4 samples", w)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name     string
		num, den float64
		want     float64
	}{
		{"plain", 1, 4, 0.25},
		{"both zero", 0, 0, 1},
		{"zero denominator", 3, 0, math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ratio(tc.num, tc.den); got != tc.want {
				t.Errorf("Ratio(%v, %v) = %v, want %v", tc.num, tc.den, got, tc.want)
			}
		})
	}
	if !math.IsNaN(Ratio(math.NaN(), 2)) {
		t.Error("a missing side should give NaN")
	}
}

func TestGeoMean(t *testing.T) {
	g, skipped := GeoMean([]float64{0.25, 1, 4, math.Inf(1), math.NaN()})
	if math.Abs(g-1) > 1e-12 || skipped != 2 {
		t.Errorf("GeoMean = %v skipping %d, want 1 skipping 2", g, skipped)
	}
	if g, _ := GeoMean(nil); !math.IsNaN(g) {
		t.Errorf("GeoMean of nothing = %v, want NaN", g)
	}
}

func TestWarningsAreDistinct(t *testing.T) {
	a, b := Summarize([]float64{1, 2}), Summarize([]float64{3, 4})
	if got := Warnings(a.Warnings, b.Warnings); len(got) != 1 {
		t.Errorf("Warnings = %q, want one message", got)
	}
}
