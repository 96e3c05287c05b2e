package cache

import (
	"sync"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// This file says who keeps a sharded ListerWatcher's results inside its
// shard, the server or the client, and reports it in logs and gauges.

// ShardMode says who keeps a ShardedListerWatcher's results inside its
// shard.
type ShardMode int32

const (
	// ShardModeUnknown: no list response has been seen yet (and no watch
	// event outside the shard), or the probe before a streaming list failed.
	ShardModeUnknown ShardMode = iota
	// ShardModeServer: the API server filters. The last list response
	// echoed the selector in ListMeta.ShardInfo, so objects outside the
	// shard are neither sent nor decoded.
	ShardModeServer
	// ShardModeClient: the API server ignored the selector (its
	// ShardedListAndWatch feature is off, or it predates the feature), or
	// the selector could not be sent (this build's apimachinery predates
	// v0.36's ListOptions.ShardSelector), so the ShardedListerWatcher drops
	// what lies outside the shard after decoding it.
	ShardModeClient
)

// String returns "unknown", "server" or "client".
func (m ShardMode) String() string {
	switch m {
	case ShardModeServer:
		return "server"
	case ShardModeClient:
		return "client"
	}
	return "unknown"
}

// ShardModeMetricsProvider is implemented by a MetricsProvider (see
// SetReflectorMetricsProvider) that also wants the shard mode of sharded
// reflectors. Each Reflector built on a ShardedListerWatcher asks it for
// one gauge, labelled with the reflector's name like the other reflector
// metrics, and keeps it at the ShardMode's numeric value: 0 unknown,
// 1 server, 2 client.
type ShardModeMetricsProvider interface {
	NewShardModeMetric(name string) GaugeMetric
}

// shardModeReporter is implemented by ShardedListerWatcher, for Reflectors
// to find it among their ListerWatchers.
type shardModeReporter interface {
	reportModeTo(name string, p MetricsProvider)
}

// shardModeState is the current ShardMode of a ShardedListerWatcher and
// the gauges that show it.
type shardModeState struct {
	// mode is the current ShardMode; it changes only under reportMu.
	mode atomic.Int32

	// reportMu serialises mode changes with their log line and gauge
	// updates, and guards gauges. The gauges' Set (user code) runs under
	// it; no other path of this package takes reportMu.
	reportMu sync.Mutex
	gauges   []GaugeMetric
}

func (st *shardModeState) get() ShardMode { return ShardMode(st.mode.Load()) }

// set records mode m, logging why (with the selector) and updating the
// gauges when it differs from the current one.
func (st *shardModeState) set(logger klog.Logger, m ShardMode, why, selector string) {
	if st.get() == m {
		return
	}
	st.reportMu.Lock()
	defer st.reportMu.Unlock()
	if ShardMode(st.mode.Swap(int32(m))) == m {
		return
	}
	if m == ShardModeServer {
		logger.V(1).Info("The API server filters by the shard selector", "selector", selector, "reason", why)
	} else {
		logger.V(1).Info("The API server ignores the shard selector; filtering on the client", "selector", selector, "reason", why)
	}
	for _, g := range st.gauges {
		g.Set(float64(m))
	}
}

// addGauge keeps g at the mode from now on.
func (st *shardModeState) addGauge(g GaugeMetric) {
	st.reportMu.Lock()
	defer st.reportMu.Unlock()
	st.gauges = append(st.gauges, g)
	g.Set(float64(st.get()))
}
