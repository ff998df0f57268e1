"""An update that writes a WARC, a crawl record and a changes file, killed with SIGKILL anywhere
from its start to its clean-up and continued with ``tse crawl --update --resume``, ends as an
uninterrupted update of the same site ends: the same page directory, changes file and catalog; a
WARC that warcio checks, with every exchange of the update once (a page in flight at the kill may
have two) and a CDXJ equal to cdxj-indexer's of the whole file; a record with each page's line
once.

The kills are exact.  An uninterrupted update, traced, lists every file it opens, renames or
removes (tests/support/killat.py); the same update of a fresh copy then kills itself at one of
those events: before its state exists, once its state is made, as it opens its record and WARC,
at its first, second and last pages, and at the steps of its clean-up (an update of a site
that did not change: at its pages' revisits and what it removes before its changes file, its steps
before and after being the changed site's).  Each run kills at one instant of each kind and a seeded
sample of the others (tests/support/sample.py: every one with TSE_TEST_SEED=all).  (Kills between
two commits of its state, by the number of requests made, are in test_update.py.)  An update run
to its end, then resumed, says so, and touches nothing.

What ``tse crawl`` says and does before Scrapy starts (a refusal; "nothing to resume") is asked in the
test's process (``cli.main``, tests/support/inprocess.py): the same code, without a Python start each.
"""

from __future__ import annotations

import calendar
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import crawl_site, run_tse, scrapy_crawl_site
from tests.support.fulldisk import leave_free, tmpfs
from tests.support.inprocess import crawl_here, tse_here
from tests.support.killat import run_tse_until, traced_events
from tests.support.pages import catalog_rows, changes, page_file_states, snapshot, tree
from tests.support.sample import seeded_sample
from tests.support.sitecrawl import validated_two_page_crawl
from tests.support.sitegen import generate_site, write_site
from tests.support.warcs import assert_index_points_at_records, assert_valid
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.crawlrecord import parse_record

DEPTH = 10
PAGE_EVENT = re.compile(r"/pages/\.?\d+(\.partial)?$")  # a page file read back (a 304) or written
FINISHED = re.compile(
    r"(?P<program>[a-z ]+): (?P<pagedir>.+) holds an update finished at "
    r"(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC: nothing to resume "
    r"\(to update it again, leave out --resume or -a resume=yes\)\n"
)


def assert_finished(result: subprocess.CompletedProcess, pages: Path, program: str) -> float:
    """*result* says, in one line and with exit 0, that *pages* holds a finished update; when it finished."""
    said = FINISHED.fullmatch(result.stderr.decode())
    assert result.returncode == 0 and said, result.stderr.decode()[-2000:]
    assert (said["program"], said["pagedir"]) == (program, str(pages))
    return calendar.timegm(time.strptime(said["at"], "%Y-%m-%d %H:%M:%S"))


def update_arguments(server, run: Path) -> list[str]:
    """``tse crawl``'s arguments for the update of *run*/pages, with its three output files in *run*."""
    return [
        *("crawl", f"{server.url}/index.html", str(run / "pages"), str(DEPTH)),
        *("--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0", "--update"),
        *("--warc", str(run / "update.warc.gz"), "--record", str(run / "record.jsonl")),
        *("--changes", str(run / "changes.jsonl")),
    ]


