package scaleresult

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goodLine = "scale-row: pods=20000 variant=kcache list=stream heap-per-pod-bytes=8823 steady-heap-mib=168.3 peak-heap-mib=239.6 peak-rss-mib=285.3 sync-s=4.74 sync-cpu-s=3.46"

var goodRow = Row{
	Pods: 20000, Variant: VariantKcache, List: ListStream, HeapPerPodBytes: 8823,
	SteadyHeapMiB: 168.3, PeakHeapMiB: 239.6, PeakRSSMiB: 285.3, SyncSeconds: 4.74, SyncCPUSeconds: 3.46,
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		want    Row
		wantErr string
	}{
		{name: "the documented form", line: goodLine, want: goodRow},
		{name: "fields in another order",
			line: "scale-row: variant=kcache pods=20000 sync-cpu-s=3.46 list=stream heap-per-pod-bytes=8823 steady-heap-mib=168.3 peak-heap-mib=239.6 peak-rss-mib=285.3 sync-s=4.74",
			want: goodRow},
		{name: "paged client-go", line: strings.NewReplacer("variant=kcache", "variant=client-go", "list=stream", "list=paged").Replace(goodLine),
			want: func() Row { r := goodRow; r.Variant, r.List = VariantClientGo, ListPaged; return r }()},
		{name: "no prefix", line: "scale: pods=100000", wantErr: "does not start with"},
		{name: "missing field", line: strings.Replace(goodLine, " sync-cpu-s=3.46", "", 1), wantErr: `field "sync-cpu-s" missing`},
		{name: "unknown field", line: goodLine + " rounds=3", wantErr: `unknown field "rounds"`},
		{name: "field twice", line: goodLine + " pods=1000", wantErr: `field "pods" given twice`},
		{name: "not name=value", line: goodLine + " oops", wantErr: `"oops" is not name=value`},
		{name: "unknown variant", line: strings.Replace(goodLine, "variant=kcache", "variant=kcache-shared", 1), wantErr: "variant=kcache-shared: not one of"},
		{name: "unknown list", line: strings.Replace(goodLine, "list=stream", "list=watchlist", 1), wantErr: "list=watchlist: not one of"},
		{name: "pods zero", line: strings.Replace(goodLine, "pods=20000", "pods=0", 1), wantErr: "pods=0: not positive"},
		{name: "pods not a number", line: strings.Replace(goodLine, "pods=20000", "pods=20k", 1), wantErr: "pods=20k: strconv.Atoi"},
		{name: "heap per pod fractional", line: strings.Replace(goodLine, "heap-per-pod-bytes=8823", "heap-per-pod-bytes=8823.5", 1), wantErr: "heap-per-pod-bytes=8823.5: strconv.ParseInt"},
		{name: "heap per pod negative", line: strings.Replace(goodLine, "heap-per-pod-bytes=8823", "heap-per-pod-bytes=-1", 1), wantErr: "negative"},
		{name: "sync time NaN", line: strings.Replace(goodLine, "sync-s=4.74", "sync-s=NaN", 1), wantErr: "sync-s=NaN: not a finite number"},
		{name: "sync time infinite", line: strings.Replace(goodLine, "sync-s=4.74", "sync-s=+Inf", 1), wantErr: "not a finite number"},
		{name: "peak RSS negative", line: strings.Replace(goodLine, "peak-rss-mib=285.3", "peak-rss-mib=-285.3", 1), wantErr: "peak-rss-mib=-285.3: negative"},
		{name: "empty value", line: strings.Replace(goodLine, "sync-s=4.74", "sync-s=", 1), wantErr: "sync-s=: strconv.ParseFloat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLine(tc.line)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseLine error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLine: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseLine (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRowString_IsTheDocumentedLine(t *testing.T) {
	if got := goodRow.String(); got != goodLine {
		t.Errorf("String() =\n%s\nwant\n%s", got, goodLine)
	}
	back, err := ParseLine(goodRow.String())
	if err != nil || back != goodRow {
		t.Errorf("ParseLine(String()) = %+v, %v; want %+v", back, err, goodRow)
	}
}

func TestParse(t *testing.T) {
	second := strings.NewReplacer("pods=20000", "pods=1000", "variant=kcache", "variant=client-go").Replace(goodLine)
	for _, tc := range []struct {
		name     string
		file     string
		wantPods []int
		wantErr  string
	}{
		{name: "rows among other lines",
			file: "# make bench-scale result\ncommand: make bench-scale\n\n| pods | heap |\n" + goodLine + "\r\n" +
				"scale-sim: objects=1000000\n" + second + "\nscale: pods=100000 heap/pod kcache/client-go = 0.27\n",
			wantPods: []int{20000, 1000}},
		{name: "no rows", file: "# header only\n", wantPods: nil},
		{name: "empty", file: "", wantPods: nil},
		{name: "a bad row names its line", file: "header\n\n" + strings.Replace(goodLine, "sync-s=4.74", "sync-s=x", 1) + "\n",
			wantErr: "line 3: sync-s=x"},
		{name: "the same measurement twice", file: goodLine + "\nfree text\n" + goodLine + "\n",
			wantErr: "line 3: a second row for pods=20000 variant=kcache list=stream (the first is on line 1)"},
		{name: "a line past the limit", file: goodLine + "\n" + strings.Repeat("x", maxLine+1) + "\n",
			wantErr: "token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := Parse(strings.NewReader(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var pods []int
			for _, r := range rows {
				pods = append(pods, r.Pods)
			}
			if diff := cmp.Diff(tc.wantPods, pods); diff != "" {
				t.Errorf("pods of the rows (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseLine checks that no line makes the parser panic, and that a line
// it accepts is written back by String as a line that parses to the same
// row.
func FuzzParseLine(f *testing.F) {
	f.Add(goodLine)
	f.Add("scale-row:")
	f.Add("scale-row: pods=1e3 variant= list=stream")
	f.Add(strings.Replace(goodLine, "sync-s=4.74", "sync-s=0x1p-2", 1))
	f.Fuzz(func(t *testing.T, line string) {
		row, err := ParseLine(line)
		if err != nil {
			return
		}
		again, err := ParseLine(row.String())
		if err != nil {
			t.Fatalf("ParseLine(%q) accepted, but its String %q does not parse: %v", line, row.String(), err)
		}
		if again.Pods != row.Pods || again.Variant != row.Variant || again.List != row.List || again.HeapPerPodBytes != row.HeapPerPodBytes {
			t.Fatalf("round trip of %q changed %+v to %+v", line, row, again)
		}
	})
}
