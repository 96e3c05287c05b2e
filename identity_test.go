package cache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestInformerName_ReservationLifecycle(t *testing.T) {
	defer ResetInformerNamesForTesting()
	if _, err := NewInformerName(""); err == nil {
		t.Error("empty name: want error")
	}
	n, err := NewInformerName("ctrl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewInformerName("ctrl"); err == nil {
		t.Error("second registration of a live name: want error")
	}
	if n.Name() != "ctrl" {
		t.Errorf("Name = %q", n.Name())
	}
	pods := n.WithResource(podsGVR)
	if !pods.Reserved() || pods.Name() != "ctrl" || pods.GroupVersionResource() != podsGVR {
		t.Errorf("first identity = %+v, reserved %v", pods, pods.Reserved())
	}
	if dup := n.WithResource(podsGVR); dup.Reserved() {
		t.Error("a second identity for the same resource must not be reserved")
	}
	cms := n.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	if !cms.Reserved() {
		t.Error("another resource must be reserved")
	}
	n.Release()
	if pods.Reserved() || cms.Reserved() {
		t.Error("Release must unreserve every identity")
	}
	if late := n.WithResource(podsGVR); late.Reserved() {
		t.Error("identity from a released name must not be reserved")
	}
	again, err := NewInformerName("ctrl")
	if err != nil {
		t.Fatalf("name not reusable after Release: %v", err)
	}
	ResetInformerNamesForTesting()
	if again.WithResource(podsGVR).Reserved() {
		t.Error("ResetInformerNamesForTesting must release every name")
	}
}

func TestInformerName_NilIsUsable(t *testing.T) {
	var n *InformerName
	if n.Name() != "" {
		t.Error("nil Name")
	}
	id := n.WithResource(podsGVR)
	if id.Reserved() || id.GroupVersionResource() != podsGVR {
		t.Errorf("nil WithResource = %+v", id)
	}
	n.Release()
	var zero InformerNameAndResource
	if zero.Reserved() {
		t.Error("zero identity is reserved")
	}
}

const kcachePackage = "github.com/kcache/cache"

// namedTestHandler is a handler type defined at package level.
type namedTestHandler struct{}

func (namedTestHandler) OnAdd(interface{}, bool)           {}
func (namedTestHandler) OnUpdate(interface{}, interface{}) {}
func (namedTestHandler) OnDelete(interface{})              {}

// namingController has methods used as handler functions.
type namingController struct{}

func (*namingController) addPod(interface{})                 {}
func (*namingController) updatePod(interface{}, interface{}) {}

// Package-level handler functions.
func onTestAdd(interface{})    {}
func onTestDelete(interface{}) {}

func genericOnAdd[T any](interface{}) {}

