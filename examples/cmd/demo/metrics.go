package main

import (
	"slices"
	"strings"
	"sync"

	cache "github.com/kcache/cache"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// reflectorRegistry holds the reflector metrics. kcache takes one
// reflector metrics provider per process (SetReflectorMetricsProvider), so
// the registry is process-wide too.
var (
	reflectorRegistry    = prometheus.NewRegistry()
	installReflectorOnce sync.Once
)

// installReflectorMetrics makes every reflector created from now on report
// into reflectorRegistry.
func installReflectorMetrics() {
	installReflectorOnce.Do(func() {
		cache.SetReflectorMetricsProvider(newReflectorMetrics(reflectorRegistry))
	})
}

// reflectorMetrics is a cache.MetricsProvider: each reflector's metrics are
// labelled with its name. The metric names are the ones Kubernetes
// components use for client-go's reflectors.
type reflectorMetrics struct {
	lists, watches, shortWatches *prometheus.CounterVec
	listDuration, itemsPerList   *prometheus.SummaryVec
	watchDuration, itemsPerWatch *prometheus.SummaryVec
	lastResourceVersion          *prometheus.GaugeVec
}

var _ cache.MetricsProvider = (*reflectorMetrics)(nil)

// newReflectorMetrics registers the reflector metric families with reg.
func newReflectorMetrics(reg prometheus.Registerer) *reflectorMetrics {
	counter := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "reflector", Name: name, Help: help}, []string{"name"})
		reg.MustRegister(v)
		return v
	}
	summary := func(name, help string) *prometheus.SummaryVec {
		v := prometheus.NewSummaryVec(prometheus.SummaryOpts{Subsystem: "reflector", Name: name, Help: help}, []string{"name"})
		reg.MustRegister(v)
		return v
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "reflector", Name: "last_resource_version", Help: "Newest resource version a reflector saw."}, []string{"name"})
	reg.MustRegister(gauge)
	return &reflectorMetrics{
		lists:               counter("lists_total", "LISTs a reflector started."),
		watches:             counter("watches_total", "WATCHes a reflector opened."),
		shortWatches:        counter("short_watches_total", "WATCHes that ended suspiciously early."),
		listDuration:        summary("list_duration_seconds", "Time a reflector's LISTs took."),
		itemsPerList:        summary("items_per_list", "Items a reflector's LISTs returned."),
		watchDuration:       summary("watch_duration_seconds", "How long a reflector's WATCHes lasted."),
		itemsPerWatch:       summary("items_per_watch", "Events a reflector's WATCHes delivered."),
		lastResourceVersion: gauge,
	}
}

func (m *reflectorMetrics) NewListsMetric(name string) cache.CounterMetric {
	return m.lists.WithLabelValues(name)
}

func (m *reflectorMetrics) NewListDurationMetric(name string) cache.SummaryMetric {
	return m.listDuration.WithLabelValues(name)
}

func (m *reflectorMetrics) NewItemsInListMetric(name string) cache.SummaryMetric {
	return m.itemsPerList.WithLabelValues(name)
}

func (m *reflectorMetrics) NewWatchesMetric(name string) cache.CounterMetric {
	return m.watches.WithLabelValues(name)
}

func (m *reflectorMetrics) NewShortWatchesMetric(name string) cache.CounterMetric {
	return m.shortWatches.WithLabelValues(name)
}

func (m *reflectorMetrics) NewWatchDurationMetric(name string) cache.SummaryMetric {
	return m.watchDuration.WithLabelValues(name)
}

func (m *reflectorMetrics) NewItemsInWatchMetric(name string) cache.SummaryMetric {
	return m.itemsPerWatch.WithLabelValues(name)
}

func (m *reflectorMetrics) NewLastResourceVersionMetric(name string) cache.GaugeMetric {
	return m.lastResourceVersion.WithLabelValues(name)
}

