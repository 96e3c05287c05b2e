package main

import (
	"slices"
	"strings"
	"sync"

	cache "github.com/kcache/cache"
	"github.com/kcache/cache/examples/internal/promtext"
)

// reflectorRegistry holds the reflector metrics. kcache takes one
// reflector metrics provider per process (SetReflectorMetricsProvider), so
// the registry is process-wide too.
var (
	reflectorRegistry    = promtext.NewRegistry()
	installReflectorOnce sync.Once
)

// installReflectorMetrics makes every reflector created from now on report
// into reflectorRegistry.
func installReflectorMetrics() {
	installReflectorOnce.Do(func() {
		cache.SetReflectorMetricsProvider(reflectorMetrics{reflectorRegistry})
	})
}

// reflectorMetrics is a cache.MetricsProvider: each reflector's metrics are
// labelled with its name.
type reflectorMetrics struct{ reg *promtext.Registry }

var _ cache.MetricsProvider = reflectorMetrics{}

func (m reflectorMetrics) NewListsMetric(name string) cache.CounterMetric {
	return m.reg.Counter("kcache_reflector_lists_total", "LISTs a reflector started.", "name", name)
}

func (m reflectorMetrics) NewListDurationMetric(name string) cache.SummaryMetric {
	return m.reg.Summary("kcache_reflector_list_duration_seconds", "Time a reflector's LISTs took.", "name", name)
}

func (m reflectorMetrics) NewItemsInListMetric(name string) cache.SummaryMetric {
	return m.reg.Summary("kcache_reflector_list_items", "Items a reflector's LISTs returned.", "name", name)
}

func (m reflectorMetrics) NewWatchesMetric(name string) cache.CounterMetric {
	return m.reg.Counter("kcache_reflector_watches_total", "WATCHes a reflector opened.", "name", name)
}

func (m reflectorMetrics) NewShortWatchesMetric(name string) cache.CounterMetric {
	return m.reg.Counter("kcache_reflector_short_watches_total", "WATCHes that ended suspiciously early.", "name", name)
}

func (m reflectorMetrics) NewWatchDurationMetric(name string) cache.SummaryMetric {
	return m.reg.Summary("kcache_reflector_watch_duration_seconds", "How long a reflector's WATCHes lasted.", "name", name)
}

func (m reflectorMetrics) NewItemsInWatchMetric(name string) cache.SummaryMetric {
	return m.reg.Summary("kcache_reflector_watch_events", "Events a reflector's WATCHes delivered.", "name", name)
}

func (m reflectorMetrics) NewLastResourceVersionMetric(name string) cache.GaugeMetric {
	return m.reg.Gauge("kcache_reflector_last_resource_version", "Newest resource version a reflector saw.", "name", name)
}

// informerMetrics is a cache.InformerMetricsProvider and, so that each
// handler's backlog is measured, a cache.ListenerMetricsProvider. kcache
// only asks for these metrics for an informer with a Reserved identifier
// (cache.NewInformerName(...).WithResource(gvr)).
type informerMetrics struct {
	reg *promtext.Registry

	// mu guards backlogs and merged.
	mu sync.Mutex
	// backlogs maps each handler's name to its backlog gauge.
	backlogs map[string]*promtext.Gauge
	// merged maps each handler's name to its merged-notifications counter.
	merged map[string]*promtext.Counter
}

var (
	_ cache.InformerMetricsProvider = (*informerMetrics)(nil)
	_ cache.ListenerMetricsProvider = (*informerMetrics)(nil)
)

func newInformerMetrics(reg *promtext.Registry) *informerMetrics {
	return &informerMetrics{reg: reg, backlogs: map[string]*promtext.Gauge{}, merged: map[string]*promtext.Counter{}}
}

func idLabels(id cache.InformerNameAndResource, more ...string) []string {
	return append([]string{"informer", id.Name(), "resource", id.GroupVersionResource().Resource}, more...)
}

func (m *informerMetrics) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return m.reg.Gauge("kcache_informer_queued_items", "Items waiting in the informer's queue.", idLabels(id)...)
}

// processingBuckets are the bounds, in seconds, of the processing latency
// histogram.
var processingBuckets = []float64{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1}

func (m *informerMetrics) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	return m.reg.Histogram("kcache_informer_processing_seconds", "Time the informer spent processing one popped item.", processingBuckets, idLabels(id)...)
}

func (m *informerMetrics) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return m.reg.Gauge("kcache_informer_store_resource_version", "Newest resource version in the informer's store.", idLabels(id)...)
}

func (m *informerMetrics) NewListenerBacklogMetric(id cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	g := m.reg.Gauge("kcache_informer_listener_backlog", "Notifications waiting for a handler.", idLabels(id, "handler", handler)...)
	m.mu.Lock()
	m.backlogs[handler] = g
	m.mu.Unlock()
	return g
}

func (m *informerMetrics) NewListenerMergedMetric(id cache.InformerNameAndResource, handler string) cache.CounterMetric {
	c := m.reg.Counter("kcache_informer_listener_merged_total", "Notifications merged into earlier ones of the same object because the handler fell behind.", idLabels(id, "handler", handler)...)
	m.mu.Lock()
	m.merged[handler] = c
	m.mu.Unlock()
	return c
}

// handlerBacklog is one handler's pending and merged notifications.
type handlerBacklog struct {
	handler         string
	pending, merged int
}

// backlogSnapshot returns every handler's backlog, ordered by handler
// name. Names are shortened to the type name ("main.podStats" → "podStats").
func (m *informerMetrics) backlogSnapshot() []handlerBacklog {
	m.mu.Lock()
	out := make([]handlerBacklog, 0, len(m.backlogs))
	for name, g := range m.backlogs {
		hb := handlerBacklog{handler: name[strings.LastIndex(name, ".")+1:], pending: int(g.Value())}
		if c, ok := m.merged[name]; ok {
			hb.merged = int(c.Value())
		}
		out = append(out, hb)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b handlerBacklog) int { return strings.Compare(a.handler, b.handler) })
	return out
}