def instants(trace: list[tuple[str, str]], pages_only: bool = False) -> list[tuple[str, str, int]]:
    """(event, path relative to the run, occurrence) of the instants to kill at: each one that is no
    page file's, and the first, second and last page's once the state is open; with *pages_only*,
    only those from the first page to the changes file's first event.

    Left out, as instants that leave the very files another one leaves (the first event's, or the
    last clean-up's ``-wal`` removal's): those before the state file first exists but the first (they
    read the directory, the catalog and the gone list, and the kill comes before the state's first
    opening makes its file), and those from that file's removal to the state's next opening, made
    (SQLite has removed its ``-wal`` and ``-shm`` as the connection closed); the last clean-up's
    ``-shm`` removal; the middle page (the second's event, another page's)."""
    seen: Counter = Counter()
    numbered = []
    for event, path in trace:
        seen[event, path] += 1
        numbered.append((event, path, seen[event, path]))
    state_opened = next(i for i, (_, path, _) in enumerate(numbered) if path.endswith("/.tse-state.sqlite"))
    pages = [i for i, (_, path, _) in enumerate(numbered) if i > state_opened and PAGE_EVENT.search(path)]
    assert len(pages) >= 10, trace
    state = [i for i, (_, path, _) in enumerate(numbered) if path.endswith("/.tse-state.sqlite")]
    assert [numbered[i][0] for i in state[:3]] == ["sqlite3.connect", "os.remove", "sqlite3.connect"], trace
    wal = [i for i, (_, path, _) in enumerate(numbered) if path.endswith("/.tse-state.sqlite-wal")]
    chosen = {i for i, (_, path, _) in enumerate(numbered) if not PAGE_EVENT.search(path)}
    chosen -= set(range(1, state[1])) | set(range(state[1] + 1, state[2] + 1))
    chosen -= {i for i, (_, path, _) in enumerate(numbered) if path.endswith(("sqlite-wal", "sqlite-shm"))}
    chosen |= {wal[-1], pages[0], pages[1], pages[-1]}
    changes_file = next(i for i, (_, path, _) in enumerate(numbered) if "changes.jsonl" in path)
    return [numbered[i] for i in sorted(chosen) if not pages_only or pages[0] <= i < changes_file]


def kind(instant: tuple[str, str, int], pages_begun: bool) -> str:
    """The kind of step of the update an instant of ``instants`` is in (*pages_begun*: one at or after
    its first page's): the kills at two instants of a kind resume through the same code, from files
    that differ in which one of them is half made."""
    event, path, _ = instant
    if PAGE_EVENT.search(path):
        return "a page"
    if not pages_begun:
        if path == "RUN/pages":
            return "before its state exists"
        return "its state made" if "/pages/" in path else "its record and WARC opened"
    if ".tse-pages.sqlite" in path:
        return "the catalog written"
    if event == "os.remove" and ".tse-state.sqlite" in path:
        return "its state removed"
    return "a result file written"  # the gone list, the changes file, the CDXJ


def chosen_instants(killed_at: list[tuple[str, str, int]], more: int) -> tuple[list[tuple[str, str, int]], str]:
    """The first instant of each kind, the last one, and a seeded sample of *more* others (all with
    TSE_TEST_SEED=all): an instant left out resumes through the code that a kept one of its kind does,
    from files that differ only in which of that step's files is half made, and another run of the
    suite kills there.  With the words that replay the sample, for the assertion messages."""
    first_page = next(i for i, (_, path, _) in enumerate(killed_at) if PAGE_EVENT.search(path))
    kinds = {kind(at, i >= first_page): at for i, at in reversed(list(enumerate(killed_at)))}
    always = {*kinds.values(), killed_at[-1]}
    others, replay = seeded_sample([at for at in killed_at if at not in always], more)
    return [at for at in killed_at if at in always or at in others], replay


def answers(warc: Path) -> Counter:
    """(URL, record type, HTTP status) of each response and revisit record, counted."""
    return Counter(
        (r["warc"]["WARC-Target-URI"], r["type"], r["http"].get_statuscode())
        for r in assert_valid(warc)
        if r["type"] in ("response", "revisit")
    )


def record_lines(path: Path) -> Counter:
    """(URL, outcome, HTTP status, docID) of each line of a crawl record but robots.txt's, counted;
    every line must be one whole record."""
    records = [parse_record(line) for line in path.read_bytes().splitlines()]
    return Counter((r.url, r.outcome, r.status, r.doc) for r in records if r.outcome != "robots")


@pytest.fixture(scope="module")
def crawled_once(tmp_path_factory):
    """A 25-page site, served for the module, and its first crawl, with a WARC (so with the pages'
    validators), made once: a test copies the crawl, and ``crawled`` puts the site's files back."""
    root = tmp_path_factory.mktemp("crawled")
    # (25 pages, 40 before: the kills are at instants of kinds, the first, second and last page's among
    # them, not at every page: fifteen pages fewer fetched by each of the test's two dozen updates.)
    site = generate_site(root / "site", pages=25, fanout=3, seed=31, external=1, dead=1)
    files = {path: path.read_bytes() for path in site.root.rglob("*") if path.is_file()}
    pages = root / "crawled"
    pages.mkdir()
    with SiteServer(site.root) as server:
        first = crawl_site(server, pages, DEPTH, "--warc", root / "first.warc.gz")
        assert first.returncode == 0, first.stderr.decode()[-2000:]
        yield site, server, pages, files


