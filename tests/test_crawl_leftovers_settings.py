"""Settings whose Scrapy default is None (or that have none) but that Scrapy reads as a number, a
boolean or a name: a value it cannot read is refused in one line, exit 2, before anything is written
or fetched, by ``tse crawl`` and ``scrapy crawl tse`` alike (the typed ones: test_crawl_settings.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import scrapy

from tests import test_crawl_settings as crawl_settings
from tests.test_crawl_settings import site  # noqa: F401 - the site fixture
from tse_scrapy.crawlstart import setting_defaults
from tse_scrapy.rules.crawling.crawlargs import TLS_VERSIONS, UNTYPED_SETTING_KINDS

PERIODIC_LOG = '{"scrapy.extensions.periodic_log.PeriodicLog": 0}'

# (the setting given, what the one line says it must be, more settings the crawl is given)
BAD_VALUES = [
    # A traceback ("invalid literal for int()"), exit 1, a crawl state left behind.
    ("CONCURRENT_REQUESTS_PER_IP=x", "a whole number", ()),
    ("CONCURRENT_REQUESTS_PER_IP=1.5", "a whole number", ()),
    # A traceback from PeriodicLog, once enabled.
    ("PERIODIC_LOG_STATS=maybe", "a JSON object, or True or False (or 1 or 0)", ("EXTENSIONS=" + PERIODIC_LOG,)),
    ("PERIODIC_LOG_DELTA=[1]", "a JSON object, or True or False (or 1 or 0)", ("EXTENSIONS=" + PERIODIC_LOG,)),
    # Every request failed ("the seed URL could not be fetched (NotSupported)"), http:// ones too.
    ("DOWNLOAD_TLS_MIN_VERSION=TLSv9", "one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3", ()),
    ("DOWNLOAD_TLS_MAX_VERSION=tlsv1.2", "one of TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3", ()),
]
GOOD_VALUES = [
    "CONCURRENT_REQUESTS_PER_IP=0",
    'PERIODIC_LOG_STATS={"include": ["downloader/"]}',
    "PERIODIC_LOG_DELTA=True",
    "DOWNLOAD_TLS_MIN_VERSION=TLSv1.2",
]


def _settings(*given):
    return [x for setting in given for x in ("-s", setting)]


def tse_crawl(server, pagedir, *settings):
    return crawl_settings.tse_crawl(server, pagedir, *_settings(*settings))


def tse_refused(server, pagedir, *settings):
    """``tse crawl`` in this process, for its refusal (test_crawl_settings.tse_refused)."""
    return crawl_settings.tse_refused(server, pagedir, *_settings(*settings))


def scrapy_refused(server, pagedir, *settings):
    """``scrapy crawl tse`` in this process, for its refusal (test_crawl_settings.scrapy_refused)."""
    return crawl_settings.scrapy_refused(server, pagedir, *_settings(*settings))


@pytest.mark.parametrize("program", ["tse crawl", "scrapy crawl tse"])
@pytest.mark.parametrize(("given", "wanted", "more"), BAD_VALUES)
def test_a_value_scrapy_cannot_read_is_refused_in_one_line(site, program, given, wanted, more):  # noqa: F811
    server, pagedir = site
    run = tse_refused if program == "tse crawl" else scrapy_refused
    result = run(server, pagedir, "DOWNLOAD_DELAY=0", *more, given)
    name, value = given.split("=", 1)
    assert result.stderr.decode() == f"{program}: -s {name} must be {wanted}: {value}\n"
    assert result.returncode == 2
    assert result.stdout == b""
    assert server.hits == []
    assert os.listdir(pagedir) == []


# Each value in one crawl (as test_crawl_settings' readable values): any one refused would refuse the crawl.
def test_values_scrapy_reads_are_taken(site):  # noqa: F811
    server, pagedir = site
    result = tse_crawl(server, pagedir, "DOWNLOAD_DELAY=0", "EXTENSIONS=" + PERIODIC_LOG, *GOOD_VALUES)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert sorted(os.listdir(pagedir)) == [".crawler", "1", "2"]


# Read as numbers or booleans, default None, but never by a TSE crawl: the files and images pipelines'.
NOT_READ_BY_A_CRAWL = {"AWS_MAX_POOL_CONNECTIONS"}
# Set by the spider itself (from its arguments), at the command line's priority: never the user's to give.
SET_BY_THE_SPIDER = {"TSE_UPDATE"}


def test_every_setting_read_as_more_than_text_without_a_typed_default_is_checked():
    # Scrapy (and this project) read these with getint, getfloat or getbool: a default of None (or
    # none) cannot tell check_setting_values how, so each must be in UNTYPED_SETTING_KINDS.
    sources = [*Path(scrapy.__file__).parent.rglob("*.py"), *Path("tse_scrapy").rglob("*.py")]
    read = re.compile(r"get(?:float|int|bool)\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']")
    defaults = setting_defaults()
    untyped = {
        name
        for path in sources
        for name in read.findall(path.read_text(encoding="utf-8"))
        if type(defaults.get(name)) not in (int, float, bool)
    }
    assert untyped - NOT_READ_BY_A_CRAWL - SET_BY_THE_SPIDER <= set(UNTYPED_SETTING_KINDS)
    assert {"CONCURRENT_REQUESTS_PER_IP", "PERIODIC_LOG_STATS", "PERIODIC_LOG_DELTA"} <= untyped


def test_the_tls_versions_are_scrapys():
    from scrapy.utils.ssl import _STDLIB_VERSION_MAP

    assert set(TLS_VERSIONS) == set(_STDLIB_VERSION_MAP)
