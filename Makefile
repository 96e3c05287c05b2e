# kcache make targets. `make test` is what CI runs.
GO ?= go
PKGS ?= ./...

.PHONY: bench-programs bench-programs-kwok-race programs-test bench-scale-out bench-scale-out-quick membership-minors-test sharding-minors-test test-matrix plots release-check minors-test clientgo-minors-test bench-guard test lint overlay overlay-releases overlay-test clientgo-test membership-test sharding-test ecosystem ecosystem-smoke demo examples-test bench-e2e bench-e2e-quick bench-scale bench-scale-sim bench-compare bench-smoke-compare fmt-check vet unit compat integration bench bench-smoke cover fuzz soak integration-shard-bench integration-adoption-minors integration-recovery bench-control-plane k8s-suites k8s-suites-smoke

# test runs TEST_TARGETS in order through tools/timed-targets.sh, which
# prints each target's time as it ends (and a table at the end), so that a
# run CI stops at its time limit still shows where the time went.
TEST_TARGETS = fmt-check vet lint release-check unit minors-test bench-smoke compat clientgo-test clientgo-minors-test membership-test sharding-test examples-test bench-smoke-compare programs-test overlay-test integration k8s-suites-smoke ecosystem-smoke bench-e2e-quick bench-scale-out-quick
test:
	@MAKE="$(MAKE)" tools/timed-targets.sh $(TEST_TARGETS)

# demo runs the kcache demo against its built-in simulated cluster
# (no cluster needed). DEMO_DURATION=0 runs it until Ctrl-C.
DEMO_DURATION ?= 30s
demo:
	cd examples && $(GO) run ./cmd/demo --duration=$(DEMO_DURATION)

# examples-test vets and tests the examples module (nested, needs
# client-go), including a test that builds and drives the demo binary.
examples-test:
	cd examples && $(GO) vet ./... && $(GO) test -race -count=1 ./...

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path '*/.work/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# lint runs staticcheck (pinned in tools/go.mod) with its default checks and
# `go mod tidy -diff` in every module of the tree, failing on any finding
# (tools/lint.sh), then the tests of that script.
lint:
	GO=$(GO) tools/lint.sh
	cd tools && STATICCHECK=$(CURDIR)/bin/staticcheck $(GO) test -count=1 ./...

unit:
	$(GO) test -race -count=1 $(PKGS)

# release-check proves the release can be fetched from outside: the root
# module, clientgo/, membership/, sharding/ and overlay/ are packaged at the version in
# VERSION from the working tree (golang.org/x/mod/zip, tools/cmd/modproxy)
# and served from a file:// module proxy; fresh modules outside the
# repository `go get` each at that version and build and run a program on
# each adoption path (import change, bridge, membership, sharding, overlay tool), with
# a private module cache. No git tag is needed (tools/release-check.sh).
release-check:
	GO=$(GO) tools/release-check.sh

# minors-test proves the library on the newer Kubernetes minors it supports:
# its go.mod requires the oldest (k8s.io/apimachinery and k8s.io/api
# v0.35.0, what `make unit` tests), and tools/minors.sh copies the module to
# a scratch directory per minor, `go get`s k8s.io/apimachinery and
# k8s.io/api at v0.36.6, v0.37.2 and the pre-release v0.38.0-beta.0 there
# (MINORS=... for others), and runs go vet and go test -race, adding the
# tests that compare the shard hash with apimachinery's own. v0.38 needs Go
# 1.27: the script sets GOTOOLCHAIN=go1.27.3 for it (fetched from the module
# proxy), and pins one module version the proxy does not serve (see
# proxyGaps in tools/releases.sh).
minors-test:
	GO=$(GO) tools/minors.sh root $(MINORS)

