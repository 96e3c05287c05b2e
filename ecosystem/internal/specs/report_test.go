package specs

import (
	"strings"
	"testing"
)

func TestReadGinkgo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Spec
		wantErr bool
	}{
		{
			name: "leaf specs by state, setup nodes dropped when they pass",
			in: `[{"SpecReports":[
				{"LeafNodeType":"BeforeSuite","State":"passed"},
				{"ContainerHierarchyTexts":["Cache","as a Reader"],"LeafNodeType":"It","LeafNodeText":"lists pods","State":"passed","NumAttempts":1},
				{"ContainerHierarchyTexts":["Cache"],"LeafNodeType":"It","LeafNodeText":"flaky","State":"passed","NumAttempts":2},
				{"ContainerHierarchyTexts":["Cache"],"LeafNodeType":"It","LeafNodeText":"gets","State":"panicked","Failure":{"Message":"boom\nstack"}},
				{"ContainerHierarchyTexts":["Cache"],"LeafNodeType":"It","LeafNodeText":"not focused","State":"skipped"},
				{"ContainerHierarchyTexts":["Cache"],"LeafNodeType":"It","LeafNodeText":"user skip","State":"skipped","Failure":{"Message":"needs a node"}},
				{"LeafNodeType":"It","LeafNodeText":"later","State":"pending"}
			]}]`,
			want: []Spec{
				{Name: "Cache / as a Reader / lists pods", State: Passed},
				{Name: "Cache / flaky", State: Passed, Retried: true},
				{Name: "Cache / gets", State: Failed, Message: "boom"},
				{Name: "Cache / not focused", State: Filtered},
				{Name: "Cache / user skip", State: Skipped, Message: "needs a node"},
				{Name: "later", State: Pending},
			},
		},
		{
			name: "a failed setup node is reported as a failure",
			in:   `[{"SpecReports":[{"LeafNodeType":"BeforeSuite","State":"failed","Failure":{"Message":"no cluster"}}]}]`,
			want: []Spec{{Name: "BeforeSuite", State: Failed, Message: "no cluster"}},
		},
		{name: "unknown state", in: `[{"SpecReports":[{"LeafNodeType":"It","State":"odd"}]}]`, wantErr: true},
		{name: "not json", in: `{`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadGinkgo(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d specs %+v, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("spec %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestReadTest2JSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]State
	}{
		{
			name: "final action wins, subtests counted, package lines ignored",
			in: `{"Action":"run","Test":"TestA"}
{"Action":"pass","Test":"TestA"}
{"Action":"run","Test":"TestB/x"}
{"Action":"skip","Test":"TestB/x"}
not json at all
{"Action":"fail"}
`,
			want: map[string]State{"TestA": Passed, "TestB/x": Skipped},
		},
		{
			name: "a test that never ended failed",
			in:   `{"Action":"run","Test":"TestHang"}` + "\n",
			want: map[string]State{"TestHang": Failed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTest2JSON(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
