package clientgo

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// NewSharedInformerFactory is informers.NewSharedInformerFactory with every
// informer on kcache.
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) informers.SharedInformerFactory {
	return NewFilteredSharedInformerFactory(client, defaultResync, "", nil)
}

// NewFilteredSharedInformerFactory is informers.NewFilteredSharedInformerFactory
// with every informer on kcache.
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweakListOptions internalinterfaces.TweakListOptionsFunc) informers.SharedInformerFactory {
	inner := informers.NewSharedInformerFactoryWithOptions(client, defaultResync,
		informers.WithNamespace(namespace), informers.WithTweakListOptions(tweakListOptions))
	return &factory{SharedInformerFactory: inner, settings: factorySettings{client: client, namespace: namespace, tweak: tweakListOptions}}
}

// NewSharedInformerFactoryWithOptions is
// informers.NewSharedInformerFactoryWithOptions, taking client-go's own
// options, with every informer on kcache. If the factory client-go builds
// cannot be read (see WrapFactory), the error is logged and that factory is
// returned as it is, on client-go.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...informers.SharedInformerOption) informers.SharedInformerFactory {
	inner := informers.NewSharedInformerFactoryWithOptions(client, defaultResync, options...)
	f, err := WrapFactory(inner)
	if err != nil {
		klog.Background().Error(err, "Informers of this factory run on client-go, not kcache")
		return inner
	}
	return f
}

// WrapFactory returns a factory that builds every informer of f on kcache
// and otherwise is f: informers are kept, started, waited for and shut down
// by f, with f's resync periods, transform and informer name. Informers
// already built through f itself stay as they are; build them through the
// result. f must be a factory made by the informers package; its settings
// (client, namespace, list-options tweak) are read from it, and an error
// says why that failed.
func WrapFactory(f informers.SharedInformerFactory) (informers.SharedInformerFactory, error) {
	if w, ok := f.(*factory); ok {
		return w, nil
	}
	settings, err := clientGoFactorySettings(f)
	if err != nil {
		return nil, fmt.Errorf("wrapping informer factory: %w", err)
	}
	return &factory{SharedInformerFactory: f, settings: settings}, nil
}

// factory is a generated client-go factory whose InformerFor builds kcache
// informers. Generated informers reach their factory only through
// InformerFor, so every group accessor is redefined to hand them this
// factory rather than the embedded one. The embedded factory keeps the
// informers: it is its map, lock, resync periods, transform, Start,
// WaitForCacheSync and Shutdown that apply.
type factory struct {
	informers.SharedInformerFactory
	settings factorySettings
}

var _ informers.SharedInformerFactory = (*factory)(nil)

// InformerFor returns the factory's informer for obj's type, building it
// with newFunc the first time, on kcache: newFunc's client-go informer is
// built, not started, and its ListerWatcher, object type and indexers make
// the kcache informer that is kept instead. If that informer cannot be
// read, the error is logged and client-go's informer is kept.
func (f *factory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) toolscache.SharedIndexInformer {
	return f.SharedInformerFactory.InformerFor(obj, func(client kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
		return onKcache(newFunc(client, resync), resync)
	})
}

// onKcache returns a kcache informer built like the client-go informer ci,
// or ci itself if it already is on kcache or cannot be read.
func onKcache(ci toolscache.SharedIndexInformer, resync time.Duration) toolscache.SharedIndexInformer {
	if ci == nil {
		return nil
	}
	if _, ok := Unwrap(ci); ok {
		return ci
	}
	lw, obj, err := clientGoInformerParts(ci)
	if err != nil {
		klog.Background().Error(err, "Informer runs on client-go, not kcache", "type", fmt.Sprintf("%T", ci))
		return ci
	}
	kc := NewSharedIndexInformer(lw, obj, resync, ci.GetIndexer().GetIndexers()).(*informer)
	if err := kc.shardLatch.carryFrom(ci); err != nil {
		klog.Background().Error(err, "Informer runs on client-go, not kcache", "type", fmt.Sprintf("%T", ci))
		return ci
	}
	return kc
}

// ForResource returns the generic informer for resource, on kcache. The
// generated lookup from resource to informer lives in client-go's factory
// and calls its own accessors, so it runs on a scratch client-go factory
// with the same settings: the informer it builds there is never started and
// only lends its ListerWatcher to the kcache one built through InformerFor.
func (f *factory) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	scratch := informers.NewSharedInformerFactoryWithOptions(f.settings.client, 0,
		informers.WithNamespace(f.settings.namespace), informers.WithTweakListOptions(f.settings.tweak))
	gi, err := scratch.ForResource(gvr)
	if err != nil {
		return nil, err
	}
	ci := gi.Informer()
	_, obj, err := clientGoInformerParts(ci)
	if err != nil {
		klog.Background().Error(err, "Informer runs on client-go, not kcache", "resource", gvr)
		return f.SharedInformerFactory.ForResource(gvr)
	}
	inf := f.InformerFor(obj, func(kubernetes.Interface, time.Duration) toolscache.SharedIndexInformer { return ci })
	return genericInformer{informer: inf, resource: gvr.GroupResource()}, nil
}

// genericInformer is an informer with a lister of untyped objects.
type genericInformer struct {
	informer toolscache.SharedIndexInformer
	resource schema.GroupResource
}

func (g genericInformer) Informer() toolscache.SharedIndexInformer { return g.informer }

func (g genericInformer) Lister() toolscache.GenericLister {
	return toolscache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// The group accessors: each hands the generated group this factory, so
// that its informers come back to InformerFor above.

func (f *factory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Apps() apps.Interface { return apps.New(f, f.settings.namespace, f.settings.tweak) }
func (f *factory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Batch() batch.Interface {
	return batch.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Certificates() certificates.Interface {
	return certificates.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Coordination() coordination.Interface {
	return coordination.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Core() core.Interface { return core.New(f, f.settings.namespace, f.settings.tweak) }
func (f *factory) Discovery() discovery.Interface {
	return discovery.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Events() events.Interface {
	return events.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Extensions() extensions.Interface {
	return extensions.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Networking() networking.Interface {
	return networking.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Node() node.Interface { return node.New(f, f.settings.namespace, f.settings.tweak) }
func (f *factory) Policy() policy.Interface {
	return policy.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Rbac() rbac.Interface { return rbac.New(f, f.settings.namespace, f.settings.tweak) }
func (f *factory) Resource() resource.Interface {
	return resource.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Scheduling() scheduling.Interface {
	return scheduling.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Storage() storage.Interface {
	return storage.New(f, f.settings.namespace, f.settings.tweak)
}
func (f *factory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.settings.namespace, f.settings.tweak)
}
