package cache

// slotTable is the lock-free core of a store's primary map: the stored
// objects and their keys sit in two dense parallel arrays, and a map turns
// keys into slot numbers. Indexes file slot numbers, not keys, so reading
// an index bucket never goes back through the map, and List and ListKeys
// are one bulk copy of an array instead of a map iteration.
//
// The arrays stay dense: removing a slot moves the last one into the hole,
// and the caller renumbers that slot in its indexes. The table does no
// locking: the owning store holds its lock for reading around lookups and
// for writing around changes.
type slotTable struct {
	ids  map[string]int32
	keys []string
	objs []interface{}
	// idsPeak is the most keys ids has held since it was made: Go maps
	// never shrink, so ids is rebuilt when it has emptied well below it.
	idsPeak int
}

// noSlot is the slot number of no slot.
const noSlot int32 = -1

func newSlotTable() slotTable {
	return slotTable{ids: map[string]int32{}}
}

// len is the number of stored objects.
func (t *slotTable) len() int { return len(t.keys) }

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
	return t.objs[id], true
}

// insert puts obj under a key that has no slot yet and returns its slot,
// the last one.
func (t *slotTable) insert(key string, obj interface{}) int32 {
	id := int32(len(t.keys))
	t.keys = append(t.keys, key)
	t.objs = append(t.objs, obj)
	t.ids[key] = id
	t.idsPeak = max(t.idsPeak, len(t.ids))
	return id
}

// reserve makes room for n slots in all, so a bulk insert grows the
// arrays once.
func (t *slotTable) reserve(n int) {
	if n > cap(t.keys) {
		t.keys = append(make([]string, 0, n), t.keys...)
		t.objs = append(make([]interface{}, 0, n), t.objs...)
	}
}

// remove drops slot id and moves the last slot into its place. It returns
// the slot number that moved to id, or noSlot when id was the last.
func (t *slotTable) remove(id int32) (movedFrom int32) {
	delete(t.ids, t.keys[id])
	last := int32(len(t.keys) - 1)
	movedFrom = noSlot
	if id != last {
		t.keys[id], t.objs[id] = t.keys[last], t.objs[last]
		t.ids[t.keys[id]] = id
		movedFrom = last
	}
	// Clear the vacated end so the collector can free what it held.
	t.keys[last], t.objs[last] = "", nil
	t.keys, t.objs = t.keys[:last], t.objs[:last]
	t.shrink()
	return movedFrom
}

// shrink gives memory back after most of the table was removed.
func (t *slotTable) shrink() {
	n := len(t.keys)
	if cap(t.keys) > 1024 && n < cap(t.keys)/4 {
		t.keys = append(make([]string, 0, 2*n), t.keys...)
		t.objs = append(make([]interface{}, 0, 2*n), t.objs...)
	}
	if t.idsPeak > 1024 && len(t.ids) < t.idsPeak/4 {
		ids := make(map[string]int32, len(t.ids))
		for key, id := range t.ids {
			ids[key] = id
		}
		t.ids, t.idsPeak = ids, len(ids)
	}
}

// keyList returns every stored key in a new slice.
func (t *slotTable) keyList() []string {
	out := make([]string, len(t.keys))
	copy(out, t.keys)
	return out
}
