package main

import (
	"fmt"
	"math"
)

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
