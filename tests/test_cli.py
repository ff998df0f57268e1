"""Bad invocations of both crawl commands: one line on stderr, nothing else happens."""

import os

import pytest

from tests.conftest import run_scrapy, run_tse
from tests.support.inprocess import scrapy_here, tse_here


@pytest.fixture
def site(tmp_path, serve):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text('<a href="a.html">a</a>')
    server = serve(tmp_path / "site")
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    (tmp_path / "afile").write_text("not a directory")
    (tmp_path / "marked" / ".crawler").mkdir(parents=True)
    return server, pagedir


# (seed, pagedir, depth) relative to the site fixture; None leaves an argument out.
BAD = {
    "missing depth": ("{u}/index.html", "{p}", None),
    "missing everything": (None, None, None),
    "seed relative": ("index.html", "{p}", "1"),
    "seed not normalizable": ("{u}/index.php", "{p}", "1"),
    "seed external": ("http://127.0.0.2:9/index.html", "{p}", "1"),
    "depth not an integer": ("{u}/index.html", "{p}", "one"),
    "depth negative": ("{u}/index.html", "{p}", "-1"),
    "depth above 10": ("{u}/index.html", "{p}", "11"),
    "pagedir missing": ("{u}/index.html", "{t}/nowhere", "1"),
    "pagedir is a file": ("{u}/index.html", "{t}/afile", "1"),
    ".crawler cannot be created": ("{u}/index.html", "{t}/marked", "1"),
}


def fill(value, server, pagedir):
    if value is None:
        return None
    return value.format(u=server.url, p=pagedir, t=pagedir.parent)


def assert_refused(result, server, pagedir):
    assert result.returncode != 0
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert server.hits == []
    assert os.listdir(pagedir) == []


# The refusals run in this process (the real commands' code, before Scrapy starts a crawl); the real
# processes refuse in test_extra_arguments_are_refused and test_a_mistyped_spider_name_is_one_line.
@pytest.mark.parametrize("case", BAD)
def test_tse_crawl_refuses(site, case):
    server, pagedir = site
    args = [a for a in (fill(v, server, pagedir) for v in BAD[case]) if a is not None]
    assert_refused(tse_here("crawl", *args, "--prefix", f"{server.url}/"), server, pagedir)


@pytest.mark.parametrize("case", BAD)
def test_scrapy_crawl_refuses(site, case):
    server, pagedir = site
    seed, directory, depth = (fill(v, server, pagedir) for v in BAD[case])
    spider_args = [
        f"{name}={value}"
        for name, value in (("seed", seed), ("pagedir", directory), ("depth", depth))
        if value is not None
    ]
    options = [x for arg in [*spider_args, f"prefix={server.url}/"] for x in ("-a", arg)]
    assert_refused(scrapy_here("crawl", "tse", *options), server, pagedir)


def test_extra_arguments_are_refused(site):
    server, pagedir = site
    seed = f"{server.url}/index.html"
    assert_refused(run_tse("crawl", seed, pagedir, "1", "extra", "--prefix", f"{server.url}/"), server, pagedir)
    assert_refused(
        run_scrapy(
            "crawl",
            "tse",
            "extra",
            "-a",
            f"seed={seed}",
            "-a",
            f"pagedir={pagedir}",
            "-a",
            "depth=1",
            "-a",
            f"prefix={server.url}/",
        ),
        server,
        pagedir,
    )
    assert_refused(
        run_tse("crawl", seed, pagedir, "1", "--order", "random", "--prefix", f"{server.url}/"), server, pagedir
    )


def test_a_mistyped_spider_name_is_one_line(site):
    # It was a 37-line traceback ending "KeyError: 'Spider not found: tsee'", exit 1.
    server, pagedir = site
    result = run_scrapy("crawl", "tsee", "-a", f"seed={server.url}/index.html", "-a", f"pagedir={pagedir}")
    assert_refused(result, server, pagedir)
    assert result.returncode == 2
    assert result.stderr.decode() == "scrapy crawl: no spider named 'tsee' (the spiders: tse)\n"


