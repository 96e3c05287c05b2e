package cache

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ErrInvalidShardSelector is wrapped by every error ParseShardSelector,
// NewShardedListerWatcher and NewShardedInformerFactory return for a
// selector they cannot accept; test for it with errors.Is.
var ErrInvalidShardSelector = errors.New("invalid shard selector")

// maxShardSelectorNesting bounds the depth of parentheses a selector may
// use, so that a hostile string cannot make the parser recurse without end.
const maxShardSelectorNesting = 32

// shardHashSpaceEnd is the one bound written with 17 hex digits: 2^64, the
// exclusive end of the 64-bit hash space.
const shardHashSpaceEnd = "0x10000000000000000"

// ParseShardSelector parses a shard selector in the form the API server
// accepts in ListOptions.ShardSelector (the ShardedListAndWatch feature):
// one or more shardRange calls joined by ||, each naming the field to hash
// and the half-open range [start, end) of its 64-bit FNV-1a hash, e.g.
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// The field is object.metadata.uid or object.metadata.namespace, the same
// in every call. A bound is '0x' and exactly 16 lowercase hex digits, or
// '0x10000000000000000' (2^64) for the end of the space; start < end.
// Parentheses and either quote are accepted, as the server's expression
// parser accepts them; escape sequences are not.
//
// The server's parser needs an expression-language library this package
// does not import, so this is a parser of that small grammar of our own,
// with the server's rules. The result's Matches hashes an object exactly as
// the server does, and its String is the canonical text a server echoes in
// ListMeta.ShardInfo. Parsing and matching need no support from the
// apimachinery in the build; sending the selector does (see
// ShardedListerWatcher).
//
// Errors wrap ErrInvalidShardSelector and say where the text went wrong.
func ParseShardSelector(selector string) (*ShardSelector, error) {
	ranges, err := parseShardRanges(selector)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidShardSelector, selector, err)
	}
	return &ShardSelector{ranges: ranges}, nil
}

// EvenShardSelector returns the selector of shard index (from 0) when the
// UID hash space is cut into count equal contiguous ranges: the shards of
// 0..count-1 together hold every object exactly once. It is how count
// replicas of a controller each take their part, e.g. replica 1 of 3:
//
//	shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')
//
// count must be at least 1 and index in [0, count).
func EvenShardSelector(index, count int) (string, error) {
	if count < 1 || index < 0 || index >= count {
		return "", fmt.Errorf("%w: shard %d of %d: want 0 <= index < count", ErrInvalidShardSelector, index, count)
	}
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", shardBoundary(index, count), shardBoundary(index+1, count)), nil
}

// shardBoundary returns i * 2^64 / count as a bound: 16 hex digits, or
// 2^64 itself when i == count.
func shardBoundary(i, count int) string {
	if i == count {
		return shardHashSpaceEnd
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(count))
	return fmt.Sprintf("0x%016x", q)
}

// parseShardRanges returns the requirements selector names, checked.
func parseShardRanges(selector string) ([]ShardRange, error) {
	if strings.TrimSpace(selector) == "" {
		return nil, errors.New("the selector is empty; leave the shard option out to hold every object")
	}
	p := &shardParser{src: selector}
	reqs, err := p.disjunction()
	if err != nil {
		return nil, err
	}
	if tok := p.next(); tok.err != nil {
		return nil, tok.err
	} else if tok.kind != tokEOF {
		return nil, p.errorAt(tok, "unexpected %s after the last shardRange", tok)
	}
	for _, r := range reqs[1:] {
		if r.Field != reqs[0].Field {
			return nil, fmt.Errorf("every shardRange must hash the same field, got %s and %s", reqs[0].Field, r.Field)
		}
	}
	return reqs, nil
}

// shardParser is a recursive-descent parser over the selector grammar:
//
//	disjunction = term { "||" term }
//	term        = "(" disjunction ")" | call
//	call        = "shardRange" "(" path "," string "," string ")"
//	path        = ident { "." ident }
type shardParser struct {
	src string
	// pos is the byte offset of the next unread character.
	pos int
	// depth is the number of parentheses open around the current term.
	depth int
}

// disjunction parses terms joined by ||.
func (p *shardParser) disjunction() ([]ShardRange, error) {
	reqs, err := p.term()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tokOr {
		p.next()
		more, err := p.term()
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, more...)
	}
	return reqs, nil
}

