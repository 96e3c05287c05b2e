// Package runresult is the record of one control-plane run that the driver
// writes (result.json) and the report reads: one type for both sides, so
// that a field added by one is seen by the other.
package runresult

// Phase is what one phase of the scenario cost and how long it took to
// converge.
type Phase struct {
	Name      string             `json:"name"`
	Seconds   float64            `json:"seconds"`
	Converged bool               `json:"converged"`
	Pending   string             `json:"pending,omitempty"`
	CPU       map[string]float64 `json:"cpuSeconds"` // per component
	PeakHeap  map[string]float64 `json:"peakHeapInuse"`
}

// Memory is a heap and RSS figure of one component.
type Memory struct {
	Heap float64 `json:"heapInuse"`
	RSS  float64 `json:"rss"`
}

// Result is one variant's run of the scenario.
type Result struct {
	Variant       string            `json:"variant"`
	Pods          int               `json:"pods"`
	Nodes         int               `json:"nodes"`
	Namespaces    int               `json:"namespaces"`
	Phases        []Phase           `json:"phases"`
	Steady        map[string]Memory `json:"steady"`    // medians over the idle window after create
	SteadyEnd     map[string]Memory `json:"steadyEnd"` // medians over the idle window at the end
	Peak          map[string]Memory `json:"peak"`
	ScheduledPS   float64           `json:"podsScheduledPerSecond"`
	ScheduleSecs  float64           `json:"secondsToScheduleAll"`
	EndStateLines int               `json:"endStateLines"`
}
