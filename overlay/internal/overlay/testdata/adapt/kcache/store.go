package cache

// Store holds objects.
type Store interface {
	Add(obj any) error
	// Bookmark records the resource version a store is synced to.
	Bookmark(rv string)
}

// Checker tells when something is done.
type Checker interface {
	Done() <-chan struct{}
}

// Options configures New.
type Options struct {
	Logger string // who logs
	Name   string
	Size   int
}

// Queue is made by New.
type Queue struct {
	store Store
	opts  Options
	done  chan struct{}
}

var _ Checker = (*Queue)(nil)

// New returns a queue over s.
func New(s Store, opts Options, extra ...int) *Queue {
	return &Queue{store: s, opts: Options{Logger: opts.Logger, Name: opts.Name, Size: opts.Size + len(extra)}, done: make(chan struct{})}
}

// Sync passes rv to the store.
func (q *Queue) Sync(rv string) { q.store.Bookmark(rv) }

// Done is closed never.
func (q *Queue) Done() <-chan struct{} { return q.done }

// Describe says how the queue was configured.
func (q *Queue) Describe() string { return q.opts.Name + "/" + q.opts.Logger + "/" + Fresh }

// Fresh is a state.
const Fresh = "fresh"

// Sealed has an unexported method.
type Sealed interface {
	Get() int
	sealed()
}

// KcacheOnly is kcache's own: no client-go release has it.
func KcacheOnly() Checker { return nil }

// Batcher pops several items at once.
type Batcher interface {
	PopBatch(n, extra int) int
}

// PopBatch pops n items and extra more.
func (q *Queue) PopBatch(n, extra int) int { return n + extra }

// Drain pops through Batcher when the queue is one.
func (q *Queue) Drain() int {
	if b, ok := any(q).(Batcher); ok {
		return b.PopBatch(1, 2)
	}
	return -1
}

// Named has a name.
type Named interface {
	Name() string
}

var _ Named = (*Queue)(nil)

// Name names the queue.
func (q *Queue) Name() string { return q.opts.Name }

// Journal is a Store that remembers the last bookmark.
type Journal struct {
	Last string
}

// Add does nothing.
func (j *Journal) Add(obj any) error { return nil }

// Bookmark remembers rv.
func (j *Journal) Bookmark(rv string) { j.Last = rv }