@pytest.fixture
def crawled(crawled_once):
    """The site as it was first crawled, its server and its first crawl (to be copied, not changed)."""
    site, server, pages, files = crawled_once
    for path in site.root.rglob("*"):
        if path.is_file() and path not in files:
            path.unlink()
    for path, data in files.items():  # the same bytes: the same ETags, a 304 as before
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    return site, server, pages


def change_site(root: Path) -> None:
    """Change two pages, delete one (it answers 404), add one (the site server's ETags come from the bytes)."""
    for name in ("p3.html", "p7.html"):
        path = root / name
        path.write_text(path.read_text().replace("</body>", f"<p>{name} changed</p></body>"))
    (root / "p11.html").unlink()
    (root / "fresh.html").write_text("<html><body><p>Added after the first crawl</p></body></html>\n")
    index = root / "index.html"
    index.write_text(index.read_text().replace("</body>", '<a href="fresh.html">fresh</a></body>'))


@pytest.mark.parametrize("site_changes", [False, True], ids=["site unchanged", "site changed"])
def test_an_update_killed_at_any_instant_resumes_to_an_uninterrupted_updates_end(tmp_path, crawled, site_changes):
    site, server, crawled_pages = crawled
    if site_changes:
        change_site(site.root)
    reference = tmp_path / "reference"
    shutil.copytree(crawled_pages, reference / "pages")
    traced = run_tse_until(["--trace"], update_arguments(server, reference))
    assert traced.returncode == 0, traced.stderr.decode()[-2000:]
    trace = traced_events(traced.stderr, reference)
    expected_answers = answers(reference / "update.warc.gz")
    expected_lines = record_lines(reference / "record.jsonl")
    if not site_changes:  # a revisit record for every page
        urls = {page.url for _, page in pagedir.read_pages(reference / "pages")}
        assert {url for url, kind, status in expected_answers if kind == "revisit" and status == "304"} == urls

    # After the end: the same command with --resume says so, fetches nothing, touches nothing.
    before, hits = snapshot(reference), len(server.hits)
    assert_finished(tse_here(*update_arguments(server, reference), "--resume"), reference / "pages", "tse crawl")
    assert len(server.hits) == hits and snapshot(reference) == before

    # The instants before the first page and from the changes file on are the same steps whether the
    # site changed or not: an unchanged site is killed at its pages' revisits and the gone list's removal.
    every_instant = instants(trace, pages_only=not site_changes)
    assert len(every_instant) >= (4 if not site_changes else 20), every_instant
    changes_at = [i for i, (_, path, _) in enumerate(every_instant) if "changes.jsonl" in path]
    cleaning_up = every_instant[changes_at[0]] if site_changes else every_instant[0]
    # Every kind's first instant and the last are always killed at; of the others (each one its kind's
    # code, from files that differ in which one is half made) two a run, each run of the suite others
    # (five before: six processes more, for instants of kinds already killed at).
    killed_at, replay = chosen_instants(every_instant, 1 if not site_changes else 2)

    def kill_and_resume(number: int, event: str, path: str, occurrence: int) -> tuple[str, Path, dict]:
        run = tmp_path / f"killed{number}"
        shutil.copytree(crawled_pages, run / "pages")
        untouched = page_file_states(run / "pages")
        instant = f"killed at {event} {path} #{occurrence} ({replay})"
        arguments = update_arguments(server, run)
        killed = run_tse_until([event, path.replace("RUN", str(run)), str(occurrence)], arguments)
        assert killed.returncode == -signal.SIGKILL, (instant, killed.stderr.decode()[-2000:])
        resumed = run_tse(*arguments, "--resume")
        assert resumed.returncode == 0, (instant, resumed.stderr.decode()[-2000:])
        assert b"Traceback" not in resumed.stderr, instant
        return instant, run, untouched

    # Two at a time, one a core: each in a copy of its own.
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(kill_and_resume, number, *at) for number, at in enumerate(killed_at)]
        for at, done in zip(killed_at, runs, strict=True):
            instant, run, untouched = done.result()
            if every_instant.index(at) >= every_instant.index(cleaning_up):
                # It knows it finished, killed as its clean-up had begun or not (asked here, in the
                # main thread: what it says before Scrapy starts, in the test's process).
                arguments = update_arguments(server, run)
                assert_finished(tse_here(*arguments, "--resume"), run / "pages", "tse crawl")
            assert changes(run / "changes.jsonl") == changes(reference / "changes.jsonl"), instant
            pages = {name: data for name, data in tree(run / "pages").items() if name != ".tse-pages.sqlite"}
            expected_pages = tree(reference / "pages")
            assert pages == {name: data for name, data in expected_pages.items() if name != ".tse-pages.sqlite"}, (
                instant
            )
            assert catalog_rows(run / "pages") == catalog_rows(reference / "pages"), instant
            if not site_changes:
                assert page_file_states(run / "pages") == untouched, instant  # not one page file written again

            # Every exchange of the update is in the WARC; none twice, but for robots.txt (each run
            # asks for it) and a page in flight at the kill, fetched again.
            found = answers(run / "update.warc.gz")
            assert set(found) == set(expected_answers), instant
            again = found - expected_answers
            assert all(url.endswith("/robots.txt") or count == 1 for (url, *_), count in again.items()), instant
            assert sum(1 for url, *_ in again if not url.endswith("/robots.txt")) <= 2, (instant, again)
            assert_index_points_at_records(run / "update.warc.gz")

            # The record: whole lines, each page's once; the page saved in the instant of the kill may lack its line.
            lines = record_lines(run / "record.jsonl")
            assert max(lines.values()) == 1 and set(lines) <= set(expected_lines), (instant, lines - expected_lines)
            assert len(expected_lines) - len(lines) <= 1, (instant, expected_lines - lines)


