# kcache make targets. `make test` is what CI runs.
GO ?= go
PKGS ?= ./...

.PHONY: test fmt-check vet unit compat bench bench-smoke cover fuzz soak

test: fmt-check vet unit compat

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(PKGS)

# compat proves the API against real client-go types (a nested module).
compat:
	cd compat && $(GO) vet ./... && $(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

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
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzDeltaFIFOOps$$' .
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzRealFIFOOps$$' .

# soak runs the long soak: 10k objects and 200k changes through injected
# faults (a few minutes); make test runs the short one.
soak:
	SOAK=long $(GO) test -count=1 -run '^TestSoak' -v -timeout 30m .
