package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/kcache/cache/bench/internal/e2e"
	"github.com/kcache/cache/bench/internal/harness"
	"github.com/kcache/cache/bench/internal/scaleresult"
)

// churnPrefix starts a churn line of a scale result file.
const churnPrefix = "scale-churn:"

// copyEarlier reads the earlier result file path (none when path is empty),
// writes its sync and churn lines to w under a line naming the file, and
// returns them as measurements for the summary. A run that measures only
// the forced relist then still ends in a complete summary line, and its
// file holds every row the pictures are drawn from.
func copyEarlier(path string, w io.Writer) ([]measured, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scale: -rows-from: %w", err)
	}
	rows, err := scaleresult.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("scale: -rows-from %s: %w", path, err)
	}
	var out []measured
	for _, r := range rows {
		out = append(out, fromRow(r))
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, scaleresult.RowPrefix):
			lines = append(lines, line)
		case strings.HasPrefix(line, churnPrefix):
			m, err := fromChurnLine(line)
			if err != nil {
				return nil, fmt.Errorf("scale: -rows-from %s: line %d: %w", path, n, err)
			}
			out = withChurn(out, m)
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("scale: -rows-from %s: no scale-row or scale-churn lines", path)
	}
	head := fmt.Sprintf("scale: the %d lines below were measured by an earlier run and copied from %s\n", len(lines), path)
	if _, err := io.WriteString(w, head+strings.Join(lines, "\n")+"\nscale: end of the copied lines\n"); err != nil {
		return nil, err
	}
	return out, nil
}

// variantNamed is the variant a result file names name.
func variantNamed(name string) e2e.Variant {
	v := e2e.Variant{Lib: "kcache"}
	if lib, ok := strings.CutPrefix(name, "client-go"); ok {
		v.Lib, name = "client-go", lib
	} else {
		name = strings.TrimPrefix(name, "kcache")
	}
	v.NoShare = strings.Contains(name, "-noshare")
	v.Quiet = strings.Contains(name, "-quiet")
	return v
}

// fromRow is the measurement a sync row records (the figures the summary
// and the tables read from it).
func fromRow(r scaleresult.Row) measured {
	m := measured{step: step{pods: r.Pods, list: r.List}}
	m.Variant = variantNamed(r.Variant)
	m.Pods = r.Pods
	m.SteadyHeap = float64(r.HeapPerPodBytes) * float64(r.Pods)
	m.SyncPeakHeap, m.SyncPeakRSS = r.PeakHeapMiB*mib, r.PeakRSSMiB*mib
	m.SyncSeconds, m.SyncCPUSeconds = r.SyncSeconds, r.SyncCPUSeconds
	return m
}

// fromChurnLine is the measurement a churn line records: its pod count,
// variant and CPU per event (the only churn figure the summary reads).
func fromChurnLine(line string) (measured, error) {
	fields := map[string]string{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, churnPrefix)) {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return measured{}, fmt.Errorf("field %q is not name=value", f)
		}
		fields[name] = value
	}
	pods, err := strconv.Atoi(fields["pods"])
	if err != nil || pods <= 0 {
		return measured{}, fmt.Errorf("pods=%q is not a positive count", fields["pods"])
	}
	perEvent, err := strconv.ParseFloat(fields["cpu-per-event-us"], 64)
	if err != nil || perEvent < 0 {
		return measured{}, fmt.Errorf("cpu-per-event-us=%q is not a non-negative number", fields["cpu-per-event-us"])
	}
	if fields["variant"] == "" {
		return measured{}, fmt.Errorf("variant missing")
	}
	m := measured{step: step{pods: pods, list: scaleresult.ListStream}}
	m.Variant = variantNamed(fields["variant"])
	m.Churn = &harness.ChurnResult{Pods: pods, Events: 1, CPUSeconds: perEvent / 1e6}
	return m, nil
}

// withChurn attaches c's churn figures to the streaming-list row of the
// same pod count and variant in ms (a run measures churn after that sync),
// or adds c when ms has no such row.
func withChurn(ms []measured, c measured) []measured {
	for k, m := range ms {
		if m.pods == c.pods && m.list == c.list && m.Variant == c.Variant && m.Churn == nil {
			ms[k].Churn = c.Churn
			return ms
		}
	}
	return append(ms, c)
}
