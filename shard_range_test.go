package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestShardHash_MatchesTheServersHash pins shardHash to values computed
// once with apimachinery v0.37.2's sharding.HashField (the hash the API
// server uses), written as bounds. testdata/minors/shard_apimachinery_test.go.in
// compares the two directly (tools/minors.sh, on apimachinery v0.36 or later).
func TestShardHash_MatchesTheServersHash(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"", "0xcbf29ce484222325"},
		{"a", "0xaf63dc4c8601ec8c"},
		{"default", "0xebada5168620c5fe"},
		{"kube-system", "0xdf65c7bc1d82b35e"},
		{"0b6a3e3c-8f5e-4c3e-9f0a-2d7c1c9e6b1a", "0x26bb9e5236f51f51"},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", "0x7718f1b2f3cdd331"},
		{"ns-42", "0x7e8bbd89d8b1b517"},
		{"üñí", "0xaf83ea7ad61a5c2e"},
	} {
		if got := shardHash(tc.value); got != tc.want {
			t.Errorf("shardHash(%q) = %s, want %s", tc.value, got, tc.want)
		}
	}
}

func TestShardSelector_MatchesByRangeBoundsAndField(t *testing.T) {
	// "default" hashes to 0xebada5168620c5fe, "a" to 0xaf63dc4c8601ec8c.
	pod := func(ns, uid string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, UID: types.UID(uid)}}
	}
	cases := map[string]struct {
		selector string
		obj      *v1.Pod
		want     bool
	}{
		"start is inclusive": {
			selector: "shardRange(object.metadata.namespace, '0xebada5168620c5fe', '0xebada5168620c5ff')",
			obj:      pod("default", "x"), want: true,
		},
		"end is exclusive": {
			selector: "shardRange(object.metadata.namespace, '0x0000000000000000', '0xebada5168620c5fe')",
			obj:      pod("default", "x"), want: false,
		},
		"the end of the space holds the top": {
			selector: "shardRange(object.metadata.namespace, '0xebada5168620c5fe', '0x10000000000000000')",
			obj:      pod("default", "x"), want: true,
		},
		"hashes the uid, not the namespace": {
			selector: "shardRange(object.metadata.uid, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d')",
			obj:      pod("default", "a"), want: true,
		},
		"any of several ranges": {
			selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001') || shardRange(object.metadata.uid, '0xa000000000000000', '0xb000000000000000')",
			obj:      pod("default", "a"), want: true,
		},
		"none of several ranges": {
			selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001') || shardRange(object.metadata.uid, '0xb000000000000000', '0xc000000000000000')",
			obj:      pod("default", "a"), want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := ParseShardSelector(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sel.Matches(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShardSelector_ObjectWithoutMetadataIsAnError(t *testing.T) {
	sel, err := ParseShardSelector(firstHalf)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := sel.Matches(&metav1.Status{}); err == nil || ok {
		t.Errorf("Matches(an object without ObjectMeta) = %v, %v; want an error", ok, err)
	}
}
