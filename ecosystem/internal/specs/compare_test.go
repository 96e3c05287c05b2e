package specs

import (
	"strings"
	"testing"
)

func specsOf(states ...State) []Spec {
	out := make([]Spec, len(states))
	for i, s := range states {
		out[i] = Spec{Name: string(rune('a' + i)), State: s}
	}
	return out
}

func TestCompareAndVerdict(t *testing.T) {
	tests := []struct {
		name      string
		runs      []Run
		wantDiffs []string
		wantErr   string // substring; "" means success
	}{
		{
			name: "equal runs pass",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Passed, Passed, Filtered), Tests: map[string]State{"TestX": Passed}},
				{Variant: "kcache", Specs: specsOf(Passed, Passed, Filtered), Tests: map[string]State{"TestX": Passed}},
			},
		},
		{
			name: "a pending variant is left out",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Passed)},
				{Variant: "overlay", Pending: "not built"},
			},
		},
		{
			name: "a failed spec fails the verdict and shows as a difference",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Passed, Passed)},
				{Variant: "kcache", Specs: specsOf(Passed, Failed)},
			},
			wantDiffs: []string{"b"},
			wantErr:   "kcache: 1 spec(s) failed",
		},
		{
			name: "same failures are no difference but still fail",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Failed)},
				{Variant: "kcache", Specs: specsOf(Failed)},
			},
			wantErr: "no spec passed",
		},
		{
			name: "a spec missing from one run",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Passed, Passed)},
				{Variant: "kcache", Specs: specsOf(Passed)},
			},
			wantDiffs: []string{"b"},
			wantErr:   "1 specs passed, an earlier variant 2",
		},
		{
			name: "skipped differently with equal pass counts",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Passed, Skipped)},
				{Variant: "kcache", Specs: specsOf(Passed, Filtered)},
			},
			wantDiffs: []string{"b"},
			wantErr:   "1 spec(s) or test(s) differ",
		},
		{
			name: "a failed go test",
			runs: []Run{
				{Variant: "stock", Specs: specsOf(Passed), Tests: map[string]State{"TestY": Passed}},
				{Variant: "kcache", Specs: specsOf(Passed), Tests: map[string]State{"TestY": Failed}},
			},
			wantDiffs: []string{"go test TestY"},
			wantErr:   "go test TestY failed",
		},
		{
			name:    "nothing ran",
			runs:    []Run{{Variant: "overlay", Pending: "x"}},
			wantErr: "no variant was run",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffs := Compare(tt.runs)
			var names []string
			for _, d := range diffs {
				names = append(names, d.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantDiffs, ",") {
				t.Errorf("differences = %v, want %v", names, tt.wantDiffs)
			}
			err := Verdict(tt.runs, diffs)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("verdict = %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("verdict = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
