# judgecal: `make demo` and `make test` set up .venv (idempotently) and run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The exact versions installed (pyproject.toml holds the ranges a user's install may pick from).
CONSTRAINTS := constraints.txt
# llama.cpp is compiled for portable AVX2 (no AMX/AVX-512: AMX tiles crash in some VMs).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF
# A local dataset mirror (laid out as <owner>/<repo>/<path>) is used when one sits beside the checkout.
ifeq ($(origin JUDGECAL_DATA_MIRROR), undefined)
ifneq ($(wildcard ../shared/datasets),)
export JUDGECAL_DATA_MIRROR := $(abspath ../shared/datasets)
endif
endif

.PHONY: demo app test docs lint bench setup-demo setup-test chromium pdf-libs demo-pdf-libs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q -U pip wheel setuptools

# The demo's extras and the explorer's (`app`): the demo's last line, `.venv/bin/judgecal app --workspace
# demo-workspace` (or `make app`), opens the explorer.
$(VENV)/.demo-installed: pyproject.toml setup.py $(CONSTRAINTS) | $(VENV)/bin/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(PIP) install -q -c $(CONSTRAINTS) -e '.[local,openai,pdf,app]'
	touch $@

# torch is pinned (constraints.txt) and installed first so that nothing pulls an unpinned (CUDA) build.
$(VENV)/.test-installed: pyproject.toml setup.py $(CONSTRAINTS) | $(VENV)/bin/python
	$(PIP) install -q -c $(CONSTRAINTS) torch
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(PIP) install -q -c $(CONSTRAINTS) -e '.[local,gemma,openai,anthropic,hf,app,server,annotation,pdf,ray,inspect,mlflow,dspy,docs,dev]'
	touch $(VENV)/.demo-installed $(VENV)/.docs-installed $@

# Label Studio pins Django and friends: it lives in a virtual environment of its own.
LS_VENV := $(VENV)/label-studio
export JUDGECAL_LS_VENV := $(abspath $(LS_VENV))
$(LS_VENV)/.installed-1.23.2: | $(VENV)/bin/python
	$(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/pip install -q -U pip
	$(LS_VENV)/bin/pip install -q label-studio==1.23.2
	touch $@

setup-demo: $(VENV)/.demo-installed
# Chromium for the explorer's browser test (Playwright drives it): Debian's package when none is installed.
chromium:
	@if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Chromium from the system packages (chromium, chromium-driver)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else \
		echo "The explorer's browser test needs Chromium. Install it, then run make test again:" >&2; \
		echo "  sudo apt-get install chromium chromium-driver   (Debian/Ubuntu; or put a chromium on PATH)" >&2; \
		exit 1; \
	fi

# The PDF trust report (WeasyPrint) needs Pango/HarfBuzz; its test reads the PDF with poppler-utils.
pdf-libs:
	@if ldconfig -p 2>/dev/null | grep -q libpangoft2-1.0 && command -v pdftotext >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing the PDF report's system packages (libpango-1.0-0, libpangoft2-1.0-0, poppler-utils)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpango-1.0-0 \
			libpangoft2-1.0-0 libharfbuzz-subset0 poppler-utils >/dev/null; \
	else \
		echo "The PDF report and its test need Pango and poppler-utils. Install them, then run make again:" >&2; \
		echo "  sudo apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 poppler-utils" >&2; \
		exit 1; \
	fi

# The demo's PDF needs only Pango: installed from Debian's packages when missing and allowed (root), otherwise
# the demo runs anyway and skips the PDF with one line saying what to install.
demo-pdf-libs:
	@if ldconfig -p 2>/dev/null | grep -q libpangoft2-1.0; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing the PDF report's system packages (libpango-1.0-0, libpangoft2-1.0-0, libharfbuzz-subset0)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpango-1.0-0 \
			libpangoft2-1.0-0 libharfbuzz-subset0 >/dev/null) || echo "could not install them; the demo skips the PDF"; \
	fi

setup-test: $(VENV)/.test-installed $(LS_VENV)/.installed-1.23.2 chromium pdf-libs

demo: $(VENV)/.demo-installed demo-pdf-libs
	$(VENV)/bin/judgecal demo --workspace demo-workspace

# The explorer on the demo's workspace (http://127.0.0.1:8501); APP_PORT=... for another port.
APP_PORT ?= 8501
app: $(VENV)/.demo-installed
	$(VENV)/bin/judgecal app --workspace demo-workspace --port $(APP_PORT)

lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check judgecal apps rubrics annotation tests benchmarks
	$(VENV)/bin/mypy judgecal apps
	$(VENV)/bin/lint-imports

# The documentation site: warnings are errors (a broken link or anchor fails the build); the CLI, metric and
# audit.json reference pages are generated from the code (docs/hooks/reference.py).
# The site needs only the core and the `docs` extra (its hooks import nothing else).
$(VENV)/.docs-installed: pyproject.toml setup.py $(CONSTRAINTS) | $(VENV)/bin/python
	$(PIP) install -q -c $(CONSTRAINTS) -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

test: $(VENV)/.test-installed $(LS_VENV)/.installed-1.23.2 chromium pdf-libs
	$(VENV)/bin/ruff check judgecal apps rubrics annotation tests benchmarks
	$(VENV)/bin/mypy judgecal apps
	$(VENV)/bin/lint-imports
	$(MAKE) docs
	$(PY) -m pytest -q -ra

bench: $(VENV)/.test-installed $(LS_VENV)/.installed-1.23.2
	mkdir -p benchmarks/results
	$(PY) benchmarks/bench_engine.py --repeats 5 --also 256:10000 | tee benchmarks/results/engine.json
	$(PY) benchmarks/bench_store.py | tee benchmarks/results/store.json
	$(PY) benchmarks/bench_smollm2.py | tee benchmarks/results/smollm2.json
	$(PY) benchmarks/bench_demo.py
	$(PY) benchmarks/bench_ds.py | tee benchmarks/results/dawid_skene.json
	$(PY) benchmarks/bench_labelstudio.py | tee benchmarks/results/labelstudio.json
	$(PY) benchmarks/bench_peer.py --out benchmarks/results/peer.json
	$(PY) benchmarks/bench_ray.py | tee benchmarks/results/ray.json
	$(PY) benchmarks/bench_explorer.py | tee benchmarks/results/explorer.json
	$(PY) benchmarks/bench_monitor.py --out benchmarks/results/monitor.json

clean:
	rm -rf demo-workspace site .pytest_cache .mypy_cache .ruff_cache
