package main

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cache "github.com/kcache/cache"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

// eventPrinter is the first handler: it prints every change it is told
// about, at most limit lines a second; beyond that it counts the changes
// it did not print. It leaves out the initial list (the progress bar shows
// it) and updates that change nothing (a relist hands every object over
// again).
type eventPrinter struct {
	con   *console
	limit int
	now   func() time.Time

	// mu guards windowStart, shown and hidden.
	mu          sync.Mutex
	windowStart time.Time
	// shown counts the lines printed since windowStart.
	shown int
	// hidden counts the changes not printed since takeHidden last ran.
	hidden int
}

var _ cache.ResourceEventHandler = (*eventPrinter)(nil)

func newEventPrinter(con *console, limit int) *eventPrinter {
	return &eventPrinter{con: con, limit: limit, now: time.Now}
}

// OnAdd prints ADDED, except for the initial list.
func (p *eventPrinter) OnAdd(obj interface{}, isInInitialList bool) {
	if pod, ok := obj.(*v1.Pod); ok && !isInInitialList {
		p.print("ADDED", pod, "")
	}
}

// OnUpdate prints MODIFIED when the Pod's resource version moved.
func (p *eventPrinter) OnUpdate(oldObj, newObj interface{}) {
	oldPod, ok1 := oldObj.(*v1.Pod)
	newPod, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == newPod.ResourceVersion {
		return
	}
	note := ""
	if oldPod.Status.Phase != newPod.Status.Phase {
		note = "(was " + string(oldPod.Status.Phase) + ")"
	}
	p.print("MODIFIED", newPod, note)
}

// OnDelete prints DELETED with the Pod's last known phase. A Pod whose
// deletion the informer only inferred from a relist arrives wrapped in a
// DeletedFinalStateUnknown.
func (p *eventPrinter) OnDelete(obj interface{}) {
	note := ""
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, note = tomb.Obj, "(deleted while the watch was down; seen by relisting)"
	}
	if pod, ok := obj.(*v1.Pod); ok {
		p.print("DELETED", pod, note)
	}
}

func (p *eventPrinter) print(tag string, pod *v1.Pod, note string) {
	if !p.admit() {
		return
	}
	line := fmt.Sprintf("%-24s %-10s %s", pod.Namespace+"/"+pod.Name, pod.Status.Phase, note)
	p.con.Linef(tag, "%s", strings.TrimRight(line, " "))
}

// admit reports whether one more line may be printed this second.
func (p *eventPrinter) admit() bool {
	if p.limit <= 0 {
		return true
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.windowStart) >= time.Second {
		p.windowStart, p.shown = now, 0
	}
	if p.shown >= p.limit {
		p.hidden++
		return false
	}
	p.shown++
	return true
}

// takeHidden returns how many changes were not printed since the last call.
func (p *eventPrinter) takeHidden() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.hidden
	p.hidden = 0
	return n
}

// podStats is the second handler: it counts changes by kind and Pods by
// phase, for the status line and /metrics. delay, if set, makes it slow on
// purpose, to show a handler's backlog growing and draining.
type podStats struct {
	delay time.Duration

	added, modified, unchanged, deleted prometheus.Counter
	// total counts every notification, for the events/s figure.
	total atomic.Int64

	// mu guards phaseOf and phases.
	mu      sync.Mutex
	phaseOf map[string]v1.PodPhase
	phases  map[v1.PodPhase]int
}

var _ cache.ResourceEventHandler = (*podStats)(nil)

func newPodStats(reg prometheus.Registerer, delay time.Duration) *podStats {
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "kcache", Subsystem: "demo", Name: "events_total",
		Help: "Notifications the podStats handler received, by kind (unchanged: an update that did not move the resource version, as after a relist).",
	}, []string{"kind"})
	s := &podStats{
		delay:     delay,
		added:     events.WithLabelValues("added"),
		modified:  events.WithLabelValues("modified"),
		unchanged: events.WithLabelValues("unchanged"),
		deleted:   events.WithLabelValues("deleted"),
		phaseOf:   map[string]v1.PodPhase{},
		phases:    map[v1.PodPhase]int{},
	}
	reg.MustRegister(events)
	for _, phase := range allPhases {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "kcache", Subsystem: "demo", Name: "pods",
			Help:        "Pods in the cache by phase, as the podStats handler counts them.",
			ConstLabels: prometheus.Labels{"phase": string(phase)},
		}, func() float64 { return float64(s.phaseCount(phase)) }))
	}
	return s
}

var allPhases = []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown}

// OnAdd counts an added Pod.
func (s *podStats) OnAdd(obj interface{}, _ bool) {
	s.pause()
	if pod, ok := obj.(*v1.Pod); ok {
		s.added.Inc()
		s.setPhase(pod.Namespace+"/"+pod.Name, pod.Status.Phase)
	}
}

// OnUpdate counts an update, and the Pod's phase change if any.
func (s *podStats) OnUpdate(oldObj, newObj interface{}) {
	s.pause()
	oldPod, ok1 := oldObj.(*v1.Pod)
	newPod, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		s.unchanged.Inc()
		return
	}
	s.modified.Inc()
	s.setPhase(newPod.Namespace+"/"+newPod.Name, newPod.Status.Phase)
}

// OnDelete counts a deleted Pod.
func (s *podStats) OnDelete(obj interface{}) {
	s.pause()
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		s.deleted.Inc()
		s.setPhase(pod.Namespace+"/"+pod.Name, "")
	}
}

func (s *podStats) pause() {
	s.total.Add(1)
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
}

// setPhase records key's phase; "" forgets key.
func (s *podStats) setPhase(key string, phase v1.PodPhase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.phaseOf[key]; ok {
		s.phases[old]--
	}
	if phase == "" {
		delete(s.phaseOf, key)
		return
	}
	s.phaseOf[key] = phase
	s.phases[phase]++
}

func (s *podStats) phaseCount(phase v1.PodPhase) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phases[phase]
}
