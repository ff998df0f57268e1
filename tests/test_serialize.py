"""request_to_dict gives what Scrapy's Request.to_dict gives, faster."""

import pytest
import scrapy
from hypothesis import given
from hypothesis import strategies as st
from scrapy.http import FormRequest
from scrapy.utils.request import request_from_dict

from tse_scrapy.crawl.scheduling.serialize import request_to_dict
from tse_scrapy.spiders.tse import TseSpider

SPIDER = TseSpider(seed="http://a.test/index.html", pagedir=".", depth=1, prefix="http://a.test/")


@pytest.mark.parametrize(
    "request_",
    [
        scrapy.Request(
            "http://a.test/x.html",
            callback=SPIDER.parse,
            errback=SPIDER.fetch_failed,
            meta={"depth": 2, "tse_found_on": "http://a.test/"},
        ),
        scrapy.Request("http://a.test/y.html"),
        scrapy.Request("http://a.test/z.html", callback=SPIDER.parse_at_max_depth, priority=3, dont_filter=True),
        scrapy.Request("http://a.test/z.html", callback=SPIDER.parse, headers={"X-A": "1"}, cookies={"c": "d"}),
        FormRequest("http://a.test/form", formdata={"q": "x"}, callback=SPIDER.parse),  # Scrapy's way
    ],
)
def test_same_dict_as_scrapy(request_):
    assert request_to_dict(request_, SPIDER) == request_.to_dict(spider=SPIDER)
    back = request_from_dict(request_to_dict(request_, SPIDER), spider=SPIDER)
    assert (back.url, back.callback, back.errback, back.meta) == (
        request_.url,
        request_.callback,
        request_.errback,
        request_.meta,
    )


def test_a_callback_that_is_not_a_spider_method_is_refused_as_scrapy_does():
    with pytest.raises(ValueError):
        request_to_dict(scrapy.Request("http://a.test/", callback=lambda response: None), SPIDER)


@given(
    st.text(alphabet="abcxyz/._-", max_size=20),
    st.integers(0, 10),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.booleans(),
)
def test_always_the_same_as_scrapy(path, depth, meta, with_callback):
    request = scrapy.Request(
        f"http://a.test/{path}", meta={**meta, "depth": depth}, callback=SPIDER.parse if with_callback else None
    )
    assert request_to_dict(request, SPIDER) == request.to_dict(spider=SPIDER)
