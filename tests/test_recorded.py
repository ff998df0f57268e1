"""Callback-level tests of `parse`, replayed from scrapy-mock cassettes.

The cassettes (tests/fixtures/cassettes/) were recorded from the demo site
served on the fixed loopback port below (`python -m tse_scrapy.devtools.siteserver
tse_scrapy/devtools/demo_site --port 8765`, then `pytest tests/test_recorded.py` with
CI unset); with CI=true scrapy-mock only replays them.  What scrapy-mock cannot
show (statuses, headers, redirects: it fetches with `requests` and keeps the
first URL) is tested end to end on the real local server instead.
"""

import pytest

from tse_scrapy.crawl.items import PageItem
from tse_scrapy.spiders.tse import TseSpider

SITE = "http://127.0.0.1:8765/"
INDEX_LINKS = [
    "about.html",
    "projects/",
    "docs/guide.html",
    "blog/index.html",
    "old-news.html",
    "contact.html",
    "https://scrapy.org/",
]


def spider(tmp_path, depth, links="html"):
    return TseSpider(seed=SITE + "index.html", pagedir=str(tmp_path), depth=depth, prefix=SITE, links=links)


@pytest.mark.parametrize("url", [SITE + "index.html"])
@pytest.mark.parametrize("links", ["html", "tse"])
def test_parse_yields_links_in_order_then_the_page(response, tmp_path, links, url):
    output = list(spider(tmp_path, 2, links).parse(response))
    requests, item = output[:-1], output[-1]
    expected = [link if link.startswith("https:") else SITE + link for link in INDEX_LINKS]
    assert [r.url for r in requests] == expected
    assert all(r.meta["depth"] == 1 and r.meta["tse_found_at"] == 0 for r in requests)
    assert item == PageItem(url=url, depth=0, body=response.body)
    assert b"Welcome to the demo site" in item.body


@pytest.mark.parametrize("url", [SITE + "projects/crawler.html"])
def test_parse_at_max_depth_only_saves(response, tmp_path, url):
    output = list(spider(tmp_path, 0).parse(response))
    assert output == [PageItem(url=url, depth=0, body=response.body)]
