"""Known faults of the crawler, mended: each crawled from a real server on 127.0.0.1."""

from __future__ import annotations

import json

from tests.conftest import crawl_site
from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.crawling.progress import progress_line


def _record(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _failed_lines(result) -> list[str]:
    return [line for line in result.stderr.decode().splitlines() if line.startswith("tse crawl: failed: ")]


# A URL is crawled to 2,083 characters (TSE_MAX_URL_LENGTH), the bound `tse import` skips records past: the
# crawl kept no bound (Scrapy's UrlLengthMiddleware is off), and wrote page files and archive records at URLs
# the import of its own archive skipped.
URL_BOUND = 2083


def test_a_url_over_the_bound_is_not_crawled_and_the_import_of_the_crawl_skips_nothing(tmp_path, serve):
    root = tmp_path / "site"
    root.mkdir()
    server = serve(root)
    base = f"{server.url}/"
    # Paths that make URLs of exactly the bound, and one character over it.
    kept = "k.html?q=" + "k" * (URL_BOUND - len(base) - len("k.html?q="))
    over = "o.html?q=" + "o" * (URL_BOUND + 1 - len(base) - len("o.html?q="))
    assert (len(base + kept), len(base + over)) == (URL_BOUND, URL_BOUND + 1)
    (root / "index.html").write_text(f'<a href="{kept}">k</a> <a href="{over}">o</a> <a href="r.html">r</a>')
    (root / "k.html").write_text("<p>kept</p>")
    (root / "o.html").write_text("<p>over</p>")
    (root / "r.html").write_text("<p>r</p>")
    server.rules["/r.html"] = Rule(status=302, location=f"/{over}&r")
    out, record, warc = tmp_path / "out", tmp_path / "r.jsonl", tmp_path / "c.warc.gz"
    out.mkdir()
    result = crawl_site(server, out, 1, "--record", record, "--warc", warc)
    assert result.returncode == 0, result.stderr.decode()
    log = result.stdout.decode()
    assert progress_line(0, "Found", base + kept) + progress_line(0, "Added", base + kept) in log
    # The link over it is logged and counted as a denied link is, and never asked for.
    assert progress_line(0, "Found", base + over) + progress_line(0, "IgnDeny", base + over) in log
    asked = [hit.target for hit in server.hits]
    assert f"/{kept}" in asked and not any(target.startswith("/o.html") for target in asked), asked
    assert "1 failed, 1 link ignored (0 external, 0 duplicate, 1 denied)" in result.stderr.decode()
    # The redirect to a URL over it fails, said as what it is (it was said "redirected out of the prefixes").
    assert _failed_lines(result) == [f"tse crawl: failed: {base}r.html (redirected to a URL over 2,083 characters)"]
    failed = [line for line in _record(record) if line["outcome"] == "failed"]
    expected = [(f"{base}{over}&r", "URL too long", None)]  # never sent
    assert [(line["url"], line["failure"], line["start"]) for line in failed] == expected
    pages = saved_pages(out)
    assert sorted(url for url, _ in pages) == sorted([base + "index.html", base + kept])
    assert max(len(url) for url, _ in pages) == URL_BOUND
    # `tse import` of the crawl's own archive takes every page it saved, and skips no record for its URL.
    imported = tmp_path / "imported"
    imported.mkdir()
    done = tse_here("import", warc, imported)
    assert done.returncode == 0, done.stderr.decode()
    assert "skipped" not in done.stderr.decode(), done.stderr.decode()
    assert sorted(url for url, _ in saved_pages(imported)) == sorted(url for url, _ in pages)
