package dedup

import (
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file describes, once per type, what a table's walk (table.go,
// walk.go) needs to know to go through a value of that type by
// address: where each field lies, which parts refer to other memory, which
// hold state a read may write, and the sites that count how often a
// position finds an equal value. With a plan, the walk reads memory
// directly instead of through reflect.Value, which costs a few nanoseconds
// per field instead of tens.

// typePlan is what the walk knows about one type.
type typePlan struct {
	t reflect.Type
	// id numbers the plan within its table; it stands for the type in
	// the table's keys (never 0: that is every string's).
	id   uint64
	kind reflect.Kind
	size uintptr
	// flat says the type refers to no other memory and holds no floats:
	// its content is its bytes, compared and hashed as such, and nothing
	// in it is ever replaced.
	flat bool
	// dense says a flat type has no padding: equal values have equal
	// bytes. (Padding may hold anything: a value built on the stack
	// copies whatever was there.)
	dense bool
	// fields are a struct's fields, in order; elem is what a pointer
	// points at, a slice's or array's element, a map's value; key is a
	// map's key; n an array's length.
	fields []fieldPlan
	// twinFields are the indexes of a struct's exported fields that are
	// not flat, the ones an update's walk beside its twin visits
	// (update.go); equalRuns are a struct's fields as equalAt compares
	// them, adjacent dense fields merged into one run of bytes.
	twinFields []int
	equalRuns  []fieldRun
	elem       *typePlan
	key        *typePlan
	n          int
	// strMap says the type is map[string]string, whose entries are read
	// directly; stringKeys that a map's keys are strings, so that the
	// values under each key have a position of their own.
	strMap, stringKeys bool
	// hidden says a value of the type holds, in its own memory, state that
	// a read may write: a struct with unexported fields (resource.Quantity
	// caches its string on String()), unless its reads are known to write
	// nothing (readOnlyStructs). exposes says a reader can reach such state
	// by address through a value of the type: a pointer or slice to it, or
	// a map whose values hold such a pointer. A value that hides or
	// exposes such state is never shared whole, nor compared with another
	// object's (another goroutine may be reading it, and so writing).
	hidden, exposes bool
	// entries holds a map type's *mapEntry values for reuse.
	entries sync.Pool
	// sites are the positions of a slice's, array's or map's elements
	// and keys, and of values of this type held in interfaces.
	sites containerSites
}

// fieldPlan is one field of a struct plan.
type fieldPlan struct {
	off      uintptr
	plan     *typePlan
	exported bool
	site     *site
}

// containerSites are the sites of a slice, array or map type's elements
// (values) and keys, and of maps or strings of the type held in interfaces
// (unstructured content).
type containerSites struct {
	elem, key, held site
}

// readOnlyStructs are structs with unexported fields whose methods never
// write them on a read: time.Time's readers all take a copy, and
// metav1.FieldsV1, from apimachinery v0.38 on (v0.37 with the fieldsv1string
// build tag), holds its bytes as a unique.Handle[string], set only by its
// setters; equal handles are equal contents, so hashing the handle (by its
// address, as under any unexported field) is exact. Where FieldsV1 has an
// exported Raw field instead, its entry here is never consulted.
var readOnlyStructs = map[reflect.Type]bool{
	reflect.TypeFor[time.Time]():       true,
	reflect.TypeFor[metav1.FieldsV1](): true,
}

var stringMapType = reflect.TypeFor[map[string]string]()

// planOf returns the plan of t, making it (and the plans of the types it
// refers to) on first use. Plans are made under planMu, so that each type
// has one plan and one set of sites however many walks start at once.
func (s *Table) planOf(t reflect.Type) *typePlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*typePlan)
	}
	s.planMu.Lock()
	defer s.planMu.Unlock()
	made := map[reflect.Type]*typePlan{}
	p := s.buildPlan(t, made)
	markHidden(made)
	for typ, plan := range made {
		s.plans.Store(typ, plan)
	}
	return p
}

