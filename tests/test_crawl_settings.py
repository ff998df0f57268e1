"""Settings given to a crawl (``-s NAME=VALUE``): a value Scrapy cannot read is refused like a bad
argument, in one line, before anything is written or fetched (docs/robustness.md)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import scrapy
from scrapy.settings import Settings, default_settings

from tests.conftest import BIN, ROOT, clean_env, run_scrapy, run_tse
from tests.support.inprocess import scrapy_here, tse_here
from tests.support.sitegen import write_site
from tse_scrapy import settings as project
from tse_scrapy.crawlstart import READ_AS_FLOAT, known_setting_names, setting_defaults
from tse_scrapy.rules.crawling.crawlargs import ArgumentError, check_setting_values


@pytest.fixture
def site(tmp_path, serve):
    server = serve(write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []}).root)
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    return server, pagedir


def tse_crawl(server, pagedir, *options):
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    return run_tse("crawl", seed, pagedir, 1, "--prefix", prefix, *options, timeout=60)


def scrapy_crawl(server, pagedir, *options):
    arguments = [f"seed={server.url}/index.html", f"pagedir={pagedir}", "depth=1", f"prefix={server.url}/"]
    return run_scrapy("crawl", "tse", *[x for a in arguments for x in ("-a", a)], *options, timeout=60)


# The same commands run in this process, for their refusals: a setting is refused in prepare_crawl,
# before Scrapy starts a crawl (its reactor chosen, a page asked for), so what the command writes and
# its exit status are those of the real command, without a process start each.  Each good crawl
# below is a real process.
def tse_refused(server, pagedir, *options):
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    return tse_here("crawl", seed, pagedir, 1, "--prefix", prefix, *options)


def scrapy_refused(server, pagedir, *options):
    arguments = [f"seed={server.url}/index.html", f"pagedir={pagedir}", "depth=1", f"prefix={server.url}/"]
    return scrapy_here("crawl", "tse", *[x for a in arguments for x in ("-a", a)], *options)


BAD_VALUES = {
    # (the setting given, what the one line says it must be)
    "DOWNLOAD_DELAY=abc": "a number, 0 or more",
    "DOWNLOAD_DELAY=inf": "a number, 0 or more",  # (a review's find: no page fetched, no end, its state left)
    "CONCURRENT_REQUESTS=x": "a whole number",
    "RETRY_TIMES=z": "a whole number",
    "DOWNLOAD_MAXSIZE=big": "a whole number",
    "CONCURRENT_REQUESTS=1.5": "a whole number",  # getint("1.5") raises
    "RETRY_ENABLED=yes": "True or False (or 1 or 0)",  # getbool knows no yes
    "TSE_STATE_ENABLED=maybe": "True or False (or 1 or 0)",
    "TSE_RENDER_TIMEOUT=soon": "a number, 0 or more",  # one of the project's own
    "LOG_LEVEL=debug": "one of CRITICAL, FATAL, ERROR, WARNING, WARN, INFO, DEBUG, NOTSET",  # a traceback
    "CLOSESPIDER_PAGECOUNT=-3": "a whole number of pages, 0 for no limit",  # the crawl never ended
    "TSE_MAX_PAGES=many": "a whole number of pages, 0 for no limit",
    "TSE_RENDER_CALL_TIMEOUT=-1": "a number, 0 or more",  # (a module constant before)
}


# Each value through one of the two commands in turn (both check in crawlstart.prepare_crawl): half the
# crawls of every value through both, for the suite's time. One page directory for all of them: each
# refusal leaves it empty (asserted), so the good crawl of each command at the end starts as it would
# after any one of them.
def test_a_setting_scrapy_cannot_read_is_refused_in_one_line(site):
    # It was a traceback ("Task exception was never retrieved ... could not convert string to
    # float: 'abc'"), exit 1, and a crawl state left behind that refused the next good command.
    server, pagedir = site
    commands = {"tse crawl": tse_crawl, "scrapy crawl tse": scrapy_crawl}
    refusing = {"tse crawl": tse_refused, "scrapy crawl tse": scrapy_refused}
    for number, given in enumerate(BAD_VALUES):
        program = list(commands)[number % 2]
        result = refusing[program](server, pagedir, "-s", given)
        name, value = given.split("=", 1)
        assert result.stderr.decode() == f"{program}: -s {name} must be {BAD_VALUES[given]}: {value}\n", given
        assert result.returncode == 2, given
        assert result.stdout == b"", given
        assert server.hits == [], given
        assert os.listdir(pagedir) == [], given
    for program, run in commands.items():
        shutil.rmtree(pagedir)
        pagedir.mkdir()
        again = run(server, pagedir, "-s", "DOWNLOAD_DELAY=0")
        assert again.returncode == 0, (program, again.stderr.decode())
        assert sorted(os.listdir(pagedir)) == [".crawler", "1", "2"], program


MISSPELT = {
    # (the setting given, the known one the one line suggests)
    "DOWNLOAD_DELEY=0": "DOWNLOAD_DELAY",  # a newcomer's find: ignored, the crawl ran at a page a second
    "download_delay=0": "DOWNLOAD_DELAY",
    "CONCURENT_REQUESTS=2": "CONCURRENT_REQUESTS",
    "TSE_MAX_PAGE=3": "TSE_MAX_PAGES",  # one of the project's own
    "REDIS_PROT=7000": "REDIS_PORT",  # one of scrapy-redis's
}


# Through both commands in turn, as above: refused before the page directory is looked at.
@pytest.mark.parametrize(
    ("given", "program"),
    [(given, ("scrapy crawl tse", "tse crawl")[number % 2]) for number, given in enumerate(MISSPELT)],
)
def test_a_misspelt_setting_is_refused_in_one_line(site, program, given):
    server, pagedir = site
    run = tse_refused if program == "tse crawl" else scrapy_refused
    result = run(server, pagedir, "-s", "DOWNLOAD_DELAY=0", "-s", given)
    name = given.split("=", 1)[0]
    case = " (names are case-sensitive)" if name.upper() == MISSPELT[given] else ""
    assert result.stderr.decode() == f"{program}: -s {name} is not a setting{case}: did you mean {MISSPELT[given]}?\n"
    assert (result.returncode, result.stdout, server.hits, os.listdir(pagedir)) == (2, b"", [], [])


@pytest.mark.parametrize("program", ["tse crawl", "scrapy crawl tse"])
def test_a_setting_no_one_knows_is_said_and_taken(site, program):
    # A user's own extension may read it: the crawl runs, saying once that nothing of Scrapy's or tse's does.
    server, pagedir = site
    run = tse_crawl if program == "tse crawl" else scrapy_crawl
    result = run(server, pagedir, "-s", "DOWNLOAD_DELAY=0", "-s", "NOSUCH_SETTING=1")
    assert result.returncode == 0, result.stderr.decode()
    warning = (
        f"{program}: warning: -s NOSUCH_SETTING is not a setting of Scrapy, tse or their extensions"
        " (only an extension of yours would read it)"
    )
    assert result.stderr.decode().splitlines().count(warning) == 1
    assert sorted(os.listdir(pagedir)) == [".crawler", "1", "2"]


# A crawl run from Python (Scrapy's CrawlerProcess): no command decided how it starts, the spider does
# (prepare_crawl), and checked no setting's name: DOWNLOAD_DELEY was ignored, the crawl ran at a page a second.
_FROM_PYTHON = """
import sys
from scrapy.crawler import CrawlerProcess
from scrapy.utils.project import get_project_settings
from tse_scrapy.spiders.tse import TseSpider
seed, pagedir, prefix, *given = sys.argv[1:]
settings = get_project_settings()
settings.setdict({"LOG_LEVEL": "WARNING", "DOWNLOAD_DELAY": 0, **dict(name.split("=") for name in given)})
process = CrawlerProcess(settings)
process.crawl(TseSpider, seed=seed, pagedir=pagedir, depth="1", prefix=prefix)
process.start()
"""


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("DOWNLOAD_DELEY=0", "ArgumentError: -s DOWNLOAD_DELEY is not a setting: did you mean DOWNLOAD_DELAY?"),
        ("NOSUCH_SETTING=1", "scrapy crawl tse: warning: -s NOSUCH_SETTING is not a setting of Scrapy, tse or"),
        # Known names only: no warning (get_project_settings's SETTINGS_MODULE was warned of on every run).
        ("DOWNLOAD_TIMEOUT=30", None),
    ],
)
def test_a_crawl_from_python_checks_the_names_of_its_settings(site, given, said):
    server, pagedir = site
    command = [str(BIN / "python"), "-c", _FROM_PYTHON, f"{server.url}/index.html", pagedir, f"{server.url}/", given]
    done = subprocess.run(
        command, capture_output=True, cwd=ROOT, timeout=120, env=clean_env(SCRAPY_SETTINGS_MODULE="tse_scrapy.settings")
    )
    if said is None:
        assert "warning" not in done.stderr.decode(), done.stderr.decode()
    else:
        assert said in done.stderr.decode(), done.stderr.decode()
    if not given.startswith("DOWNLOAD_DELEY"):  # taken (an unknown name said: a user's extension may read it)
        assert sorted(os.listdir(pagedir)) == [".crawler", "1", "2"]
    else:  # refused before the page directory is looked at, nothing fetched
        assert (server.hits, os.listdir(pagedir)) == ([], [])


def test_every_setting_scrapy_scrapy_redis_and_tse_read_is_known():
    # (A setting read and not known would be refused when near another's name, or warned of.)
    import scrapy_redis

    roots = [Path(scrapy.__file__).parent, Path(scrapy_redis.__file__).parent, Path("tse_scrapy")]
    read = re.compile(r"settings?\s*(?:\.get\w*\(|\[)\s*[\"']([A-Z][A-Z0-9_]+)[\"']")
    names = {name for root in roots for path in root.rglob("*.py") for name in read.findall(path.read_text("utf-8"))}
    assert {"REDIS_ITEMS_KEY", "TSE_UPDATE", "CONCURRENT_REQUESTS_PER_IP"} <= names  # (the pattern finds them)
    assert names - known_setting_names() == set()


# Each value in one crawl: any one refused would refuse the crawl.
def test_values_scrapy_reads_are_taken(site):
    server, pagedir = site
    given = (
        *("-s", "DOWNLOAD_TIMEOUT=2.5"),  # an int default that Scrapy reads as a float
        *("-s", "RETRY_ENABLED=false", "-s", "COOKIES_ENABLED=1"),
        *("-s", "CONCURRENT_REQUESTS= 2 ", "-s", "TSE_MAX_PAGES=0"),
    )
    result = tse_crawl(server, pagedir, "-s", "DOWNLOAD_DELAY=0", *given)
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(os.listdir(pagedir)) == [".crawler", "1", "2"]


# Values as a -s gives them (text), and as code may set them.
VALUES = ["0", "1", "2", "-4", " 7 ", "+3", "1_000", "1.5", "1e3", "nan", "-inf", "", "abc", "True", "true", "TRUE"]
VALUES += ["False", "false", "yes", "0x10", "١٢", 3, 2.5, True, False, None, [1]]


@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize(("default", "read"), [(1, "getint"), (1.0, "getfloat"), (True, "getbool")])
def test_a_value_is_refused_exactly_when_scrapy_cannot_convert_it(value, default, read):
    settings = Settings({"NAME": default})
    settings.set("NAME", value)
    try:
        getattr(settings, read)("NAME")
        scrapy_reads_it = True
    except (TypeError, ValueError, OverflowError):
        scrapy_reads_it = False
    try:
        check_setting_values({"NAME": default}, {"NAME": value}.get)
        refused = False
    except ArgumentError:
        refused = True
    # A number read as a float must also be finite and 0 or more (a delay of inf never ends the crawl).
    if scrapy_reads_it and read == "getfloat" and value is not None:
        scrapy_reads_it = 0 <= float(value) < math.inf
    assert refused == (not scrapy_reads_it and value is not None)  # None: not set


def test_every_default_read_as_a_float_is_checked_as_one():
    # A setting whose default is an int but that Scrapy (or this project) reads with getfloat takes
    # 2.5: it must be in READ_AS_FLOAT, or check_setting_values would refuse what Scrapy reads.
    sources = [*Path(scrapy.__file__).parent.rglob("*.py"), *Path("tse_scrapy").rglob("*.py")]
    read = re.compile(r"get(float|int|bool)\(\s*[\"']([A-Z][A-Z0-9_]+)[\"']")
    defaults = setting_defaults()
    kinds = {float: "float", int: "int", bool: "bool"}
    mismatched = {
        name
        for path in sources
        for kind, name in read.findall(path.read_text(encoding="utf-8"))
        if type(defaults.get(name)) in kinds and kinds[type(defaults[name])] != kind
    }
    assert mismatched == set()
    # Each name listed has an int default of its own, and is read with getfloat.
    raw = {name: getattr(module, name) for module in (default_settings, project) for name in dir(module)}
    assert all(type(raw[name]) is int for name in READ_AS_FLOAT)
    floats = {
        name for path in sources for kind, name in read.findall(path.read_text(encoding="utf-8")) if kind == "float"
    }
    assert set(READ_AS_FLOAT) <= floats
