# The two commands of the README: `make demo` and `make test`. Everything else is set-up they
# run themselves, so that a fresh clone needs nothing installed by hand beyond Go and Node.js.

GO        ?= go
NPM       ?= npm
# npm ci writes node_modules/.package-lock.json; it is stale when the lock file is newer.
NODE_DEPS := node_modules/.package-lock.json

.PHONY: test demo deps vet bench fuzz

test: deps vet
	$(GO) test -race -count=1 -timeout 30m ./...

demo: deps
	$(GO) run ./examples/demo

deps: $(NODE_DEPS)
	$(GO) mod download

$(NODE_DEPS): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

vet:
	$(GO) vet ./...

# Benchmarks: see BENCHMARKS.md for the figures and what each compares.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...
