# gossamer: `make demo` crawls the bundled local site, `make test` runs the checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck pytest system-deps clean deploy-check docs docs-check

install: $(STAMP)

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		echo "python3-venv missing; installing it with apt-get"; \
		apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }

# setup.py builds the C parts (src/gossamer/**/_*.c) in place; where they cannot be built the
# Python code they speed up runs, and the line after the install says which are in use.
$(STAMP): pyproject.toml setup.py $(wildcard src/gossamer/*/_*.c src/gossamer/_*.h) | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,plot,render,docs]'
	@$(BIN)/python -c "from gossamer.parse import native; print('C parts:', native.in_use())"
	@touch $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy

system-deps:
	@bash scripts/system-deps.sh

# tests/wacz replay WACZ files in pywb and validate them with py-wacz, both from a virtualenv of
# their own (tests/requirements-pywb.txt: pywb pins old redis and werkzeug versions).
PYWB_VENV := .venv-pywb
PYWB_STAMP := $(PYWB_VENV)/.installed

$(PYWB_STAMP): tests/requirements-pywb.txt | $(BIN)/python
	$(PYTHON) -m venv $(PYWB_VENV)
	$(PYWB_VENV)/bin/python -m pip install -q -r tests/requirements-pywb.txt
	@touch $(PYWB_STAMP)

pytest: $(STAMP) system-deps $(PYWB_STAMP)
	$(BIN)/pytest -q -n 4 --dist worksteal

test: lint typecheck docs-check pytest

# make docs: the documentation site (mkdocs.yml, docs/) into site/, its generated reference
# pages (settings, records) written again from the code first. make test checks they are
# current and builds the site in strict mode (a broken link or anchor fails); its pytest run
# executes every command block of README.md and docs/ marked runnable and compares the
# output a console block shows with what its commands print (tests/test_docs_commands.py).
docs: $(STAMP)
	$(BIN)/python scripts/reference_pages.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-check: $(STAMP)
	$(BIN)/python scripts/reference_pages.py --check
	@out=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict \
		--site-dir "$$out"; status=$$?; rm -rf "$$out"; exit $$status

# make deploy-check: only deploy/'s checks (tests/deploy: schemas, hadolint, the install steps,
# the manifests' cluster on one machine; docs/deploy.md). make test runs them too.
deploy-check: $(STAMP) system-deps
	$(BIN)/pytest -q tests/deploy

clean:
	rm -rf $(VENV) $(PYWB_VENV) site crawl-out demo-out .mypy_cache .pytest_cache .ruff_cache

# make bench: every figure of the Performance section of the README (benchmarks/), starting
# with gossamer vs Scrapy on a generated local web served by nginx: the whole job (text and
# WARC vs trafilatura and a feed export), then links only. BENCH_ARGS passes options to that
# first one, e.g. make bench BENCH_ARGS=--quick or BENCH_ARGS="--only content"; make
# bench-crawl runs only it.
# make bench-real: the same two comparisons on real documents (Debian's documentation
# packages, installed when missing; benchmarks/bench_realpages.py), REAL_ARGS its options,
# e.g. REAL_ARGS="--rounds 3" or REAL_ARGS="--only links".
# make bench-cluster runs only the cluster scaling table (1, 2, 4, 8 workers on one Redis;
# redis-server from Debian), CLUSTER_ARGS its options, e.g. CLUSTER_ARGS=--quick.
# make bench-focus-real: focused crawling on four real documentation sites behind one hub page,
# against breadth first and a link oracle (benchmarks/bench_focus_real.py), FOCUS_ARGS its
# options, e.g. FOCUS_ARGS="--topics email --n 200".
# make bench-fresh: a continuous crawl (--recrawl) against repeated full crawls on a local web
# that changes on a schedule (staleness, discovery, bytes and CPU per revisit cycle,
# politeness; two 600-s runs, about 22 minutes), then the memory of a continuous crawl over
# 10^6 known URLs (about 5 minutes); FRESH_ARGS passes options to the first, e.g.
# FRESH_ARGS=--quick or FRESH_ARGS="--seconds 150".
# make bench-control: the control plane with 1,000 simulated workers on one Redis (Redis
# ops and CPU per worker, assignment reach, leader failover, moves; docs/deploy.md),
# CONTROL_ARGS its options, e.g. CONTROL_ARGS="--workers 200".
SCRAPY_VENV := benchmarks/.venv-scrapy
SCRAPY_STAMP := $(SCRAPY_VENV)/.installed
NGINX_BIN ?= /usr/sbin/nginx
BENCH_ARGS ?=
CLUSTER_ARGS ?=
REAL_ARGS ?=
FOCUS_ARGS ?=
FRESH_ARGS ?=
CONTROL_ARGS ?=

.PHONY: bench bench-crawl bench-real bench-nginx bench-cluster bench-balance bench-focus-real \
	bench-fresh bench-control bench-redis-memory

$(SCRAPY_STAMP): benchmarks/requirements-scrapy.txt
	$(PYTHON) -m venv $(SCRAPY_VENV)
	$(SCRAPY_VENV)/bin/python -m pip install -q --upgrade pip
	$(SCRAPY_VENV)/bin/python -m pip install -q -r benchmarks/requirements-scrapy.txt
	@touch $(SCRAPY_STAMP)

bench-nginx:
	@[ -x $(NGINX_BIN) ] || { \
		echo "nginx missing; installing nginx-light with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends nginx-light >/dev/null || exit 1; \
		if [ -f /run/nginx.pid ]; then kill "$$(cat /run/nginx.pid)" 2>/dev/null || true; fi; }

bench-crawl: $(STAMP) $(SCRAPY_STAMP) bench-nginx
	$(BIN)/python benchmarks/bench_crawl.py $(BENCH_ARGS)

bench-real: $(STAMP) $(SCRAPY_STAMP) bench-nginx
	$(BIN)/python benchmarks/bench_realpages.py $(REAL_ARGS)

bench-focus-real: $(STAMP) bench-nginx
	$(BIN)/python benchmarks/bench_focus_real.py $(FOCUS_ARGS)

bench-cluster: $(STAMP) system-deps
	$(BIN)/python benchmarks/bench_cluster.py $(CLUSTER_ARGS)

bench-control: $(STAMP) system-deps
	$(BIN)/python benchmarks/bench_control_plane.py $(CONTROL_ARGS)

# make bench-redis-memory: Redis memory per queued URL by structure (docs/capacity.md);
# REDIS_MEMORY_ARGS its options, e.g. REDIS_MEMORY_ARGS="--urls 10000000 --hosts 100000".
bench-redis-memory: $(STAMP) system-deps
	$(BIN)/python benchmarks/bench_redis_memory.py $(REDIS_MEMORY_ARGS)

# make bench-balance: P1's experiment (5 unequal workers, every allocator; docs/load-balancing.md).
bench-balance: $(STAMP) system-deps
	$(BIN)/python benchmarks/bench_balance.py --plot docs/load-balancing-finish-times.png

bench-fresh: $(STAMP)
	$(BIN)/python benchmarks/bench_freshness.py $(FRESH_ARGS)
	$(BIN)/python benchmarks/bench_revisit_memory.py

bench: bench-crawl bench-real bench-fresh system-deps
	$(BIN)/python benchmarks/bench_seen.py
	$(BIN)/python benchmarks/bench_frontier.py
	$(BIN)/python benchmarks/bench_scale.py
	$(BIN)/python benchmarks/bench_seeds.py
	$(BIN)/python benchmarks/bench_latency.py
	$(BIN)/python benchmarks/bench_rules.py
	$(BIN)/python benchmarks/bench_render.py
	$(BIN)/python benchmarks/bench_cluster.py $(CLUSTER_ARGS)
	$(BIN)/python benchmarks/bench_control_plane.py $(CONTROL_ARGS)
	$(BIN)/python benchmarks/bench_balance.py --plot docs/load-balancing-finish-times.png
