package framework_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	cache "github.com/kcache/cache"
	framework "github.com/kcache/cache/testing"
)

// A reflector made without a name is named after the first caller outside
// the cache package, as client-go's is. This package lives in a folder
// below the cache package's sources, so its own frames must count as
// callers.
func TestReflectorFromBelowTheLibraryIsNamedAfterItsCaller(t *testing.T) {
	src := framework.NewFakeControllerSource()
	defer src.Shutdown()
	r := cache.NewReflector(src, &v1.Pod{}, cache.NewStore(cache.MetaNamespaceKeyFunc), 0)
	if name := r.Name(); !strings.Contains(name, "reflector_name_test.go:") {
		t.Errorf("reflector name %q, want this file and line", name)
	}
}
