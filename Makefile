# kcache make targets. `make test` is what CI runs.
GO ?= go
PKGS ?= ./...

.PHONY: test fmt-check vet unit compat bench bench-smoke cover fuzz

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
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzSplitMetaNamespaceKey$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzParseObjectName$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzDeltaFIFOOps$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzRealFIFOOps$$' -fuzztime $(FUZZTIME) .
