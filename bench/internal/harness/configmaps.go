package harness

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	framework "github.com/kcache/cache/testing"
)

// ConfigMapLayout shapes the small objects of the scale simulation:
// ConfigMaps in groups, as a Helm release or an operator leaves them,
// spread over namespaces. The members of a group share their labels,
// annotations, creation time, managedFields entry and the group's
// rendered configuration; each has its own name, UID, resource version
// and instance data.
type ConfigMapLayout struct {
	Namespaces int // namespaces the groups are spread over
	GroupSize  int // ConfigMaps per group
}

// SimLayout is the layout the scale simulation serves.
var SimLayout = ConfigMapLayout{Namespaces: 500, GroupSize: 40}

// simEpoch is the creation time of group 0; group g was created g
// seconds later.
var simEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// ConfigMap builds ConfigMap i at resource version rv.
func (l ConfigMapLayout) ConfigMap(i int, rv uint64) *v1.ConfigMap {
	g := i / l.GroupSize
	app := "app-" + strconv.Itoa(g)
	ns := "tenant-" + strconv.Itoa(g%l.Namespaces)
	created := metav1.NewTime(simEpoch.Add(time.Duration(g) * time.Second))
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:              app + "-config-" + strconv.Itoa(i%l.GroupSize),
			Namespace:         ns,
			UID:               simUID(i),
			ResourceVersion:   strconv.FormatUint(rv, 10),
			CreationTimestamp: created,
			Labels: map[string]string{
				"app.kubernetes.io/name":       app,
				"app.kubernetes.io/instance":   "release-" + strconv.Itoa(g),
				"app.kubernetes.io/component":  simComponents[g%len(simComponents)],
				"app.kubernetes.io/part-of":    "team-" + strconv.Itoa(g%37),
				"app.kubernetes.io/managed-by": "Helm",
			},
			Annotations: map[string]string{
				"meta.helm.sh/release-name":      "release-" + strconv.Itoa(g),
				"meta.helm.sh/release-namespace": ns,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager:    "helm",
				Operation:  metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1",
				Time:       &created,
				FieldsType: "FieldsV1",
				FieldsV1:   metav1.NewFieldsV1(simFieldsV1),
			}},
		},
		Data: map[string]string{
			"config.yaml":   groupConfig(g, ns),
			"instance.json": fmt.Sprintf(`{"id":%d,"shard":%d,"peer":"%s-config-%d.%s.svc"}`, i, i%l.GroupSize, app, (i+1)%l.GroupSize, ns),
			"log-level":     simLogLevels[g%len(simLogLevels)],
		},
	}
}

var (
	simComponents = []string{"api", "worker", "frontend", "cache", "scheduler"}
	simLogLevels  = []string{"info", "info", "warn", "debug"}
	// simFieldsV1 is what the helm manager owns in every ConfigMap.
	simFieldsV1 = `{"f:data":{".":{},"f:config.yaml":{},"f:instance.json":{},"f:log-level":{}},` +
		`"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},"f:meta.helm.sh/release-namespace":{}},` +
		`"f:labels":{".":{},"f:app.kubernetes.io/component":{},"f:app.kubernetes.io/instance":{},` +
		`"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{}}}}`
)

// groupConfig is group g's rendered configuration, equal for its members.
func groupConfig(g int, ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  port: %d\n", 8000+g%1000)
	fmt.Fprintf(&b, "database:\n  host: db-%d.%s.svc.cluster.local\n  pool: %d\n", g%97, ns, 5+g%20)
	fmt.Fprintf(&b, "features:\n  tracing: %t\n  metrics: true\n  rateLimit: %d\n", g%3 == 0, 100*(1+g%10))
	return b.String()
}

// simUID is ConfigMap i's UID, in the form of a random UUID.
func simUID(i int) types.UID {
	x := uint64(i)*0x9e3779b97f4a7c15 + 0x6a09e667f3bcc908
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(x>>32), uint16(x>>16), uint16(x)&0xfff, uint16(i)&0xfff, (uint64(i)*0x2545f491)&0xffffffffffff))
}

// NewConfigMapSource returns a simulated API server holding n ConfigMaps
// of layout l at resource versions 1 to n, each built afresh whenever it
// is listed or streamed (the source stores only a small form of each).
// It lists into a *v1.ConfigMapList and pages; with watchList false it
// refuses streaming lists, so that informers list and page instead. With
// onePage it answers every list in one response, whatever its limit, as
// kube-apiserver answers a list at resourceVersion "0" from its watch cache.
func NewConfigMapSource(n int, l ConfigMapLayout, watchList, onePage bool) *framework.FakeControllerSource {
	src := framework.NewFakeControllerSourceWithOptions(framework.FakeControllerSourceOptions{
		Paging:               !onePage,
		WatchCacheSize:       watchCacheSize,
		NewList:              func() runtime.Object { return &v1.ConfigMapList{} },
		RefuseStreamingLists: !watchList,
		HandOut:              func(stored runtime.Object) runtime.Object { return expandConfigMap(l, stored) },
	})
	for i := range n {
		// The source keys objects by namespace and name; the compact
		// form's are the full object's, so that lists keep their order.
		full := l.ConfigMap(i, 0)
		src.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: full.Namespace, Name: full.Name, UID: full.UID, Generation: int64(i),
		}})
	}
	return src
}

// expandConfigMap builds the ConfigMap a stored compact form stands for
// (its index in Generation), at the stored resource version; a bookmark
// (no name) becomes an empty ConfigMap with its resource version and
// annotations.
func expandConfigMap(l ConfigMapLayout, stored runtime.Object) runtime.Object {
	m := stored.(*metav1.PartialObjectMetadata)
	if m.Name == "" {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: m.ResourceVersion, Annotations: m.Annotations}}
	}
	rv, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
	return l.ConfigMap(int(m.Generation), rv)
}
