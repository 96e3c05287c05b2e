package cache

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// watchListConsistencyEnv names the environment variable that turns on the
// streaming-list consistency check. It is meant for CI, never production:
// each completed streaming list costs one extra LIST, and an inconsistency
// panics.
const watchListConsistencyEnv = "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR"

// watchListConsistencyRetryEvery is how often the check retries a LIST that
// failed.
const watchListConsistencyRetryEvery = time.Second

// watchListConsistencyCheck is on when the environment variable held a true
// boolean when the process started; tests switch it with
// setWatchListConsistencyCheckForTesting.
var watchListConsistencyCheck atomic.Bool

func init() {
	on, _ := strconv.ParseBool(os.Getenv(watchListConsistencyEnv))
	watchListConsistencyCheck.Store(on)
}

// setWatchListConsistencyCheckForTesting switches the check until the
// returned function is called.
func setWatchListConsistencyCheckForTesting(on bool) (restore func()) {
	prev := watchListConsistencyCheck.Swap(on)
	return func() { watchListConsistencyCheck.Store(prev) }
}

// checkWatchListConsistency compares the state a streaming list delivered at
// rv with a plain LIST of exactly rv, when the check is on. The LIST is
// retried every second until it succeeds or ctx is canceled. Listed objects
// go through transform, as streamed ones did. Both sides are compared by UID
// order; a difference is logged with a diff and then panics, on purpose:
// the switch exists to make CI fail loudly on a server bug.
func (r *Reflector) checkWatchListConsistency(ctx context.Context, rv string, transform TransformFunc, streamed []interface{}) {
	if !watchListConsistencyCheck.Load() {
		return
	}
	logger := klog.LoggerWithName(klog.FromContext(ctx), r.name)
	if rv == "" || rv == "0" {
		logger.V(4).Info("Skipping the streaming-list consistency check: no exact resource version to list at", "resourceVersion", rv)
		return
	}
	logger.Info("Warning: checking a streaming list against a plain LIST; this costs one more request to the server")
	list, ok := r.listExactly(ctx, logger, rv)
	if !ok {
		return
	}
	listed, err := listObjects(list, transform)
	if err != nil {
		logger.Error(err, "Skipping the streaming-list consistency check: the LIST could not be read")
		return
	}
	want, err := metaObjectsByUID(listed)
	if err != nil {
		logger.Error(err, "Skipping the streaming-list consistency check")
		return
	}
	got, err := metaObjectsByUID(streamed)
	if err != nil {
		logger.Error(err, "Skipping the streaming-list consistency check")
		return
	}
	if differences := compareByUID(want, got); len(differences) > 0 {
		logger.Info("Streaming list differs from the plain LIST", "resourceVersion", rv, "differences", differences)
		panic(fmt.Sprintf("data inconsistency detected for %s: streaming list and LIST at resource version %s differ", r.name, rv))
	}
}

// listExactly lists at exactly rv, retrying failures until ctx is canceled.
func (r *Reflector) listExactly(ctx context.Context, logger klog.Logger, rv string) (runtime.Object, bool) {
	opts := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	for {
		list, err := r.listerWatcher.ListWithContext(ctx, opts)
		if err == nil {
			return list, true
		}
		logger.Info("Consistency check LIST failed, retrying", "err", err)
		t := r.clock.NewTimer(watchListConsistencyRetryEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			logger.Error(ctx.Err(), "Skipping the streaming-list consistency check: stopped before the LIST succeeded")
			return nil, false
		case <-t.C():
		}
	}
}

// listObjects returns the items of list, each passed through transform when
// there is one.
func listObjects(list runtime.Object, transform TransformFunc) ([]interface{}, error) {
	var out []interface{}
	err := meta.EachListItemWithAlloc(list, func(item runtime.Object) error {
		var obj interface{} = item
		if transform != nil {
			var err error
			if obj, err = transform(item); err != nil {
				return fmt.Errorf("transforming a listed object: %w", err)
			}
		}
		out = append(out, obj)
		return nil
	})
	return out, err
}

// metaObjectsByUID returns the objects' metadata views sorted by UID.
func metaObjectsByUID(objs []interface{}) ([]metav1.Object, error) {
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil, fmt.Errorf("object %T has no metadata: %w", o, err)
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b metav1.Object) int { return strings.Compare(string(a.GetUID()), string(b.GetUID())) })
	return out, nil
}

// compareByUID lists, per UID, how the listed objects (want) and the
// streamed ones (got), both sorted by UID, differ: missing, unexpected, or
// different content.
func compareByUID(want, got []metav1.Object) []string {
	var out []string
	describe := func(o metav1.Object) string {
		return fmt.Sprintf("%s/%s (uid %s, resourceVersion %s)", o.GetNamespace(), o.GetName(), o.GetUID(), o.GetResourceVersion())
	}
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i].GetUID() < got[j].GetUID()):
			out = append(out, "not streamed: "+describe(want[i]))
			i++
		case i == len(want) || got[j].GetUID() < want[i].GetUID():
			out = append(out, "not listed: "+describe(got[j]))
			j++
		default:
			if !reflect.DeepEqual(want[i], got[j]) {
				out = append(out, "different: "+describe(want[i])+" vs "+describe(got[j]))
			}
			i++
			j++
		}
	}
	return out
}