def test_resuming_an_update_that_has_finished_or_never_began(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1, "--validators").returncode == 0
    first = ["--warc", tmp_path / "u1.warc.gz", "--changes", tmp_path / "c1.jsonl"]
    started = time.time()
    assert crawl_site(server, out, 1, "--update", *first).returncode == 0
    ended = time.time()

    # The update has finished: resumed with its own output files, by either command, it says so
    # (and when it finished) and does nothing.
    before, hits = snapshot(tmp_path), len(server.hits)
    at = assert_finished(crawl_here(server, out, 1, "--update", "--resume", *first), out, "tse crawl")
    assert started - 1 <= at <= ended
    scrapy_options = ["-a", "update=yes", "-a", "resume=yes", "-s", f"TSE_WARC={first[1]}"]
    scrapy_options += ["-s", f"TSE_CHANGES={first[3]}"]
    assert assert_finished(scrapy_crawl_site(server, out, 1, *scrapy_options), out, "scrapy crawl tse") == at
    assert snapshot(tmp_path) == before and len(server.hits) == hits

    # With other output files, it is another update, which had not begun (as one killed before it
    # made its state): it runs now.
    (site.root / "b.html").write_text("<html><body>B, changed</body></html>\n")
    second = ["--warc", tmp_path / "u2.warc.gz", "--changes", tmp_path / "c2.jsonl"]
    done = crawl_site(server, out, 1, "--update", "--resume", *second)
    assert done.returncode == 0, done.stderr.decode()
    assert b"0 new, 1 changed, 2 unchanged, 0 gone" in done.stderr
    listed = {entry["url"].rsplit("/", 1)[1]: entry["change"] for entry in changes(tmp_path / "c2.jsonl")}
    assert listed == {"index.html": "unchanged", "a.html": "unchanged", "b.html": "changed"}
    assert_valid(tmp_path / "u2.warc.gz")
    # A WARC that exists but that no interrupted update was writing is never appended to.
    before = snapshot(tmp_path)
    done = crawl_here(server, out, 1, "--update", "--resume", "--warc", first[1])
    assert done.returncode == 2
    assert (
        done.stderr.decode()
        == f"tse crawl: --warc: {first[1]} exists, and no interrupted crawl of {out} was writing it\n"
    )
    assert snapshot(tmp_path) == before


