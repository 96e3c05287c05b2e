package dedup

// This file tells a string repeated inside one object from a string two
// objects have in common.
//
// The filter of values seen once (table.go) lets a value into the table at
// its second sighting. Inside one object that second sighting is often no
// sign of sharing to come: the token volume the ServiceAccount admission
// gives every pod has a random name, and each container's volume mounts
// name it again. Letting such a string in costs a table entry, a weak
// pointer, a cleanup and a copy, and the guard re-hashes it every round,
// for a value no other object will ever hold. So a walk remembers the
// strings it put in the filter itself; a later sighting of one of them
// within the same walk is not let in, but made one within the object: it
// points at the first, which the object keeps anyway. Strings cannot be
// written, so this shares no writable memory. Pointers, slices and maps
// repeated within one object still go through the filter as before: their
// entries are what the guard watches.

// firstsIndexed is how many first sightings a walk searches one by one;
// past it they are found through an index, so that an object with many
// values of its own (a ConfigMap of ten thousand keys) costs no quadratic
// search.
const firstsIndexed = 32

// firstsKept is the most first sightings whose room a pooled walker keeps.
const firstsKept = 1024

// firstSighting is a string a walk met first, and its table key.
type firstSighting struct {
	key uint64
	str string
}

// sawFirst remembers str, under its table key k, as a string this walk
// met before any other walk did.
func (w *walker) sawFirst(k uint64, str string) {
	w.remember(firstSighting{key: k, str: str})
}

// remember adds f to the walk's first sightings, indexing them once there
// are more than firstsIndexed. A key met first twice (a hash collision of
// two strings) keeps its first sighting in the index.
func (w *walker) remember(f firstSighting) {
	w.firsts = append(w.firsts, f)
	switch n := len(w.firsts); {
	case n == firstsIndexed+1:
		if w.firstsByKey == nil {
			w.firstsByKey = make(map[uint64]int, 2*firstsIndexed)
		}
		for i := len(w.firsts) - 1; i >= 0; i-- {
			w.firstsByKey[w.firsts[i].key] = i
		}
	case n > firstsIndexed+1:
		if _, ok := w.firstsByKey[f.key]; !ok {
			w.firstsByKey[f.key] = n - 1
		}
	}
}

// first returns the first sighting of key k in this walk, or nil.
func (w *walker) first(k uint64) *firstSighting {
	if len(w.firsts) > firstsIndexed {
		if i, ok := w.firstsByKey[k]; ok {
			return &w.firsts[i]
		}
		return nil
	}
	for i := range w.firsts {
		if w.firsts[i].key == k {
			return &w.firsts[i]
		}
	}
	return nil
}

// firstString returns the string equal to str that this walk met first
// under the key k, if there is one.
func (w *walker) firstString(k uint64, str string) (string, bool) {
	if f := w.first(k); f != nil && f.str == str {
		return f.str, true
	}
	return "", false
}

// forgetFirsts empties the walk's memory of first sightings, keeping no
// string alive, for the walk's next use.
func (w *walker) forgetFirsts() {
	if cap(w.firsts) > firstsKept {
		// A walk of a large object keeps no large memory in the pool.
		w.firsts, w.firstsByKey = nil, nil
		return
	}
	clear(w.firsts)
	w.firsts = w.firsts[:0]
	clear(w.firstsByKey)
}
