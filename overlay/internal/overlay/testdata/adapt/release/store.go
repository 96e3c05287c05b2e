package cache

type Store interface {
	Add(obj any) error
}

type Options struct {
	Size   int
	Logger string
}

type Queue struct{ x int }

func New(s Store, opts Options) *Queue { return nil }

func (q *Queue) Sync(rv string) {}

func (q *Queue) Describe() string { return "" }

type Sealed interface {
	Get() int
}

type Batcher interface {
	PopBatch(n int) int
}

func (q *Queue) PopBatch(n int) int { return n }

func (q *Queue) Drain() int { return 0 }

type Named interface {
	Name() string
}

type Journal struct {
	Last string
}

func (j *Journal) Add(obj any) error { return nil }
