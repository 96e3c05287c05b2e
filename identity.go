package cache

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// nameRegistry records the InformerNames currently reserved in the process,
// so that two informers never publish metrics under the same identity.
var nameRegistry = struct {
	// mu guards names.
	mu    sync.Mutex
	names map[string]*InformerName
}{names: map[string]*InformerName{}}

// InformerName is a process-unique name for a group of informers, used to
// label their metrics. Create it with NewInformerName and give it back with
// Release. A nil *InformerName is valid and reserves nothing.
type InformerName struct {
	name string
	// active is true from NewInformerName until Release.
	active atomic.Bool

	// mu guards resources.
	mu sync.Mutex
	// resources holds the reservation flag handed out for each resource.
	resources map[schema.GroupVersionResource]*atomic.Bool
}

// NewInformerName reserves name for this process. An empty name, or one that
// is reserved and not yet released, is an error.
func NewInformerName(name string) (*InformerName, error) {
	if name == "" {
		return nil, errors.New("informer name cannot be empty")
	}
	nameRegistry.mu.Lock()
	defer nameRegistry.mu.Unlock()
	if old, ok := nameRegistry.names[name]; ok && old.active.Load() {
		return nil, fmt.Errorf("informer name %q is already registered", name)
	}
	n := &InformerName{name: name, resources: map[schema.GroupVersionResource]*atomic.Bool{}}
	n.active.Store(true)
	nameRegistry.names[name] = n
	return n, nil
}

// Name returns the reserved name, or "" for a nil receiver.
func (n *InformerName) Name() string {
	if n == nil {
		return ""
	}
	return n.name
}

// WithResource returns the identity of one informer: this name and a
// resource. The first request for a resource is Reserved; a second request
// for the same resource is logged and returns an identity that is not
// Reserved, so its metrics are not published twice.
func (n *InformerName) WithResource(gvr schema.GroupVersionResource) InformerNameAndResource {
	if n == nil {
		return InformerNameAndResource{gvr: gvr}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	id := InformerNameAndResource{name: n.name, gvr: gvr, reserved: &atomic.Bool{}}
	if !n.active.Load() {
		return id
	}
	if _, taken := n.resources[gvr]; taken {
		klog.Background().Error(nil, "Duplicate informer registration - metrics will not be published",
			"informerName", n.name, "group", gvr.Group, "version", gvr.Version, "resource", gvr.Resource)
		return id
	}
	id.reserved.Store(true)
	n.resources[gvr] = id.reserved
	return id
}

// Release gives the name and every identity made from it back: they stop
// being Reserved and the name may be registered again.
func (n *InformerName) Release() {
	if n == nil {
		return
	}
	n.mu.Lock()
	for _, flag := range n.resources {
		flag.Store(false)
	}
	n.resources = map[schema.GroupVersionResource]*atomic.Bool{}
	n.active.Store(false)
	n.mu.Unlock()

	nameRegistry.mu.Lock()
	defer nameRegistry.mu.Unlock()
	if nameRegistry.names[n.name] == n {
		delete(nameRegistry.names, n.name)
	}
}

// InformerNameAndResource identifies one informer for its metrics. The zero
// value is valid and not Reserved.
type InformerNameAndResource struct {
	name     string
	gvr      schema.GroupVersionResource
	reserved *atomic.Bool
}

// Name returns the informer name part.
func (n InformerNameAndResource) Name() string { return n.name }

// GroupVersionResource returns the resource part.
func (n InformerNameAndResource) GroupVersionResource() schema.GroupVersionResource { return n.gvr }

// Reserved reports whether this identity is unique in the process and not
// released; only reserved identities publish metrics.
func (n InformerNameAndResource) Reserved() bool {
	return n.reserved != nil && n.reserved.Load()
}

// ResetInformerNamesForTesting releases every registered name. Tests only.
func ResetInformerNamesForTesting() {
	nameRegistry.mu.Lock()
	all := make([]*InformerName, 0, len(nameRegistry.names))
	for _, n := range nameRegistry.names {
		all = append(all, n)
	}
	nameRegistry.mu.Unlock()
	for _, n := range all {
		n.Release()
	}
}
