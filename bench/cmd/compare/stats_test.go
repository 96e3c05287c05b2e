package main

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"one", []float64{7}, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := median(tc.in); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 {
		t.Error("median sorted its argument")
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name     string
		num, den float64
		want     string
	}{
		{"plain", 1, 4, "0.25"},
		{"both zero", 0, 0, "1.00"},
		{"zero denominator", 3, 0, "∞"},
		{"missing", math.NaN(), 2, "—"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmtRatio(ratio(tc.num, tc.den)); got != tc.want {
				t.Errorf("ratio(%v, %v) prints %q, want %q", tc.num, tc.den, got, tc.want)
			}
		})
	}
}

func TestGeomean(t *testing.T) {
	g, skipped := geomean([]float64{0.25, 1, 4, math.Inf(1), math.NaN()})
	if math.Abs(g-1) > 1e-12 || skipped != 2 {
		t.Errorf("geomean = %v skipping %d, want 1 skipping 2", g, skipped)
	}
	if g, _ := geomean(nil); !math.IsNaN(g) {
		t.Errorf("geomean of nothing = %v, want NaN", g)
	}
}

func TestFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtNs(12), "12 ns"},
		{fmtNs(1500), "1.50 µs"},
		{fmtNs(2.5e6), "2.50 ms"},
		{fmtNs(3e9), "3.00 s"},
		{fmtBytes(100), "100 B"},
		{fmtBytes(2048), "2.0 KiB"},
		{fmtBytes(3 << 20), "3.0 MiB"},
		{fmtCount(3), "3.00"},
		{fmtCount(41.5), "41.5"},
		{fmtCount(12345), "12.3k"},
		{fmtCount(1.25e6), "1.25M"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