// term parses a parenthesised disjunction or one shardRange call.
func (p *shardParser) term() ([]ShardRange, error) {
	if p.peek().kind != tokLParen {
		req, err := p.call()
		if err != nil {
			return nil, err
		}
		return []ShardRange{req}, nil
	}
	open := p.next()
	if p.depth == maxShardSelectorNesting {
		return nil, p.errorAt(open, "parentheses nested deeper than %d", maxShardSelectorNesting)
	}
	p.depth++
	reqs, err := p.disjunction()
	if err != nil {
		return nil, err
	}
	p.depth--
	if _, err := p.expect(tokRParen, `")"`); err != nil {
		return nil, err
	}
	return reqs, nil
}

// call parses shardRange(path, 'start', 'end') and checks its arguments.
func (p *shardParser) call() (ShardRange, error) {
	fn, err := p.expect(tokIdent, "shardRange")
	if err != nil {
		return ShardRange{}, err
	}
	if fn.text != "shardRange" {
		return ShardRange{}, p.errorAt(fn, "unsupported function %q: only shardRange and || are allowed", fn.text)
	}
	if _, err := p.expect(tokLParen, `"(" after shardRange`); err != nil {
		return ShardRange{}, err
	}
	path, err := p.path()
	if err != nil {
		return ShardRange{}, err
	}
	start, err := p.bound("start")
	if err != nil {
		return ShardRange{}, err
	}
	end, err := p.bound("end")
	if err != nil {
		return ShardRange{}, err
	}
	if _, err := p.expect(tokRParen, `")" closing shardRange (it takes three arguments)`); err != nil {
		return ShardRange{}, err
	}
	if !hexBelow(start, end) {
		return ShardRange{}, fmt.Errorf("shardRange start %s is not below its end %s", start, end)
	}
	return ShardRange{Field: path, Start: start, End: end}, nil
}

// path parses the dotted field to hash and checks it is one the server
// hashes.
func (p *shardParser) path() (string, error) {
	first, err := p.expect(tokIdent, "a field path such as object.metadata.uid")
	if err != nil {
		return "", err
	}
	parts := []string{first.text}
	for p.peek().kind == tokDot {
		p.next()
		part, err := p.expect(tokIdent, "a field name after \".\"")
		if err != nil {
			return "", err
		}
		parts = append(parts, part.text)
	}
	path := strings.Join(parts, ".")
	switch path {
	case shardFieldUID, shardFieldNamespace:
		return path, nil
	}
	return "", p.errorAt(first, "unsupported field %q: use object.metadata.uid or object.metadata.namespace", path)
}

// bound parses ", 'hex'" and checks the hex is a bound the server accepts.
func (p *shardParser) bound(name string) (string, error) {
	if _, err := p.expect(tokComma, `"," before the range `+name); err != nil {
		return "", err
	}
	lit, err := p.expect(tokString, "the range "+name+" as a quoted hex string such as '0x8000000000000000'")
	if err != nil {
		return "", err
	}
	if err := checkShardBound(lit.text); err != nil {
		return "", p.errorAt(lit, "range %s: %w", name, err)
	}
	return lit.text, nil
}

// checkShardBound reports why s is not a bound of the hash space, if it is
// not one: "0x" and 16 lowercase hex digits, or 2^64 itself.
func checkShardBound(s string) error {
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok || digits == "" {
		return fmt.Errorf("%q must be 0x followed by 16 hex digits", s)
	}
	for i := 0; i < len(digits); i++ {
		if c := digits[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%q has %q, not a lowercase hex digit", s, c)
		}
	}
	switch {
	case len(digits) == 16, s == shardHashSpaceEnd:
		return nil
	case len(digits) < 16:
		return fmt.Errorf("%q must have exactly 16 hex digits (did you mean %q?)", s, "0x"+strings.Repeat("0", 16-len(digits))+digits)
	default:
		return fmt.Errorf("%q is beyond the hash space, whose end is %s", s, shardHashSpaceEnd)
	}
}

// expect reads the next token and fails unless it is of kind; want says
// what was expected, for the error.
func (p *shardParser) expect(kind tokKind, want string) (shardToken, error) {
	tok := p.next()
	if tok.err != nil {
		return tok, tok.err
	}
	if tok.kind != kind {
		return tok, p.errorAt(tok, "expected %s, found %s", want, tok)
	}
	return tok, nil
}

// errorAt formats an error located at tok.
func (p *shardParser) errorAt(tok shardToken, format string, args ...any) error {
	return fmt.Errorf("at offset %d: %w", tok.pos, fmt.Errorf(format, args...))
}

// peek returns the next token without consuming it.
func (p *shardParser) peek() shardToken {
	save := p.pos
	tok := p.next()
	p.pos = save
	return tok
}

// tokKind is the kind of a shardToken.
type tokKind int

