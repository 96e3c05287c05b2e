package cache

// ring is the ordered backlog under every queue: push at the back, pop at
// the front, read by position. It has no lock; the owning queue guards it.
//
// Invariants:
//   - len(buf) is zero or a power of two, so positions wrap with a mask;
//   - the n live values are buf[(head+i)&(len(buf)-1)] for 0 <= i < n;
//   - every other slot holds the zero T, so a popped object can be freed
//     as soon as its consumer drops it.
//
// The buffer grows by doubling and shrinks by halving once it is at most a
// quarter full, so the memory of a relist burst is given back after the
// burst is drained.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

const (
	// ringMinCap is the capacity of the first allocation.
	ringMinCap = 16
	// ringKeepCap is the capacity below which the buffer never shrinks:
	// small buffers are not worth reallocating.
	ringKeepCap = 1024
)

// len returns the number of values in the ring.
func (r *ring[T]) len() int { return r.n }

// push appends v at the back.
func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.resize(max(ringMinCap, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// at returns the value at position i, counted from the front. The caller
// ensures 0 <= i < r.len().
func (r *ring[T]) at(i int) T {
	return r.buf[(r.head+i)&(len(r.buf)-1)]
}

// popFront removes and returns the value at the front. The caller ensures
// the ring is not empty.
func (r *ring[T]) popFront() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	if c := len(r.buf); c > ringKeepCap && r.n <= c/4 {
		r.resize(c / 2)
	}
	return v
}

// resize moves the live values to the front of a new buffer of capacity c,
// a power of two no smaller than r.n.
func (r *ring[T]) resize(c int) {
	buf := make([]T, c)
	if r.n > 0 {
		tail := min(r.n, len(r.buf)-r.head)
		copy(buf, r.buf[r.head:r.head+tail])
		copy(buf[tail:], r.buf[:r.n-tail])
	}
	r.buf = buf
	r.head = 0
}
