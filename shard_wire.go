package cache

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file reaches the two API fields of the ShardedListAndWatch feature,
// ListOptions.ShardSelector and ListMeta.ShardInfo, which exist only in
// apimachinery v0.36 and later. The rest of the package is built against
// the oldest apimachinery this module supports, so it finds the fields by
// name, once, and works without them: then no selector is sent, no list
// says it was applied, and a ShardedListerWatcher filters on the client, as
// it does when the server lacks the feature.

// listOptionsShardSelector is the index of ListOptions.ShardSelector, or
// nil when this build's apimachinery has no such string field.
var listOptionsShardSelector = stringFieldIndex(reflect.TypeFor[metav1.ListOptions](), "ShardSelector")

// stringFieldIndex returns the index of the string field name of struct
// type t, or nil when t has none.
func stringFieldIndex(t reflect.Type, name string) []int {
	f, ok := t.FieldByName(name)
	if !ok || f.Type.Kind() != reflect.String {
		return nil
	}
	return f.Index
}

// canSendShardSelector reports whether this build's apimachinery has
// ListOptions.ShardSelector, so that a selector can reach the server.
func canSendShardSelector() bool { return listOptionsShardSelector != nil }

// setShardSelector sets options.ShardSelector to selector and reports
// whether it could: false when this build's apimachinery lacks the field.
func setShardSelector(options *metav1.ListOptions, selector string) bool {
	if !canSendShardSelector() {
		return false
	}
	reflect.ValueOf(options).Elem().FieldByIndex(listOptionsShardSelector).SetString(selector)
	return true
}

// shardSelectorOf returns options.ShardSelector, or "" when this build's
// apimachinery lacks the field.
func shardSelectorOf(options metav1.ListOptions) string {
	if !canSendShardSelector() {
		return ""
	}
	return reflect.ValueOf(options).FieldByIndex(listOptionsShardSelector).String()
}

// shardInfoOf returns the selector a list response says was applied
// (ListMeta.ShardInfo.Selector), and whether it says so at all.
func shardInfoOf(list runtime.Object) (string, bool) {
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		sel, found, err := unstructured.NestedString(u.Object, "metadata", "shardInfo", "selector")
		return sel, found && err == nil
	}
	if sel, ok := echoedShardSelector(list); ok {
		return sel, true
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", false
	}
	return echoedShardSelector(lm)
}

// echoedShardSelector calls x's GetShardInfo, the accessor apimachinery
// v0.36 gives ListMeta, and returns the Selector of the ShardInfo it
// returns. It reports false when x has no such method or it returns nil.
func echoedShardSelector(x any) (string, bool) {
	get := reflect.ValueOf(x).MethodByName("GetShardInfo")
	if !get.IsValid() || get.Type().NumIn() != 0 || get.Type().NumOut() != 1 {
		return "", false
	}
	info := get.Call(nil)[0]
	if info.Kind() != reflect.Pointer || info.IsNil() || info.Elem().Kind() != reflect.Struct {
		return "", false
	}
	sel := info.Elem().FieldByName("Selector")
	if sel.Kind() != reflect.String {
		return "", false
	}
	return sel.String(), true
}