const (
	tokEOF tokKind = iota
	tokBad
	tokIdent
	tokString
	tokNumber
	tokLParen
	tokRParen
	tokComma
	tokDot
	tokOr
)

// shardToken is one lexical token of a selector.
type shardToken struct {
	kind tokKind
	// text is the identifier, or the string literal without its quotes.
	text string
	// pos is the byte offset where the token starts.
	pos int
	// err says why the text at pos is no token (kind tokBad).
	err error
}

// String describes the token for error messages.
func (t shardToken) String() string {
	switch t.kind {
	case tokEOF:
		return "the end of the selector"
	case tokIdent:
		return fmt.Sprintf("%q", t.text)
	case tokString:
		return fmt.Sprintf("the string %q", t.text)
	case tokNumber:
		return fmt.Sprintf("the unquoted %s", t.text)
	case tokLParen:
		return `"("`
	case tokRParen:
		return `")"`
	case tokComma:
		return `","`
	case tokDot:
		return `"."`
	case tokOr:
		return `"||"`
	}
	return "an invalid token"
}

// next reads the token at p.pos, skipping white space before it.
func (p *shardParser) next() shardToken {
	for p.pos < len(p.src) && isShardSpace(p.src[p.pos]) {
		p.pos++
	}
	start := p.pos
	if start == len(p.src) {
		return shardToken{kind: tokEOF, pos: start}
	}
	c := p.src[start]
	if kind, ok := shardPunct[c]; ok {
		p.pos++
		return shardToken{kind: kind, pos: start}
	}
	switch {
	case c == '|' && strings.HasPrefix(p.src[start:], "||"):
		p.pos += 2
		return shardToken{kind: tokOr, pos: start}
	case c == '\'' || c == '"':
		return p.stringLiteral(c)
	case isIdentPart(c):
		for p.pos < len(p.src) && isIdentPart(p.src[p.pos]) {
			p.pos++
		}
		kind := tokIdent
		if !isIdentStart(c) {
			kind = tokNumber
		}
		return shardToken{kind: kind, text: p.src[start:p.pos], pos: start}
	}
	return p.bad(start, fmt.Errorf("unexpected character %q", c))
}

// shardPunct maps the one-character tokens to their kinds.
var shardPunct = map[byte]tokKind{'(': tokLParen, ')': tokRParen, ',': tokComma, '.': tokDot}

// stringLiteral reads a literal quoted with quote, starting at p.pos.
func (p *shardParser) stringLiteral(quote byte) shardToken {
	start := p.pos
	for i := start + 1; i < len(p.src); i++ {
		switch p.src[i] {
		case quote:
			p.pos = i + 1
			return shardToken{kind: tokString, text: p.src[start+1 : i], pos: start}
		case '\\':
			return p.bad(i, errors.New("escape sequences are not supported in a shard bound"))
		case '\n', '\r':
			return p.bad(i, errors.New("line break inside a string"))
		}
	}
	return p.bad(start, errors.New("unterminated string"))
}

// bad returns an invalid token at pos and moves to the end of the input,
// so that nothing is read after it.
func (p *shardParser) bad(pos int, err error) shardToken {
	p.pos = len(p.src)
	return shardToken{kind: tokBad, pos: pos, err: fmt.Errorf("at offset %d: %w", pos, err)}
}

func isShardSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// This file holds a parsed shard selector and the hash that places an
// object in it. It needs nothing from apimachinery beyond object metadata,
// so sharding works with every apimachinery minor this module supports.

// ShardRange is one shardRange call of a selector: the objects whose
// Field hashes into [Start, End).
type ShardRange struct {
	// Field is the hashed field: object.metadata.uid or
	// object.metadata.namespace.
	Field string
	// Start is the inclusive lower bound: "0x" and 16 lowercase hex digits.
	Start string
	// End is the exclusive upper bound, in the same form as Start, or
	// "0x10000000000000000" (2^64) for the end of the hash space.
	End string
}

// ShardSelector is a parsed, checked shard selector (see
// ParseShardSelector). It never changes once made and is safe for
// concurrent use.
type ShardSelector struct {
	// ranges holds at least one range; every range has the same Field.
	ranges []ShardRange
}

// Ranges returns a copy of the selector's ranges, in the order written.
func (s *ShardSelector) Ranges() []ShardRange {
	return append([]ShardRange(nil), s.ranges...)
}

// String returns the selector's canonical form: each range as
// shardRange(field, 'start', 'end'), joined by " || ". It is the text sent
// in ListOptions.ShardSelector and the text a server echoes in
// ListMeta.ShardInfo.
func (s *ShardSelector) String() string {
	parts := make([]string, len(s.ranges))
	for i, r := range s.ranges {
		parts[i] = fmt.Sprintf("shardRange(%s, '%s', '%s')", r.Field, r.Start, r.End)
	}
	return strings.Join(parts, " || ")
}

