// Package adoption holds two controllers written the way real projects
// write them, so that kcache's integration suite can run them unchanged on
// stock client-go and on the kcache overlay of client-go:
//
//   - a sample-controller-style controller (SampleController): informers and
//     a lister from client-go's generated factory, a rate-limited workqueue,
//     event handlers that enqueue keys, and a worker that reconciles each
//     Deployment into a ConfigMap;
//   - a controller-runtime manager with a reconciler (ManagerReconciler)
//     that annotates each Deployment.
//
// Both record what they reconciled and which deletes they saw, so the tests
// (built twice by ../run.sh, once per client-go) assert the same outcome.
// This directory is its own module: the overlay build replaces
// k8s.io/client-go through a generated -modfile, which one module holding
// both builds could not do.
package adoption
