// Package stats summarises and compares the rounds of a benchmark the way
// benchstat does, with its library golang.org/x/perf/benchmath: the median
// of each sample with its confidence interval, the Mann-Whitney U test for
// whether two samples differ, and the geometric mean of ratios, 0/0 taken
// as 1.
package stats

import (
	"errors"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// Confidence is the level of the confidence intervals, benchstat's default.
const Confidence = 0.95

// thresholds are benchstat's defaults: a difference is significant below
// p = 0.05.
var thresholds = benchmath.DefaultThresholds

// sample returns a benchmath sample of vs without sorting vs itself.
func sample(vs []float64) *benchmath.Sample {
	return benchmath.NewSample(slices.Clone(vs), &thresholds)
}

// errNoValues is the warning of the summary of an empty sample.
var errNoValues = errors.New("no values")

// Summarize returns the median of vs and its confidence interval at
// Confidence; an empty vs has a NaN centre.
func Summarize(vs []float64) benchmath.Summary {
	if len(vs) == 0 {
		nan := math.NaN()
		return benchmath.Summary{Center: nan, Lo: nan, Hi: nan, Warnings: []error{errNoValues}}
	}
	return benchmath.AssumeNothing.Summary(sample(vs), Confidence)
}

// Median is the centre of Summarize(vs): NaN when vs is empty.
func Median(vs []float64) float64 { return Summarize(vs).Center }

// Compare tests whether base and next come from the same distribution
// (the U test); ok is false when either is empty.
func Compare(base, next []float64) (c benchmath.Comparison, ok bool) {
	if len(base) == 0 || len(next) == 0 {
		return benchmath.Comparison{}, false
	}
	return benchmath.AssumeNothing.Compare(sample(base), sample(next)), true
}

// Delta is benchstat's cell for next against base: the change of the
// medians in percent, or "~" when the U test finds no significant
// difference, followed by the p-value and sample sizes. It is "" when
// either sample is empty.
func Delta(base, next []float64) string {
	c, ok := Compare(base, next)
	if !ok {
		return ""
	}
	return c.FormatDelta(Median(base), Median(next)) + " (" + c.String() + ")"
}

// Ratio is num/den with 0/0 taken as 1 (both sides measured nothing), as
// benchstat takes it. It is NaN when either side is missing and +Inf for
// x/0.
func Ratio(num, den float64) float64 {
	switch {
	case math.IsNaN(num) || math.IsNaN(den):
		return math.NaN()
	case num == den:
		return 1
	}
	return num / den
}

// GeoMean is the geometric mean of the finite positive values of vs and
// how many values it left out; NaN when none is left.
func GeoMean(vs []float64) (mean float64, skipped int) {
	var kept []float64
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			skipped++
			continue
		}
		kept = append(kept, v)
	}
	if len(kept) == 0 {
		return math.NaN(), skipped
	}
	return stats.GeoMean(kept), skipped
}

// Warnings returns the distinct messages of the warnings in errs, in the
// order they first appear.
func Warnings(errs ...[]error) []string {
	var out []string
	for _, list := range errs {
		for _, e := range list {
			if msg := e.Error(); !slices.Contains(out, msg) {
				out = append(out, msg)
			}
		}
	}
	return out
}
