package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sample is one scrape of a component's /metrics.
type sample struct {
	At      time.Time `json:"at"`
	HeapIn  float64   `json:"heapInuse"`
	RSS     float64   `json:"rss"`
	CPU     float64   `json:"cpuSeconds"`
	Sched   float64   `json:"scheduled,omitempty"` // scheduler only: pods scheduled so far
	Failure string    `json:"failure,omitempty"`
}

// component is a process of the control plane whose /metrics is scraped.
type component struct {
	name string
	url  string

	mu      sync.Mutex
	samples []sample
}

// metricsToken is the kubeconfig's bearer token, sent with each scrape (the
// components authorize /metrics through the API server).
var metricsToken string

var metricsClient = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // a loopback self-signed serving certificate
}

// scrape reads the component's metrics once.
func (c *component) scrape(ctx context.Context) (sample, error) {
	s := sample{At: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return s, err
	}
	req.Header.Set("Accept", "text/plain")
	if metricsToken != "" {
		req.Header.Set("Authorization", "Bearer "+metricsToken)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s: %s", c.url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return s, fmt.Errorf("parsing %s: %w", c.url, err)
	}
	var missing []string
	get := func(name string, match func(*dto.Metric) bool) float64 {
		f, ok := fams[name]
		if !ok {
			missing = append(missing, name)
			return 0
		}
		total := 0.0
		for _, m := range f.GetMetric() {
			if match != nil && !match(m) {
				continue
			}
			switch {
			case m.GetGauge() != nil:
				total += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				total += m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				total += m.GetUntyped().GetValue()
			}
		}
		return total
	}
	s.HeapIn = get("go_memstats_heap_inuse_bytes", nil)
	s.RSS = get("process_resident_memory_bytes", nil)
	s.CPU = get("process_cpu_seconds_total", nil)
	if _, ok := fams["scheduler_schedule_attempts_total"]; ok {
		s.Sched = get("scheduler_schedule_attempts_total", func(m *dto.Metric) bool {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					return l.GetValue() == "scheduled"
				}
			}
			return false
		})
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("%s lacks %v", c.url, missing)
	}
	return s, nil
}

// heapProfile asks the component for its heap profile with gc=1, which
// runs a garbage collection first, and writes the profile to path. The
// components serve /debug/pprof on their secure port (--profiling, on by
// default).
func (c *component) heapProfile(ctx context.Context, path string) error {
	return c.profile(ctx, "heap?gc=1", metricsClient, path)
}

// cpuProfileSeconds is how long a phase's CPU profile lasts: within the
// components' 60-second limit on a request that is not a watch.
const cpuProfileSeconds = 45

// cpuProfileClient waits for a CPU profile to be taken.
var cpuProfileClient = &http.Client{
	Timeout:   (cpuProfileSeconds + 30) * time.Second,
	Transport: metricsClient.Transport,
}

// cpuProfile asks the component for a CPU profile of the next
// cpuProfileSeconds and writes it to path.
func (c *component) cpuProfile(ctx context.Context, path string) error {
	return c.profile(ctx, fmt.Sprintf("profile?seconds=%d", cpuProfileSeconds), cpuProfileClient, path)
}

// profile GETs the component's /debug/pprof/ of query and writes the
// profile to path.
func (c *component) profile(ctx context.Context, query string, client *http.Client, path string) error {
	url := strings.TrimSuffix(c.url, "/metrics") + "/debug/pprof/" + query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if metricsToken != "" {
		req.Header.Set("Authorization", "Bearer "+metricsToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// record scrapes once and keeps the sample.
func (c *component) record(ctx context.Context) (sample, error) {
	s, err := c.scrape(ctx)
	if err != nil {
		return s, err
	}
	c.mu.Lock()
	c.samples = append(c.samples, s)
	c.mu.Unlock()
	return s, nil
}

// poll records a sample every interval until ctx ends.
func (c *component) poll(ctx context.Context, interval time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := c.record(ctx); err != nil && ctx.Err() == nil {
				logf("scrape %s: %v", c.name, err)
			}
		}
	}
}

// between returns the samples taken in [from, to].
func (c *component) between(from, to time.Time) []sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []sample
	for _, s := range c.samples {
		if !s.At.Before(from) && !s.At.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// peak returns the largest heap and RSS seen so far.
func (c *component) peak() (heap, rss float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.samples {
		heap = max(heap, s.HeapIn)
		rss = max(rss, s.RSS)
	}
	return heap, rss
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
