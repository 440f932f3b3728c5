# ferry — make help lists the targets.
SHELL := /bin/bash
GO ?= go
export GOFLAGS ?= -mod=mod
BIN := bin
# An execution count, not a duration: a duration races the fuzz coordinator's deadline in Go 1.26 and fails
# spuriously with "context deadline exceeded" (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 100000x

.PHONY: help build run test timing lint vet fmt generate verify bench fuzz clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/ferry and bin/ferryctl
	$(GO) build -o $(BIN)/ferry ./cmd/ferry
	$(GO) build -o $(BIN)/ferryctl ./cmd/ferryctl

run: build ## start ferry on the embedded Postgres (.data/), create the dev tenancy, print a token
	$(BIN)/ferry serve --dev

test: lint verify ## everything CI runs: gofmt, vet, generated-code check, go test -race, timing tests, short fuzz runs
	$(GO) test -race -count=1 -timeout 20m ./...
	@$(MAKE) --no-print-directory timing
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

# The tests that assert timings skip under the race detector (raceEnabled in iam/authz): run them once without it.
TIMING_TESTS := ^TestLatency$$

timing: ## the timing tests that skip under -race, run without it
	$(GO) test -count=1 -run '$(TIMING_TESTS)' ./iam/authz/

lint: fmt vet ## gofmt and go vet

fmt: ## fail when gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

generate: ## regenerate the server interfaces, the Go SDK and the API's limits from openapi/openapi.yaml
	$(GO) tool oapi-codegen -config openapi/api/config.yaml openapi/openapi.yaml
	$(GO) tool oapi-codegen -config openapi/sdk/config.yaml openapi/openapi.yaml
	$(GO) run ./openapi/internal/limitsgen openapi/openapi.yaml openapi/limits.gen.go

verify: ## fail when the generated code is not what make generate produces
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  for side in api sdk; do \
	    sed "s#^output: .*#output: $$tmp/$$side.gen.go#" openapi/$$side/config.yaml > $$tmp/$$side.yaml && \
	    $(GO) tool oapi-codegen -config $$tmp/$$side.yaml openapi/openapi.yaml && \
	    cmp -s $$tmp/$$side.gen.go openapi/$$side/$$side.gen.go || \
	    { echo "openapi/$$side/$$side.gen.go is stale: run make generate and commit"; exit 1; }; \
	  done; \
	  $(GO) run ./openapi/internal/limitsgen openapi/openapi.yaml $$tmp/limits.gen.go && \
	  cmp -s $$tmp/limits.gen.go openapi/limits.gen.go || \
	    { echo "openapi/limits.gen.go is stale: run make generate and commit"; exit 1; }

fuzz: ## run every fuzz target for FUZZTIME (default 100000 executions each)
	@for pkg in $$($(GO) list ./... ); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

bench: ## the load benchmarks in tests/bench (not part of make test); the last line is BenchmarkQueue's summary
	$(GO) test -run '^$$' -bench 'Fanout|Ordering|Watch' -benchtime 1x -timeout 30m -v ./tests/bench/
	$(GO) test -run '^$$' -bench 'BenchmarkQueue$$' -benchtime 1x -timeout 30m -v ./tests/bench/

clean: ## remove build output (keeps .data/)
	rm -rf $(BIN)
