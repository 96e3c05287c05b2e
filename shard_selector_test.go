package cache

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/sharding"
)

const (
	firstHalf  = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	secondHalf = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
)

func TestParseShardSelector_AcceptsTheServersGrammarInCanonicalForm(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []sharding.ShardRangeRequirement
		// canonical is the selector's String; empty means in itself.
		canonical string
	}{
		"one range": {
			in:   firstHalf,
			want: []sharding.ShardRangeRequirement{{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"}},
		},
		"end of the hash space": {
			in:   secondHalf,
			want: []sharding.ShardRangeRequirement{{Key: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000"}},
		},
		"namespace key": {
			in:   "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000')",
			want: []sharding.ShardRangeRequirement{{Key: "object.metadata.namespace", Start: "0x0000000000000000", End: "0x4000000000000000"}},
		},
		"two ranges joined by or": {
			in: firstHalf + " || " + secondHalf,
			want: []sharding.ShardRangeRequirement{
				{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"},
				{Key: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000"},
			},
		},
		"parentheses, double quotes and odd spacing": {
			in: "  ( shardRange( object . metadata.uid ,\"0x0000000000000000\",'0x0000000000000001' )||(" + secondHalf + "))\n",
			want: []sharding.ShardRangeRequirement{
				{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x0000000000000001"},
				{Key: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000"},
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
			if diff := cmp.Diff(tc.want, sel.Requirements()); diff != "" {
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
		if len(again.Requirements()) == 0 {
			t.Fatalf("%q parsed to a selector matching everything", in)
		}
	})
}
