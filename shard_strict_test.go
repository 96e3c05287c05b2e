package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// The strict mode of ShardedListerWatcher (client-go v0.38's
// NewShardedListWatch in the overlay) on lists whose ShardInfo the tests
// choose, whatever the build's apimachinery. The overlay's E2E test runs
// the same contract on v0.38's own types (testdata/e2e).

// strictListMeta is the ListMeta of a strictList, with the GetShardInfo
// accessor apimachinery v0.36 gives ListMeta; info nil means the server
// did not filter.
type strictListMeta struct {
	metav1.ListMeta
	info *strictShardInfo
}

type strictShardInfo struct{ Selector string }

func (m *strictListMeta) GetShardInfo() *strictShardInfo { return m.info }

// strictList is a list of pods with a strictListMeta.
type strictList struct {
	metav1.TypeMeta
	meta  strictListMeta
	Items []v1.Pod
}

func (l *strictList) GetListMeta() metav1.ListInterface { return &l.meta }

func (l *strictList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = slices.Clone(l.Items)
	return &c
}

// plainList is a list whose ListMeta has no GetShardInfo at all.
type plainList struct {
	strictList
}

type plainListMeta struct{ metav1.ListInterface }

func (l *plainList) GetListMeta() metav1.ListInterface { return plainListMeta{&l.meta.ListMeta} }

func (l *plainList) DeepCopyObject() runtime.Object {
	return &plainList{*l.strictList.DeepCopyObject().(*strictList)}
}

// strictTestSelector is the selector of the tests: pods whose name starts
// with "in"; it cannot match a pod named "bad".
const strictTestSelector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"

func strictTestMatch(obj runtime.Object) (bool, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Name == "bad" {
		return false, errors.New("cannot hash this object")
	}
	return strings.HasPrefix(pod.Name, "in"), nil
}

func strictPods(names ...string) []v1.Pod {
	var pods []v1.Pod
	for _, n := range names {
		pods = append(pods, *testPod("ns", n, "1"))
	}
	return pods
}

func podNames(t *testing.T, obj runtime.Object) []string {
	t.Helper()
	var names []string
	for _, p := range obj.(*strictList).Items {
		names = append(names, p.Name)
	}
	return names
}

func TestStrictShardedListerWatcher_ListKeepsClientGosContract(t *testing.T) {
	remaining := int64(7)
	tests := map[string]struct {
		list      runtime.Object
		wantNames []string
		wantErr   string
		wantLog   bool
	}{
		"the server applied the selector: the list as it came": {
			list:      &strictList{meta: strictListMeta{info: &strictShardInfo{Selector: strictTestSelector}}, Items: strictPods("in1", "out1")},
			wantNames: []string{"in1", "out1"},
		},
		"the server applied another selector": {
			list:    &strictList{meta: strictListMeta{info: &strictShardInfo{Selector: "other"}}, Items: strictPods("in1")},
			wantErr: `server applied shard selector "other", expected "` + strictTestSelector + `"`,
		},
		"no shardInfo: filtered here, logged once": {
			list:      &strictList{meta: strictListMeta{ListMeta: metav1.ListMeta{RemainingItemCount: &remaining}}, Items: strictPods("in1", "out1", "in2")},
			wantNames: []string{"in1", "in2"},
			wantLog:   true,
		},
		"an item the selector cannot match fails the list": {
			list:    &strictList{Items: strictPods("in1", "bad")},
			wantErr: "cannot hash this object",
			wantLog: true,
		},
		"a list type without shardInfo": {
			list:    &plainList{strictList{Items: strictPods("in1")}},
			wantErr: "object *cache.plainList does not implement metav1.ShardedListInterface",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var lines []string
			logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 2})
			ctx := klog.NewContext(context.Background(), logger)
			lw := &ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return tc.list.DeepCopyObject(), nil
			}}
			s := newStrictShardedListerWatcher(lw, strictTestSelector, strictTestMatch)
			for range 2 {
				got, err := s.ListWithContext(ctx, metav1.ListOptions{})
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("error %v, want %q", err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantNames, podNames(t, got)); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
				if tc.wantLog && got.(*strictList).meta.RemainingItemCount != nil {
					t.Error("the remaining item count of a list filtered here was kept")
				}
			}
			var fallbacks int
			for _, line := range lines {
				if strings.Contains(line, "Server did not apply shard selector; falling back to client-side filtering") &&
					strings.Contains(line, `"selector"="`+strictTestSelector+`"`) {
					fallbacks++
				}
			}
			if want := map[bool]int{true: 1}[tc.wantLog]; fallbacks != want || len(lines) != fallbacks {
				t.Errorf("fallback logged %d times (want %d); all lines: %q", fallbacks, want, lines)
			}
		})
	}
}

func TestStrictShardedListerWatcher_WatchDropsWhatTheSelectorDoesNotMatch(t *testing.T) {
	fw := watch.NewFake()
	lw := &ListWatch{WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	s := newStrictShardedListerWatcher(lw, strictTestSelector, strictTestMatch)
	w, err := s.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go func() {
		fw.Add(testPod("ns", "out1", "1"))
		fw.Add(testPod("ns", "bad", "2")) // reported to HandleError, dropped
		fw.Add(testPod("ns", "in1", "3"))
		fw.Action(watch.Bookmark, testPod("", "", "4"))
		fw.Error(&metav1.Status{Message: "gone"})
	}()
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-w.ResultChan():
			got = append(got, string(ev.Type))
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatalf("events so far: %v", got)
		}
	}
	if diff := cmp.Diff([]string{"ADDED", "BOOKMARK", "ERROR"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSharedIndexInformer_ListerWatcherWrapperAppliesAtRunAndNotAfter(t *testing.T) {
	t.Cleanup(setFeatureForTesting(featureWatchListClient, false))
	lw := &ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &strictList{Items: strictPods("in1", "out1")}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	informer := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{}).(*sharedIndexInformer)
	if err := informer.setListerWatcherWrapper(func(lw ListerWatcher) ListerWatcher {
		return newStrictShardedListerWatcher(lw, strictTestSelector, strictTestMatch)
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.RunWithContext(ctx)
	if !WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("not synced")
	}
	if diff := cmp.Diff([]string{"ns/in1"}, informer.GetStore().ListKeys()); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	err := informer.setListerWatcherWrapper(nil)
	if err == nil || err.Error() != "informer has already started" {
		t.Errorf("after the start: %v", err)
	}
}