// Matches reports whether obj lies in one of the selector's ranges, hashing
// its field as an API server with the ShardedListAndWatch feature does:
// 64-bit FNV-1a of the field's bytes. An object without object metadata is
// an error.
func (s *ShardSelector) Matches(obj runtime.Object) (bool, error) {
	value, err := shardFieldValue(obj, s.ranges[0].Field)
	if err != nil {
		return false, err
	}
	hash := shardHash(value)
	for _, r := range s.ranges {
		if !hexBelow(hash, r.Start) && hexBelow(hash, r.End) {
			return true, nil
		}
	}
	return false, nil
}

// shardHash returns the position of a field value in the hash space, in the
// form of a range bound: "0x" and the 16 lowercase hex digits of the value's
// 64-bit FNV-1a hash. It is the hash an API server with the
// ShardedListAndWatch feature computes.
func shardHash(value string) string {
	h := fnv.New64a()
	h.Write([]byte(value))
	return fmt.Sprintf("0x%016x", h.Sum64())
}

// hexBelow reports a < b for bounds written as "0x" and lowercase hex
// digits without leading zeros beyond the 16 required: the shorter is the
// smaller, and equal lengths compare as text.
func hexBelow(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// shardFieldValue reads the field a range hashes from obj's metadata.
func shardFieldValue(obj runtime.Object, field string) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("shard selector: reading %s: %w", field, err)
	}
	switch field {
	case shardFieldUID:
		return string(m.GetUID()), nil
	case shardFieldNamespace:
		return m.GetNamespace(), nil
	}
	return "", fmt.Errorf("shard selector: unsupported field %q", field)
}

// The fields a shard range may hash.
const (
	shardFieldUID       = "object.metadata.uid"
	shardFieldNamespace = "object.metadata.namespace"
)

// This file holds one shard selector as a ShardedListerWatcher uses it:
// parsed, numbered, and able to tell which objects it holds.

// firstShardGen is the generation of the selector a ShardedListerWatcher is
// built with; each move adds one.
const firstShardGen = 1

// shardSpec is one selector a ShardedListerWatcher holds: its matcher, the
// text sent to (and echoed by) the server, and its number. It never
// changes.
type shardSpec struct {
	matches func(obj runtime.Object) (bool, error)
	text    string
	gen     uint64
}

func newShardSpec(sel *ShardSelector, gen uint64) *shardSpec {
	return &shardSpec{matches: sel.Matches, text: sel.String(), gen: gen}
}

// newForeignShardSpec is a selector parsed elsewhere (client-go v0.38's
// sharding.Selector, in the overlay): its text as the selector wrote it,
// and its own Matches.
func newForeignShardSpec(text string, matches func(runtime.Object) (bool, error), gen uint64) *shardSpec {
	return &shardSpec{matches: matches, text: text, gen: gen}
}

// holds reports whether obj belongs to this shard; see inShard.
func (spec *shardSpec) holds(obj runtime.Object) bool {
	ok, err := spec.matches(obj)
	return ok || err != nil
}

// filterList removes the items of list outside the shard, in place. A list
// whose items cannot be read is left as it is.
func (spec *shardSpec) filterList(list runtime.Object) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return
	}
	kept := items[:0]
	for _, item := range items {
		if spec.holds(item) {
			kept = append(kept, item)
		}
	}
	if len(kept) == len(items) {
		return
	}
	// SetList only fails for what ExtractList already refused.
	_ = meta.SetList(list, kept)
}

// shardMovedCause marks the expired-resource-version errors of a move, so
// that a Reflector lists again at once instead of after its backoff: a
// move is not a failure, and the membership guarantee counts one relist,
// not a backoff that grows with each move.
const shardMovedCause metav1.CauseType = "kcache.io/ShardMoved"

// errShardMoved is the error a list or watch gets when it would cross a
// move to another shard: an expired resource version, so that Reflectors
// list again from the newest state, carrying shardMovedCause.
func errShardMoved(why string) error {
	err := apierrors.NewResourceExpired(why + "; list again under the new shard selector")
	err.ErrStatus.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: shardMovedCause, Message: why}}}
	return err
}

// isShardMoved reports an error of errShardMoved, also after it travelled
// as the Status of a watch's ERROR event.
func isShardMoved(err error) bool {
	return isExpiredError(err) && apierrors.HasStatusCause(err, shardMovedCause)
}

// endsInitialEvents reports the bookmark that ends a streaming list's
// initial events.
func endsInitialEvents(obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
