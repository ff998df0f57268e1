"""What a review found in updates, fixed: a crawl killed while it wrote the page catalog left a hot
rollback journal beside it, and every later crawl of the directory (``--update``, ``--resume``) was
refused for good ("attempt to write a readonly database"); a full disk as an update set up its state
was a traceback ("Task exception was never retrieved"); an update in priority order listed as gone
a new page that a revisited page redirects to now.  Real crawls of real files served on 127.0.0.1
(docs/updating.md, docs/robustness.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import crawl_site, run_tse
from tests.support.fulldisk import leave_free, tmpfs
from tests.support.pages import catalog_rows, changes, page_file_states, snapshot
from tests.support.sitecrawl import interrupted_crawl
from tests.support.sitegen import generate_site, write_site
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.files import pagedir

DEPTH = 3
CATALOG = ".tse-pages.sqlite"


def pages_of(directory) -> dict[int, tuple[str, bytes]]:
    """docID -> (URL, bytes) of every page file, gone ones included."""
    return {doc: (url, data) for doc, (url, _, _, data) in page_file_states(directory).items()}


def killed_in_a_catalog_write(directory) -> None:
    """Leave the catalog of *directory* as a crawl killed while it wrote it does: half its pages
    written over in place (a tiny page cache spills them before the commit), and its rollback
    journal, hot, beside it."""
    kill = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "c.execute('BEGIN')\n"
        "c.execute('DELETE FROM pages')\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", kill, str(directory / CATALOG)], capture_output=True)
    assert done.returncode == -9, done.stderr.decode()
    assert (directory / f"{CATALOG}-journal").stat().st_size > 0


@pytest.mark.parametrize("resume", [False, True], ids=["update", "update-resume"])
def test_a_catalog_left_by_a_killed_write_is_rolled_back_and_the_update_goes_on(tmp_path, serve, resume):
    # Every later crawl exited 2: "cannot read the page catalog: ...: attempt to write a readonly
    # database" (the catalog was read read-only, and SQLite cannot roll back a hot journal so).
    site = generate_site(tmp_path / "site", pages=40, fanout=3, seed=4)
    server = serve(site.root)
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    first = crawl_site(server, crawled, DEPTH, "--validators")
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    shutil.copytree(crawled, killed)
    shutil.copytree(crawled, clean)
    killed_in_a_catalog_write(killed)
    # The site changes: the update has something to find.
    index = site.root / "index.html"
    index.write_text(index.read_text().replace("</body>", '<p><a href="fresh.html">fresh</a></p></body>'))
    (site.root / "fresh.html").write_text("<html><body><p>A page added today</p></body></html>\n")
    (site.root / "p3.html").write_text("<html><body><p>p3, changed</p></body></html>\n")
    options = ("--update", "--resume") if resume else ("--update",)
    results = {}
    for name, out in (("killed", killed), ("clean", clean)):
        listed = tmp_path / f"{name}.jsonl"
        done = crawl_site(server, out, DEPTH, *options, "--changes", listed)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert not (out / f"{CATALOG}-journal").exists()
        results[name] = (pages_of(out), pagedir.gone_docs(out), changes(listed), catalog_rows(out))
        summary = [line for line in done.stderr.decode().splitlines() if line.startswith("tse crawl: updated")]
        results[name] += (summary[0].replace(str(out), "OUT"),)
    assert results["killed"] == results["clean"]
    assert any(entry["change"] == "new" for entry in results["clean"][2])


def test_an_update_stopped_with_its_catalog_half_written_resumes(tmp_path, serve):
    # An update stopped (Ctrl-C) and its catalog left as a kill in its write leaves it: --update
    # --resume reads both the crawl state and the catalog, and ends as an update never stopped.
    site = generate_site(tmp_path / "site", pages=12, fanout=3, seed=2)
    server = serve(site.root)
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    assert crawl_site(server, crawled, DEPTH, "--validators").returncode == 0
    stopped, clean = tmp_path / "stopped", tmp_path / "clean"
    shutil.copytree(crawled, stopped)
    shutil.copytree(crawled, clean)
    (site.root / "p2.html").write_text("<html><body><p>p2, changed</p></body></html>\n")
    args = ("crawl", f"{server.url}/index.html", stopped, DEPTH, "--prefix", f"{server.url}/", "--update")
    asked = len(server.hits)
    listed = tmp_path / "stopped.jsonl"
    assert interrupted_crawl((*args, "--changes", listed), lambda: len(server.hits) - asked, 4) == 1
    assert (stopped / ".tse-state.sqlite").is_file()
    killed_in_a_catalog_write(stopped)
    resumed = run_tse(*args, "--resume", "--changes", listed, "-s", "DOWNLOAD_DELAY=0")
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert not (stopped / f"{CATALOG}-journal").exists()
    assert not (stopped / ".tse-state.sqlite").exists()
    assert crawl_site(server, clean, DEPTH, "--update", "--changes", tmp_path / "clean.jsonl").returncode == 0
    assert pages_of(stopped) == pages_of(clean)
    assert pagedir.gone_docs(stopped) == pagedir.gone_docs(clean)
    assert changes(listed) == changes(tmp_path / "clean.jsonl")
    assert catalog_rows(stopped) == catalog_rows(clean)


FREE = 140 * 1024  # room for the update's state, not for the pages before it (150 pages' records)


def test_a_full_disk_as_an_update_sets_up_its_state_is_one_line(tmp_path, serve):
    # It was an asyncio traceback ("Task exception was never retrieved ... sqlite3.OperationalError:
    # database or disk is full") from UpdateExtension.setup, built by the conditional middleware.
    site = generate_site(tmp_path / "site", pages=150, fanout=3, seed=1)
    server = serve(site.root)
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    first = crawl_site(server, crawled, 6, "--validators")
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    clean = tmp_path / "clean"
    shutil.copytree(crawled, clean)
    (site.root / "fresh.html").write_text("<html><body><p>A page added today</p></body></html>\n")
    index = site.root / "index.html"
    index.write_text(index.read_text().replace("</body>", '<p><a href="fresh.html">fresh</a></p></body>'))
    clean_run = crawl_site(server, clean, 6, "--update", "--changes", tmp_path / "clean.jsonl")
    assert clean_run.returncode == 0, clean_run.stderr.decode()[-2000:]
    with tmpfs(tmp_path / "fs", 32 * 1024 * 1024) as fs:  # (the WAL grows to 4 MB)
        out = fs / "out"
        shutil.copytree(crawled, out)
        listed = fs / "changes.jsonl"
        leave_free(fs, FREE)
        before = {name: entry for name, entry in snapshot(out).items() if not name.startswith(".tse-state")}
        asked = len(server.hits)
        full = crawl_site(server, out, 6, "--update", "--changes", listed)
        assert (full.returncode, full.stdout, full.stderr.decode()) == (
            1,
            b"",
            "tse crawl: cannot write the crawl state: database or disk is full: go on with --update --resume\n",
        )
        assert len(server.hits) == asked  # nothing fetched
        # Nothing written but the crawl state (no page file, catalog or gone list touched).
        after = {name: entry for name, entry in snapshot(out).items() if not name.startswith(".tse-state")}
        assert {k: v for k, v in after.items() if k != "."} == {k: v for k, v in before.items() if k != "."}
        assert (out / ".tse-state.sqlite").is_file()
        # Once there is room, the update goes on, to what it would have done.
        (fs / "filler").unlink()
        resumed = crawl_site(server, out, 6, "--update", "--resume", "--changes", listed)
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
        assert not (out / ".tse-state.sqlite").exists()
        assert pages_of(out) == pages_of(clean)
        assert pagedir.gone_docs(out) == pagedir.gone_docs(clean)
        assert changes(listed) == changes(tmp_path / "clean.jsonl")
        assert catalog_rows(out) == catalog_rows(clean)


PRIORITY = ("--order", "priority", "-s", "TSE_PRIORITIZER=tse_scrapy.update.prioritizer.ChangeRatePrioritizer")


@pytest.mark.parametrize("order", ["priority", "default"])
def test_a_new_page_a_revisited_page_redirects_to_is_no_gone_page(tmp_path, serve, order):
    # In priority order, c.html (reached through b.html's redirect) was saved as page 3 and listed in
    # .tse-gone, "not reached", without a line in the changes file: the link found reached b.html.
    site = write_site(tmp_path / "site", {"index.html": ["b.html"], "b.html": []})
    (site.root / "c.html").write_text("<html><body><p>c</p></body></html>\n")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1, "--validators").returncode == 0
    docs = {url.removeprefix(f"{server.url}/"): doc for doc, (url, *_) in page_file_states(out).items()}
    assert set(docs) == {"index.html", "b.html"}
    server.rules["/b.html"] = Rule(status=302, location="/c.html")  # (a ``.redirects`` line, on this port)
    listed = tmp_path / "changes.jsonl"
    options = PRIORITY if order == "priority" else ()
    done = crawl_site(server, out, 1, "--update", "--changes", listed, *options)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    # A fresh crawl of the site as it is now saves index.html and c.html.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert crawl_site(server, fresh, 1).returncode == 0
    live = {url for doc, (url, _) in pages_of(out).items() if doc not in pagedir.gone_docs(out)}
    assert live == {url for url, _ in pages_of(fresh).values()}
    assert pagedir.gone_docs(out) == {docs["b.html"]}
    entries = {entry["url"].removeprefix(f"{server.url}/"): entry for entry in changes(listed)}
    assert entries["b.html"]["change"] == "gone"
    assert entries["c.html"]["change"] == "new"
    assert "1 new, 0 changed, 1 unchanged, 1 gone" in done.stderr.decode()
