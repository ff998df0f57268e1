"""PageDirPipeline and the exit-status rules, with real Scrapy crawler objects."""

import asyncio
import threading
import time

import pytest
from scrapy.utils.test import get_crawler

from tse_scrapy.crawl.items import PageItem
from tse_scrapy.crawl.outcome import crawl_failure
from tse_scrapy.crawl.pipeline import WRITES_LOOKED_AT, PageDirPipeline
from tse_scrapy.rules.files import pagedir


@pytest.mark.parametrize("fsync", [False, True])  # pages written inline, or by threads
def test_pipeline_marks_the_directory_and_numbers_pages_in_save_order(tmp_path, fsync):
    (tmp_path / ".crawler").write_text("left over")
    crawler = get_crawler(settings_dict={"TSE_PAGEDIR": str(tmp_path), "TSE_FSYNC": fsync})
    crawler.stats.open_spider()
    pipeline = PageDirPipeline.from_crawler(crawler)
    pipeline.open_spider()
    assert (tmp_path / ".crawler").read_bytes() == b""
    other = {"not": "a page"}
    assert asyncio.run(pipeline.process_item(other)) is other
    for depth, name in enumerate(["b.html", "a.html"]):
        asyncio.run(pipeline.process_item(PageItem(f"http://h/{name}", depth, b"<html>" + name.encode())))
    assert pagedir.read_page(tmp_path, 1) == pagedir.Page("http://h/b.html", 0, b"<html>b.html")
    assert (tmp_path / "2").read_bytes() == b"http://h/a.html\n1\n<html>a.html\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".crawler", "1", "2"]
    assert crawler.stats.get_value("tse/pages_saved") == 2


def test_crawl_failure_reasons():
    crawler = get_crawler()
    stats = crawler.stats
    stats.open_spider()
    stats.set_value("finish_reason", "finished")
    assert crawl_failure(crawler) is None
    stats.set_value("spider_exceptions/count", 2)
    assert "raised 2 exception" in crawl_failure(crawler)
    stats.set_value("finish_reason", "shutdown")
    assert crawl_failure(crawler) == "crawl stopped: shutdown"
    stats.set_value("finish_reason", None)  # stopped at once by a second Ctrl-C: the crawl never closed
    assert crawl_failure(crawler).startswith("the crawl was stopped before it could finish")
    stats.set_value("tse/error", "cannot write page file d/3: No space left on device")
    assert crawl_failure(crawler) == "cannot write page file d/3: No space left on device"


def test_pages_written_by_threads_at_once_keep_the_docids_of_their_arrival(tmp_path):
    # With TSE_FSYNC, pages are written by threads.
    crawler = get_crawler(settings_dict={"TSE_PAGEDIR": str(tmp_path), "CONCURRENT_REQUESTS": 8, "TSE_FSYNC": True})
    crawler.stats.open_spider()
    pipeline = PageDirPipeline.from_crawler(crawler)
    pipeline.open_spider()
    names = [f"p{i}.html" for i in range(20)]

    async def save_all():
        # Each write waits in its thread while the next page arrives.
        return await asyncio.gather(*(pipeline.process_item(PageItem(f"http://h/{n}", 1, n.encode())) for n in names))

    items = asyncio.run(save_all())
    assert [item.doc_id for item in items] == list(range(1, 21))
    assert [page.url for _, page in pagedir.read_pages(tmp_path)] == [f"http://h/{n}" for n in names]
    assert crawler.stats.get_value("tse/pages_saved") == 20


def test_page_writes_move_to_threads_when_the_file_system_is_slow(tmp_path, monkeypatch):
    crawler = get_crawler(settings_dict={"TSE_PAGEDIR": str(tmp_path)})
    crawler.stats.open_spider()
    pipeline = PageDirPipeline.from_crawler(crawler)
    pipeline.open_spider()
    write_page = pagedir.write_page
    inline = []

    def slow_write_page(*args, **kwargs):
        inline.append(threading.current_thread() is threading.main_thread())
        time.sleep(0.002)  # a file system that blocks: 2 ms a page
        return write_page(*args, **kwargs)

    monkeypatch.setattr(pagedir, "write_page", slow_write_page)

    async def save_all():
        for i in range(WRITES_LOOKED_AT + 8):
            await pipeline.process_item(PageItem(f"http://h/{i}.html", 1, b"<html>"))

    asyncio.run(save_all())
    # Timed inline for a while, then handed to threads: the reactor no longer waits.
    assert inline == [True] * WRITES_LOOKED_AT + [False] * 8
    assert [page.url for _, page in pagedir.read_pages(tmp_path)][-1] == f"http://h/{WRITES_LOOKED_AT + 7}.html"
