# ferry — make help lists the targets.
SHELL := /bin/bash
GO ?= go
export GOFLAGS ?= -mod=mod
BIN := bin
# An execution count, not a duration: a duration races the fuzz coordinator's deadline in Go 1.26 and fails
# spuriously with "context deadline exceeded" (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 100000x
# How long make fuzz sends generated requests to every operation of the API (tests/fuzz); make test runs it for
# its default of a few seconds as part of go test, and skips the long run.
API_FUZZ_DURATION ?= 2m

# The Terraform provider's documentation (terraform/docs) from its schema's descriptions and terraform/examples;
# it builds the provider and asks the terraform on PATH for its schema (no registry, no download).
TFPLUGINDOCS = $(GO) tool tfplugindocs generate --provider-dir terraform --provider-name ferry --rendered-provider-name ferry

.PHONY: help build run test timing lint vet fmt generate verify bench fuzz clean terraform-provider tools monitor
.PHONY: generate-typescript verify-typescript test-typescript generate-console verify-console screenshots

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/ferry and bin/ferryctl
	$(GO) build -o $(BIN)/ferry ./cmd/ferry
	$(GO) build -o $(BIN)/ferryctl ./cmd/ferryctl

# The Terraform provider, and a CLI configuration whose dev_overrides make terraform use this build of ferry-mq/ferry
# instead of looking for it in a registry: TF_CLI_CONFIG_FILE=bin/terraformrc terraform plan (no terraform init).
terraform-provider: ## build bin/terraform-provider-ferry and bin/terraformrc (export TF_CLI_CONFIG_FILE=bin/terraformrc)
	$(GO) build -o $(BIN)/terraform-provider-ferry ./terraform
	@printf 'provider_installation {\n  dev_overrides {\n    "ferry-mq/ferry" = "%s"\n  }\n  direct {}\n}\n' "$(abspath $(BIN))" > $(BIN)/terraformrc
	@echo "wrote $(BIN)/terraformrc: export TF_CLI_CONFIG_FILE=$(abspath $(BIN))/terraformrc"

run: build ## start ferry on the embedded Postgres (.data/), create the dev tenancy, print a token
	$(BIN)/ferry serve --dev

test: tools lint verify ## everything CI runs: gofmt, vet, generated-code check, go test -race, timing tests, short fuzz runs, TypeScript SDK tests
	$(GO) test -race -count=1 -timeout 20m ./...
	@$(MAKE) --no-print-directory timing
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME) API_FUZZ_DURATION=
	@$(MAKE) --no-print-directory test-typescript

# The tests that assert timings skip under the race detector (raceEnabled in iam/authz): run them once without it.
TIMING_TESTS := ^TestLatency$$

timing: ## the timing tests that skip under -race, run without it
	$(GO) test -count=1 -run '$(TIMING_TESTS)' ./iam/authz/
	$(GO) test -count=1 -run '^TestNoisyNeighbour$$' ./tests/

lint: fmt vet ## gofmt and go vet

fmt: ## fail when gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

