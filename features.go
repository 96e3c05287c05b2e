package cache

import (
	"os"
	"strconv"
	"sync"

	"k8s.io/klog/v2"
)

// featureName names a client-go feature gate. The names, defaults and lock
// states are client-go v0.37.2's, and each gate is switched through the same
// environment variable: KUBE_FEATURE_<name>=true|false.
//
// This file is a seam: the rest of the package reads gates only through the
// featureName constants and featureEnabled. The client-go overlay
// (overlay/cmd/kcache-overlay) replaces this file with one that defines just
// those names on top of k8s.io/client-go/features, so gates inside the
// overlay come from client-go's own registry. Anything else declared here is
// for this file and its tests only.
type featureName string

const (
	featureAtomicFIFO                   featureName = "AtomicFIFO"
	featureInOrderInformers             featureName = "InOrderInformers"
	featureInOrderInformersBatchProcess featureName = "InOrderInformersBatchProcess"
	featureInformerResourceVersion      featureName = "InformerResourceVersion"
	featureUnlockWhileProcessingFIFO    featureName = "UnlockWhileProcessingFIFO"
	featureWatchListClient              featureName = "WatchListClient"
)

// featureSpec is a gate's default and whether the environment may change it.
type featureSpec struct {
	enabledByDefault bool
	locked           bool
}

// knownFeatures lists the gates this package reads, with the reference's
// defaults for v0.37.2.
var knownFeatures = map[featureName]featureSpec{
	featureAtomicFIFO:                   {enabledByDefault: true},
	featureInOrderInformers:             {enabledByDefault: true, locked: true},
	featureInOrderInformersBatchProcess: {enabledByDefault: true},
	featureInformerResourceVersion:      {enabledByDefault: true},
	featureUnlockWhileProcessingFIFO:    {enabledByDefault: true},
	featureWatchListClient:              {enabledByDefault: true},
}

// featureGates holds the gate values: read from the environment once, then
// only changed by tests through setFeatureForTesting.
var featureGates = struct {
	// mu guards values and overrides.
	mu        sync.RWMutex
	once      sync.Once
	values    map[featureName]bool
	overrides map[featureName]bool
}{}

// featureEnabled reports whether the named gate is on. It is the only
// function the rest of the package calls to read a gate.
func featureEnabled(name featureName) bool {
	featureGates.once.Do(loadFeatureGates)
	featureGates.mu.RLock()
	defer featureGates.mu.RUnlock()
	if v, ok := featureGates.overrides[name]; ok {
		return v
	}
	return featureGates.values[name]
}

// loadFeatureGates reads every KUBE_FEATURE_* variable of a known gate. A
// value that is not a boolean, or that tries to move a locked gate, is
// logged and ignored.
func loadFeatureGates() {
	logger := klog.Background()
	values := make(map[featureName]bool, len(knownFeatures))
	for name, spec := range knownFeatures {
		values[name] = spec.enabledByDefault
		raw, set := os.LookupEnv("KUBE_FEATURE_" + string(name))
		if !set {
			continue
		}
		v, err := strconv.ParseBool(raw)
		switch {
		case err != nil:
			logger.Error(err, "Ignoring feature gate setting that is not a boolean", "feature", name, "value", raw)
		case spec.locked && v != spec.enabledByDefault:
			logger.Error(nil, "Ignoring setting of a locked feature gate", "feature", name, "value", raw, "lockedTo", spec.enabledByDefault)
		default:
			values[name] = v
		}
	}
	featureGates.mu.Lock()
	featureGates.values = values
	featureGates.mu.Unlock()
}

// setFeatureForTesting overrides a gate until the returned function is
// called. Tests that use it must not run in parallel with others that read
// the same gate.
func setFeatureForTesting(name featureName, enabled bool) (restore func()) {
	featureGates.once.Do(loadFeatureGates)
	featureGates.mu.Lock()
	defer featureGates.mu.Unlock()
	prev, had := featureGates.overrides[name]
	if featureGates.overrides == nil {
		featureGates.overrides = map[featureName]bool{}
	}
	featureGates.overrides[name] = enabled
	return func() {
		featureGates.mu.Lock()
		defer featureGates.mu.Unlock()
		if had {
			featureGates.overrides[name] = prev
		} else {
			delete(featureGates.overrides, name)
		}
	}
}
