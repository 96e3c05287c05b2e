// Package suites pins, in this module's go.mod, the release of
// k8s.io/kubernetes whose integration test packages (test/integration/...)
// run.sh builds and runs, once on stock k8s.io/client-go and once on the
// kcache overlay. Importing the shared test framework keeps `go mod tidy`
// from dropping the requirement; nothing here is meant to be called.
package suites

import _ "k8s.io/kubernetes/test/integration/framework"
