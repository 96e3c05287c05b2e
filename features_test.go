package cache

import "testing"

func TestFeatureGates_DefaultsMatchTheReference(t *testing.T) {
	want := map[featureName]bool{
		featureAtomicFIFO:                   true,
		featureInOrderInformers:             true,
		featureInOrderInformersBatchProcess: true,
		featureInformerResourceVersion:      true,
		featureUnlockWhileProcessingFIFO:    true,
		featureWatchListClient:              true,
	}
	for name, on := range want {
		if got := knownFeatures[name].enabledByDefault; got != on {
			t.Errorf("%s default = %v, want %v", name, got, on)
		}
	}
	if !knownFeatures[featureInOrderInformers].locked {
		t.Error("InOrderInformers must be locked")
	}
}

func TestFeatureGates_EnvironmentParsing(t *testing.T) {
	tests := map[string]struct {
		env  map[string]string
		want map[featureName]bool
	}{
		"unset keeps defaults": {
			want: map[featureName]bool{featureWatchListClient: true},
		},
		"boolean switches a gate": {
			env:  map[string]string{"KUBE_FEATURE_WatchListClient": "false", "KUBE_FEATURE_AtomicFIFO": "0"},
			want: map[featureName]bool{featureWatchListClient: false, featureAtomicFIFO: false},
		},
		"garbage is ignored": {
			env:  map[string]string{"KUBE_FEATURE_WatchListClient": "maybe"},
			want: map[featureName]bool{featureWatchListClient: true},
		},
		"locked gate cannot move": {
			env:  map[string]string{"KUBE_FEATURE_InOrderInformers": "false"},
			want: map[featureName]bool{featureInOrderInformers: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Registered first so it runs last, after Setenv restored the
			// environment: the gates go back to what the process started with.
			t.Cleanup(loadFeatureGates)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			loadFeatureGates()
			for gate, want := range tc.want {
				if got := featureEnabled(gate); got != want {
					t.Errorf("%s = %v, want %v", gate, got, want)
				}
			}
		})
	}
}

func TestFeatureGates_TestOverrideRestores(t *testing.T) {
	before := featureEnabled(featureAtomicFIFO)
	restore := setFeatureForTesting(featureAtomicFIFO, !before)
	if featureEnabled(featureAtomicFIFO) == before {
		t.Error("override not applied")
	}
	restore()
	if featureEnabled(featureAtomicFIFO) != before {
		t.Error("override not restored")
	}
}