# overlay writes k8s.io/client-go VERSION (default v0.37.2; any supported
# release: the tool's -client-go-version help and README name them, from
# supportedMinors in overlay/internal/overlay/versions.go) with kcache as its tools/cache,
# presenting that release's tools/cache API, into DIR (relative to here, or
# absolute); see overlay/README.md. A release that needs a newer Go than
# kcache's (v0.38: go1.27.3) runs the tool on that toolchain, which the tool
# names (-toolchain). Add OVERLAY_FLAGS=-force to replace an overlay written
# before.
OVERLAY_VERSION = $(or $(VERSION),v0.37.2)
overlay:
	@test -n "$(DIR)" || { echo "usage: make overlay DIR=third_party/client-go [VERSION=v0.37.2 (or another supported release: see README)] [OVERLAY_FLAGS=-force]" >&2; exit 2; }
	cd overlay && tc="$$($(GO) run ./cmd/kcache-overlay -toolchain -client-go-version "$(OVERLAY_VERSION)")" && \
		env $${tc:+GOTOOLCHAIN=$$tc} $(GO) run ./cmd/kcache-overlay -kcache "$(CURDIR)" -o "$(abspath $(DIR))" -client-go-version "$(OVERLAY_VERSION)" $(OVERLAY_FLAGS)

# overlay-releases lists the newest client-go release of each supported
# minor and of the next minor (go list -m -versions: the module proxy is
# its only network use) and says which of them the overlay was not checked
# against (checked: the release of each minor TestOverlayE2E tests, from
# supportedMinors in overlay/internal/overlay/versions.go). Not in make test.
overlay-releases:
	cd overlay && $(GO) run ./cmd/kcache-overlay -releases

# overlay-test tests the overlay tool (its own module), then, for each
# client-go release in OVERLAY_E2E_VERSIONS, generates a real overlay,
# builds all of it, vets every client-go package that imports tools/cache
# and runs that release's tests of informers/..., listers/... and the
# packages using tools/cache with kcache inside (TestOverlayE2E). make test
# checks v0.37.2 (the release the API spec is) and v0.38.0-beta.0 (the next
# minor); make test-matrix, or OVERLAY_E2E_VERSIONS= (empty), checks the
# release of every supported minor (supportedMinors: v0.35.10, v0.36.6,
# v0.37.2, v0.38.0-beta.0). v0.38 runs in a test binary of its own built by
# Go 1.27.3 (TestOverlayE2E starts it).
OVERLAY_E2E_VERSIONS ?= v0.37.2,v0.38.0-beta.0
overlay-test:
	cd overlay && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd overlay && KCACHE_OVERLAY_E2E=1 KCACHE_OVERLAY_E2E_VERSIONS=$(OVERLAY_E2E_VERSIONS) $(GO) test -count=1 -run '^TestOverlayE2E$$' -v -timeout 60m ./internal/overlay

# compat proves the API against real client-go types (a nested module).
compat:
	cd compat && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# clientgo-test vets and tests clientgo/ (its own module, needs client-go,
# v0.35.0 as its go.mod requires):
# kcache informers behind client-go's interfaces, for controller-runtime's
# NewInformer option and generated informer factories.
clientgo-test:
	cd clientgo && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# clientgo-minors-test runs the bridge's vet and tests on the newest patch of
# each supported client-go minor and the next minor's pre-release (v0.35.10,
# v0.36.6, v0.37.2, v0.38.0-beta.0 with Go 1.27.3; MINORS=... for others) in
# scratch copies, adding the tests of what only newer minors have
# (SetShardSelector on v0.38), and checks that a v0.35 program importing the
# bridge stays on v0.35
# (tools/minors.sh; clientgo/README.md "Client-go minors").
clientgo-minors-test:
	GO=$(GO) tools/minors.sh clientgo $(MINORS)

# membership-test vets and tests membership/ (its own module, needs
# client-go, v0.35.0 as its go.mod requires): Leases that share the hash
# space out among live replicas, tested on client-go's fake clientset and a
# fake clock. membership-minors-test (in make test-matrix) does the same on
# v0.35.10, v0.36.6, v0.37.2 and v0.38.0-beta.0 (tools/minors.sh).
membership-test:
	cd membership && $(GO) vet ./... && $(GO) test -race -count=1 ./...
