package cache

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file is how a paginated list's page is prepared when prepare may be
// given items where they lie (listPager.inPage): from an array of the
// reflector's own, so that the page is garbage before its items are
// prepared, and each item's parts are free to go as soon as prepare is done
// with it.
//
// An array of items keeps everything each item refers to for as long as any
// item in it is kept. When a list arrives as one response (a resource
// version of "0" is served from the API server's watch cache whole), that is
// every decoded object of the list. Value sharing builds each cached object
// around parts shared with others: the decoded parts it replaces would stay
// until the last item is prepared, beside what sharing builds, and the peak
// of the list would be the decoded list plus the cache. So the page's items
// are first copied into an array of ours (one copy of each top-level
// struct, as client-go's own copy-out makes) and the page is dropped. After
// each item is prepared, its slot in our array is cleared, and whatever of
// the decoded item the prepared object does not use can be collected while
// the list goes on. The page itself, which a ListerWatcher may keep and
// hand out again, is never written.

// ownedItemsIf is ownedItems when inPage is true; otherwise the page is
// read as client-go reads it.
func ownedItemsIf(inPage bool, page runtime.Object) (reflect.Value, bool) {
	if !inPage {
		return reflect.Value{}, false
	}
	return ownedItems(page)
}

// ownedItems returns a copy of the items of a typed list page whose items
// are structs held in place (Items []T with *T a runtime.Object), and false
// for any other list (pointers, raw items, unstructured lists), which is
// read where it lies.
func ownedItems(page runtime.Object) (reflect.Value, bool) {
	if _, unstructured := page.(runtime.Unstructured); unstructured {
		return reflect.Value{}, false
	}
	ptr, err := meta.GetItemsPtr(page)
	if err != nil {
		return reflect.Value{}, false
	}
	items := reflect.ValueOf(ptr)
	if items.Kind() != reflect.Pointer || items.Elem().Kind() != reflect.Slice {
		return reflect.Value{}, false
	}
	items = items.Elem()
	elem := items.Type().Elem()
	if elem.Kind() != reflect.Struct || !reflect.PointerTo(elem).Implements(runtimeObjectType) {
		return reflect.Value{}, false
	}
	own := reflect.MakeSlice(items.Type(), items.Len(), items.Len())
	reflect.Copy(own, items)
	return own, true
}

var runtimeObjectType = reflect.TypeFor[runtime.Object]()

// prepareOwned appends each item of own (from ownedItems) through prepare,
// copying out an item prepare returns as it was given, and clears the
// item's slot once prepared. Errors are addPage's: a listPrepareError for
// prepare's, the context's once it is canceled.
func (l *listedItems) prepareOwned(ctx context.Context, own reflect.Value, prepare func(obj interface{}) (interface{}, error)) error {
	for i := range own.Len() {
		if err := ctx.Err(); err != nil {
			return err
		}
		slot := own.Index(i)
		item := slot.Addr().Interface().(runtime.Object)
		obj, err := prepare(item)
		if err != nil {
			return listPrepareError{err: err}
		}
		if sameObject(obj, item) {
			obj = copiedOut(item)
		}
		l.items = append(l.items, obj)
		slot.SetZero()
	}
	return nil
}
