"""A page that cannot be written stops the crawl: non-zero exit, a valid directory."""

import os

import pytest

from tests.conftest import crawl_site, scrapy_crawl_site
from tests.support.fulldisk import files_of_at_most
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site

LIMIT = 256 * 1024  # room for the crawl state; not for the big page


@pytest.mark.parametrize("command", ["tse", "scrapy"])
def test_write_failure_stops_the_crawl(tmp_path, serve, command):
    site = write_site(tmp_path / "site", {"index.html": ["big.html", "a.html", "b.html"], "a.html": [], "b.html": []})
    (site.root / "big.html").write_bytes(b"<html>" + b"x" * 2 * LIMIT + b"</html>")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    run = crawl_site if command == "tse" else scrapy_crawl_site
    result = run(server, out, 1, preexec_fn=files_of_at_most(LIMIT), timeout=120)
    assert result.returncode != 0
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1].endswith(f"cannot write page file {out}/4: File too large")
    # Stack order: index, b, a saved; big (pushed first) fails; nothing after it.
    assert saved_pages(out) == [(seed, 0), (prefix + "b.html", 1), (prefix + "a.html", 1)]
    assert sorted(os.listdir(out)) == [".crawler", ".tse-state.sqlite", "1", "2", "3"]
    # Once there is room again, --resume finishes the crawl; the state goes away.
    again = crawl_site(server, out, 1, "--resume")
    assert again.returncode == 0, again.stderr.decode()
    assert saved_pages(out)[3:] == [(prefix + "big.html", 1)]
    assert sorted(os.listdir(out)) == [".crawler", "1", "2", "3", "4"]
