package main

import (
	"strings"
	"testing"

	"github.com/kcache/cache/bench/internal/harness"
)

func res(v variant, pods int, steady, syncPeak, relistPeak, rss, syncSec float64) result {
	return result{Variant: v, E2EResult: harness.E2EResult{Pods: pods, SteadyHeap: steady, SyncPeakHeap: syncPeak,
		RelistPeakHeap: relistPeak, SyncPeakRSS: rss, RelistPeakRSS: rss / 2, SyncSeconds: syncSec}}
}

func TestWriteReport_LastLine(t *testing.T) {
	cg := res(variant{Lib: "client-go"}, 100, 1000, 2000, 4000, 800, 2)
	noShare := res(variant{Lib: "kcache", NoShare: true}, 100, 900, 1800, 3000, 600, 2)
	kc := res(variant{Lib: "kcache"}, 100, 400, 1000, 2000, 400, 2.2)
	tests := []struct {
		name    string
		results []result
		want    string
	}{
		{"both modes measured: the last line is kcache's default, sharing",
			[]result{cg, kc, noShare},
			"e2e: heap/pod kcache/client-go = 0.40, peak RSS = 0.50, initial-list peak heap = 0.50, relist peak heap = 0.50, sync time = 1.10"},
		{"without sharing only: the last variant of kcache measured",
			[]result{cg, noShare},
			"e2e: heap/pod kcache/client-go = 0.90, peak RSS = 0.75, initial-list peak heap = 0.90, relist peak heap = 0.75, sync time = 1.00"},
		{"no client-go: no summary",
			[]result{noShare},
			"| heap after relist (GC) | 0.0 MiB |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeReport(&b, tt.results); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if got := lines[len(lines)-1]; got != tt.want {
				t.Errorf("last line:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSelectVariants(t *testing.T) {
	tests := []struct {
		only    string
		want    []string
		wantErr bool
	}{
		{"", []string{"client-go", "kcache", "kcache-noshare", "client-go+fieldsv1string", "kcache+fieldsv1string"}, false},
		{"kcache-noshare, client-go", []string{"kcache-noshare", "client-go"}, false},
		{"nope", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.only, func(t *testing.T) {
			vs, err := selectVariants(tt.only)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.Name())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"A=1", "KCACHE_SHARE_VALUES=true", "B=2"}
	tests := []struct {
		v    variant
		want string
	}{
		{variant{Lib: "kcache"}, "A=1,B=2"},
		{variant{Lib: "kcache", NoShare: true}, "A=1,B=2,KCACHE_SHARE_VALUES=false"},
	}
	for _, tt := range tests {
		t.Run(tt.v.Name(), func(t *testing.T) {
			if got := strings.Join(childEnv(parent, tt.v), ","); got != tt.want {
				t.Errorf("env %q, want %q", got, tt.want)
			}
		})
	}
}
