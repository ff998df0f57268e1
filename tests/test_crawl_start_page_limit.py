"""A crawl resumed with a page limit it has reached already: it stops at once, in one line, exit 0,
touching nothing, and its state stays for a resume with a higher limit.  It waited for ever (idle,
no request, no output): its scheduler held pages it would never hand out."""

import signal
import subprocess
import time

import pytest

from tests.conftest import BIN, ROOT, clean_env, popen, run_scrapy, run_tse
from tests.support.pages import saved_pages, snapshot
from tests.support.sitegen import write_site
from tests.support.wait import wait_until, while_running
from tse_scrapy.devtools.siteserver import Rule

LEAVES = [f"p{i}.html" for i in range(1, 9)]
TIMEOUT = 30  # a crawl that waits for ever fails the test, rather than hanging it


def page_files(directory):
    return sorted(int(path.name) for path in directory.iterdir() if path.name.isdigit())


@pytest.fixture
def interrupted(tmp_path, serve):
    """A crawl of 9 pages stopped by Ctrl-C after a few: (server, its arguments, page files saved)."""
    site = write_site(tmp_path / "site", {"index.html": LEAVES, **{name: [] for name in LEAVES}})
    server = serve(site.root)
    for name in LEAVES:
        server.rules["/" + name] = Rule(delay=0.3)
    out = tmp_path / "out"
    out.mkdir()
    arguments = ["crawl", f"{server.url}/index.html", str(out), "1", "--prefix", f"{server.url}/"]
    arguments += ["--no-progress", "-s", "DOWNLOAD_DELAY=0"]
    process = popen(
        [str(BIN / "tse"), *arguments], env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_until(while_running(process, lambda: len(page_files(out)) >= 3, "3 pages"), TIMEOUT, "no 3 pages")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, stderr.decode()
    assert b"go on with --resume" in stderr
    saved = page_files(out)
    assert saved == list(range(1, len(saved) + 1)) and 3 <= len(saved) < 9
    assert (out / ".tse-state.sqlite").is_file()
    server.rules.clear()
    return server, arguments, len(saved)


def files(directory):
    """The snapshot of *directory*'s files, but for the two files SQLite adds beside a database in WAL
    mode when it is read (as every resume reads the crawl state, to see how it starts)."""
    return {
        name: entry
        for name, entry in snapshot(directory).items()
        if name != "." and not name.endswith(("sqlite-wal", "sqlite-shm"))
    }


def reached(limit, saved, out):
    return (
        f"the page limit ({limit}) is already reached: {saved} pages saved in {out}; "
        "its crawl is kept: resume it with a higher page limit, or none, to go on\n"
    )


def test_a_resume_with_a_page_limit_reached_stops_at_once_and_keeps_the_crawl(tmp_path, interrupted):
    server, arguments, saved = interrupted
    out = arguments[2]
    before, hits = files(tmp_path / "out"), len(server.hits)
    time.sleep(0.05)  # a file written again would get a later modification time
    for limit in (1, saved):
        stopped = run_tse(*arguments, "--resume", "--max-pages", limit, timeout=TIMEOUT)
        assert (stopped.returncode, stopped.stdout, stopped.stderr.decode()) == (
            0,
            b"",
            "tse crawl: " + reached(limit, saved, out),
        )
    scrapy_args = ["crawl", "tse", "-a", f"seed={arguments[1]}", "-a", f"pagedir={out}", "-a", "depth=1"]
    scrapy_args += ["-a", f"prefix={server.url}/", "-a", "resume=yes"]
    for setting in ("CLOSESPIDER_PAGECOUNT", "TSE_MAX_PAGES"):
        stopped = run_scrapy(*scrapy_args, "-s", f"{setting}={saved}", timeout=TIMEOUT)
        assert (stopped.returncode, stopped.stderr.decode()) == (0, "scrapy crawl tse: " + reached(saved, saved, out))
    assert len(server.hits) == hits  # not even robots.txt
    assert files(tmp_path / "out") == before
    # A higher limit goes on from where the crawl was: one more page, and the crawl has ended on its limit.
    more = run_tse(*arguments, "--resume", "--max-pages", saved + 1, timeout=TIMEOUT)
    assert more.returncode == 0, more.stderr.decode()
    assert page_files(tmp_path / "out") == list(range(1, saved + 2))
    assert not (tmp_path / "out" / ".tse-state.sqlite").exists()
    pages = saved_pages(tmp_path / "out")
    for doc_id in range(1, saved + 1):
        assert (tmp_path / "out" / str(doc_id)).read_bytes() == before[str(doc_id)][0]
    leaves = {f"{server.url}/{name}" for name in LEAVES}
    assert pages[0] == (arguments[1], 0) and {url for url, _ in pages[1:]} <= leaves
    assert len({url for url, _ in pages}) == saved + 1 and {depth for _, depth in pages[1:]} == {1}


# A crawl run from Python, told how it starts (``tse_start``) without the commands' check of the
# page limit: it ends on its limit at once, rather than waiting for ever.
_TOLD_TO_RESUME = """
import sys
from scrapy.crawler import CrawlerProcess
from scrapy.utils.project import get_project_settings
from tse_scrapy.crawlstart import CrawlStart
from tse_scrapy.resume.startmode import StartMode
from tse_scrapy.rules.crawling.crawlargs import check_crawl_args
from tse_scrapy.spiders.tse import TseSpider
seed, pagedir, prefix, limit = sys.argv[1:]
settings = get_project_settings()
settings.setdict({"LOG_LEVEL": "WARNING", "DOWNLOAD_DELAY": 0, "CLOSESPIDER_PAGECOUNT": limit})
process = CrawlerProcess(settings)
crawler = process.create_crawler(TseSpider)
arguments = dict(seed=seed, pagedir=pagedir, depth="1", prefix=prefix, resume="yes")
process.crawl(crawler, tse_start=CrawlStart(check_crawl_args(**arguments), StartMode.RESUME), **arguments)
process.start()
print(crawler.stats.get_value("finish_reason"), crawler.stats.get_value("tse/pages_saved", 0))
"""


def test_a_crawl_started_with_its_page_limit_reached_ends_on_it(interrupted):
    server, arguments, saved = interrupted
    hits = len(server.hits)
    command = [str(BIN / "python"), "-c", _TOLD_TO_RESUME, arguments[1], arguments[2], f"{server.url}/", str(saved)]
    env = clean_env(SCRAPY_SETTINGS_MODULE="tse_scrapy.settings")
    ended = subprocess.run(command, capture_output=True, env=env, cwd=ROOT, timeout=TIMEOUT)
    assert (ended.returncode, ended.stdout) == (0, b"closespider_pagecount 0\n"), ended.stderr.decode()
    assert [hit.key for hit in server.hits[hits:] if hit.key != "/robots.txt"] == []
