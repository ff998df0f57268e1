# tse-scrapy: `make run` (demo crawl) and `make test` set everything up themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test bench deploy clean

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

# Serve the demo site on 127.0.0.1 and crawl it into data/demo, one page a second.
run: install
	$(PY) demo/run_demo.py data/demo

test: install
	$(PY) -m pytest -q

# Benchmarks (not part of `make test`): results go to bench/RESULTS.md.
bench: install
	$(PY) bench/run.py

# Deploy to the scrapyd at [deploy:local] in scrapy.cfg (start one with `.venv/bin/scrapyd`).
deploy: install
	.venv/bin/scrapyd-deploy local

clean:
	rm -rf $(VENV) data build *.egg-info
