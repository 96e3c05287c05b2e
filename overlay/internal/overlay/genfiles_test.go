package overlay

import (
	"strings"
	"testing"
)

// clientGoFeaturesStub mimics client-go's features package: gate constants
// of type Feature, spread over files.
var clientGoFeaturesStub = map[string]string{
	"features.go":       "package features\n\ntype Feature string\n",
	"known_features.go": "package features\n\nconst (\n\tAtomicFIFO Feature = \"AtomicFIFO\"\n\tWatchListClient Feature = \"WatchListClient\"\n\tOther Feature = \"Other\"\n)\n\nconst notAGate = \"AtomicFIFO\"\n",
	"known_test.go":     "package features\n\nconst TestOnly Feature = \"TestOnly\"\n",
}

func TestFeaturesFile_BindsKcacheGatesToClientGos(t *testing.T) {
	tests := []struct {
		name      string
		features  string
		wantLines []string
		wantErr   string
	}{
		{
			name:     "known gates",
			features: "package cache\n\ntype featureName string\n\nconst (\n\tfeatureAtomicFIFO featureName = \"AtomicFIFO\"\n\tfeatureWatchListClient featureName = \"WatchListClient\"\n\tunrelated = \"Other\"\n)\n",
			wantLines: []string{
				"featureAtomicFIFO      = clientgofeatures.AtomicFIFO",
				"featureWatchListClient = clientgofeatures.WatchListClient",
				"type featureName = clientgofeatures.Feature",
				"return clientgofeatures.FeatureGates().Enabled(name)",
			},
		},
		{
			name:     "gate this release lacks is always off",
			features: "package cache\n\ntype featureName string\n\nconst (\n\tfeatureTestOnly featureName = \"TestOnly\"\n\tfeatureWatchListClient featureName = \"WatchListClient\"\n)\n",
			wantLines: []string{
				`featureTestOnly        featureName = "TestOnly" // not a gate of this client-go release: always off`,
				"featureWatchListClient             = clientgofeatures.WatchListClient",
				"switch name {\n\tcase featureTestOnly:\n",
				"return false",
			},
		},
		{
			name:     "no gates",
			features: "package cache\n\nconst x = \"AtomicFIFO\"\n",
			wantErr:  "no featureName constants",
		},
		{
			name:     "gate that is not a literal",
			features: "package cache\n\ntype featureName string\n\nconst featureX featureName = \"A\" + \"B\"\n",
			wantErr:  "not a string literal",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kdir, cdir := t.TempDir(), t.TempDir()
			writeFiles(t, kdir, map[string]string{"features.go": tc.features})
			writeFiles(t, cdir, clientGoFeaturesStub)
			out, err := featuresFile(kdir, cdir, "// head\n\n")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out), "// head\n\npackage cache\n") {
				t.Errorf("file does not start with the header:\n%s", out)
			}
			for _, line := range tc.wantLines {
				if !strings.Contains(string(out), line) {
					t.Errorf("file lacks %q:\n%s", line, out)
				}
			}
		})
	}
}

func TestGetterFile_DeclaresClientGosGetter(t *testing.T) {
	out, err := getterFile("// head\n\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// head\n\npackage cache\n",
		"type Getter interface {\n\tGet() *restclient.Request\n}",
		"func newRESTRequester(c Getter) *restRequester",
		"func (r *restRequester) list(ctx context.Context, namespace, resource string, options *metav1.ListOptions) (obj runtime.Object, err error)",
		"func (r *restRequester) watch(ctx context.Context, namespace, resource string, options *metav1.ListOptions) (w watch.Interface, err error)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("getter.go lacks %q", want)
		}
	}
	if strings.Contains(string(out), `"reflect"`) {
		t.Error("getter.go still reaches the client by reflection")
	}
}
