# The two commands of the README: `make demo` and `make test`. Everything else is set-up they
# run themselves, so that a fresh clone needs nothing installed by hand beyond Go and Node.js.
# `make soak` runs the same tests with the acceptance and load tests at full scale.

GO        ?= go
NPM       ?= npm
# npm ci writes node_modules/.package-lock.json; it is stale when the lock file is newer.
NODE_DEPS := node_modules/.package-lock.json

.PHONY: test soak demo deps vet bench bench-check fuzz

# Most tests wait on the service (a queue message's visibility, a settle window) rather
# than compute: -parallel 4 lets four of a package's parallel tests wait at once on two cores.
test: deps vet
	$(GO) test -race -count=1 -parallel 4 -timeout 30m ./...

# The same tests, with TABLEPATTERNS_SOAK=1: each acceptance and load test at the scale it
# had before it was cut to what proves its promise (internal/testenv.Scale), e.g. 20,000
# entities killed ten times, 1,000 jobs under faults. Its last results are in SOAK.md.
# SOAK_RUN=REGEXP runs only the tests it matches (go test -run).
SOAK_RUN ?= .
soak: deps vet
	TABLEPATTERNS_SOAK=1 $(GO) test -race -count=1 -parallel 4 -timeout 120m -run '$(SOAK_RUN)' ./...

demo: deps
	$(GO) run ./examples/demo

deps: $(NODE_DEPS)
	$(GO) mod download

# A worktree whose node_modules is a link to a shared install must not run npm ci: npm
# empties the directory the link points to before it replaces the link, which leaves every
# other checkout that shares it without Azurite until the install is copied back.
$(NODE_DEPS): package.json package-lock.json
	@if [ -L node_modules ]; then \
	  echo "node_modules is a link to a shared install: not running npm ci through it"; \
	else \
	  $(NPM) ci --no-audit --no-fund && touch $@; \
	fi

vet:
	$(GO) vet ./...

# Benchmarks: every comparison of BENCHMARKS.md, each with the -benchtime that keeps one
# run of all of them to about six or seven minutes on a 2-core machine, then a table of the ratios
# (internal/benchcmp/cmd/benchtable). RUNS=3 repeats the whole set three times and prints
# the median and the range of each ratio. The raw output stays in $(BENCH_OUT).
RUNS      ?= 1
BENCH_OUT ?= bench.out
GOBENCH   := $(GO) test -p 1 -run '^$$' -benchmem -count=1

bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -ec
bench: deps
	@rm -f $(BENCH_OUT)
	@for run in $$(seq $(RUNS)); do \
	  echo "== run $$run of $(RUNS), $$(date -u +%FT%TZ)"; \
	  $(GOBENCH) -bench . -benchtime=0.5s ./codec/ ./codec/keys/ ./retry/; \
	  $(GOBENCH) -bench 'PointGet|Insert$$|TrackedUpdate' -benchtime=300x ./repo/; \
	  $(GOBENCH) -bench Query1000 -benchtime=30x ./repo/; \
	  $(GOBENCH) -bench Bulk10000 -benchtime=1x ./repo/; \
	  $(GOBENCH) -bench BulkThrottledUniform -benchtime=3x ./repo/; \
	  $(GOBENCH) -bench BulkThrottledHotCold -benchtime=1x ./repo/; \
	  $(GOBENCH) -bench Throughput -benchtime=3x ./queueworker/; \
	  $(GOBENCH) -bench WriteLog -benchtime=3x ./patterns/bloblog/; \
	  $(GOBENCH) -bench ReadLogRange -benchtime=100x ./patterns/bloblog/; \
	  $(GOBENCH) -bench ReadSeries -benchtime=200x ./patterns/dataseries/; \
	  $(GOBENCH) -bench . -benchtime=200x ./patterns/denormalize/; \
	  $(GOBENCH) -bench LookupByLastName -benchtime=50x ./patterns/indexentity/; \
	  $(GOBENCH) -bench . -benchtime=20x ./patterns/keyspread/; \
	  $(GOBENCH) -bench . -benchtime=100x ./patterns/largeentity/; \
	  $(GOBENCH) -bench Newest -benchtime=20x ./patterns/logtail/; \
	  $(GOBENCH) -bench DropPeriod -benchtime=2x ./patterns/periodtable/; \
	  $(GOBENCH) -bench FindByEmail -benchtime=200x ./patterns/secondaryindex/; \
	  $(GOBENCH) -bench 'ArchiveRange$$' -benchtime=3x ./patterns/consistency/; \
	  $(GOBENCH) -bench ArchiveRangeThrottled -benchtime=1x ./patterns/consistency/; \
	  $(GOBENCH) -bench RestoreThrottled -benchtime=1x ./patterns/tablearchive/; \
	  $(GOBENCH) -bench BackfillThrottled -benchtime=1x ./patterns/secondaryindex/; \
	  $(GOBENCH) -bench DualWriteRequests -benchtime=100x ./patterns/migrate/; \
	  $(GOBENCH) -bench RangeJobRequests -benchtime=1x ./patterns/migrate/; \
	  $(GOBENCH) -bench BackfillThrottled -benchtime=1x ./patterns/migrate/; \
	done 2>&1 | tee $(BENCH_OUT)
	@$(GO) run ./internal/benchcmp/cmd/benchtable < $(BENCH_OUT)

# The check of BENCHMARKS.md: three runs (RUNS=3 unless given), each of their ratios and
# request counts inside the range the file's table states for it, or the target fails.
bench-check: RUNS = 3
bench-check: bench
	@$(GO) run ./internal/benchcmp/cmd/benchtable -check BENCHMARKS.md < $(BENCH_OUT)
