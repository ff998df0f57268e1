"""A crawl whose state cannot be made (a full disk, here a file-size limit) is refused in one line
and leaves no file behind: a later crawl of the directory starts anew.  It ended with 28 lines of
"Task exception was never retrieved ... sqlite3.OperationalError: disk I/O error", and left a
half-made ``.tse-state.sqlite`` that a later --resume could not read."""

import os
import resource

import pytest

from tests.conftest import run_scrapy, run_tse
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site

LIMIT = 20 * 1024  # bytes a file may hold: less than SQLite writes to make the state (its WAL, its index)


def limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


@pytest.mark.parametrize("command", ["tse", "scrapy"])
def test_a_crawl_state_that_cannot_be_made_is_refused_in_one_line(tmp_path, serve, command):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    if command == "tse":
        arguments, program = ["crawl", seed, out, 1, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0"], "tse crawl"
        run = run_tse
    else:
        arguments = ["crawl", "tse", "-a", f"seed={seed}", "-a", f"pagedir={out}", "-a", "depth=1"]
        arguments += ["-a", f"prefix={prefix}", "-s", "DOWNLOAD_DELAY=0"]
        program, run = "scrapy crawl tse", run_scrapy
    refused = run(*arguments, preexec_fn=limit_file_size, timeout=60)
    assert (refused.returncode, refused.stdout, refused.stderr.decode()) == (
        2,
        b"",
        f"{program}: cannot write the crawl state: disk I/O error\n",
    )
    assert os.listdir(out) == []
    assert server.hits == []
    # Nothing half made: the crawl starts anew, asked to resume or not.
    for again in (["-a", "resume=yes"] if command == "scrapy" else ["--resume"], []):
        crawled = run(*arguments, *again, timeout=60)
        assert crawled.returncode == 0, crawled.stderr.decode()
        assert saved_pages(out) == [(seed, 0), (prefix + "a.html", 1)]
        for name in os.listdir(out):
            (out / name).unlink()
