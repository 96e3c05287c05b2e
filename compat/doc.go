// Package compat holds no code of its own: its tests prove that kcache is a
// drop-in for k8s.io/client-go/tools/cache where the two meet, by driving
// kcache's ListWatch with a real client-go clientset against an HTTP server
// that speaks the Kubernetes JSON wire format, and by checking at compile
// time that values client-go users pass around fit kcache's types.
//
// It is a separate module so that the library module never depends on
// client-go; run it with `cd compat && go test -race -count=1 ./...`.
package compat
