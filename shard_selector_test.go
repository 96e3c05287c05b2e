package cache

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	firstHalf  = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	secondHalf = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
)

func TestParseShardSelector_AcceptsTheServersGrammarInCanonicalForm(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []ShardRange
		// canonical is the selector's String; empty means in itself.
		canonical string
	}{
		"one range": {
			in:   firstHalf,
			want: []ShardRange{{Field: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"}},
		},
		"end of the hash space": {
			in:   secondHalf,
			want: []ShardRange{{Field: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000"}},
		},
		"namespace key": {
			in:   "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000')",
			want: []ShardRange{{Field: "object.metadata.namespace", Start: "0x0000000000000000", End: "0x4000000000000000"}},
		},
		"two ranges joined by or": {
			in: firstHalf + " || " + secondHalf,
			want: []ShardRange{
				{Field: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"},
				{Field: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000"},
			},
		},
		"parentheses, double quotes and odd spacing": {
			in: "  ( shardRange( object . metadata.uid ,\"0x0000000000000000\",'0x0000000000000001' )||(" + secondHalf + "))\n",
			want: []ShardRange{
				{Field: "object.metadata.uid", Start: "0x0000000000000000", End: "0x0000000000000001"},
				{Field: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000"},
			},
			canonical: "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001') || " + secondHalf,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := ParseShardSelector(tc.in)
			if err != nil {
				t.Fatalf("ParseShardSelector: %v", err)
			}
			if diff := cmp.Diff(tc.want, sel.Ranges()); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
			want := tc.canonical
			if want == "" {
				want = tc.in
			}
			if got := sel.String(); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
		})
	}
}

func TestParseShardSelector_RejectsWhatTheServerRejectsWithAWrappedError(t *testing.T) {
	cases := map[string]struct {
		in      string
		mention string
	}{
		"empty":               {"  ", "empty"},
		"other function":      {"hashRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')", `unsupported function "hashRange"`},
		"and instead of or":   {firstHalf + " && " + secondHalf, `unexpected character '&'`},
		"single bar":          {firstHalf + " | " + secondHalf, `unexpected character '|'`},
		"two arguments":       {"shardRange(object.metadata.uid, '0x0000000000000000')", `expected "," before the range end`},
		"four arguments":      {"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000', '0x0')", "three arguments"},
		"unsupported field":   {"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')", `unsupported field "object.metadata.name"`},
		"field selector form": {"shardRange(metadata.uid, '0x0000000000000000', '0x8000000000000000')", `unsupported field "metadata.uid"`},
		"short hex":           {"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", `did you mean "0x0000000000000000"`},
		"upper-case hex":      {"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000ABC')", "not a lowercase hex digit"},
		"no 0x prefix":        {"shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')", "must be 0x followed by 16 hex digits"},
		"beyond 2^64":         {"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000001')", "beyond the hash space"},
		"unquoted bound":      {"shardRange(object.metadata.uid, 0x0000000000000000, '0x8000000000000000')", "quoted hex string"},
		"escape in bound":     {`shardRange(object.metadata.uid, '0x\x30000000000000000', '0x8000000000000000')`, "escape sequences"},
		"unterminated string": {"shardRange(object.metadata.uid, '0x0000000000000000", "unterminated string"},
		"empty range":         {"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')", "not below its end"},
		"reversed range":      {"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')", "not below its end"},
		"mixed fields":        {firstHalf + " || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')", "same field"},
		"trailing text":       {firstHalf + " x", `unexpected "x" after the last shardRange`},
		"unclosed paren":      {"(" + firstHalf, `expected ")"`},
		"deep nesting":        {strings.Repeat("(", maxShardSelectorNesting+1) + firstHalf + strings.Repeat(")", maxShardSelectorNesting+1), "nested deeper"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := ParseShardSelector(tc.in)
			if err == nil {
				t.Fatalf("ParseShardSelector(%q) = %v, want an error", tc.in, sel)
			}
			if !errors.Is(err, ErrInvalidShardSelector) {
				t.Errorf("error %q does not wrap ErrInvalidShardSelector", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestParseShardSelector_NestingUpToTheLimitIsAccepted(t *testing.T) {
	in := strings.Repeat("(", maxShardSelectorNesting) + firstHalf + strings.Repeat(")", maxShardSelectorNesting)
	sel, err := ParseShardSelector(in)
	if err != nil {
		t.Fatalf("ParseShardSelector: %v", err)
	}
	if got := sel.String(); got != firstHalf {
		t.Errorf("String() = %q, want %q", got, firstHalf)
	}
}

// FuzzNewShardedListerWatcher checks that any text either builds a
// ShardedListerWatcher whose canonical selector parses back to itself, or
// fails with an error wrapping ErrInvalidShardSelector; never a panic.
func FuzzNewShardedListerWatcher(f *testing.F) {
	for _, seed := range []string{
		firstHalf, secondHalf, firstHalf + " || " + secondHalf, "((" + firstHalf + "))",
		"shardRange(object.metadata.namespace, \"0x0000000000000000\", '0xffffffffffffffff')",
		"", "shardRange(", "shardRange(object.metadata.uid, '0x0', '0x1')", "'\\", "|||", strings.Repeat("(", 40),
	} {
		f.Add(seed)
	}
	lw := &ListWatch{}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := NewShardedListerWatcher(lw, in)
		if err != nil {
			if !errors.Is(err, ErrInvalidShardSelector) {
				t.Fatalf("error %q does not wrap ErrInvalidShardSelector", err)
			}
			if s != nil {
				t.Fatalf("got a ShardedListerWatcher with an error")
			}
			return
		}
		again, err := ParseShardSelector(s.Selector())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", s.Selector(), in, err)
		}
		if again.String() != s.Selector() {
			t.Fatalf("canonical form %q parses to %q", s.Selector(), again.String())
		}
		if len(again.Ranges()) == 0 {
			t.Fatalf("%q parsed to a selector matching everything", in)
		}
	})
}

func TestEvenShardSelector_CutsTheHashSpaceIntoContiguousEqualRanges(t *testing.T) {
	for _, count := range []int{1, 2, 3, 4, 7, 16} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			var reqs []ShardRange
			for i := range count {
				text, err := EvenShardSelector(i, count)
				if err != nil {
					t.Fatal(err)
				}
				sel, err := ParseShardSelector(text)
				if err != nil {
					t.Fatalf("shard %d: %q does not parse: %v", i, text, err)
				}
				if sel.String() != text {
					t.Errorf("shard %d: %q is not in canonical form %q", i, text, sel.String())
				}
				reqs = append(reqs, sel.Ranges()...)
			}
			if reqs[0].Start != "0x0000000000000000" || reqs[count-1].End != shardHashSpaceEnd {
				t.Errorf("ranges do not span the hash space: %+v", reqs)
			}
			for i := 1; i < count; i++ {
				if reqs[i].Start != reqs[i-1].End {
					t.Errorf("gap or overlap between shard %d (%+v) and %d (%+v)", i-1, reqs[i-1], i, reqs[i])
				}
			}
		})
	}
}

func TestEvenShardSelector_EveryObjectIsInExactlyOneShard(t *testing.T) {
	const count = 3
	sels := make([]*ShardSelector, count)
	for i := range count {
		text, err := EvenShardSelector(i, count)
		if err != nil {
			t.Fatal(err)
		}
		if sels[i], err = ParseShardSelector(text); err != nil {
			t.Fatal(err)
		}
	}
	sizes := make([]int, count)
	for n := range 3000 {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", n*2654435761%(1<<32), n))}}
		in := 0
		for i, sel := range sels {
			if ok, err := sel.Matches(pod); err != nil {
				t.Fatal(err)
			} else if ok {
				in++
				sizes[i]++
			}
		}
		if in != 1 {
			t.Fatalf("UID %s is in %d shards", pod.UID, in)
		}
	}
	for i, size := range sizes {
		if size == 0 {
			t.Errorf("shard %d is empty: %v", i, sizes)
		}
	}
}

func TestEvenShardSelector_RejectsImpossibleShards(t *testing.T) {
	for _, tc := range []struct{ index, count int }{{0, 0}, {-1, 2}, {2, 2}, {5, 3}} {
		if _, err := EvenShardSelector(tc.index, tc.count); !errors.Is(err, ErrInvalidShardSelector) {
			t.Errorf("EvenShardSelector(%d, %d) error = %v, want one wrapping ErrInvalidShardSelector", tc.index, tc.count, err)
		}
	}
}

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