// informerMetrics is a cache.InformerMetricsProvider and, so that each
// handler's backlog is measured, a cache.ListenerMetricsProvider. kcache
// only asks for these metrics for an informer with a Reserved identifier
// (cache.NewInformerName(...).WithResource(gvr)).
type informerMetrics struct {
	queued, storeRV *prometheus.GaugeVec
	processing      *prometheus.HistogramVec
	backlog         *prometheus.GaugeVec
	mergedVec       *prometheus.CounterVec

	// mu guards backlogs and merged.
	mu sync.Mutex
	// backlogs maps each handler's name to its backlog gauge.
	backlogs map[string]prometheus.Gauge
	// merged maps each handler's name to its merged-notifications counter.
	merged map[string]prometheus.Counter
}

var (
	_ cache.InformerMetricsProvider = (*informerMetrics)(nil)
	_ cache.ListenerMetricsProvider = (*informerMetrics)(nil)
)

// processingBuckets are the bounds, in seconds, of the processing latency
// histogram.
var processingBuckets = []float64{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1}

// idLabelNames are the labels naming an informer.
var idLabelNames = []string{"informer", "resource"}

// newInformerMetrics registers the informer metric families with reg.
func newInformerMetrics(reg prometheus.Registerer) *informerMetrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "kcache", Subsystem: "informer", Name: name, Help: help}
	}
	m := &informerMetrics{
		queued:  prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("queued_items", "Items waiting in the informer's queue.")), idLabelNames),
		storeRV: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("store_resource_version", "Newest resource version in the informer's store.")), idLabelNames),
		processing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kcache", Subsystem: "informer", Name: "processing_seconds",
			Help: "Time the informer spent processing one popped item.", Buckets: processingBuckets,
		}, idLabelNames),
		backlog:   prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("listener_backlog", "Notifications waiting for a handler.")), append(slices.Clone(idLabelNames), "handler")),
		mergedVec: prometheus.NewCounterVec(prometheus.CounterOpts(opts("listener_merged_total", "Notifications merged into earlier ones of the same object because the handler fell behind.")), append(slices.Clone(idLabelNames), "handler")),
		backlogs:  map[string]prometheus.Gauge{},
		merged:    map[string]prometheus.Counter{},
	}
	reg.MustRegister(m.queued, m.storeRV, m.processing, m.backlog, m.mergedVec)
	return m
}

func idLabels(id cache.InformerNameAndResource, more ...string) []string {
	return append([]string{id.Name(), id.GroupVersionResource().Resource}, more...)
}

func (m *informerMetrics) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return m.queued.WithLabelValues(idLabels(id)...)
}

func (m *informerMetrics) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	return m.processing.WithLabelValues(idLabels(id)...)
}

func (m *informerMetrics) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return m.storeRV.WithLabelValues(idLabels(id)...)
}

func (m *informerMetrics) NewListenerBacklogMetric(id cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	g := m.backlog.WithLabelValues(idLabels(id, handler)...)
	m.mu.Lock()
	m.backlogs[handler] = g
	m.mu.Unlock()
	return g
}

func (m *informerMetrics) NewListenerMergedMetric(id cache.InformerNameAndResource, handler string) cache.CounterMetric {
	c := m.mergedVec.WithLabelValues(idLabels(id, handler)...)
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
		hb := handlerBacklog{handler: name[strings.LastIndex(name, ".")+1:], pending: int(metricValue(g))}
		if c, ok := m.merged[name]; ok {
			hb.merged = int(metricValue(c))
		}
		out = append(out, hb)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b handlerBacklog) int { return strings.Compare(a.handler, b.handler) })
	return out
}

// metricValue reads the current value of a gauge or counter; it is zero
// for any other kind of metric.
func metricValue(m prometheus.Metric) float64 {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		return 0
	}
	switch {
	case pb.Gauge != nil:
		return pb.Gauge.GetValue()
	case pb.Counter != nil:
		return pb.Counter.GetValue()
	}
	return 0
}
