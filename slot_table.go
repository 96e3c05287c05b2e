package cache

// slotTable is the lock-free core of a store's primary map: every stored
// object sits in a numbered slot of one flat array, and a map turns keys
// into slot numbers. Indexes file slot numbers, not keys, so reading an
// index bucket never goes back through the map, and List and ListKeys are
// a walk over one array instead of a map iteration.
//
// A removed object leaves its slot vacant; vacant slots are reused before
// the array grows, and the array is compacted when most of it is vacant
// (see compactable). The table does no locking: the owning store holds its
// lock for reading around lookups and for writing around changes.
type slotTable struct {
	ids   map[string]int32
	slots []slot
	// free lists the vacant slots, reused last-freed first.
	free []int32
}

// slot is one stored object and its key. A vacant slot holds vacant.
type slot struct {
	key string
	obj interface{}
}

// vacantSlot marks a slot that holds no object; stored values, nil
// included, are never of this type.
type vacantSlot struct{}

var vacant interface{} = vacantSlot{}

// isVacant reports whether the slot holds no object.
func (s *slot) isVacant() bool {
	_, v := s.obj.(vacantSlot)
	return v
}

func newSlotTable() slotTable {
	return slotTable{ids: map[string]int32{}}
}

// len is the number of stored objects.
func (t *slotTable) len() int { return len(t.ids) }

// lookup returns key's slot.
func (t *slotTable) lookup(key string) (int32, bool) {
	id, ok := t.ids[key]
	return id, ok
}

// get returns the object of key.
func (t *slotTable) get(key string) (interface{}, bool) {
	id, ok := t.ids[key]
	if !ok {
		return nil, false
	}
	return t.slots[id].obj, true
}

// insert puts obj under a key that has no slot yet and returns the new
// slot, reusing a vacant one if there is any.
func (t *slotTable) insert(key string, obj interface{}) int32 {
	var id int32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		id = int32(len(t.slots))
		t.slots = append(t.slots, slot{})
	}
	t.slots[id] = slot{key: key, obj: obj}
	t.ids[key] = id
	return id
}

// remove vacates slot id, dropping its references so the collector can
// free the object.
func (t *slotTable) remove(id int32) {
	delete(t.ids, t.slots[id].key)
	t.slots[id] = slot{obj: vacant}
	t.free = append(t.free, id)
}

// compactable reports whether most of the array is vacant, so that
// rebuilding the table (and the indexes, which name slots) is worth it.
func (t *slotTable) compactable() bool {
	return len(t.slots) > 1024 && len(t.free) > 3*len(t.slots)/4
}

// objects appends every stored object to out.
func (t *slotTable) objects(out []interface{}) []interface{} {
	if len(t.free) == 0 {
		for i := range t.slots {
			out = append(out, t.slots[i].obj)
		}
		return out
	}
	for i := range t.slots {
		if s := &t.slots[i]; !s.isVacant() {
			out = append(out, s.obj)
		}
	}
	return out
}

// keys appends every stored key to out.
func (t *slotTable) keys(out []string) []string {
	if len(t.free) == 0 {
		for i := range t.slots {
			out = append(out, t.slots[i].key)
		}
		return out
	}
	for i := range t.slots {
		if s := &t.slots[i]; !s.isVacant() {
			out = append(out, s.key)
		}
	}
	return out
}

// compact packs the stored objects into the front of a fresh array and
// rebuilds the key map (Go maps never shrink). It returns, by old slot
// number, the new one (-1 for vacant slots) and the new slot count.
func (t *slotTable) compact() (moved []int32, slots int) {
	moved = make([]int32, len(t.slots))
	live := make([]slot, 0, len(t.ids))
	ids := make(map[string]int32, len(t.ids))
	for i := range t.slots {
		s := &t.slots[i]
		if s.isVacant() {
			moved[i] = -1
			continue
		}
		moved[i] = int32(len(live))
		ids[s.key] = int32(len(live))
		live = append(live, *s)
	}
	t.slots, t.ids, t.free = live, ids, nil
	return moved, len(live)
}
