package framework

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

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
	keys := sortedKeys(state, sel)
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(keys, *after, compareKeys)
		if start < len(keys) && keys[start] == *after {
			start++
		}
	}
	end := len(keys)
	if options.Limit > 0 && int64(end-start) > options.Limit {
		end = start + int(options.Limit)
	}
	objs := make([]runtime.Object, 0, end-start)
	for _, k := range keys[start:end] {
		objs = append(objs, f.handOut(state[k]))
	}
	if err := meta.SetList(list, objs); err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	listMeta.SetResourceVersion(strconv.Itoa(rv))
	if end < len(keys) {
		listMeta.SetContinue(encodeContinue(rv, keys[end-1]))
		remaining := int64(len(keys) - end)
		listMeta.SetRemainingItemCount(&remaining)
	}
	return list, nil
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