func TestNameForHandler_TellsWhereTheHandlerWasWritten(t *testing.T) {
	controller := &namingController{}
	closureScope := kcachePackage + ".TestNameForHandler_TellsWhereTheHandlerWasWritten"
	tests := map[string]struct {
		handler any
		want    string
	}{
		"nil": {
			handler: nil,
			want:    "<nil>",
		},
		"named struct": {
			handler: namedTestHandler{},
			want:    kcachePackage + ".namedTestHandler",
		},
		"pointer to named struct": {
			handler: &namedTestHandler{},
			want:    kcachePackage + ".namedTestHandler",
		},
		"nil pointer": {
			handler: (*namedTestHandler)(nil),
			want:    "*cache.namedTestHandler",
		},
		"funcs with closures of one function": {
			handler: ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}, DeleteFunc: func(interface{}) {}},
			want:    closureScope,
		},
		"pointer to funcs": {
			handler: &ResourceEventHandlerFuncs{UpdateFunc: func(_, _ interface{}) {}},
			want:    closureScope,
		},
		"nil pointer to funcs": {
			handler: (*ResourceEventHandlerFuncs)(nil),
			want:    "*cache.ResourceEventHandlerFuncs",
		},
		"funcs with methods of one type": {
			handler: ResourceEventHandlerFuncs{AddFunc: controller.addPod, UpdateFunc: controller.updatePod},
			want:    kcachePackage + ".(*namingController)",
		},
		"funcs from different scopes are joined": {
			handler: ResourceEventHandlerFuncs{AddFunc: controller.addPod, DeleteFunc: onTestDelete},
			want:    kcachePackage + ".(*namingController).addPod-fm+" + kcachePackage + ".onTestDelete",
		},
		"package-level funcs are listed, not reduced to the package": {
			handler: ResourceEventHandlerFuncs{AddFunc: onTestAdd, DeleteFunc: onTestDelete},
			want:    kcachePackage + ".onTestAdd+" + kcachePackage + ".onTestDelete",
		},
		"one package-level func": {
			handler: ResourceEventHandlerFuncs{AddFunc: onTestAdd},
			want:    kcachePackage + ".onTestAdd",
		},
		"generic package-level func": {
			handler: ResourceEventHandlerFuncs{AddFunc: genericOnAdd[int]},
			want:    kcachePackage + ".genericOnAdd[...]",
		},
		"funcs without functions fall back to the type": {
			handler: ResourceEventHandlerFuncs{},
			want:    kcachePackage + ".ResourceEventHandlerFuncs",
		},
		"detailed funcs": {
			handler: ResourceEventHandlerDetailedFuncs{AddFunc: func(interface{}, bool) {}},
			want:    closureScope,
		},
		"typed funcs": {
			handler: TypedResourceEventHandlerFuncs[*v1.Pod]{DeleteFunc: func(DeletedObject[*v1.Pod]) {}},
			want:    closureScope,
		},
		"typed detailed funcs": {
			handler: TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{AddFunc: func(*v1.Pod, bool) {}},
			want:    closureScope,
		},
		"filtering handler is named after what it wraps": {
			handler: FilteringResourceEventHandler{Handler: &namedTestHandler{}},
			want:    kcachePackage + ".namedTestHandler",
		},
		"filtering handler without handler": {
			handler: FilteringResourceEventHandler{},
			want:    kcachePackage + ".FilteringResourceEventHandler",
		},
		"typed filtering handler is named after what it wraps": {
			handler: TypedFilteringResourceEventHandler[*v1.Pod]{Handler: &typedHandlerRecorder{}},
			want:    kcachePackage + ".typedHandlerRecorder",
		},
		"typed adapter over filtering over funcs": {
			handler: newTypedHandlerAdapter[*v1.Pod](TypedFilteringResourceEventHandler[*v1.Pod]{
				Handler: TypedResourceEventHandlerFuncs[*v1.Pod]{AddFunc: controller.addPodTyped},
			}),
			want: kcachePackage + ".(*namingController)",
		},
		"typed adapter without handler": {
			handler: newTypedHandlerAdapter[*v1.Pod](nil),
			want:    kcachePackage + ".typedHandlerAdapter[*k8s.io/api/core/v1.Pod]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, nameForHandler(tc.handler)); diff != "" {
				t.Errorf("name (-want +got):\n%s", diff)
			}
		})
	}
}

func (*namingController) addPodTyped(*v1.Pod) {}

type selfWrappingHandler struct {
	namedTestHandler
	self *selfWrappingHandler
}

func (h *selfWrappingHandler) wrappedHandler() any { return h.self }

func TestNameForHandler_StopsOnWrapperCycles(t *testing.T) {
	h := &selfWrappingHandler{}
	h.self = h
	if diff := cmp.Diff(kcachePackage+".selfWrappingHandler", nameForHandler(h)); diff != "" {
		t.Errorf("name (-want +got):\n%s", diff)
	}
}

func TestEnclosingScope(t *testing.T) {
	tests := map[string]string{
		"main.f":                          "main",
		"example.com/a/b.F.func1":         "example.com/a/b.F",
		"example.com/a/b.(*T).M-fm":       "example.com/a/b.(*T)",
		"example.com/a/b.G[...]":          "example.com/a/b",
		"example.com/a/b.G[...].func2":    "example.com/a/b.G[...]",
		"example.com/a.b/c.F":             "example.com/a.b/c",
		"example.com/nodots":              "example.com/nodots",
		"example.com/a/b.T[go.shape.int]": "example.com/a/b",
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want, enclosingScope(name)); diff != "" {
				t.Errorf("scope (-want +got):\n%s", diff)
			}
		})
	}
}
