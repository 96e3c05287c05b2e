package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	cache "github.com/kcache/cache"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scrape serves g through promhttp, as /metrics does, and parses the text
// exposition it returns.
func scrape(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape = %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return fams
}

// sample is one parsed series: its labels and its value (the sample count
// for summaries and histograms).
type sample struct {
	Labels map[string]string
	Value  float64
}

func samples(fam *dto.MetricFamily) []sample {
	var out []sample
	for _, m := range fam.GetMetric() {
		s := sample{Labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.Labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			s.Value = m.Counter.GetValue()
		case m.Gauge != nil:
			s.Value = m.Gauge.GetValue()
		case m.Summary != nil:
			s.Value = float64(m.Summary.GetSampleCount())
		case m.Histogram != nil:
			s.Value = float64(m.Histogram.GetSampleCount())
		}
		out = append(out, s)
	}
	return out
}

func TestReflectorMetrics_Exposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newReflectorMetrics(reg)
	m.NewListsMetric("pods").Inc()
	m.NewListsMetric("pods").Inc()
	m.NewWatchesMetric("pods").Inc()
	m.NewShortWatchesMetric("nodes").Inc()
	m.NewListDurationMetric("pods").Observe(0.25)
	m.NewItemsInListMetric("pods").Observe(40)
	m.NewWatchDurationMetric("pods").Observe(3)
	m.NewItemsInWatchMetric("pods").Observe(7)
	m.NewLastResourceVersionMetric("pods").Set(1234)

	fams := scrape(t, reg)
	pods := map[string]string{"name": "pods"}
	want := map[string]struct {
		typ     dto.MetricType
		samples []sample
	}{
		"reflector_lists_total":            {dto.MetricType_COUNTER, []sample{{pods, 2}}},
		"reflector_watches_total":          {dto.MetricType_COUNTER, []sample{{pods, 1}}},
		"reflector_short_watches_total":    {dto.MetricType_COUNTER, []sample{{map[string]string{"name": "nodes"}, 1}}},
		"reflector_list_duration_seconds":  {dto.MetricType_SUMMARY, []sample{{pods, 1}}},
		"reflector_items_per_list":         {dto.MetricType_SUMMARY, []sample{{pods, 1}}},
		"reflector_watch_duration_seconds": {dto.MetricType_SUMMARY, []sample{{pods, 1}}},
		"reflector_items_per_watch":        {dto.MetricType_SUMMARY, []sample{{pods, 1}}},
		"reflector_last_resource_version":  {dto.MetricType_GAUGE, []sample{{pods, 1234}}},
	}
	if len(fams) != len(want) {
		t.Errorf("exposition has %d families, want %d", len(fams), len(want))
	}
	for name, w := range want {
		fam, ok := fams[name]
		if !ok {
			t.Errorf("exposition lacks %s", name)
			continue
		}
		if fam.GetType() != w.typ {
			t.Errorf("%s is a %v, want %v", name, fam.GetType(), w.typ)
		}
		if fam.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
		if diff := cmp.Diff(w.samples, samples(fam)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestInformerMetrics_ExpositionAndBacklog(t *testing.T) {
	name, err := cache.NewInformerName("metrics-test")
	if err != nil {
		t.Fatal(err)
	}
	defer name.Release()
	id := name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})

	reg := prometheus.NewRegistry()
	m := newInformerMetrics(reg)
	m.NewQueuedItemMetric(id).Set(3)
	m.NewStoreResourceVersionMetric(id).Set(99)
	m.NewProcessingLatencyMetric(id).Observe(2e-4)
	m.NewListenerBacklogMetric(id, "main.podStats").Set(5)
	m.NewListenerBacklogMetric(id, "main.eventPrinter").Set(0)
	merged := m.NewListenerMergedMetric(id, "main.podStats")
	merged.Inc()
	merged.Inc()

	fams := scrape(t, reg)
	informer := map[string]string{"informer": "metrics-test", "resource": "pods"}
	withHandler := func(h string) map[string]string {
		return map[string]string{"informer": "metrics-test", "resource": "pods", "handler": h}
	}
	want := map[string][]sample{
		"kcache_informer_queued_items":           {{informer, 3}},
		"kcache_informer_store_resource_version": {{informer, 99}},
		"kcache_informer_processing_seconds":     {{informer, 1}},
		"kcache_informer_listener_backlog":       {{withHandler("main.eventPrinter"), 0}, {withHandler("main.podStats"), 5}},
		"kcache_informer_listener_merged_total":  {{withHandler("main.podStats"), 2}},
	}
	got := map[string][]sample{}
	for n, fam := range fams {
		got[n] = samples(fam)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exposition (-want +got):\n%s", diff)
	}
	if typ := fams["kcache_informer_processing_seconds"].GetType(); typ != dto.MetricType_HISTOGRAM {
		t.Errorf("kcache_informer_processing_seconds is a %v, want a histogram", typ)
	}
	if n := len(fams["kcache_informer_processing_seconds"].GetMetric()[0].GetHistogram().GetBucket()); n != len(processingBuckets)+1 {
		t.Errorf("processing histogram has %d buckets, want %d and +Inf", n, len(processingBuckets))
	}

	wantBacklog := []handlerBacklog{{handler: "eventPrinter"}, {handler: "podStats", pending: 5, merged: 2}}
	if diff := cmp.Diff(wantBacklog, m.backlogSnapshot(), cmp.AllowUnexported(handlerBacklog{})); diff != "" {
		t.Errorf("backlogSnapshot (-want +got):\n%s", diff)
	}
}
