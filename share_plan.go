package cache

import (
	"reflect"
	"sync"
	"unsafe"
)

// This file describes, once per type, what a valueSharer's walk (share.go,
// share_walk.go) needs to know to go through a value of that type by
// address: where each field lies, which parts refer to other memory, and
// the sites that count how often a position finds an equal value. With a
// plan, the walk reads memory directly instead of through reflect.Value,
// which costs a few nanoseconds per field instead of tens.

// typePlan is what the walk knows about one type.
type typePlan struct {
	t    reflect.Type
	id   unsafe.Pointer // typeID(t)
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
	elem   *typePlan
	key    *typePlan
	n      int
	// strMap says a map's keys and values are strings (of any named
	// string type), read as a map[string]string.
	strMap bool
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

// planOf returns the plan of t, making it (and the plans of the types it
// refers to) on first use. Plans are made under planMu, so that each type
// has one plan and one set of sites however many walks start at once.
func (s *valueSharer) planOf(t reflect.Type) *typePlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*typePlan)
	}
	s.planMu.Lock()
	defer s.planMu.Unlock()
	made := map[reflect.Type]*typePlan{}
	p := s.buildPlan(t, made)
	for typ, plan := range made {
		s.plans.Store(typ, plan)
	}
	return p
}

// buildPlan makes the plan of t. made holds the plans begun by this call,
// so that a type referring to itself (through a pointer, a slice or a map)
// refers to its own plan.
func (s *valueSharer) buildPlan(t reflect.Type, made map[reflect.Type]*typePlan) *typePlan {
	if p, ok := s.plans.Load(t); ok {
		return p.(*typePlan)
	}
	if p, ok := made[t]; ok {
		return p
	}
	p := &typePlan{t: t, id: typeID(t), kind: t.Kind(), size: t.Size()}
	made[t] = p
	switch p.kind {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.flat, p.dense = true, true
	case reflect.Struct:
		p.fields = make([]fieldPlan, t.NumField())
		p.flat, p.dense = true, true
		var filled uintptr
		for i := range p.fields {
			f := t.Field(i)
			fp := s.buildPlan(f.Type, made)
			p.fields[i] = fieldPlan{off: f.Offset, plan: fp, exported: f.IsExported(), site: new(site)}
			p.flat = p.flat && fp.flat
			p.dense = p.dense && fp.dense
			filled += fp.size
		}
		p.dense = p.flat && p.dense && filled == p.size
	case reflect.Array:
		p.elem = s.buildPlan(t.Elem(), made)
		p.n = t.Len()
		p.flat, p.dense = p.elem.flat, p.elem.dense
	case reflect.Pointer, reflect.Slice:
		p.elem = s.buildPlan(t.Elem(), made)
	case reflect.Map:
		p.key = s.buildPlan(t.Key(), made)
		p.elem = s.buildPlan(t.Elem(), made)
		p.strMap = t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
	}
	return p
}
