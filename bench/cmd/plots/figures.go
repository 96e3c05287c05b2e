package main

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kcache/cache/bench/internal/scaleresult"
)

// figure is one picture: the measurement it draws against pod count.
type figure struct {
	file   string // its name under docs/
	title  string
	yLabel string
	y      func(scaleresult.Row) float64
	logY   bool // false: a linear axis from zero
}

// figures are the pictures `make plots` draws, in the order it writes them.
var figures = []figure{
	{
		file:   "scale-heap-per-pod.svg",
		title:  "Heap per cached pod after the initial sync (streaming list)",
		yLabel: "heap per pod, bytes (after a forced GC)",
		y:      func(r scaleresult.Row) float64 { return float64(r.HeapPerPodBytes) },
	},
	{
		file:   "scale-sync-time.svg",
		title:  "Initial sync time (streaming list)",
		yLabel: "sync time, seconds (log scale)",
		y:      func(r scaleresult.Row) float64 { return r.SyncSeconds },
		logY:   true,
	},
}

// plottedList is the list mode whose rows the pictures draw: client-go
// v0.37.2's default. Paginated rows stay in the result file's tables.
const plottedList = scaleresult.ListStream

// curve is one variant's points, in increasing pod count.
type curve struct {
	variant string
	points  plotter.XYs
}

// curves returns the curve of every variant, in scaleresult.Variants'
// order, from the rows of plottedList. A variant without such rows is an
// error: the pictures compare all three.
func curves(rows []scaleresult.Row, y func(scaleresult.Row) float64) ([]curve, error) {
	var out []curve
	for _, v := range scaleresult.Variants {
		c := curve{variant: v}
		for _, r := range rows {
			if r.Variant == v && r.List == plottedList {
				c.points = append(c.points, plotter.XY{X: float64(r.Pods), Y: y(r)})
			}
		}
		if len(c.points) == 0 {
			return nil, fmt.Errorf("no list=%s rows for variant %s", plottedList, v)
		}
		slices.SortFunc(c.points, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		out = append(out, c)
	}
	return out, nil
}

// style is how one variant is drawn: colours from the Okabe-Ito palette
// (client-go in its near-black), told apart by marker and dash too, so
// that the picture reads in grey.
type style struct {
	color  color.Color
	shape  draw.GlyphDrawer
	dashes []vg.Length
}

var styles = map[string]style{
	scaleresult.VariantClientGo:      {color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff}, draw.CircleGlyph{}, nil},
	scaleresult.VariantKcache:        {color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff}, draw.TriangleGlyph{}, nil},
	scaleresult.VariantKcacheNoShare: {color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff}, draw.SquareGlyph{}, []vg.Length{vg.Points(5), vg.Points(3)}},
}

// Picture size: wide enough for three curves and a legend in a README.
const (
	width  = 6 * vg.Inch
	height = 4 * vg.Inch
)

// render draws fig from rows as an SVG document. source names the result
// file in the picture. The same rows and source give the same bytes.
func render(fig figure, rows []scaleresult.Row, source string) ([]byte, error) {
	p, err := build(fig, rows, source)
	if err != nil {
		return nil, err
	}
	canvas := vgsvg.New(width, height)
	p.Draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("writing %s: %w", fig.file, err)
	}
	return buf.Bytes(), nil
}

// build lays out the plot of fig from rows. Log-scale axes are drawn as
// linear axes over the logarithms, labelled with the values: gonum/plot
// centres an axis label by the mean of its range rather than its middle on
// a log scale, which pads the data area as if the label stuck out.
func build(fig figure, rows []scaleresult.Row, source string) (*plot.Plot, error) {
	cs, err := curves(rows, fig.y)
	if err != nil {
		return nil, err
	}
	lo, hi := yRange(cs)
	if fig.logY && lo <= 0 {
		return nil, fmt.Errorf("%s: a value of %g cannot be drawn on a log scale", fig.file, lo)
	}
	p := plot.New()
	p.Title.Text = fig.title + "\nfrom " + source
	p.X.Label.Text = "pods in the informer (log scale)"
	p.Y.Label.Text = fig.yLabel
	setPodAxis(&p.X, cs)
	if fig.logY {
		setLogAxis(&p.Y, lo/1.5, hi*1.5)
	} else {
		p.Y.Min, p.Y.Max = 0, max(hi*1.35, 1) // room above the curves for the legend
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), vg.Points(-6)
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 0xdd}
	grid.Horizontal.Color = color.Gray{Y: 0xdd}
	p.Add(grid)
	for _, c := range cs {
		xys := make(plotter.XYs, len(c.points))
		for i, pt := range c.points {
			xys[i] = plotter.XY{X: math.Log10(pt.X), Y: pt.Y}
			if fig.logY {
				xys[i].Y = math.Log10(pt.Y)
			}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", fig.file, c.variant, err)
		}
		s := styles[c.variant]
		line.Color, line.Width, line.Dashes = s.color, vg.Points(1.5), s.dashes
		points.Color, points.Shape, points.Radius = s.color, s.shape, vg.Points(3)
		p.Add(line, points)
		p.Legend.Add(c.variant, line, points)
	}
	return p, nil
}

// setPodAxis makes a a pod axis over the logarithm of the pod count, with a
// labelled tick at every pod count measured.
func setPodAxis(a *plot.Axis, cs []curve) {
	var counts []float64
	for _, c := range cs {
		for _, pt := range c.points {
			counts = append(counts, pt.X)
		}
	}
	slices.Sort(counts)
	counts = slices.Compact(counts)
	ticks := make(plot.ConstantTicks, 0, len(counts))
	for _, n := range counts {
		ticks = append(ticks, plot.Tick{Value: math.Log10(n), Label: podLabel(int(n))})
	}
	a.Tick.Marker = ticks
	a.Min, a.Max = math.Log10(counts[0]/1.4), math.Log10(counts[len(counts)-1]*1.4)
}

// podLabel writes a pod count short: 1k for 1000, 2.5k for 2500, 750 for 750.
func podLabel(n int) string {
	if n >= 1000 && n%100 == 0 {
		return strconv.FormatFloat(float64(n)/1000, 'f', -1, 64) + "k"
	}
	return strconv.Itoa(n)
}

// setLogAxis makes a an axis over the logarithms of the values from lo to
// hi (both positive).
func setLogAxis(a *plot.Axis, lo, hi float64) {
	a.Min, a.Max = math.Log10(lo), math.Log10(hi)
	a.Tick.Marker = plot.ConstantTicks(logTicks(lo, hi))
}

func yRange(cs []curve) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		for _, pt := range c.points {
			lo, hi = min(lo, pt.Y), max(hi, pt.Y)
		}
	}
	return lo, hi
}

// logTicks returns the ticks of a log axis from lo to hi (both positive),
// placed at the logarithms of their values: labelled at 1, 2 and 5 times a
// power of ten, unlabelled at the other whole multiples.
func logTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for exp := int(math.Floor(math.Log10(lo))); exp <= int(math.Ceil(math.Log10(hi))); exp++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(exp)
			if exp < 0 {
				v = float64(m) / math.Pow10(-exp) // 5/100 is 0.05 exactly as written; 5*0.01 may not be
			}
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: math.Log10(v)}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
