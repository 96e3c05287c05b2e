module github.com/kcache/cache/overlay

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	golang.org/x/mod v0.41.0
)
