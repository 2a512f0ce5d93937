# spine — run `make help` for the targets.
GO        ?= go
BIN       := bin/spine
MODULE    := github.com/spinehq/spine
# The core packages' tests run under the race detector only (once: a
# second run without it would find nothing new and cost minutes); every
# other package's run without it.
CORE_PKGS := streams recorder library spine desktop server accounting node apps importer gateway
CORE      := $(addprefix ./,$(addsuffix /,$(CORE_PKGS)))
REST       = $(filter-out $(addprefix $(MODULE)/,$(CORE_PKGS)),$(shell $(GO) list ./...))
TEST_FLAGS ?= -count=1 -timeout 9m

.PHONY: help run build test vet fmt fmt-check lint bench fuzz clean dashboards-check ui-check ccusage-parity mcp-inspector bench-dispatch bench-lag bench-ui bench-otlp real-apps

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-20s %s\n", $$1, $$2}'

run: build ## run spine serve on embedded defaults (in-process NATS, local or private PostgreSQL)
	./$(BIN) serve

build: ## build bin/spine
	$(GO) build -o $(BIN) ./cmd/spine

test: vet fmt-check ## vet, gofmt check, every test: the core packages' under the race detector
	$(GO) test $(TEST_FLAGS) $(REST)
	$(GO) test -race $(TEST_FLAGS) $(CORE)

vet: ## go vet ./...
	$(GO) vet ./...

fmt: ## gofmt -w every Go file
	gofmt -w $$(git ls-files '*.go')

fmt-check: ## fail if a Go file is not gofmt-clean
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: vet fmt-check ## vet and gofmt check

bench: build ## spine bench ingest with default flags (JSON on stdout)
	./$(BIN) bench ingest

# fuzz finds its targets (each func FuzzX in a test file) instead of listing
# them, so a new or renamed one is not left out: go test -fuzz passes,
# fuzzing nothing, when its pattern matches no target.
FUZZ_TIME ?= 30s

fuzz: ## run every fuzz target (each func FuzzX in a test file) for FUZZ_TIME, 30s by default
	@git grep -o -E '^func Fuzz[A-Za-z0-9_]+' -- '*_test.go' | sed -E 's|^(.*)/[^/]+:func (Fuzz.*)|./\1/ \2|' | sort | \
	while read -r dir target; do \
		echo "$(GO) test -run='^$$' -fuzz='^$$target$$' -fuzztime=$(FUZZ_TIME) $$dir"; \
		$(GO) test -run='^$$' -fuzz="^$$target\$$" -fuzztime=$(FUZZ_TIME) "$$dir" || exit 1; \
	done

dashboards-check: ## dashboards' PromQL through a real Prometheus (installed from Debian if missing) and SQL against a spine fed with sessions
	@command -v prometheus >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }
	SPINE_DASHBOARDS_CHECK=1 $(GO) test -count=1 -v -run 'TestDashboards' ./dashboards/

# Every page test is a func Test…InChromium; ui-check runs them all with
# SPINE_BROWSER_TESTS=1, so a missing Chromium fails instead of skipping.
ui-check: ## every page test in headless Chromium (installed from Debian if missing), screenshots in bin/screenshots/
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	@mkdir -p bin/screenshots
	SPINE_BROWSER_TESTS=1 SPINE_SCREENSHOT_DIR=$(CURDIR)/bin/screenshots $(GO) test -count=1 -v -run 'InChromium' ./...

mcp-inspector: build ## drive /mcp with the MCP Inspector CLI (npx, pinned): two tools, remoteSession.create → read
	@command -v npx >/dev/null || { echo "mcp-inspector needs npx (apt-get install -y npm)"; exit 1; }
	scripts/mcp-inspector.sh

bench-dispatch: build ## spine bench dispatch: create → SSE notify p50/p99, claim → complete cycles/s (JSON on stdout)
	./$(BIN) bench dispatch

bench-ui: build ## spine bench ui: first render of a 10,000-chunk, 1,000-step session's page, beside the plain SQL reads of its rows (JSON on stdout)
	./$(BIN) bench ui

bench-lag: build ## spine bench lag: app line written → readable through spine, p50/p99, for spine collect and spine run, beside raw ingest (JSON on stdout)
	./$(BIN) bench lag

bench-otlp: build ## spine bench otlp: Claude Code OTLP log events/s through /otlp/v1/logs, protobuf and JSON, until projected, beside raw ingest (JSON on stdout)
	./$(BIN) bench otlp

CCUSAGE_VERSION := 20.0.24
CCUSAGE_BIN     := bin/ccusage-$(CCUSAGE_VERSION)/node_modules/.bin/ccusage
ccusage-parity: ## ccusage (npm, pinned) and spine import on the same fixtures: tokens per session and per day must match (SPINE_CCUSAGE_RECORD=1 rewrites the offline copy)
	@command -v npm >/dev/null || { echo "ccusage-parity needs npm (Node.js)"; exit 1; }
	@test -x $(CCUSAGE_BIN) || npm install --silent --no-audit --no-fund --prefix bin/ccusage-$(CCUSAGE_VERSION) ccusage@$(CCUSAGE_VERSION)
	SPINE_CCUSAGE=$(CURDIR)/$(CCUSAGE_BIN) $(GO) test -count=1 -v -run 'TestCcusage' ./importer/

# The versions and binaries internal/apprig expects (TestMakefileAgrees holds them to it).
# The binaries come in npm's optional platform packages, which can fail to
# install without failing npm: real-apps checks each binary is there.
CLAUDE_CODE_VERSION := 2.1.197
CODEX_VERSION       := 0.171.0
CLAUDE_BIN := bin/claude-code-$(CLAUDE_CODE_VERSION)/node_modules/@anthropic-ai/claude-code-linux-x64/claude
CODEX_BIN  := bin/codex-$(CODEX_VERSION)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
real-apps: ## install the pinned Claude Code and Codex (npm) into bin/ for the real-app tests (internal/apprig), which skip naming this target without them
	@command -v npm >/dev/null || { echo "real-apps needs npm (Node.js)"; exit 1; }
	@test -x $(CLAUDE_BIN) || npm install --silent --no-audit --no-fund --prefix bin/claude-code-$(CLAUDE_CODE_VERSION) @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	@test -x $(CLAUDE_BIN) || { echo "real-apps: npm installed @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) but not $(CLAUDE_BIN) (its optional platform package)"; exit 1; }
	@test -x $(CODEX_BIN) || npm install --silent --no-audit --no-fund --prefix bin/codex-$(CODEX_VERSION) @openai/codex@$(CODEX_VERSION)
	@test -x $(CODEX_BIN) || { echo "real-apps: npm installed @openai/codex@$(CODEX_VERSION) but not $(CODEX_BIN) (its optional platform package)"; exit 1; }

clean: ## remove bin/ (./data keeps your local NATS and PostgreSQL state)
	rm -rf bin
