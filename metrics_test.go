package cache

import "testing"

func TestMetrics_NoopDefaultsAndReservedOnly(t *testing.T) {
	p := reflectorMetricsProvider()
	p.NewListsMetric("x").Inc()
	p.NewLastResourceVersionMetric("x").Set(1)
	p.NewWatchDurationMetric("x").Observe(1)

	unreserved := newQueueMetrics(InformerNameAndResource{}, rvOnlyProvider{gauge: &recordingGauge{}})
	if _, ok := unreserved.queuedItems.(noopMetric); !ok {
		t.Error("an unreserved identity must get no-op metrics")
	}
	g := &recordingGauge{}
	if m := newStoreRVMetric(InformerNameAndResource{}, rvOnlyProvider{gauge: g}); m == GaugeMetric(g) {
		t.Error("an unreserved identity must not reach the provider")
	}
	setRVGauge(g, "123")
	setRVGauge(g, "")
	setRVGauge(g, "abc")
	if g.last != 123 {
		t.Errorf("gauge = %v, want 123", g.last)
	}
}