generate: ## regenerate the server interfaces, the Go SDK, the API's limits and the TypeScript SDK's types from openapi/openapi.yaml, terraform/docs and the Grafana dashboards
	$(GO) tool oapi-codegen -config openapi/api/config.yaml openapi/openapi.yaml
	$(GO) tool oapi-codegen -config openapi/sdk/config.yaml openapi/openapi.yaml
	$(GO) run ./openapi/internal/limitsgen openapi/openapi.yaml openapi/limits.gen.go
	$(GO) run ./deploy/grafana/internal/dashgen deploy/grafana
	$(TFPLUGINDOCS) >/dev/null
	@$(MAKE) --no-print-directory generate-typescript
	@$(MAKE) --no-print-directory generate-console

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
	    { echo "openapi/limits.gen.go is stale: run make generate and commit"; exit 1; }; \
	  mkdir $$tmp/grafana && $(GO) run ./deploy/grafana/internal/dashgen $$tmp/grafana && \
	  for f in deploy/grafana/*.json $$tmp/grafana/*.json; do \
	    cmp -s $$tmp/grafana/$$(basename $$f) deploy/grafana/$$(basename $$f) || \
	      { echo "deploy/grafana/$$(basename $$f) is stale: run make generate and commit"; exit 1; }; \
	  done
	@trap 'rm -rf terraform/.docs-check' EXIT; \
	  $(TFPLUGINDOCS) --rendered-website-dir .docs-check >/dev/null && diff -r terraform/docs terraform/.docs-check || \
	    { echo "terraform/docs is stale: run make generate and commit"; exit 1; }
	@$(MAKE) --no-print-directory verify-typescript
	@$(MAKE) --no-print-directory verify-console

fuzz: ## run every fuzz target for FUZZTIME (default 100000 executions each), then the API fuzz suite for API_FUZZ_DURATION (default 2m)
	@for pkg in $$($(GO) list ./... ); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done
	@if [ -n "$(API_FUZZ_DURATION)" ]; then \
	  echo "fuzz the API (tests/fuzz, $(API_FUZZ_DURATION))"; \
	  FERRY_FUZZ_DURATION=$(API_FUZZ_DURATION) $(GO) test -count=1 -run '^TestFuzzAPI$$' -timeout 30m -v ./tests/fuzz/ | grep -aE '^(---|ok|FAIL|PASS)|fuzz_test.go'; \
	  test $${PIPESTATUS[0]} -eq 0; \
	fi

bench: ## the load benchmarks in tests/bench (RabbitMQ at 127.0.0.1:5672 as the peer when it answers) and the long crash run (not part of make test); the last line is BenchmarkQueue's summary
	FERRY_BENCH_CONSUME=1 $(GO) test -run '^$$' -bench 'Fanout|Ordering|Watch|MetricsCost|DurabilityCost|NoisyNeighbour|Partitions|Consume|LeaseDesigns' -benchtime 1x -timeout 45m -v ./tests/bench/
	$(GO) test -run '^$$' -bench 'RabbitMQ|PublishedLimits' -benchtime 1x -timeout 40m -v ./tests/bench/
	FERRY_FAULTS_LONG=1 $(GO) test -count=1 -run TestCrashes -timeout 20m -v ./tests/faults/
	$(GO) test -run '^$$' -bench 'BenchmarkQueue$$' -benchtime 1x -timeout 30m -v ./tests/bench/

# Debian packages the tests need: promtool and prometheus for the tests of deploy/ (tests/monitoring), chromium for
# the web console's browser tests (tests/console). Installed with apt when missing and running as root (CI);
# otherwise say how, and those tests skip unless FERRY_REQUIRE_TOOLS=1.
TOOL_PACKAGES := prometheus chromium

tools: ## install promtool, prometheus and chromium (Debian packages) when missing
	@missing=""; \
	  { command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing="$$missing prometheus"; \
	  command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	  [ -z "$$missing" ] && exit 0; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "tools: installing$$missing with apt"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else \
	    echo "tools: missing$$missing: apt-get install$$missing (tests/monitoring and tests/console skip without them)"; \
	  fi

PROMETHEUS_LISTEN ?= 127.0.0.1:9090

monitor: tools ## run Prometheus (deploy/prometheus, data in .data/prometheus) against a local ferry's metrics listener
	@mkdir -p .data/prometheus
	@echo "Prometheus on http://$(PROMETHEUS_LISTEN), scraping 127.0.0.1:9464 (make run's FERRY_METRICS_LISTEN); Ctrl-C stops it"
	prometheus --config.file=deploy/prometheus/prometheus.yml --storage.tsdb.path=.data/prometheus \
	  --web.listen-address=$(PROMETHEUS_LISTEN) --log.level=warn

clean: ## remove build output (keeps .data/)
	rm -rf $(BIN)

# --- The TypeScript SDK (openapi/typescript, @ferry-mq/sdk) ---------------------------------------------------------
# Node.js 20+ and npm; nothing is installed globally. npm ci runs when package-lock.json is newer than the install.
TS := openapi/typescript
NPM ?= npm

$(TS)/node_modules/.package-lock.json: $(TS)/package-lock.json
	cd $(TS) && $(NPM) ci --no-audit --no-fund

generate-typescript: $(TS)/node_modules/.package-lock.json ## regenerate the TypeScript SDK's types (src/schema.gen.ts)
	cd $(TS) && $(NPM) run --silent generate

verify-typescript: $(TS)/node_modules/.package-lock.json ## fail when the TypeScript SDK's types are stale
	@cd $(TS) && $(NPM) run --silent generate -- --check >/dev/null || \
	  { echo "$(TS)/src/schema.gen.ts is stale: run make generate and commit"; exit 1; }

test-typescript: build $(TS)/node_modules/.package-lock.json ## build the TypeScript SDK, run its tests against bin/ferry
	cd $(TS) && FERRY_BIN=$(CURDIR)/$(BIN)/ferry $(NPM) test

# --- The web console (services/console/web → services/console/dist, embedded in the binary) ------------------------
# Built with esbuild from the TypeScript SDK's sources, so it needs the SDK's node_modules too. The build is
# deterministic: verify-console rebuilds in memory and fails when the committed bundle differs.
CONSOLE := services/console/web

$(CONSOLE)/node_modules/.package-lock.json: $(CONSOLE)/package-lock.json
	cd $(CONSOLE) && $(NPM) ci --no-audit --no-fund

generate-console: $(CONSOLE)/node_modules/.package-lock.json $(TS)/node_modules/.package-lock.json ## type-check and rebuild the web console's bundle (services/console/dist)
	cd $(CONSOLE) && $(NPM) run --silent typecheck && $(NPM) run --silent build

verify-console: $(CONSOLE)/node_modules/.package-lock.json $(TS)/node_modules/.package-lock.json ## fail when the console does not type-check or its committed bundle is stale
	@cd $(CONSOLE) && $(NPM) run --silent typecheck && $(NPM) run --silent check

screenshots: tools ## run the console's browser tests and write their screenshots to docs/console/
	FERRY_CONSOLE_SCREENSHOTS=1 $(GO) test -count=1 -run '^TestConsole' ./tests/console/
