"""A reviewer's finds in argument checking, note files and logs (fixS), each mended and checked here."""

import os
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.utils.test import get_crawler

from tests.conftest import crawl_site, run_tse
from tests.support.inprocess import scrapy_here, tse_here
from tests.support.sitegen import write_site
from tse_scrapy.crawl.extensions.stats import TseStatsCollector
from tse_scrapy.rules.crawling.crawlargs import MAX_DEPTH, ArgumentError, _check_depth, check_crawl_args
from tse_scrapy.rules.crawling.progress import progress_line
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.pagenotes import ROBOTS, PageNotes, read_noindex

SEED = "http://cs50tse.cs.dartmouth.edu/tse/letters/index.html"
# Nothing listens there: a crawl from it fails at once, and its arguments are checked first.
CLOSED = "http://127.0.0.1:9/"


# 1. maxDepth is read as the reference's C reads it (sscanf "%d"): one sign at most, then ASCII digits.
@pytest.mark.parametrize(
    "depth, message",
    [
        ("+-2", "maxDepth must be an integer: +-2"),  # int() of it was a traceback
        ("-+1", "maxDepth must be an integer: -+1"),
        ("--1", "maxDepth must be an integer: --1"),
        ("\uff12", "maxDepth must be an integer: \uff12"),  # full-width: crawled to depth 2
        ("1\u0663", "maxDepth must be an integer: 1\u0663"),  # an Arabic-Indic digit
        ("\u30002", "maxDepth must be an integer: \u30002"),  # an ideographic space: no space of C's
        ("1" * 5000, "maxDepth must be in [0, 10]: 1111"),  # int() refuses 4,300 digits: a traceback
        ("-1", "maxDepth must be in [0, 10]: -1"),
    ],
)
def test_bad_depths_are_refused_in_one_line(tmp_path, depth, message):
    with pytest.raises(ArgumentError) as refused:
        check_crawl_args(SEED, tmp_path, depth)
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("depth, read", [("+2", 2), ("-0", 0), (" 3\t", 3), ("010", 10), ("0000", 0), (7, 7)])
def test_depths_c_reads_are_taken(tmp_path, depth, read):
    assert check_crawl_args(SEED, tmp_path, depth).depth == read


@given(st.one_of(st.text(max_size=12), st.from_regex(r"\s?[+-]{0,2}[0-9\uff10-\uff19]{1,4}\s?", fullmatch=True)))
def test_a_depth_is_taken_only_as_c_reads_it(text):
    core = text.strip(" \t\n\v\f\r")  # (what C's isspace skips)
    unsigned = core[1:] if core and core[0] in "+-" else core
    c_reads = unsigned != "" and all(c in "0123456789" for c in unsigned)
    try:
        depth = _check_depth(text)
    except ArgumentError:
        assert not c_reads or not 0 <= int(core) <= MAX_DEPTH
    else:
        assert c_reads and depth == int(core) and 0 <= depth <= MAX_DEPTH


def test_tse_crawl_and_scrapy_crawl_refuse_mixed_signs_in_one_line(tmp_path):
    crawled = tse_here("crawl", CLOSED, tmp_path, "+-2", "--prefix", CLOSED)
    assert (crawled.returncode, crawled.stderr.decode()) == (2, "tse crawl: maxDepth must be an integer: +-2\n")
    scrapy = scrapy_here(
        "crawl", "tse", "-a", f"seed={CLOSED}", "-a", f"pagedir={tmp_path}", "-a", "depth=-+1", "-a", f"prefix={CLOSED}"
    )
    assert scrapy.returncode == 2
    assert scrapy.stderr.decode().splitlines()[-1] == "scrapy crawl tse: maxDepth must be an integer: -+1"
    assert os.listdir(tmp_path) == []


# 2. A PAGEDIR/.crawler that is a symbolic link is refused by the argument check, before anything is written.
def test_a_linked_crawler_marker_is_refused_before_the_crawl_state_is_made(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".crawler").symlink_to(victim)
    crawled = tse_here("crawl", CLOSED, out, 0, "--prefix", CLOSED)
    assert crawled.returncode == 2
    assert crawled.stderr.decode() == (
        f"tse crawl: cannot create {out}/.crawler: it is a symbolic link (the file it names is left as it is)\n"
    )
    assert os.listdir(out) == [".crawler"]  # no .tse-state.sqlite: not "an interrupted crawl" next time
    assert victim.read_text() == "precious\n"
    with pytest.raises(ArgumentError, match="symbolic link"):
        check_crawl_args(SEED, out, 1)
    (out / ".crawler").unlink()
    (out / ".crawler").symlink_to(tmp_path / "nowhere")  # dangling: refused the same
    with pytest.raises(ArgumentError, match="symbolic link"):
        check_crawl_args(SEED, out, 1)


