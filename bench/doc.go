// Package bench is the comparison harness of kcache against client-go's
// tools/cache: one set of workloads (internal/libclientgo, with
// internal/libkcache generated from it) run against both packages by
// cmd/compare, which prints a markdown report.
//
// The module is separate from kcache's so that the library itself never
// depends on client-go. `go test ./...` here runs every workload once at
// tiny sizes; `go run ./cmd/compare` runs the full comparison.
package bench