def test_unknown_spider_arguments_are_ignored(site):
    server, pagedir = site
    result = run_scrapy(
        "crawl",
        "tse",
        "-a",
        f"seed={server.url}/index.html",
        "-a",
        f"pagedir={pagedir}",
        "-a",
        "depth=0",
        "-a",
        f"prefix={server.url}/",
        "-a",
        "_job=abc123",
        "-a",
        "tse_start=given",  # the name the command passes its decision under: text does not count
        "-s",
        "DOWNLOAD_DELAY=0",
    )
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(os.listdir(pagedir)) == [".crawler", "1"]
    assert result.stdout.decode() == f" 0   Fetched: {server.url}/index.html\n"


def test_help():
    result = run_tse("--help")
    assert result.returncode == 0 and b"crawl" in result.stdout
    result = run_tse("crawl", "--help")
    assert result.returncode == 0 and b"MAXDEPTH" in result.stdout and b"--order" in result.stdout


# Numeric crawl options that would make no sense, given to a good crawl: refused like a bad argument.
BAD_OPTIONS = {
    # A negative limit stopped the crawl before its first request, and it never ended.
    "max-pages negative": ["--max-pages", "-3"],
    "max-pages negative, one word": ["--max-pages=-1"],
    # Scrapy's CLOSESPIDER_PAGECOUNT=0 is no limit at all: not what --max-pages 0 says.
    "max-pages zero": ["--max-pages", "0"],
    "max-pages not an integer": ["--max-pages", "1.5"],
    "max-pages not a number": ["--max-pages", "abc"],
    "page limit setting negative": ["-s", "CLOSESPIDER_PAGECOUNT=-3"],
    "page limit setting not a number": ["-s", "TSE_MAX_PAGES=many"],
    "redis patience negative": ["--redis-patience", "-1"],
    "redis patience not a number": ["--redis-patience", "nan"],
}


@pytest.mark.parametrize("case", BAD_OPTIONS)
def test_tse_crawl_refuses_bad_numbers(site, case):
    server, pagedir = site
    args = ("crawl", f"{server.url}/index.html", pagedir, "1", "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
    result = tse_here(*args, *BAD_OPTIONS[case])
    assert_refused(result, server, pagedir)
    assert result.returncode == 2


def test_the_page_limit_is_no_spider_argument(site):
    # max_pages given to the spider was ignored: -3 or 5, the whole site was crawled.
    server, pagedir = site
    for value in ("-3", "5"):
        options = [f"seed={server.url}/index.html", f"pagedir={pagedir}", "depth=1", f"prefix={server.url}/"]
        options = [x for option in [*options, f"max_pages={value}"] for x in ("-a", option)]
        result = scrapy_here("crawl", "tse", *options, "-s", "DOWNLOAD_DELAY=0")
        assert_refused(result, server, pagedir)
        assert result.returncode == 2 and "CLOSESPIDER_PAGECOUNT" in result.stderr.decode()


def test_a_page_limit_of_one_is_kept(site):
    server, pagedir = site
    args = ("crawl", f"{server.url}/index.html", pagedir, "1", "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
    result = run_tse(*args, "--max-pages", "1", timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(os.listdir(pagedir)) == [".crawler", "1"]


@pytest.mark.parametrize("argument", ["resume=maybe", "update=perhaps", "pdf=nope", "sitemaps=2", "render=maybe"])
def test_every_yes_no_spider_argument_is_yes_or_no(site, argument):
    # resume=maybe was taken as no (a fresh crawl, exit 0), where pdf=nope was refused.
    server, pagedir = site
    options = [f"seed={server.url}/index.html", f"pagedir={pagedir}", "depth=1", f"prefix={server.url}/", argument]
    result = scrapy_here("crawl", "tse", *[x for a in options for x in ("-a", a)], "-s", "DOWNLOAD_DELAY=0")
    assert_refused(result, server, pagedir)
    name, value = argument.split("=")
    assert result.stderr.decode() == f"scrapy crawl tse: {name} must be yes or no: {value}\n"
    assert result.returncode == 2
