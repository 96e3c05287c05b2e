package cache

import (
	"strings"
	"testing"
)

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
