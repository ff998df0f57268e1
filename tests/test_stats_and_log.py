"""TseStatsCollector and QuietLogFormatter: Scrapy's stats and log messages, kept, at a lower cost."""

import logging

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.logformatter import LogFormatter
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from tests.conftest import crawl_site
from tse_scrapy.crawl.extensions.logformatter import QuietLogFormatter
from tse_scrapy.crawl.extensions.stats import TseStatsCollector
from tse_scrapy.devtools.demo import SITE as DEMO_SITE


def test_stats_collector_answers_as_scrapys():
    crawler = get_crawler()
    ours, scrapys = TseStatsCollector(crawler), MemoryStatsCollector(crawler)
    for stats in (ours, scrapys):
        stats.open_spider()
        stats.inc_value("pages")
        stats.inc_value("pages", 2)
        stats.inc_value("bytes", 10, start=100)
        stats.set_value("reason", "finished")
        stats.max_value("deepest", 3)
        stats.max_value("deepest", 2)
        stats.min_value("first", 5)
        stats.min_value("first", 4)
    assert (
        ours.get_stats()
        == scrapys.get_stats()
        == {
            "pages": 3,
            "bytes": 110,
            "reason": "finished",
            "deepest": 3,
            "first": 4,
        }
    )
    assert ours.get_value("missing", "default") == "default"


@pytest.mark.parametrize(
    ("level", "logged"), [("DEBUG", True), ("debug", True), (logging.DEBUG, True), ("INFO", False), (30, False)]
)
def test_per_page_messages_are_built_only_when_debug_is_logged(level, logged):
    formatter = QuietLogFormatter.from_crawler(get_crawler(settings_dict={"LOG_LEVEL": level}))
    request = Request("http://h/a.html")
    response = HtmlResponse(request.url, body=b"", request=request)
    crawled = formatter.crawled(request, response, None)
    scraped = formatter.scraped({"url": request.url}, response, None)
    if logged:
        assert crawled == LogFormatter().crawled(request, response, None)
        assert scraped["msg"].startswith("Scraped from")
    else:
        assert crawled is None and scraped is None


@pytest.mark.parametrize("level", ["DEBUG", "INFO"])
def test_a_crawl_logs_each_page_at_debug_only(tmp_path, serve, level):
    server = serve(DEMO_SITE)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 1, "-s", f"LOG_LEVEL={level}")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    log = result.stderr.decode()
    assert ("DEBUG: Crawled (200) <GET " in log) == (level == "DEBUG")
    assert ("DEBUG: Scraped from <200 " in log) == (level == "DEBUG")
    assert "'item_scraped_count':" in log  # the stats dump at the end, either way
