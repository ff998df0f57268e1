# tse-scrapy: `make run` (demo crawl) and `make test` set everything up themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install compiled run serve test browser nginx redis pdfs lint bench deploy clean

install: $(STAMP) compiled

# requirements.txt is the pinned lock of everything pyproject.toml declares, extras included.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@# An editable install compiles nothing; where PYTHONDONTWRITEBYTECODE is set,
	@# every start would compile tse_scrapy again (0.1 s of CPU a crawl).
	$(PY) -m compileall -q tse_scrapy
	touch $(STAMP)

# A search's modules compiled with Cython next to their sources, again only when their source changed
# (tse_scrapy/compiled.py: a changed source is used as it is until then); without a C compiler, it
# says so and the sources are used.
compiled: $(STAMP)
	@$(PY) -m tse_scrapy.devtools.compile

# Serve the demo site on 127.0.0.1 and crawl it into data/demo, one page a second.
run: install
	$(PY) -m tse_scrapy.devtools.demo data/demo

# Search the demo crawl that `make run` made, in a browser at http://127.0.0.1:8000/, with the demo
# site served again where it was crawled (http://127.0.0.1:8001/), so that the results' links open.
serve: install
	$(PY) -m tse_scrapy.devtools.demo --serve data/demo

# Four test processes (pytest-xdist) on the 2 cores: most tests wait on real servers and crawl
# delays, and the suite must stay under 10 minutes (4,545 tests on a slower day: 9:08 with four, 9:45
# with three; 4,052 tests: 7:11 with three, 8:43-9:01 with two).  Work stealing: a process left idle
# takes tests queued for the others, so that the minute-long ones do not end the run alone (4,944
# tests: 9:27, 95 % of the tests' time over four; 10:47 with the tests handed out in fixed shares;
# 5,102 tests: 9:00).
test: install browser nginx redis pdfs
	$(PY) -m pytest -q -n 4 --dist worksteal

# Debian's packages some tests run, installed when missing (as root): chromium for the
# browser and --render tests (and a font of Han, Kana and Hangul, 7 MB, so that their screenshots
# show Chinese, Japanese and Korean text, not boxes), nginx for the nginx tests, redis-server (built
# with TLS) for the TLS Redis tests, wget to write the web archives tse import reads.
browser:
	@tests/support/install-package.sh chromium chromium "the browser and --render tests"
	@tests/support/install-package.sh fonts-wqy-zenhei /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc "the browser tests' screenshots of CJK text"
	@tests/support/install-package.sh wget wget "the tse import tests"

nginx:
	@tests/support/install-package.sh nginx /usr/sbin/nginx "the nginx tests"

redis:
	@tests/support/install-package.sh redis-server /usr/bin/redis-server "the TLS Redis tests"

# Real PDFs (Debian's manuals) for the PDF tests, qpdf to encrypt one, pdftotext to cross-check the text.
pdfs:
	@tests/support/install-package.sh qpdf qpdf "the encrypted-PDF tests"
	@tests/support/install-package.sh poppler-utils pdftotext "the PDF text cross-check"
	@tests/support/install-package.sh debian-reference-en /usr/share/debian-reference/debian-reference.en.pdf "the PDF tests"
	@tests/support/install-package.sh shared-mime-info /usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf "the PDF tests"
	@tests/support/install-package.sh libtasn1-doc /usr/share/doc/libtasn1-doc/libtasn1.pdf "the PDF tests"
	@tests/support/install-package.sh maint-guide-ru /usr/share/doc/maint-guide-ru/maint-guide.ru.pdf "the Cyrillic PDF test"
	@tests/support/install-package.sh bzip2-doc /usr/share/doc/bzip2/manual.pdf.gz "the PDF tests"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Benchmarks (not part of `make test`): results go to bench/RESULTS.md.
bench: install
	$(PY) bench/run.py

# Deploy to the scrapyd at [deploy:local] in scrapy.cfg (start one with `.venv/bin/scrapyd`).
deploy: install
	.venv/bin/scrapyd-deploy local

# Removes what the build made; never data/, where crawls are kept.
clean:
	rm -rf $(VENV) build *.egg-info tse_scrapy/compiled-modules.json tse_scrapy/.compiled-modules.json.*
	find tse_scrapy \( -name '*.so' -o -name '.*.so.*' \) -delete
