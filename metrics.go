package cache

import (
	"strconv"
	"sync"
)

// GaugeMetric is a value that can go up and down.
type GaugeMetric interface {
	Set(float64)
}

// CounterMetric is a value that only goes up.
type CounterMetric interface {
	Inc()
}

// SummaryMetric records observations for quantiles.
type SummaryMetric interface {
	Observe(float64)
}

// HistogramMetric records observations into buckets.
type HistogramMetric interface {
	Observe(float64)
}

// MetricsProvider creates the metrics a Reflector reports, each labelled
// with the reflector's name. Install one with SetReflectorMetricsProvider.
type MetricsProvider interface {
	NewListsMetric(name string) CounterMetric
	NewListDurationMetric(name string) SummaryMetric
	NewItemsInListMetric(name string) SummaryMetric

	NewWatchesMetric(name string) CounterMetric
	NewShortWatchesMetric(name string) CounterMetric
	NewWatchDurationMetric(name string) SummaryMetric
	NewItemsInWatchMetric(name string) SummaryMetric

	NewLastResourceVersionMetric(name string) GaugeMetric
}

// InformerMetricsProvider creates the metrics of an informer's queue and
// store. Metrics are only created for an identifier that is Reserved, so two
// informers never report under the same name.
type InformerMetricsProvider interface {
	// NewQueuedItemMetric returns the gauge of items waiting in the queue.
	NewQueuedItemMetric(id InformerNameAndResource) GaugeMetric
	// NewProcessingLatencyMetric returns the histogram of the time, in
	// seconds, spent processing one popped item.
	NewProcessingLatencyMetric(id InformerNameAndResource) HistogramMetric
	// NewStoreResourceVersionMetric returns the gauge of the newest resource
	// version the store has seen.
	NewStoreResourceVersionMetric(id InformerNameAndResource) GaugeMetric
}

// noopMetric implements every metric interface and records nothing.
type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Observe(float64) {}
func (noopMetric) Set(float64)     {}

// noopMetricsProvider is the reflector metrics default.
type noopMetricsProvider struct{}

func (noopMetricsProvider) NewListsMetric(string) CounterMetric         { return noopMetric{} }
func (noopMetricsProvider) NewListDurationMetric(string) SummaryMetric  { return noopMetric{} }
func (noopMetricsProvider) NewItemsInListMetric(string) SummaryMetric   { return noopMetric{} }
func (noopMetricsProvider) NewWatchesMetric(string) CounterMetric       { return noopMetric{} }
func (noopMetricsProvider) NewShortWatchesMetric(string) CounterMetric  { return noopMetric{} }
func (noopMetricsProvider) NewWatchDurationMetric(string) SummaryMetric { return noopMetric{} }
func (noopMetricsProvider) NewItemsInWatchMetric(string) SummaryMetric  { return noopMetric{} }
func (noopMetricsProvider) NewLastResourceVersionMetric(string) GaugeMetric {
	return noopMetric{}
}

// noopInformerMetricsProvider is the informer metrics default.
type noopInformerMetricsProvider struct{}

func (noopInformerMetricsProvider) NewQueuedItemMetric(InformerNameAndResource) GaugeMetric {
	return noopMetric{}
}
func (noopInformerMetricsProvider) NewProcessingLatencyMetric(InformerNameAndResource) HistogramMetric {
	return noopMetric{}
}
func (noopInformerMetricsProvider) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	return noopMetric{}
}

// globalProviders holds the process-wide providers. Each may be set once;
// later calls are ignored, as in the reference.
var globalProviders = struct {
	reflectorOnce sync.Once
	informerOnce  sync.Once
	// mu guards reflector and informer.
	mu        sync.RWMutex
	reflector MetricsProvider
	informer  InformerMetricsProvider
}{
	reflector: noopMetricsProvider{},
	informer:  noopInformerMetricsProvider{},
}

// SetReflectorMetricsProvider installs the provider of reflector metrics.
// Only the first call has an effect; call it before creating reflectors.
func SetReflectorMetricsProvider(metricsProvider MetricsProvider) {
	globalProviders.reflectorOnce.Do(func() {
		globalProviders.mu.Lock()
		globalProviders.reflector = metricsProvider
		globalProviders.mu.Unlock()
	})
}

// SetInformerMetricsProvider installs the default provider of informer
// queue and store metrics, used where options name none. Only the first call
// has an effect; call it before creating informers.
func SetInformerMetricsProvider(metricsProvider InformerMetricsProvider) {
	globalProviders.informerOnce.Do(func() {
		globalProviders.mu.Lock()
		globalProviders.informer = metricsProvider
		globalProviders.mu.Unlock()
	})
}

// reflectorMetricsProvider returns the installed reflector provider.
func reflectorMetricsProvider() MetricsProvider {
	globalProviders.mu.RLock()
	defer globalProviders.mu.RUnlock()
	return globalProviders.reflector
}

// informerMetricsProviderOr returns p, or the installed default when p is nil.
func informerMetricsProviderOr(p InformerMetricsProvider) InformerMetricsProvider {
	if p != nil {
		return p
	}
	globalProviders.mu.RLock()
	defer globalProviders.mu.RUnlock()
	return globalProviders.informer
}

// queueMetrics are the metrics a queue reports.
type queueMetrics struct {
	queuedItems       GaugeMetric
	processingLatency HistogramMetric
}

// newQueueMetrics creates a queue's metrics; they record nothing unless id is
// Reserved.
func newQueueMetrics(id InformerNameAndResource, p InformerMetricsProvider) queueMetrics {
	m := queueMetrics{queuedItems: noopMetric{}, processingLatency: noopMetric{}}
	if id.Reserved() {
		p = informerMetricsProviderOr(p)
		m.queuedItems = p.NewQueuedItemMetric(id)
		m.processingLatency = p.NewProcessingLatencyMetric(id)
	}
	return m
}

// newStoreRVMetric creates a store's resource-version gauge; it records
// nothing unless id is Reserved. With releaseBehaviour.lazyStoreRVMetric
// the provider is asked for it at its first Set.
func newStoreRVMetric(id InformerNameAndResource, p InformerMetricsProvider) GaugeMetric {
	if !id.Reserved() {
		return noopMetric{}
	}
	p = informerMetricsProviderOr(p)
	if releaseBehaviour.lazyStoreRVMetric {
		return &lazyGauge{make: func() GaugeMetric { return p.NewStoreResourceVersionMetric(id) }}
	}
	return p.NewStoreResourceVersionMetric(id)
}

// lazyGauge is a gauge made by make at its first Set.
type lazyGauge struct {
	once  sync.Once
	make  func() GaugeMetric
	gauge GaugeMetric
}

func (l *lazyGauge) Set(v float64) {
	l.once.Do(func() { l.gauge = l.make() })
	l.gauge.Set(v)
}

// setRVGauge records rv on g when rv is a decimal integer. Resource versions
// are opaque strings; values that are not numbers are simply not recorded.
func setRVGauge(g GaugeMetric, rv string) {
	if rv == "" {
		return
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	g.Set(float64(n))
}
