package main

import (
	"fmt"
	"math"
	"slices"
)

// median is the middle value of vs (the mean of the middle two for an even
// count), NaN when vs is empty.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// ratio is num/den with 0/0 taken as 1 (both libraries allocate nothing).
// It is NaN when either side is missing and +Inf for x/0.
func ratio(num, den float64) float64 {
	switch {
	case math.IsNaN(num) || math.IsNaN(den):
		return math.NaN()
	case num == 0 && den == 0:
		return 1
	}
	return num / den
}

// geomean is the geometric mean of the finite positive values of vs and
// how many values it left out; NaN when none is left.
func geomean(vs []float64) (mean float64, skipped int) {
	sum, n := 0.0, 0
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			skipped++
			continue
		}
		sum += math.Log(v)
		n++
	}
	if n == 0 {
		return math.NaN(), skipped
	}
	return math.Exp(sum / float64(n)), skipped
}

const missing = "—"

func fmtNs(ns float64) string {
	switch {
	case math.IsNaN(ns):
		return missing
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

func fmtBytes(b float64) string {
	switch {
	case math.IsNaN(b):
		return missing
	case math.Abs(b) < 1<<10:
		return fmt.Sprintf("%.0f B", b)
	case math.Abs(b) < 1<<20:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	case math.Abs(b) < 1<<30:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", b/(1<<30))
}

// fmtCount prints counts and rates compactly: 3.00, 41.5, 12.3k, 1.25M.
func fmtCount(v float64) string {
	switch {
	case math.IsNaN(v):
		return missing
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1e3:
		return fmt.Sprintf("%.1f", v)
	case v < 1e6:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.2fM", v/1e6)
}

func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r):
		return missing
	case math.IsInf(r, 1):
		return "∞"
	}
	return fmt.Sprintf("%.2f", r)
}

func fmtSeconds(s float64) string {
	if math.IsNaN(s) {
		return missing
	}
	return fmt.Sprintf("%.2f s", s)
}