// buildPlan makes the plan of t. made holds the plans begun by this call,
// so that a type referring to itself (through a pointer, a slice or a map)
// refers to its own plan.
func (s *Table) buildPlan(t reflect.Type, made map[reflect.Type]*typePlan) *typePlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*typePlan)
	}
	if p, ok := made[t]; ok {
		return p
	}
	s.lastPlanID++
	p := &typePlan{t: t, id: s.lastPlanID, kind: t.Kind(), size: t.Size()}
	made[t] = p
	switch p.kind {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.flat, p.dense = true, true
	case reflect.Struct:
		s.buildStructPlan(p, made)
	case reflect.Array:
		p.elem = s.buildPlan(t.Elem(), made)
		p.n = t.Len()
		p.flat, p.dense = p.elem.flat, p.elem.dense
	case reflect.Pointer, reflect.Slice:
		p.elem = s.buildPlan(t.Elem(), made)
	case reflect.Map:
		p.key = s.buildPlan(t.Key(), made)
		p.elem = s.buildPlan(t.Elem(), made)
		p.strMap = t == stringMapType
		p.stringKeys = t.Key().Kind() == reflect.String
	}
	return p
}

func (s *Table) buildStructPlan(p *typePlan, made map[reflect.Type]*typePlan) {
	p.fields = make([]fieldPlan, p.t.NumField())
	p.flat, p.dense = true, true
	var filled uintptr
	for i := range p.fields {
		f := p.t.Field(i)
		fp := s.buildPlan(f.Type, made)
		p.fields[i] = fieldPlan{off: f.Offset, plan: fp, exported: f.IsExported(), site: new(site)}
		p.flat = p.flat && fp.flat
		p.dense = p.dense && fp.dense
		filled += fp.size
	}
	p.dense = p.flat && p.dense && filled == p.size
	for i, f := range p.fields {
		if f.exported && !f.plan.flat {
			p.twinFields = append(p.twinFields, i)
		}
		p.equalRuns = appendRun(p.equalRuns, f)
	}
}

// fieldRun is one step of comparing a struct: the size bytes at off,
// which hold adjacent dense fields (equal bytes are equal values there),
// the string at off, or any other field, plan.
type fieldRun struct {
	off, size uintptr
	kind      runKind
	plan      *typePlan
}

// runKind says how a fieldRun compares.
type runKind uint8

const (
	runBytes runKind = iota
	runString
	runField
)

// appendRun adds field f to a struct's runs: a dense field right after a
// run of bytes extends it.
func appendRun(runs []fieldRun, f fieldPlan) []fieldRun {
	switch {
	case f.plan.kind == reflect.String:
		return append(runs, fieldRun{off: f.off, kind: runString})
	case !f.plan.dense:
		return append(runs, fieldRun{off: f.off, kind: runField, plan: f.plan})
	}
	if n := len(runs); n > 0 && runs[n-1].kind == runBytes && runs[n-1].off+runs[n-1].size == f.off {
		runs[n-1].size += f.plan.size
		return runs
	}
	return append(runs, fieldRun{off: f.off, size: f.plan.size, kind: runBytes})
}

// markHidden sets hidden and exposes on the plans just made, repeating
// until nothing changes (types may refer to each other in a cycle; the
// flags only ever turn on).
func markHidden(made map[reflect.Type]*typePlan) {
	for changed := true; changed; {
		changed = false
		for _, p := range made {
			h, x := p.hidesState(), p.exposesState()
			if h != p.hidden || x != p.exposes {
				p.hidden, p.exposes, changed = h, x, true
			}
		}
	}
}

// hidesState reports whether the type's own memory holds state a read
// may write.
func (p *typePlan) hidesState() bool {
	switch p.kind {
	case reflect.Struct:
		for _, f := range p.fields {
			if (!f.exported && !readOnlyStructs[p.t]) || (f.exported && f.plan.hidden) {
				return true
			}
		}
	case reflect.Array:
		return p.elem.hidden
	}
	return false
}

// exposesState reports whether a reader can reach, by address through a
// value of the type, state a read may write. Map values are copies when
// read, so a map exposes only what its values point at.
func (p *typePlan) exposesState() bool {
	switch p.kind {
	case reflect.Pointer, reflect.Slice:
		return p.elem.hidden || p.elem.exposes
	case reflect.Struct:
		for _, f := range p.fields {
			if f.exported && f.plan.exposes {
				return true
			}
		}
	case reflect.Array:
		return p.elem.exposes
	case reflect.Map:
		return p.elem.exposes || p.key.exposes
	}
	return false
}
