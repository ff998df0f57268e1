"""PageDirPipeline and the exit-status rules, with real Scrapy crawler objects."""

import asyncio
import threading
import time

import pytest
from scrapy.utils.test import get_crawler

from tests.conftest import crawl_site, scrapy_crawl_site
from tests.support.fulldisk import files_of_at_most
from tests.support.sitegen import write_site
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
    stats.set_value("finish_reason", "closespider_timeout")
    assert crawl_failure(crawler) == "crawl stopped: closespider_timeout"
    stats.set_value("finish_reason", "shutdown")  # Ctrl-C: how to go on
    assert crawl_failure(crawler) == "the crawl was stopped by Ctrl-C (or SIGTERM): go on with --resume"
    assert crawl_failure(crawler, "scrapy crawl tse").endswith(": go on with -a resume=yes")
    stats.set_value("finish_reason", None)  # stopped at once by a second Ctrl-C: the crawl never closed
    said = "the crawl was stopped at once (a second Ctrl-C, or one as it started): go on with --resume"
    assert crawl_failure(crawler) == said
    for setting, go_on in [
        ({"TSE_STATE_ENABLED": False}, "it kept no crawl state (TSE_STATE_ENABLED=False), so it cannot be resumed"),
        ({"JOBDIR": "jobs"}, "run the same command again to go on (its state is in JOBDIR)"),
        (
            {"TSE_REDIS_URL": "redis://127.0.0.1:1"},
            "start the worker again: it joins the distributed crawl where it is",
        ),
    ]:
        other = get_crawler(settings_dict=setting)
        other.stats.open_spider()
        other.stats.set_value("finish_reason", "shutdown")
        assert crawl_failure(other).endswith(go_on)
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


@pytest.mark.parametrize("command", ["tse", "scrapy"])
def test_a_page_that_cannot_be_written_is_named_in_the_log_not_dumped(tmp_path, serve, command):
    # Scrapy's "Dropped: [Errno 27] File too large" came with the item's repr: the whole page on stderr.
    limit = 256 * 1024  # room for the crawl state, not for the page
    site = write_site(tmp_path / "site", {"index.html": ["big.html"]})
    (site.root / "big.html").write_bytes(b"<html>" + b"x" * 4 * limit + b"</html>")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    run = crawl_site if command == "tse" else scrapy_crawl_site
    # tse crawl's terminal shows the log from WARNING: -v shows INFO, where the page is named.
    verbose = ("-v",) if command == "tse" else ()
    result = run(server, out, 1, *verbose, preexec_fn=files_of_at_most(limit), timeout=120)
    assert result.returncode == 1
    stderr = result.stderr.decode()
    go_on = "--resume" if command == "tse" else "-a resume=yes"  # (it did not say how to go on)
    assert stderr.splitlines()[-1].endswith(f"cannot write page file {out}/2: File too large: go on with {go_on}")
    assert "xxxxxxxxxx" not in stderr and len(result.stderr) < 20_000
    dropped = [line for line in stderr.splitlines() if "Dropped:" in line]
    assert len(dropped) == 1 and dropped[0].endswith("INFO: Dropped: [Errno 27] File too large"), dropped
    after = stderr.splitlines()[stderr.splitlines().index(dropped[0]) + 1]
    assert after == f"PageItem {server.url}/big.html (depth 1, 1.0 MB)"


@pytest.mark.parametrize("update", [False, True], ids=["first crawl", "update"])
def test_a_page_that_cannot_be_written_is_the_summary_and_the_reason_on_a_quiet_terminal(tmp_path, serve, update):
    # docs/progress.md: nothing on stderr but the summary and why the crawl failed.  It showed
    # "ERROR: cannot write page file ..." and Scrapy's "WARNING: Dropped: ..." for that page and the
    # next, before them.
    limit = 256 * 1024  # room for the crawl state, not for the big pages
    links = {"index.html": ["a.html", "big.html", "big2.html"], "a.html": [], "big.html": [], "big2.html": []}
    site = write_site(tmp_path / "site", links)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    if update:
        assert crawl_site(server, out, 1, "--validators").returncode == 0
    for name in ("big.html", "big2.html"):
        (site.root / name).write_bytes(b"<html>" + b"x" * 2 * limit + b"</html>")
    options = ["--update"] if update else []
    result = crawl_site(server, out, 1, *options, "-s", "CONCURRENT_REQUESTS=1", preexec_fn=files_of_at_most(limit))
    assert result.returncode == 1
    summary, reason = result.stderr.decode().splitlines()
    # Stack order: index, then big2 (the last link), which fails; big, in flight, is dropped too.
    assert summary.startswith("tse crawl: 1 page checked, 0 written, " if update else "tse crawl: 1 page saved, ")
    # big2's docID: the second page of the first crawl (the same order), or the second page saved now.
    go_on = "--update --resume" if update else "--resume"  # (it did not say how to go on)
    assert reason == f"tse crawl: cannot write page file {out}/2: File too large: go on with {go_on}"
