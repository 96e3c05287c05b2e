package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Rows of docs/differences.md's table that used to differ from
// client-go v0.37.2 and now behave as client-go does by default.

// client-go accepts a nil handler (or a nil pointer) and only fails when it
// delivers the first notification to it, in the listener's goroutine, where
// the panic goes through utilruntime.HandleCrash*.
func TestFidelity_NilHandlersAreAcceptedAndPanicOnDelivery(t *testing.T) {
	var nilRecorder *infRecorder
	var nilTypedFuncs *TypedResourceEventHandlerFuncs[*v1.Pod]
	adders := map[string]func(SharedIndexInformer) (ResourceEventHandlerRegistration, error){
		"AddEventHandler(nil)": func(inf SharedIndexInformer) (ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandler(nil)
		},
		"AddEventHandler(nil pointer)": func(inf SharedIndexInformer) (ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandler(nilRecorder)
		},
		"AddEventHandlerWithOptions(nil)": func(inf SharedIndexInformer) (ResourceEventHandlerRegistration, error) {
			return inf.AddEventHandlerWithOptions(nil, HandlerOptions{})
		},
		"AddTypedEventHandler(nil)": func(inf SharedIndexInformer) (ResourceEventHandlerRegistration, error) {
			return NewTypedSharedIndexInformer[*v1.Pod](inf).AddTypedEventHandler(nil)
		},
		"AddTypedEventHandler(nil pointer)": func(inf SharedIndexInformer) (ResourceEventHandlerRegistration, error) {
			return NewTypedSharedIndexInformer[*v1.Pod](inf).AddTypedEventHandler(nilTypedFuncs)
		},
	}
	for name, add := range adders {
		t.Run(name, func(t *testing.T) {
			panics := keepServing(t)
			inf := infNewPodInformer(infSource(t, 1))
			reg, err := add(inf)
			if err != nil || reg == nil {
				t.Fatalf("got %v, %v; want a registration and no error", reg, err)
			}
			stop := infRun(t, inf)
			defer stop()
			badWait(t, "the first delivery to panic", func() bool { return len(panics.all()) > 0 })
		})
	}
}

// NewInformerWithOptions without a Handler is built, and its process loop
// panics on the first change, after the store took it, as client-go's
// processDeltas does.
func TestFidelity_InformerWithoutHandlerPanicsInTheProcessLoop(t *testing.T) {
	panics := keepServing(t)
	store, ctrl := NewInformerWithOptions(InformerOptions{ListerWatcher: infSource(t, 1), ObjectType: &v1.Pod{}})
	stop := infRun(t, ctrl)
	defer stop()
	badWait(t, "the process loop to panic", func() bool { return len(panics.all()) > 0 })
	if keys := store.ListKeys(); len(keys) != 1 || keys[0] != "ns/p0" {
		t.Errorf("store keys = %v, want [ns/p0]", keys)
	}
}
