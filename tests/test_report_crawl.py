"""`tse report` of the record of a real `tse crawl --sitemaps --warc` of a 127.0.0.1 site: it counts the
requests the crawl sent, as its summary line, the server and the WARC do; it says what the lines of pages
refused before sending were; it shows the sitemap fetches as sitemaps."""

from __future__ import annotations

import json
import re

import lxml.etree
import lxml.html
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import crawl_site, run_tse
from tse_scrapy.devtools.siteserver import Rule

PAGE = "<html><head><title>{0}</title></head><body><p>{0}</p>{1}</body></html>"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_the_report_counts_the_requests_the_crawl_sent(tmp_path, serve):
    site = tmp_path / "site"
    site.mkdir()
    links = "".join(f'<a href="{name}">{name}</a>' for name in ("a.html", "secret.html", "away.html"))
    (site / "index.html").write_text(PAGE.format("Home", links))
    for name in ("a.html", "secret.html", "away.html", "b.html"):
        (site / name).write_text(PAGE.format(name, ""))
    server = serve(site)
    (site / "robots.txt").write_text(
        f"User-agent: *\nDisallow: /secret.html\n\nSitemap: {server.url}/sitemap-index.xml\n"
    )
    (site / "sitemap-index.xml").write_text(
        f'<?xml version="1.0"?><sitemapindex xmlns="{SITEMAP_NS}">'
        f"<sitemap><loc>{server.url}/pages.xml</loc></sitemap></sitemapindex>"
    )
    (site / "pages.xml").write_text(
        f'<?xml version="1.0"?><urlset xmlns="{SITEMAP_NS}"><url><loc>{server.url}/b.html</loc></url></urlset>'
    )
    server.rules["/away.html"] = Rule(location="http://elsewhere.invalid/page.html")  # off the site: never sent
    pages, record, warc = tmp_path / "pages", tmp_path / "crawl.jsonl", tmp_path / "crawl.warc.gz"
    pages.mkdir()
    done = crawl_site(server, pages, 2, "--sitemaps", "--record", record, "--warc", warc)
    assert done.returncode == 0, done.stderr.decode()
    (sent,) = map(int, re.findall(r"; (\d+) requests?, ", done.stderr.decode()))
    with open(warc, "rb") as stream:
        warc_requests = sum(entry.rec_type == "request" for entry in ArchiveIterator(stream))
    # robots.txt, 2 sitemaps, index, a, b, away (its redirect): the refused pages are lines, not requests.
    assert sent == warc_requests == len(server.hits) == 7
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(lines) == sent + 2
    # The record says which lines are the sitemap files (it said "unsaved": a tester's find).
    assert sorted(line["url"].rsplit("/", 1)[1] for line in lines if line["outcome"] == "sitemap") == [
        "pages.xml",
        "sitemap-index.xml",
    ]
    assert "unsaved" not in {line["outcome"] for line in lines}

    report = tmp_path / "report.html"
    made = run_tse("report", record, "--out", report)
    assert made.returncode == 0, made.stderr.decode()
    assert made.stderr.decode() == (
        f"tse report: wrote {report}: {sent} requests, 2 pages refused before sending, 3 pages saved, 2 failed, "
        "from 1 record file\n"
    )
    page = lxml.html.parse(str(report)).getroot()
    totals = {
        cell.get("data-total"): (cell.text, cell.getnext().text_content())
        for cell in page.xpath('//table[@id="totals"]//td[@data-total]')
    }
    assert totals["requests"][0] == str(sent)
    assert totals["not_sent"] == ("2", "refused by offsite 1, robots.txt 1")
    assert totals["hosts"][0] == "1"  # elsewhere.invalid was never asked
    (listed,) = page.xpath('//ul[@id="record-files"]/li')
    assert " ".join(listed.text_content().split()) == f"{record}: {sent} requests"
    timeline = page.xpath('//figure[@id="fig-timeline"]/svg')[0]
    assert f"127.0.0.1 ({sent})" in {comment.text.strip() for comment in timeline.iter(lxml.etree.Comment)}
    # The two sitemap files are sitemaps, not pages "fetched, not saved".
    outcomes = page.xpath('//figure[@id="fig-outcomes"]/svg')[0]
    labels = [comment.text.strip() for comment in outcomes.iter(lxml.etree.Comment)]
    assert "sitemap" in labels and "unsaved" not in labels
    assert [row for row in labels if row.startswith("failed")] == ["failed: offsite", "failed: robots.txt"]