@pytest.fixture(scope="module")
def small_crawl(tmp_path_factory):
    """A two-page site, served for the module, and its crawl with the catalog, made once: the tests
    that ask for it damage a copy."""
    with validated_two_page_crawl(tmp_path_factory.mktemp("small_crawl")) as made:
        yield made


@pytest.mark.parametrize("broken", [".tse-state.sqlite", ".tse-pages.sqlite"])
@pytest.mark.parametrize("content", ["not a database", "a directory"])
def test_a_state_or_catalog_that_cannot_be_read_is_refused_in_one_line(tmp_path, small_crawl, broken, content):
    server, crawled_once = small_crawl
    out, empty = tmp_path / "out", tmp_path / "empty"
    shutil.copytree(crawled_once, out)
    empty.mkdir()
    for directory in (out, empty):
        path = directory / broken
        path.unlink(missing_ok=True)
        if content == "a directory":
            path.mkdir()
        else:
            path.write_bytes(b"garbage " * 100)
    before, hits = snapshot(tmp_path), len(server.hits)

    def refusal(directory: Path) -> str:
        path = directory / broken
        reason = f"{path} is not a file" if content == "a directory" else f"{path}: file is not a database"
        what = "the crawl state" if broken == ".tse-state.sqlite" else "the page catalog"
        return f"tse crawl: cannot read {what}: {reason}\n"

    cases = [(out, ["--update"]), (out, ["--update", "--resume"]), (empty, ["--validators"])]
    cases += [(empty, ["--warc", tmp_path / "new.warc.gz"])]
    if broken == ".tse-state.sqlite":
        cases += [(out, ["--resume"]), (empty, [])]
    for directory, options in cases:  # refused before Scrapy starts: asked in the test's process
        done = crawl_here(server, directory, 1, *options)
        assert (done.returncode, done.stderr.decode()) == (2, refusal(directory)), (directory, options)
    assert snapshot(tmp_path) == before and len(server.hits) == hits


def test_an_update_whose_results_cannot_be_written_goes_on_with_update_resume_fetching_nothing(tmp_path, serve):
    # Its changes file on a full disk: the error was logged (no file named), then said again after the
    # summary, and once there was room, --update --resume said "the page limit (5) is already reached",
    # exit 0, and never wrote the results.  Now: one line naming the file and how to go on, and the
    # resume writes them (changes file, catalog, state removed) without asking for any page.
    site = generate_site(tmp_path / "site", pages=15, fanout=3, seed=5, external=0, dead=0)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, DEPTH, "--validators").returncode == 0
    known = len(list(pagedir.read_pages(out)))
    assert known > 5
    with tmpfs(tmp_path / "small", 64 * 1024) as small:
        leave_free(small, 0)
        listed = small / "changes.jsonl"
        options = ("--update", "--max-pages", "5", "--changes", listed)
        failed = crawl_site(server, out, DEPTH, *options)
        assert failed.returncode == 1, failed.stderr.decode()[-2000:]
        summary, reason = failed.stderr.decode().splitlines()
        assert summary.startswith("tse crawl: 5 pages checked, 0 written, ")
        assert reason == (
            f"tse crawl: cannot write {listed}: No space left on device (the update has fetched its pages: "
            "only its results are left to write): go on with --update --resume"
        )
        assert (out / ".tse-state.sqlite").is_file() and not listed.exists()

        (small / "filler").unlink()
        hits = len(server.hits)
        done = crawl_site(server, out, DEPTH, *options, "--resume")
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert done.stderr.decode().splitlines()[0] == (
            f"tse crawl: updated {out}: 0 new, 0 changed, {known} unchanged, 0 gone "
            f"({known - 5} of the unchanged not revisited: page limit)"
        )
        assert len(server.hits) == hits  # nothing asked for, robots.txt included
        assert [entry["change"] for entry in changes(listed)] == ["unchanged"] * known
        assert not (out / ".tse-state.sqlite").exists()
        assert_finished(crawl_here(server, out, DEPTH, *options, "--resume"), out, "tse crawl")
