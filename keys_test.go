package cache

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMetaNamespaceKeyFunc_KeysByNamespaceAndName(t *testing.T) {
	tests := map[string]struct {
		obj     interface{}
		want    string
		wantErr bool
	}{
		"namespaced pod":          {obj: testPod("ns", "a", "1"), want: "ns/a"},
		"cluster-scoped object":   {obj: &metav1.ObjectMeta{Name: "node-1"}, want: "node-1"},
		"explicit key is its own": {obj: ExplicitKey("any/thing/at/all"), want: "any/thing/at/all"},
		"no metadata":             {obj: 42, wantErr: true},
		"nil":                     {obj: nil, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := MetaNamespaceKeyFunc(tc.obj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("key = %q, want %q", got, tc.want)
			}
		})
	}
}

// A nil pointer of a type with metadata passes meta.Accessor and panics
// when its name is read, in client-go's key functions as in these.
func TestKeyFuncs_PanicOnANilPointer(t *testing.T) {
	calls := map[string]func(){
		"MetaNamespaceKeyFunc":                 func() { _, _ = MetaNamespaceKeyFunc((*v1.Pod)(nil)) },
		"DeletionHandlingMetaNamespaceKeyFunc": func() { _, _ = DeletionHandlingMetaNamespaceKeyFunc((*v1.Pod)(nil)) },
		"ObjectToName":                         func() { _, _ = ObjectToName((*v1.Pod)(nil)) },
		"MetaObjectToName of nil":              func() { _ = MetaObjectToName(nil) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if p := capturePanic(call); p == nil {
				t.Errorf("%s returned; want a panic, as in client-go", name)
			}
		})
	}
}

func TestDeletionHandlingKeyFuncs_UseTheTombstoneKey(t *testing.T) {
	tombstone := DeletedFinalStateUnknown{Key: "ns/gone", Obj: testPod("ns", "other", "1")}
	key, err := DeletionHandlingMetaNamespaceKeyFunc(tombstone)
	if err != nil || key != "ns/gone" {
		t.Fatalf("key = %q, %v; want ns/gone", key, err)
	}
	name, err := DeletionHandlingObjectToName(tombstone)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ObjectName{Namespace: "ns", Name: "gone"}, name); diff != "" {
		t.Errorf("name (-want +got):\n%s", diff)
	}
	key, err = DeletionHandlingMetaNamespaceKeyFunc(testPod("ns", "live", "1"))
	if err != nil || key != "ns/live" {
		t.Fatalf("plain object key = %q, %v", key, err)
	}
	if _, err := DeletionHandlingObjectToName(DeletedFinalStateUnknown{Key: "a/b/c"}); err == nil {
		t.Error("malformed tombstone key: want error")
	}
}

func TestSplitMetaNamespaceKey_OneOrTwoParts(t *testing.T) {
	tests := map[string]struct {
		key       string
		namespace string
		name      string
		wantErr   bool
	}{
		"name only":             {key: "a", name: "a"},
		"namespace and name":    {key: "ns/a", namespace: "ns", name: "a"},
		"empty key":             {key: ""},
		"empty namespace":       {key: "/a", name: "a"},
		"empty name":            {key: "ns/", namespace: "ns"},
		"three parts":           {key: "a/b/c", wantErr: true},
		"only slashes":          {key: "//", wantErr: true},
		"unicode is just bytes": {key: "ñs/ä", namespace: "ñs", name: "ä"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns, n, err := SplitMetaNamespaceKey(tc.key)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if ns != tc.namespace || n != tc.name {
				t.Errorf("got (%q, %q), want (%q, %q)", ns, n, tc.namespace, tc.name)
			}
			on, err := ParseObjectName(tc.key)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseObjectName err = %v, wantErr %v", err, tc.wantErr)
			}
			if on != (ObjectName{Namespace: tc.namespace, Name: tc.name}) {
				t.Errorf("ParseObjectName = %+v", on)
			}
		})
	}
}

