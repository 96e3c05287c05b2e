package scaleresult

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// RowPrefix starts every measurement line of a scale result file.
const RowPrefix = "scale-row:"

// The variants a scale run measures, in the order the pictures list them.
const (
	VariantClientGo      = "client-go"
	VariantKcache        = "kcache"
	VariantKcacheNoShare = "kcache-noshare"
)

// Variants lists every variant a row may name, in a fixed order.
var Variants = []string{VariantClientGo, VariantKcache, VariantKcacheNoShare}

// The two ways an initial list is made: a streaming list (client-go
// v0.37.2's default) or a paginated one.
const (
	ListStream = "stream"
	ListPaged  = "paged"
)

// Row is one measurement: one variant's informer synced over Pods pods.
type Row struct {
	Pods            int
	Variant         string
	List            string
	HeapPerPodBytes int64
	SteadyHeapMiB   float64
	PeakHeapMiB     float64
	PeakRSSMiB      float64
	SyncSeconds     float64
	SyncCPUSeconds  float64
}

// String returns r as its line of a result file.
func (r Row) String() string {
	return fmt.Sprintf("%s pods=%d variant=%s list=%s heap-per-pod-bytes=%d steady-heap-mib=%.1f peak-heap-mib=%.1f peak-rss-mib=%.1f sync-s=%.2f sync-cpu-s=%.2f",
		RowPrefix, r.Pods, r.Variant, r.List, r.HeapPerPodBytes,
		r.SteadyHeapMiB, r.PeakHeapMiB, r.PeakRSSMiB, r.SyncSeconds, r.SyncCPUSeconds)
}

// maxLine bounds one line of a result file; a longer one is an error, not
// a silent cut.
const maxLine = 1 << 20

// Parse returns the rows of a result file in the order they appear. A row
// that does not parse, or a second row for the same pod count, variant and
// list, is an error naming its line; a file without rows gives none and no
// error.
func Parse(r io.Reader) ([]Row, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	type key struct {
		pods          int
		variant, list string
	}
	firstLine := map[key]int{}
	var rows []Row
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if !strings.HasPrefix(line, RowPrefix) {
			continue
		}
		row, err := ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		k := key{row.Pods, row.Variant, row.List}
		if first, dup := firstLine[k]; dup {
			return nil, fmt.Errorf("line %d: a second row for pods=%d variant=%s list=%s (the first is on line %d)",
				n, row.Pods, row.Variant, row.List, first)
		}
		firstLine[k] = n
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading scale rows: %w", err)
	}
	return rows, nil
}

// ParseLine parses one "scale-row:" line: every field once, in any order,
// nothing else.
func ParseLine(line string) (Row, error) {
	rest, ok := strings.CutPrefix(line, RowPrefix)
	if !ok {
		return Row{}, fmt.Errorf("%q does not start with %q", line, RowPrefix)
	}
	values := map[string]string{}
	for _, field := range strings.Fields(rest) {
		name, value, ok := strings.Cut(field, "=")
		if !ok {
			return Row{}, fmt.Errorf("field %q is not name=value", field)
		}
		if _, known := fieldSetters[name]; !known {
			return Row{}, fmt.Errorf("unknown field %q", name)
		}
		if _, dup := values[name]; dup {
			return Row{}, fmt.Errorf("field %q given twice", name)
		}
		values[name] = value
	}
	var row Row
	for _, name := range fieldOrder {
		value, ok := values[name]
		if !ok {
			return Row{}, fmt.Errorf("field %q missing", name)
		}
		if err := fieldSetters[name](&row, value); err != nil {
			return Row{}, fmt.Errorf("%s=%s: %w", name, value, err)
		}
	}
	return row, nil
}

// fieldOrder is the order of the fields in a row as String writes it.
var fieldOrder = []string{
	"pods", "variant", "list", "heap-per-pod-bytes", "steady-heap-mib",
	"peak-heap-mib", "peak-rss-mib", "sync-s", "sync-cpu-s",
}

// fieldSetters parse one field's value into a row.
var fieldSetters = map[string]func(*Row, string) error{
	"pods": func(r *Row, v string) (err error) {
		r.Pods, err = parsePositiveInt(v)
		return err
	},
	"variant": func(r *Row, v string) error {
		r.Variant = v
		return oneOf(v, Variants...)
	},
	"list": func(r *Row, v string) error {
		r.List = v
		return oneOf(v, ListStream, ListPaged)
	},
	"heap-per-pod-bytes": func(r *Row, v string) (err error) {
		r.HeapPerPodBytes, err = strconv.ParseInt(v, 10, 64)
		if err == nil && r.HeapPerPodBytes < 0 {
			err = errNegative
		}
		return err
	},
	"steady-heap-mib": floatInto(func(r *Row) *float64 { return &r.SteadyHeapMiB }),
	"peak-heap-mib":   floatInto(func(r *Row) *float64 { return &r.PeakHeapMiB }),
	"peak-rss-mib":    floatInto(func(r *Row) *float64 { return &r.PeakRSSMiB }),
	"sync-s":          floatInto(func(r *Row) *float64 { return &r.SyncSeconds }),
	"sync-cpu-s":      floatInto(func(r *Row) *float64 { return &r.SyncCPUSeconds }),
}

var errNegative = errors.New("negative")

func parsePositiveInt(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, errors.New("not positive")
	}
	return n, nil
}

// floatInto returns a setter of the float field field picks: a finite,
// non-negative decimal number.
func floatInto(field func(*Row) *float64) func(*Row, string) error {
	return func(r *Row, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
			return err
		case math.IsNaN(f) || math.IsInf(f, 0):
			return errors.New("not a finite number")
		case f < 0:
			return errNegative
		}
		*field(r) = f
		return nil
	}
}

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("not one of %s", strings.Join(allowed, ", "))
}
