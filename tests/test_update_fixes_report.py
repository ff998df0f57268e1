"""The crawl record and report of an update: a page found as it was (a 304, or the same body) is
``unchanged``, not saved, and the report says it was an update.  A real crawl and update of a real
site on 127.0.0.1, then ``tse report``."""

from __future__ import annotations

import json

import lxml.html

from tests.conftest import crawl_site, run_tse
from tests.support.inprocess import tse_here
from tests.support.sitegen import write_site

LINKS = {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": [], "c.html": []}


def record_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def totals(page_path) -> dict[str, str]:
    page = lxml.html.parse(str(page_path)).getroot()
    return {cell.get("data-total"): cell.text for cell in page.xpath('//table[@id="totals"]//td[@data-total]')}


def updated(tmp_path, serve, *options):
    site = write_site(tmp_path / "site", LINKS)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    first_record = tmp_path / "first.jsonl"
    assert crawl_site(server, out, 1, *options, "--record", first_record).returncode == 0
    path = site.root / "b.html"
    path.write_text(path.read_text().replace("</body>", "<p>changed</p></body>"))
    record = tmp_path / "update.jsonl"
    result = crawl_site(server, out, 1, "--update", "--record", record)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    # 4 pages checked: b.html written again, the 3 others as they were.
    assert "tse crawl: 4 pages checked, 1 written, " in result.stderr.decode()
    return server, first_record, record


def test_an_update_record_says_unchanged_and_the_report_counts_them_apart(tmp_path, serve):
    server, first_record, record = updated(tmp_path, serve, "--validators")
    pages = {line["url"]: line for line in record_lines(record) if line["outcome"] != "robots"}
    assert {url: (line["outcome"], line["status"]) for url, line in pages.items()} == {
        f"{server.url}/index.html": ("unchanged", 304),
        f"{server.url}/a.html": ("unchanged", 304),
        f"{server.url}/b.html": ("saved", 200),
        f"{server.url}/c.html": ("unchanged", 304),
    }
    assert all(line.get("update") is True for line in record_lines(record))
    assert not any("update" in line for line in record_lines(first_record))  # a first crawl's lines say nothing

    result = run_tse("report", record, "--out", tmp_path / "update.html")
    assert result.returncode == 0, result.stderr.decode()
    assert "an update: 1 page saved, 3 unchanged, 0 failed" in result.stderr.decode() + result.stdout.decode()
    shown = totals(tmp_path / "update.html")
    assert (shown["pages_saved"], shown["pages_unchanged"]) == ("1", "3")
    page = lxml.html.parse(str(tmp_path / "update.html")).getroot()
    assert page.xpath("//h1")[0].text == "Update report"
    assert " ".join(page.xpath('//p[@class="lead"]')[0].text_content().split()).startswith(
        "An update: 1 page saved (new or changed), 3 unchanged,"
    )

    # The first crawl's report is a crawl's, as it was (asked in the test's process: the report of the
    # update above is the real process).
    result = tse_here("report", first_record, "--out", tmp_path / "first.html")
    assert "4 pages saved, 0 failed" in result.stderr.decode() + result.stdout.decode()
    assert "pages_unchanged" not in totals(tmp_path / "first.html")


def test_an_update_without_a_catalog_records_its_same_bodies_as_unchanged(tmp_path, serve):
    server, _, record = updated(tmp_path, serve)
    pages = {line["url"]: line for line in record_lines(record) if line["outcome"] != "robots"}
    assert {url: (line["outcome"], line["status"]) for url, line in pages.items()} == {
        f"{server.url}/index.html": ("unchanged", 200),
        f"{server.url}/a.html": ("unchanged", 200),
        f"{server.url}/b.html": ("saved", 200),
        f"{server.url}/c.html": ("unchanged", 200),
    }


def test_a_record_written_before_unchanged_was_an_outcome_reads_its_304s_as_unchanged(tmp_path):
    # An update's record as the crawl wrote it then: a 304 was "saved", with no body.
    old = tmp_path / "old.jsonl"
    old.write_text(
        '{"url":"http://h.test/","doc":1,"depth":0,"host":"h.test","outcome":"saved","status":304,"failure":null,'
        '"bytes":0,"start":1764522000.0,"end":1764522000.1,"wait":0.0,"worker":null}\n'
        '{"url":"http://h.test/a","doc":2,"depth":1,"host":"h.test","outcome":"saved","status":200,"failure":null,'
        '"bytes":500,"start":1764522001.0,"end":1764522001.1,"wait":0.9,"worker":null}\n'
    )
    result = tse_here("report", old, "--out", tmp_path / "old.html")  # (in the test's process)
    assert result.returncode == 0, result.stderr.decode()
    assert "an update: 1 page saved, 1 unchanged, 0 failed" in result.stderr.decode() + result.stdout.decode()
    shown = totals(tmp_path / "old.html")
    assert (shown["pages_saved"], shown["pages_unchanged"], shown["max_depth"]) == ("1", "1", "1")
