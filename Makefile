# Two commands for a newcomer: `make demo` and `make test` (see README.md).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/.dagster_home

.PHONY: demo test test-fast lint dev serve serve-stop validate clean prerequisites browser

prerequisites:
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "catalake needs Python 3.11, found " + sys.version.split()[0]'
	@command -v java >/dev/null || { echo "catalake needs Java 17 (OpenJDK) on PATH for Spark"; exit 1; }
	@command -v npm >/dev/null || { echo "catalake needs npm (Node.js) to install the data docs' JS/CSS"; exit 1; }

# The environment, from the project's own files: exact pins in constraints.txt.
# The data docs' JS/CSS come from npm (exact versions in web/package-lock.json) into the package,
# so the docs render offline (src/catalake/platform/quality/webassets.py). Then the Spark driver's
# class archive (src/catalake/platform/spark.py, make_archive: every local session starts 3 s sooner;
# without it, sessions start as before).
$(BIN)/.installed: pyproject.toml constraints.txt web/package-lock.json
	$(MAKE) prerequisites
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	cd web && npm ci --silent
	$(BIN)/python -m catalake.platform.quality.webassets web/node_modules
	$(BIN)/python -m catalake.platform.spark || true
	touch $@

# The offline data docs test drives Debian's chromium (headless, no network): installed here when
# missing and we may (root); otherwise that one test says how to install it and is skipped.
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || { \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
	  { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }; }

demo: $(BIN)/.installed
	mkdir -p $(DAGSTER_HOME)
	$(BIN)/catalake catalog show src/catalake/demo/catalog
	$(BIN)/catalake run --from 2026-11-20 --to 2026-11-21
	@echo
	@echo "The two days were one Spark job (local[*]; 'engine: spark' above, with the Spark application and its UI,"
	@echo "which lives while the run does): executors classified the records and wrote Parquet, the driver committed"
	@echo "Delta, one commit per table for both days."
	@echo "Done. Delta tables under $(CURDIR)/warehouse:"
	@echo "  catalog/messages (the catalog), messages/<group>__<message> (one per definition), deadletter"
	@echo "  (open them with deltalake.DeltaTable, Spark or any Delta reader; list them: $(BIN)/catalake tables)."
	@echo "dbt models (events_daily, deadletter_daily, catalog_coverage, ride_lifecycle): $(CURDIR)/warehouse/analytics.duckdb"
	@echo "Expectation suites and GX data docs (they read offline): $(BIN)/catalake docs"
	@echo "What the catalog does not describe, as proposed definitions: $(BIN)/catalake drift --date 2026-11-20"
	@echo "See the runs, partitions, row counts and the conservation check in the Dagster UI:"
	@echo "  make dev, then http://127.0.0.1:3000"

# The whole suite, in parallel (pytest-xdist, a worker per core; tests/conftest.py keeps the
# workers apart): about 10 minutes on a 2-core machine (18 before the driver's class archive;
# benchmarks/RESULTS.md, sessions 25 and 29), plus the install of a fresh clone.
test: $(BIN)/.installed browser lint
	$(BIN)/python -m pytest -n auto

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks

# the pure Python tier (no JVM), in parallel as `test`: 100 to 107 s on a 2-core machine
# (benchmarks/RESULTS.md, session 25), run it often
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -n auto -m "not spark and not project and not repeated"

dev: $(BIN)/.installed
	mkdir -p $(DAGSTER_HOME)
	$(BIN)/python -c 'from catalake.instance import ensure_config; ensure_config("$(DAGSTER_HOME)")'
	$(BIN)/dagster dev -w workspace.yaml

# Production-style, on this machine: PostgreSQL (Debian's package, data in .catalake/serve), a warm
# Spark Connect server every run connects to (deploy/spark-connect.sh), the run queue and the
# daemon (deploy/dagster.yaml), the webserver on :3000. README "Running in production".
serve: $(BIN)/.installed
	BIN=$(BIN) bash deploy/serve.sh start

serve-stop:
	BIN=$(BIN) bash deploy/serve.sh stop

validate: $(BIN)/.installed
	$(BIN)/dagster definitions validate -w workspace.yaml
	$(BIN)/catalake catalog validate src/catalake/demo/catalog

clean:
	rm -rf $(VENV) warehouse .dagster_home .pytest_cache web/node_modules src/catalake/static/datadocs
