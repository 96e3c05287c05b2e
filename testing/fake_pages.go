package framework

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// continueToken is what a continue token of this fake carries, encoded as
// base64 JSON so that callers treat it as opaque: the resource version of
// the list it continues and the key of the last object already served.
type continueToken struct {
	RV        int       `json:"rv"`
	Namespace string    `json:"ns,omitempty"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
}

func encodeContinue(rv int, last nnu) string {
	data, err := json.Marshal(continueToken{RV: rv, Namespace: last.namespace, Name: last.name, UID: last.uid})
	if err != nil {
		// A struct of strings and an int always marshals.
		panic(fmt.Sprintf("framework: encoding a continue token: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(token string) (continueToken, error) {
	var tok continueToken
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(data, &tok)
	}
	if err != nil || tok.RV < 0 {
		return continueToken{}, apierrors.NewBadRequest(fmt.Sprintf("continue token %q is not one this source issued", token))
	}
	return tok, nil
}

// pageLocked fills list with the page options ask for, of the objects sel
// selects; see FakeControllerSourceOptions.Paging. Its API errors are returned
// unwrapped, as a client would return them. Caller holds lock, in either
// mode.
func (f *FakeControllerSource) pageLocked(list runtime.Object, options metav1.ListOptions, sel selector) (runtime.Object, error) {
	rv, after, err := f.pageStartLocked(options)
	if err != nil {
		return nil, err
	}
	state := f.stateAtLocked(rv)
	keys := f.orderedKeysLocked(rv, state)
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(keys, *after, compareKeys)
		if start < len(keys) && keys[start] == *after {
			start++
		}
	}
	objs, last, next := pageFrom(state, keys, start, options.Limit, sel)
	if err := meta.SetList(list, handOutAll(f, objs)); err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	listMeta.SetResourceVersion(strconv.Itoa(rv))
	remaining := countSelected(state, keys[next:], sel)
	if remaining == 0 {
		// The list is complete: its order is not kept beyond it.
		f.order.forget(rv)
		return list, nil
	}
	listMeta.SetContinue(encodeContinue(rv, last))
	count := int64(remaining)
	listMeta.SetRemainingItemCount(&count)
	return list, nil
}

// pageFrom returns the stored objects of at most limit keys (every one
// when limit is not positive) that sel selects, from keys[start] on, the
// key of the last of them, and the index of the first key it did not look
// at.
func pageFrom(state map[nnu]runtime.Object, keys []nnu, start int, limit int64, sel selector) ([]runtime.Object, nnu, int) {
	size := len(keys) - start
	if limit > 0 && int64(size) > limit {
		size = int(limit)
	}
	objs := make([]runtime.Object, 0, size)
	var last nnu
	next := start
	for next < len(keys) && (limit <= 0 || int64(len(objs)) < limit) {
		obj := state[keys[next]]
		next++
		if sel.matches(obj) {
			objs, last = append(objs, obj), keys[next-1]
		}
	}
	return objs, last, next
}

// countSelected returns how many of keys' objects sel selects.
func countSelected(state map[nnu]runtime.Object, keys []nnu, sel selector) int {
	if sel.selectsAll() {
		return len(keys)
	}
	n := 0
	for _, k := range keys {
		if sel.matches(state[k]) {
			n++
		}
	}
	return n
}

// handOutAll replaces each stored object of objs by what a list gives
// out for it.
func handOutAll(f *FakeControllerSource, objs []runtime.Object) []runtime.Object {
	for i, obj := range objs {
		objs[i] = f.handOut(obj)
	}
	return objs
}

// orderedKeysLocked returns every key of state, the objects at resource
// version rv, in key order. The current objects' order is kept in
// f.order between the pages of a list, so that a long paged list sorts
// its keys once rather than once per page. Caller holds lock, in either
// mode.
func (f *FakeControllerSource) orderedKeysLocked(rv int, state map[nnu]runtime.Object) []nnu {
	if rv != f.lastRV {
		return sortedKeys(state, selector{})
	}
	return f.order.keys(rv, state)
}

// keyOrder keeps the sorted keys of the objects at one resource version
// while a paged list of them is being served. Every change takes a new
// resource version, so keys sorted at the current one are the current
// keys; the length check also catches a caller who wrote Items directly.
type keyOrder struct {
	mu     sync.Mutex // guards rv and sorted
	rv     int        // the resource version sorted was taken at
	sorted []nnu      // nil when no order is kept; never modified once set
}

// keys returns the keys of state, the objects at rv, in key order.
func (o *keyOrder) keys(rv int, state map[nnu]runtime.Object) []nnu {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sorted == nil || o.rv != rv || len(o.sorted) != len(state) {
		o.rv, o.sorted = rv, sortedKeys(state, selector{})
	}
	return o.sorted
}

// forget drops the order kept at rv, if that is the one kept, so that a
// source holds no copy of its keys once a list is done.
func (o *keyOrder) forget(rv int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rv == rv {
		o.sorted = nil
	}
}

// pageStartLocked returns the resource version a page shows and, for a
// continued list, the key after which it starts. Caller holds lock, in
// either mode.
func (f *FakeControllerSource) pageStartLocked(options metav1.ListOptions) (int, *nnu, error) {
	if options.Continue != "" {
		tok, err := decodeContinue(options.Continue)
		if err != nil {
			return 0, nil, err
		}
		if tok.RV > f.lastRV {
			return 0, nil, apierrors.NewBadRequest(fmt.Sprintf("continue token at resource version %d is newer than the source's %d", tok.RV, f.lastRV))
		}
		if tok.RV < f.oldestLocked() {
			return 0, nil, apierrors.NewResourceExpired(fmt.Sprintf(
				"continue token too old: the list's resource version %d is no longer retained (oldest kept: %d); start a new list without it",
				tok.RV, f.oldestLocked()))
		}
		return tok.RV, &nnu{namespace: tok.Namespace, name: tok.Name, uid: tok.UID}, nil
	}
	if options.ResourceVersion == "" || options.ResourceVersion == "0" {
		return f.lastRV, nil, nil
	}
	rv, err := strconv.Atoi(options.ResourceVersion)
	if err != nil || rv < 0 {
		return 0, nil, apierrors.NewBadRequest(fmt.Sprintf("resource version %q is not a non-negative number", options.ResourceVersion))
	}
	if rv > f.lastRV {
		return 0, nil, tooLargeResourceVersion(rv, f.lastRV)
	}
	if options.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		return f.lastRV, nil, nil
	}
	if rv < f.oldestLocked() {
		return 0, nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (oldest kept: %d)", rv, f.oldestLocked()))
	}
	return rv, nil, nil
}

// stateAtLocked returns the stored objects as they were at resource
// version rv, which must be retained (not older than oldestLocked): the
// current ones with the changes after rv undone. The result may be
// f.Items itself; callers must not modify it. Caller holds lock, in either
// mode.
func (f *FakeControllerSource) stateAtLocked(rv int) map[nnu]runtime.Object {
	undo := f.lastRV - rv
	if undo == 0 {
		return f.Items
	}
	state := maps.Clone(f.Items)
	for i := len(f.changes) - 1; i >= len(f.changes)-undo; i-- {
		c := f.changes[i]
		accessor, err := meta.Accessor(c.event.Object)
		if err != nil {
			// record only keeps objects with metadata.
			continue
		}
		key := nnu{namespace: accessor.GetNamespace(), name: accessor.GetName(), uid: accessor.GetUID()}
		if c.prev == nil {
			delete(state, key)
		} else {
			state[key] = c.prev
		}
	}
	return state
}