func TestObjectName_Conversions(t *testing.T) {
	on := NewObjectName("ns", "a")
	if ns, n := on.Parts(); ns != "ns" || n != "a" {
		t.Errorf("Parts = %q, %q", ns, n)
	}
	if on.String() != "ns/a" || NewObjectName("", "a").String() != "a" {
		t.Errorf("String = %q / %q", on.String(), NewObjectName("", "a").String())
	}
	nn := types.NamespacedName{Namespace: "ns", Name: "a"}
	if on.AsNamespacedName() != nn || NamespacedNameAsObjectName(nn) != on {
		t.Error("NamespacedName round trip failed")
	}
	if got := MetaObjectToName(&metav1.ObjectMeta{Namespace: "x", Name: "y"}); got != NewObjectName("x", "y") {
		t.Errorf("MetaObjectToName = %+v", got)
	}
	if _, err := ObjectToName("not an object"); err == nil {
		t.Error("ObjectToName without metadata: want error")
	}
}

func TestKeyError_UnwrapsToCause(t *testing.T) {
	cause := errors.New("boom")
	var err error = KeyError{Obj: 1, Err: cause}
	if !errors.Is(err, cause) {
		t.Error("errors.Is does not reach the cause")
	}
	var ke KeyError
	if !errors.As(err, &ke) || ke.Obj != 1 {
		t.Error("errors.As does not find the KeyError")
	}
	if err.Error() == "" {
		t.Error("empty message")
	}
}

func TestIndexFuncToKeyFuncAdapter_NeedsExactlyOneValue(t *testing.T) {
	tests := map[string]struct {
		values  []string
		err     error
		want    string
		wantErr bool
	}{
		"one value":    {values: []string{"k"}, want: "k"},
		"no value":     {values: nil, wantErr: true},
		"two values":   {values: []string{"a", "b"}, wantErr: true},
		"index failed": {err: errors.New("x"), wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kf := IndexFuncToKeyFuncAdapter(func(interface{}) ([]string, error) { return tc.values, tc.err })
			got, err := kf(nil)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %q, %v; want %q, wantErr %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// FuzzSplitMetaNamespaceKey checks that any string either fails to split or
// splits into parts that join back to the same key, without panicking.
func FuzzSplitMetaNamespaceKey(f *testing.F) {
	for _, seed := range []string{"", "a", "ns/a", "/", "a/b/c", "ns/", "/a", "ñ/ä", "\x00/\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ns, name, err := SplitMetaNamespaceKey(key)
		slashes := strings.Count(key, "/")
		if slashes > 1 {
			if err == nil {
				t.Fatalf("%q has %d slashes but split without error", key, slashes)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: unexpected error %v", key, err)
		}
		joined := name
		if slashes == 1 {
			joined = ns + "/" + name
		}
		if joined != key {
			t.Fatalf("%q split into (%q, %q) which joins to %q", key, ns, name, joined)
		}
	})
}

// FuzzParseObjectName checks ParseObjectName agrees with
// SplitMetaNamespaceKey and that ObjectName.String inverts it whenever the
// namespace is not empty or the key had no slash.
func FuzzParseObjectName(f *testing.F) {
	for _, seed := range []string{"", "a", "ns/a", "/a", "a/b/c"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		on, err := ParseObjectName(key)
		ns, name, splitErr := SplitMetaNamespaceKey(key)
		if (err == nil) != (splitErr == nil) {
			t.Fatalf("%q: ParseObjectName err %v, Split err %v", key, err, splitErr)
		}
		if err != nil {
			return
		}
		if on.Namespace != ns || on.Name != name {
			t.Fatalf("%q: %+v differs from (%q, %q)", key, on, ns, name)
		}
		if on.Namespace != "" || !strings.Contains(key, "/") {
			if on.String() != key {
				t.Fatalf("%q: String() = %q", key, on.String())
			}
			again, err := ParseObjectName(on.String())
			if err != nil || again != on {
				t.Fatalf("%q: round trip gave %+v, %v", key, again, err)
			}
		}
	})
}