membership-minors-test:
	GO=$(GO) tools/minors.sh membership $(MINORS)

# sharding-test vets and tests sharding/ (its own module, needs
# controller-runtime, v0.23.3 on client-go v0.35.0 as its go.mod requires):
# managers reconciling active-active over membership's ranges, on testing's
# simulated API server and a fake clientset's Leases. sharding-minors-test
# runs the same with controller-runtime's release of each newer minor
# (tools/minors.sh; SHARDING_MINORS, default v0.37.2 with v0.25.2): make
# test-matrix runs v0.24.1 and v0.25.2. In make test, controller-runtime
# v0.25.2 runs sharding/ through examples-test (cmd/activeactive) and
# bench-scale-out-quick (the same on kas, under faults).
SHARDING_MINORS ?= v0.37.2
sharding-test:
	cd sharding && $(GO) vet ./... && $(GO) test -race -count=1 ./...
sharding-minors-test:
	GO=$(GO) tools/minors.sh sharding $(or $(MINORS),$(SHARDING_MINORS))

# integration runs integration/ (its own module) with -race against a real
# kube-apiserver + etcd started by kas/: once with the watch cache, once
# with --watch-cache=false, then the adoption suites, and once more with the
# ShardedListAndWatch gate (sharding tests over KCACHE_SHARD_PODS pods, 3000
# by default). The server is always stopped (trap); see integration/run.sh.
# The first build of the launcher takes about 10 minutes.
integration:
	GO=$(GO) integration/run.sh

# integration-shard-bench (opt-in, not in make test): BenchmarkShardedReplicas
# on kas with the ShardedListAndWatch gate: per-replica heap, client CPU,
# bytes and objects for 1, 2 and 4 replicas over KCACHE_SHARD_PODS pods
# (default 10000).
integration-shard-bench:
	KCACHE_SHARD_PODS=$${KCACHE_SHARD_PODS:-10000} INTEGRATION_PHASES=shard-bench GO=$(GO) integration/run.sh

