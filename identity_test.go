package cache

import (
	"testing"

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
