// Package shardfilter is the client side of client-go v0.38's sharded
// ListerWatcher contract (NewShardedListWatch): sending a shard selector
// with a request, checking that a list response says the server applied
// it, filtering on the client when it does not, and matching watch events.
//
// Two callers keep that contract and share this code: the root package's
// ShardedListerWatcher in strict mode (the overlay of v0.38) and the
// clientgo bridge's stand-in for an informer's ListerWatcher after
// SetShardSelector. Both are compiled against apimachinery releases that
// predate the feature's API fields (ListOptions.ShardSelector,
// ListMeta.ShardInfo), so this package reaches them by name through
// reflection; without them nothing is sent and no list says it was
// filtered. The caller gives the selector as its text and its matcher,
// since the selector types differ (kcache's ShardSelector, apimachinery
// v0.38's sharding.Selector).
package shardfilter

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// Matcher reports whether an object belongs to the shard; an error means
// the object cannot be judged.
type Matcher func(obj runtime.Object) (bool, error)

// Shard is a selector in force: its canonical text (what is sent and what
// the server echoes), its matcher, and where the client-side fallback is
// logged once. It is a small value, made per call if need be; its methods
// are safe for concurrent use.
type Shard struct {
	// Text is the selector's canonical form.
	Text string
	// Matches judges objects on the client.
	Matches Matcher
	// Fallback logs the first client-side filtering; it must not be nil.
	// Share one among the Shards of one ListerWatcher, for one line per
	// ListerWatcher.
	Fallback *Fallback
}

// Fallback logs, once, that the server did not filter and the client does.
// The zero value is ready to use; it must not be copied once used.
type Fallback struct {
	// once guards the one log line.
	once sync.Once
}

// Log logs the fallback for selector at V(2), the first time only.
func (f *Fallback) Log(ctx context.Context, selector string) {
	f.once.Do(func() {
		klog.FromContext(ctx).V(2).Info("Server did not apply shard selector; falling back to client-side filtering", "selector", selector)
	})
}

// listOptionsShardSelector is the index of ListOptions.ShardSelector, or
// nil when this build's apimachinery has no such string field.
var listOptionsShardSelector = func() []int {
	f, ok := reflect.TypeFor[metav1.ListOptions]().FieldByName("ShardSelector")
	if !ok || f.Type.Kind() != reflect.String {
		return nil
	}
	return f.Index
}()

// Ask puts the selector into options.ShardSelector. A different selector
// the caller already set there is an error ("conflicting shard selector").
// sent is false, with no error, when this build's apimachinery has no such
// field, so nothing can be sent.
func (s Shard) Ask(options *metav1.ListOptions) (sent bool, err error) {
	if listOptionsShardSelector == nil {
		return false, nil
	}
	field := reflect.ValueOf(options).Elem().FieldByIndex(listOptionsShardSelector)
	if got := field.String(); got != "" && got != s.Text {
		return false, fmt.Errorf("conflicting shard selector %q, expected %q", got, s.Text)
	}
	field.SetString(s.Text)
	return true, nil
}

// ShardInfo reads x's GetShardInfo, the accessor apimachinery v0.36 gives
// ListMeta: applied is the Selector of the ShardInfo it returns and echoed
// whether it returned one; readable is false when x has no such accessor.
func ShardInfo(x any) (applied string, echoed, readable bool) {
	get := reflect.ValueOf(x).MethodByName("GetShardInfo")
	if !get.IsValid() || get.Type().NumIn() != 0 || get.Type().NumOut() != 1 {
		return "", false, false
	}
	info := get.Call(nil)[0]
	if info.Kind() != reflect.Pointer || info.IsNil() || info.Elem().Kind() != reflect.Struct {
		return "", false, true
	}
	sel := info.Elem().FieldByName("Selector")
	if sel.Kind() != reflect.String {
		return "", false, true
	}
	return sel.String(), true, true
}

// FilterList checks a list response against the shard, in place. A list
// whose ShardInfo echoes the selector is kept as it is (serverFiltered);
// one that echoes another is an error, as is a list type without
// ShardInfo. Otherwise the items outside the shard are removed with
// Matches (whose error fails the list), the remaining item count is
// cleared, and the fallback is logged once.
func (s Shard) FilterList(ctx context.Context, list runtime.Object) (serverFiltered bool, err error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return false, err
	}
	applied, echoed, readable := ShardInfo(lm)
	switch {
	case !readable:
		return false, fmt.Errorf("object %T does not implement metav1.ShardedListInterface", list)
	case echoed && applied != s.Text:
		return false, fmt.Errorf("server applied shard selector %q, expected %q", applied, s.Text)
	case echoed:
		return true, nil
	}
	s.Fallback.Log(ctx, s.Text)
	items, err := meta.ExtractList(list)
	if err != nil {
		return false, err
	}
	kept := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		in, err := s.Matches(item)
		if err != nil {
			return false, err
		}
		if in {
			kept = append(kept, item)
		}
	}
	lm.SetRemainingItemCount(nil)
	return false, meta.SetList(list, kept)
}

// Admit reports whether a watch event is passed on: bookmarks and errors
// always are; any other event only for an object in the shard. An object
// that cannot be judged is dropped and reported to utilruntime's error
// handlers; the first one outside the shard logs the fallback once.
func (s Shard) Admit(ctx context.Context, ev watch.Event) bool {
	if ev.Type == watch.Bookmark || ev.Type == watch.Error {
		return true
	}
	in, err := s.Matches(ev.Object)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to match watch event against shard selector")
		return false
	}
	if !in {
		s.Fallback.Log(ctx, s.Text)
	}
	return in
}