# 3. Note files are never written through a symbolic link.
def test_a_note_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    (tmp_path / ROBOTS).mkdir()
    (tmp_path / ROBOTS / "crawl.tsv").symlink_to(victim)
    notes = PageNotes(tmp_path, ROBOTS, "crawl")
    with pytest.raises(OSError) as refused:
        notes.note("http://h/a.html", "noindex")
    assert str(refused.value) == (
        f"[Errno 40] it is a symbolic link (the file it names is left as it is): '{tmp_path}/{ROBOTS}/crawl.tsv'"
    )
    notes.close()
    assert victim.read_bytes() == b"precious\n"  # "http://h/a.html\tnoindex" was appended to it


def test_a_notes_directory_that_is_a_link_is_refused_and_a_plain_one_written(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / ROBOTS).symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link"):
        PageNotes(pages, ROBOTS, "crawl").note("http://h/a.html", "noindex")
    assert os.listdir(elsewhere) == []  # crawl.tsv was made there
    (pages / ROBOTS).unlink()
    notes = PageNotes(pages, ROBOTS, "crawl")
    notes.note("http://h/a.html", "noindex")
    notes.note("http://h/b.html", "noindex")
    notes.close()
    assert read_noindex(pages) == {"http://h/a.html", "http://h/b.html"}
    assert not (pages / ROBOTS / "crawl.tsv").is_symlink()


def test_a_notes_file_that_is_a_fifo_is_skipped_not_waited_on(tmp_path):
    (tmp_path / ROBOTS).mkdir()
    (tmp_path / ROBOTS / "a.tsv").write_bytes(b"http://h/a.html\tnoindex\n")
    os.mkfifo(tmp_path / ROBOTS / "b.tsv")  # (tse index waited for a writer for ever)
    os.symlink("/dev/zero", tmp_path / ROBOTS / "c.tsv")  # (read to 256 MiB)
    done = []
    reader = threading.Thread(target=lambda: done.append(read_noindex(tmp_path)), daemon=True)
    reader.start()
    reader.join(timeout=5)
    if reader.is_alive():  # (let the reader go: open the FIFO's other end)
        os.close(os.open(tmp_path / ROBOTS / "b.tsv", os.O_WRONLY | os.O_NONBLOCK))
    assert done == [{"http://h/a.html"}]


# 4. A seed's secret query token is masked in the stats Scrapy dumps at the crawl's end (-v).
def test_the_stats_dump_masks_a_failed_seeds_token(tmp_path):
    crawled = run_tse(
        "crawl", f"{CLOSED}?token=SECRET1", tmp_path, 0, "--prefix", CLOSED, "-v", "-s", "DOWNLOAD_DELAY=0"
    )
    stderr = crawled.stderr.decode()
    assert crawled.returncode == 0
    assert "'tse/seed_failures': [['http://127.0.0.1:9/?token=***', 'connection refused']]" in stderr
    assert "SECRET1" not in stderr


def test_every_stat_quoting_a_secret_is_masked_in_the_dump():
    stats = TseStatsCollector(
        get_crawler(settings_dict={"STATS_CLASS": "tse_scrapy.crawl.extensions.stats.TseStatsCollector"})
    )
    stats.set_value("tse/error", "cannot fetch http://alice:hunter2@h/?api_key=K3Y&x=1: refused")
    stats.set_value("tse/failed_pages", [["http://h/a.html?access_token=T0K", "HTTP 404"]])
    dumped = str(stats)
    assert "hunter2" not in dumped and "K3Y" not in dumped and "T0K" not in dumped
    assert "http://alice:***@h/?api_key=***&x=1: refused" in dumped
    assert stats.get_value("tse/error") == "cannot fetch http://alice:hunter2@h/?api_key=K3Y&x=1: refused"  # kept


def test_the_progress_log_masks_the_secrets_of_the_urls_it_shows(tmp_path, serve):
    # The progress log on stdout showed every URL whole (`Fetched: ...?token=SECRET2`), where the
    # terminal's status line, a report and the stats dump mask them (a scrapyd job's log is served).
    server = serve(write_site(tmp_path / "site", {"index.html": ["a.html?token=SECRET2", "b.html"]}).root)
    (tmp_path / "site" / "a.html").write_text("<html><body><p>a</p></body></html>\n")
    (tmp_path / "site" / "b.html").write_text("<html><body><p>b</p></body></html>\n")
    out = tmp_path / "out"
    out.mkdir()
    crawled = crawl_site(server, out, 1)
    assert crawled.returncode == 0, crawled.stderr.decode()
    log = crawled.stdout.decode()
    assert "SECRET2" not in log
    for depth, word in ((0, "Found"), (0, "Added"), (1, "Fetched")):
        assert progress_line(depth, word, f"{server.url}/a.html?token=***") in log
    assert progress_line(1, "Fetched", f"{server.url}/b.html") in log  # a URL with none: the reference's line
    # The page file keeps its URL whole: it is the page's (SPEC 2.2).
    assert f"{server.url}/a.html?token=SECRET2" in {page.url for _, page in pagedir.read_pages(out)}
