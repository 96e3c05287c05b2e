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