# integration-recovery (opt-in, not in make test): the long version of
# integration/'s TestRecoveryAfterAPIServerRestarts (make test runs a
# one-minute one): KCACHE_RECOVERY_MINUTES (default 5) minutes of pod churn
# with the API server restarted every 15 s (every fourth time stopped for
# 8 s) and etcd compacted every 10 s, kcache and client-go informers and
# reflectors side by side; writes bench/results/recovery-<UTC>.txt.
integration-recovery:
	@mkdir -p bench/results; f=bench/results/recovery-$$(date -u +%Y%m%dT%H%M%SZ).txt; \
	{ echo "# make integration-recovery result"; echo "command: INTEGRATION_PHASES=recovery KCACHE_RECOVERY_MINUTES=$${KCACHE_RECOVERY_MINUTES:-5} integration/run.sh"; \
	  echo "date:    $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "machine: $$(uname -a)"; echo "cpus:    $$(nproc)"; \
	  echo "go:      $$($(GO) version)"; echo "commit:  $$(git rev-parse HEAD 2>/dev/null)"; echo; \
	  INTEGRATION_PHASES=recovery GO=$(GO) integration/run.sh 2>&1 | grep -E 'recovery_test.go|^(--- |ok |FAIL|PASS)|^integration: phase'; } | tee $$f
integration-recovery: SHELL := /bin/bash
integration-recovery: .SHELLFLAGS := -o pipefail -c

# bench-control-plane (opt-in, not in make test): kube-controller-manager and
# kube-scheduler of Kubernetes v1.36.4 built on stock client-go v0.36.4 and
# on the kcache overlay of it, each pair against a fresh kas with KWOK's fake
# nodes while controlplane/'s driver plays one scenario (create, rolling
# update, scale, deletes, churn); heap, RSS and CPU from their /metrics,
# phase times, the end states compared; then scheduler_perf (CP_SCHED_PERF=0
# leaves it out). Writes bench/results/control-plane-<UTC>.txt. CP_PODS
# (default 20000), CP_CHURN, CP_ROUNDS...: see controlplane/README.md.
bench-control-plane:
	CP_COMMAND="make bench-control-plane" GO=$(GO) controlplane/run.sh

# bench-programs (opt-in, not in make test): two programs nobody here wrote,
# sigs.k8s.io/descheduler v0.36.0 and sigs.k8s.io/kwok v0.8.0, each built on
# stock client-go v0.36.1 and on the kcache overlay of it: KWOK managing 200
# nodes and 20,000 pods on a fresh kas per variant (end states compared),
# then the descheduler's dry-run cycles on that cluster (eviction decisions
# compared). Writes bench/results/programs-<UTC>.txt. PROGRAMS_PODS,
# PROGRAMS_NODES, PROGRAMS_ROUNDS...: see programs/README.md.
bench-programs:
	PROGRAMS_COMMAND="make bench-programs" GO=$(GO) programs/run.sh

# bench-programs-kwok-race (opt-in): KWOK v0.8.0, both builds at debug
# level, with nodes and pods created at once (1,000 pods, 20 nodes), to show
# the race in KWOK that bench-programs avoids by creating the pods once every
# node is Ready: pod events dropped, pods left Pending, per build. Writes
# bench/results/kwok-race-<UTC>.txt. PROGRAMS_KWOK_RACE runs per build
# (default 6): see programs/README.md.
bench-programs-kwok-race:
	PROGRAMS_COMMAND="make bench-programs-kwok-race" PROGRAMS_KWOK_RACE=$${PROGRAMS_KWOK_RACE:-6} GO=$(GO) programs/run.sh

# programs-test runs the unit tests of bench-programs' driver, wrapper and
# report (programs/, a module of its own).
programs-test:
	cd programs && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# integration-adoption-minors (opt-in, not in make test): integration/
# adoption's controllers, stock and on the kcache overlay, moved to client-go
# v0.35.10 with controller-runtime v0.23.3 and v0.36.6 with v0.24.1, and the
# sample-controller-style one to v0.38.0-beta.0 (no controller-runtime
# release for it yet; make integration's phase 3 runs v0.37.2 with v0.25.2);
# ADOPTION_MINORS picks pairs, e.g. ADOPTION_MINORS=v0.38.0-beta.0/-.
integration-adoption-minors:
	INTEGRATION_PHASES=6 GO=$(GO) integration/run.sh

# k8s-suites runs integration test packages of k8s.io/kubernetes v1.36.4
# (test/integration/..., unedited: the real controllers and scheduler
# against an in-process kube-apiserver and an etcd built from its Go
# module) twice, built on stock client-go v0.36.4 and on the kcache overlay
# of that release, each binary checked for which tools/cache it holds, and
# writes k8s/results/k8s-suites-<UTC>.txt (k8s/run.sh, k8s/README.md).
# K8S_PACKAGES='replicaset job' picks packages; the whole list takes hours
# on 2 cores.
k8s-suites:
	cd k8s && $(GO) vet ./... && $(GO) test -count=1 ./...
	GO=$(GO) K8S_COMMAND="make k8s-suites$(if $(K8S_PACKAGES), K8S_PACKAGES='$(K8S_PACKAGES)')" k8s/run.sh $(K8S_PACKAGES)

# k8s-suites-smoke (make test) is the same on K8S_SMOKE_PACKAGES, only the
# tests K8S_SMOKE_RUN matches (four of replicaset's 14: adoption, overlapping
# selectors, scaling, failed pods; four of garbagecollector's 15: cascading
# and orphaning deletes, an owner that does not exist, a stress of many
# owners), failing unless stock and kcache pass the same tests; its result
# goes to k8s/.work/smoke/result.txt.
K8S_SMOKE_PACKAGES ?= replicaset garbagecollector
K8S_SMOKE_RUN ?= ^(TestSpecReplicasChange|TestOverlappingRSs|TestGeneralPodAdoption|TestDeletingAndFailedPods|TestCascadingDeletion|TestOrphaning|TestCreateWithNonExistentOwner|TestStressingCascadingDeletion)$$
k8s-suites-smoke:
	cd k8s && $(GO) vet ./... && $(GO) test -count=1 ./...
	GO=$(GO) K8S_STRICT=1 K8S_RUN='$(K8S_SMOKE_RUN)' K8S_OUT=$(CURDIR)/k8s/.work/smoke K8S_RESULT=$(CURDIR)/k8s/.work/smoke/result.txt \
	  K8S_COMMAND="make k8s-suites-smoke" k8s/run.sh $(K8S_SMOKE_PACKAGES)

# ecosystem runs controller-runtime's whole pkg/cache suite (its own Ginkgo
# specs, envtest on an existing cluster) against kas three ways: stock
# client-go, client-go replaced by the kcache overlay of the same release,
# and stock client-go with clientgo.NewSharedIndexInformer as the cache's
# informer constructor; it fails unless all pass the same specs. See
# ecosystem/run.sh. It runs the whole matrix, one release per supported
# client-go minor: v0.23.3 (client-go v0.35.10), v0.24.1 (v0.36.6) and
# v0.25.2 (v0.37.2); CR_VERSION=v0.24.1 runs one.
ECOSYSTEM_CR_VERSIONS ?= v0.23.3 v0.24.1 v0.25.2
ecosystem:
	cd ecosystem && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	for v in $(or $(CR_VERSION),$(ECOSYSTEM_CR_VERSIONS)); do GO=$(GO) ecosystem/run.sh whole $$v || exit 1; done

# ecosystem-smoke is the same on a named subset of the suite, for the
# releases in ECOSYSTEM_SMOKE_CR_VERSIONS: make test runs v0.25.2 (client-go
# v0.37.2, the release the API spec is); make test-matrix runs it for every
# supported minor (ECOSYSTEM_CR_VERSIONS).
ECOSYSTEM_SMOKE_CR_VERSIONS ?= v0.25.2
ecosystem-smoke:
	cd ecosystem && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	for v in $(or $(CR_VERSION),$(ECOSYSTEM_SMOKE_CR_VERSIONS)); do GO=$(GO) ecosystem/run.sh smoke $$v || exit 1; done

# test-matrix (opt-in, not in make test, which runs the newest of each) runs
# the checks against other projects' suites for every supported minor: the
# overlay with client-go's own tests for the release of each minor, and
# controller-runtime's cache suite (smoke subset) for the release of each
# minor, three ways each; membership/ on every minor, and sharding/'s suite
# with controller-runtime v0.24.1 and v0.25.2 (make test runs it on v0.23.3).
# minors-test and clientgo-minors-test already cover every minor in make
# test.
test-matrix:
	@MAKE="$(MAKE)" TIMED_LABEL="make test-matrix" tools/timed-targets.sh overlay-test ecosystem-smoke membership-minors-test sharding-minors-test OVERLAY_E2E_VERSIONS= ECOSYSTEM_SMOKE_CR_VERSIONS="$(ECOSYSTEM_CR_VERSIONS)" SHARDING_MINORS="v0.36.6 v0.37.2"

# bench-compare runs the same workloads against client-go v0.37.2 and
# kcache, alternating rounds in one process, and prints a markdown table of
# medians and ratios, also written under a header to
# bench/results/compare-<UTC>.txt (about 6 minutes on 2 cores; add ARGS=-quick for a
# one-minute smoke run).
bench-compare:
	@mkdir -p bench/results; f=bench/results/compare-$$(date -u +%Y%m%dT%H%M%SZ).txt; \
	{ echo "# make bench-compare result"; echo "command: cd bench && $(GO) run ./cmd/compare $(ARGS)"; \
	  echo "date:    $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "machine: $$(uname -a)"; echo "cpus:    $$(nproc)"; \
	  echo "go:      $$($(GO) version)"; echo "commit:  $$(git rev-parse HEAD 2>/dev/null)"; echo; \
	  cd bench && $(GO) run ./cmd/compare $(ARGS); } 2>&1 | tee $$f
bench-compare: SHELL := /bin/bash
bench-compare: .SHELLFLAGS := -o pipefail -c

# plots (not in make test) draws docs/scale-heap-per-pod.svg and
# docs/scale-sync-time.svg: heap per cached pod and initial sync time against
# pod count for client-go, kcache and kcache-noshare (the list=stream rows),
# with gonum/plot (bench/cmd/plots), from the newest
# bench/results/scale-<UTC>.txt that make bench-scale wrote, or from
# PLOTS_FROM=path. Same file, same bytes: bench/cmd/plots' test (make test's
# bench-smoke-compare) fails when the committed pictures are not those of the
# newest scale result.
plots:
	cd bench && $(GO) run ./cmd/plots -results results -out ../docs $(if $(PLOTS_FROM),-from $(abspath $(PLOTS_FROM)))

# bench-scale-sim (opt-in, not in make test) measures informers past what
# kas holds here: 1,000,000 ConfigMaps of about 1 KB served over HTTP by
# testing/'s simulated API server in a process of its own, one child per
# variant (client-go, kcache, kcache-noshare); heap per object, peak heap
# and RSS, sync time and CPU. Writes bench/results/scale-sim-<UTC>.txt
# (ARGS="-objects N" for another size, -watchlist=false to page).
bench-scale-sim:
	@mkdir -p bench/results; f=bench/results/scale-sim-$$(date -u +%Y%m%dT%H%M%SZ).txt; \
	{ echo "# make bench-scale-sim result"; echo "command: cd bench && $(GO) run ./cmd/scale-sim $(ARGS)"; \
	  echo "date:    $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "machine: $$(uname -a)"; echo "cpus:    $$(nproc)"; \
	  echo "go:      $$($(GO) version)"; echo "commit:  $$(git rev-parse HEAD 2>/dev/null)"; echo; \
	  cd bench && $(GO) run ./cmd/scale-sim $(ARGS); } 2>&1 | tee $$f
bench-scale-sim: SHELL := /bin/bash
bench-scale-sim: .SHELLFLAGS := -o pipefail -c

# bench-e2e measures informer memory on a real kube-apiserver (kas/):
# client-go v0.37.2 against kcache, one child process each, 20,000 realistic
# pods (ARGS=-n 100000 for the full run, ARGS=-quick for 1,000 pods in a few
# minutes), then CPU per watch event while the pods churn for 60 s. It starts
# kas and stops it after, unless one already runs, and writes its output to
# bench/results/ (-quick only with RESULTS=1).
bench-e2e:
	GO=$(GO) bench/e2e.sh $(ARGS)

# bench-scale (opt-in, not in make test) is the same benchmark at growing pod
# counts on one kas whose etcd quota is raised (8 GiB): client-go v0.37.2,
# kcache and kcache without value sharing, each in its own process, with
# streaming and with paginated lists, at SCALE_PODS pods (default
# 1000,5000,20000,50000,100000); churn at 5,000 and at the largest count;
# a forced relist (etcd compacted, API server restarted) at the largest
# count, with KCACHE_QUIET_RELIST as a fourth variant; then SCALE_SIM
# (default 1000000) ConfigMaps from the simulated server (cmd/scale-sim;
# SCALE_SIM=0 skips it). Writes bench/results/scale-<UTC>.txt, then
# regenerates the plots from it (make plots). A few hours on 2 cores.
# The forced relist alone, its other figures taken from an earlier file
# (copied into the new one, marked): SCALE_PODS=100000 SCALE_SIM=0
# ARGS="-relist-only -rows-from results/scale-<UTC>.txt" (bench/-relative).
SCALE_PODS ?= 1000,5000,20000,50000,100000
SCALE_SIM ?= 1000000
bench-scale:
	BENCH=scale GO=$(GO) bench/e2e.sh -pods $(SCALE_PODS) -sim-objects $(SCALE_SIM) $(ARGS)
	$(MAKE) plots

# bench-scale-out (opt-in, not in make test) runs replicas of
# examples/cmd/activeactive (controller-runtime managers reconciling Pods
# active-active through sharding/) on kas, each behind a proxy that can cut
# it off, and faults them while Pods change: a replica killed (SIGKILL) and
# started again; one cut off from the API server (every byte held both ways,
# no connection closed) and healed; one whose Lease renewals fail while its
# watches work (its Leases go through a proxy of their own); a rolling
# restart; scaling 3 -> 5 -> 2; an API server restart during a handoff
# (-faults picks). Per fault: the longest stretch with a
# Pod unowned or owned twice, the time to settle; at the end, Pods whose
# current version their owner never reconciled (bench/cmd/scale-out). Writes
# bench/results/scale-out-<UTC>.txt. ARGS: -pods (3000), -replicas (3),
# -lease-duration (6s), -renew-deadline (4s), -retry-period (1s),
# -partition (20s), -change-rate (20/s); -scale-replicas N then compares one
# replica holding every Pod with N sharing them (heap per replica, time to
# reconcile every Pod once with -work of CPU each, 1ms). The issue's run:
# ARGS="-pods 50000 -scale-replicas 5 -interval 1s".
bench-scale-out:
	BENCH=scale-out GO=$(GO) bench/e2e.sh $(ARGS)

# bench-scale-out-quick is the short version make test runs: 3 replicas,
# 1,500 Pods, a kill and a 10 s cut-off; no result file. It fails
# if the group does not settle after a fault, or a Pod's current version is
# never reconciled.
bench-scale-out-quick:
	BENCH=scale-out RESULTS=0 GO=$(GO) bench/e2e.sh -pods 1500 -partition 10s -faults kill,partition

# bench-e2e-quick is the small run make test does: it prints the table and
# the ratios and asserts nothing (speed targets live in benchmarks).
bench-e2e-quick:
	GO=$(GO) bench/e2e.sh -quick

# bench-smoke-compare runs every comparison workload once at tiny sizes.
bench-smoke-compare:
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# bench-guard times a round of the sharing guard over 20,000 pods
# (internal/dedup's BenchmarkDedupGuard_Round: ns per value, values, seconds to cover
# the table at the guard's budget) and writes the output under a header to
# bench/results/guard-<UTC>.txt.
bench-guard:
	@mkdir -p bench/results; f=bench/results/guard-$$(date -u +%Y%m%dT%H%M%SZ).txt; \
	cmd="$(GO) test -run '^$$' -bench '^BenchmarkDedupGuard_Round$$' -benchmem -count=5 ./internal/dedup"; \
	{ echo "# make bench-guard result"; echo "command: $$cmd"; echo "date:    $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	  echo "machine: $$(uname -a)"; echo "cpus:    $$(nproc)"; echo "go:      $$($(GO) version)"; \
	  echo "commit:  $$(git rev-parse HEAD 2>/dev/null)"; echo; \
	  $(GO) test -run '^$$' -bench '^BenchmarkDedupGuard_Round$$' -benchmem -count=5 ./internal/dedup; } 2>&1 | tee $$f

bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime=1x $(PKGS)

cover:
	$(GO) test -count=1 -coverprofile=coverage.out $(PKGS)
	$(GO) tool cover -func=coverage.out | tail -n 1

FUZZTIME ?= 30s
FUZZFLAGS = -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x
# fuzz runs every fuzz target for FUZZTIME; seeds live in testdata/fuzz.
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzSplitMetaNamespaceKey$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzParseObjectName$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzIndexer_MatchesModel$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzDeltaFIFO_MatchesModel$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzRealFIFO_MatchesModel$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzLabelMatch_AgreesWithSelector$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzNewShardedListerWatcher$$' .

# soak runs the long soak: 10k objects and 200k changes through injected
# faults (a few minutes); make test runs the short one.
soak:
	SOAK=long $(GO) test -count=1 -run '^TestSoak' -v -timeout 30m .
