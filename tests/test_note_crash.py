"""A crawl killed (SIGKILL) at the instant a page file is written keeps what it notes of the page
beside it (``X-Robots-Tag: noindex`` and ``nofollow``, rules/files/pagenotes.py), and its resume and the
index answer as an uninterrupted crawl's.  The page's notes were written after its file: killed in
between, the resume read the page back from its file, which keeps no header, so a noindex page was
indexed and a nofollow page's links followed, for good.  Real crawls of a site served on 127.0.0.1,
killed by the real signal just before or just after the page file is put in place
(tests/support/s_crashpoint.py); the index made and asked in the test's process."""

from __future__ import annotations

import pytest

from tests.conftest import run_tse, site_crawl_args
from tests.support.inprocess import query_here, tse_here
from tests.support.pages import page_file_states, saved_pages
from tests.support.s_crashpoint import run_tse_killed
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.files.pagenotes import read_page_notes

PAGES = {
    "index.html": "<html><head><title>Start</title></head><body>"
    "<a href='hidden.html'>hidden</a> <a href='nf.html'>nf</a></body></html>",
    "hidden.html": "<html><head><title>Quokka</title></head><body><p>quokka</p></body></html>",
    "nf.html": "<html><head><title>Heron</title></head><body><a href='behind.html'>behind</a></body></html>",
    "behind.html": "<html><head><title>Marmot</title></head><body><p>marmot</p></body></html>",
}
QUERIES = ["quokka", "heron", "marmot"]
SAVED = {"index.html", "hidden.html", "nf.html"}  # behind.html is behind a nofollow page


def site(tmp_path, serve, robots: dict[str, str]):
    root = tmp_path / "site"
    root.mkdir()
    for name, html in PAGES.items():
        (root / name).write_text(html)
    server = serve(root)
    for name, value in robots.items():
        server.rules[f"/{name}"] = Rule(headers={"X-Robots-Tag": value})
    return server


def names(urls) -> set[str]:
    return {url.rsplit("/", 1)[1] for url in urls}


def asked(server) -> list[str]:
    return [hit.key.lstrip("/") for hit in server.hits if hit.key != "/robots.txt"]


def answers(out, index) -> list[set[str]]:
    return [names(url for _, url in found) for found in query_here(out, index, QUERIES, "tse")]


@pytest.mark.parametrize(
    ("when", "page", "settings"),
    [
        ("after", "hidden.html", ()),  # its file in place, and then the kill: was indexed
        ("after", "nf.html", ()),  # was followed on resume: behind.html saved
        ("after", "hidden.html", ("-s", "TSE_FSYNC=True")),  # pages written (and notes synced) by threads
        ("before", "hidden.html", ()),  # its notes written, not its file: fetched again, noted again
    ],
    ids=["after-noindex", "after-nofollow", "after-noindex-fsync", "before-noindex"],
)
def test_a_crawl_killed_as_a_page_file_is_written_resumes_with_its_notes(tmp_path, serve, when, page, settings):
    server = site(tmp_path, serve, {"hidden.html": "noindex", "nf.html": "nofollow"})
    out, index = tmp_path / "out", tmp_path / "index"
    out.mkdir()
    arguments = [*site_crawl_args(server, out, 3), "--links", "html", *settings]
    url = f"{server.url}/{page}"
    killed = run_tse_killed(when, url, arguments)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    # Every page file there, not only 1..N in a row: with TSE_FSYNC pages are written by threads, and
    # the kill in one may come before an earlier docID's file is in place (seen in CI).
    written = names(state[0] for state in page_file_states(out).values())
    assert (page in written) == (when == "after")
    if when == "after":  # a page file on disk has its notes, whatever instant the crawl was killed at
        notes = read_page_notes(out)
        assert url in (notes.noindex if page == "hidden.html" else notes.nofollow)
    resumed = run_tse(*arguments, "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert names(page_url for page_url, _ in saved_pages(out)) == SAVED
    assert "behind.html" not in asked(server)
    if page == "hidden.html":  # read back from its file, or fetched again (not written before the kill)
        assert asked(server).count(page) == (2 if when == "before" else 1)
    notes = read_page_notes(out)
    assert names(notes.noindex) == {"hidden.html"} and names(notes.nofollow) == {"nf.html"}
    assert tse_here("index", out, index).returncode == 0
    assert answers(out, index) == [set(), {"nf.html"}, set()]


def test_an_update_killed_between_a_pages_new_notes_and_its_file_ends_as_an_uninterrupted_one(tmp_path, serve):
    # Crawled and indexed while nf.html said nofollow; then hidden.html says noindex (its bytes as they
    # were) and nf.html no longer nofollow.  The update is killed once hidden.html's new notes are
    # written, its file not: the old file stays, noted noindex.  Its resume writes the file again, so
    # that `tse index --update`, which reads again only the page files that changed, leaves it out.
    server = site(tmp_path, serve, {"nf.html": "nofollow"})
    out, index = tmp_path / "out", tmp_path / "index"
    out.mkdir()
    arguments = [*site_crawl_args(server, out, 3), "--links", "html"]
    assert run_tse(*arguments).returncode == 0
    assert tse_here("index", out, index).returncode == 0
    assert answers(out, index) == [{"hidden.html"}, {"nf.html"}, set()]
    server.rules = {"/hidden.html": Rule(headers={"X-Robots-Tag": "noindex"})}
    killed = run_tse_killed("before", f"{server.url}/hidden.html", [*arguments, "--update"])
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    resumed = run_tse(*arguments, "--update", "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert names(page_url for page_url, _ in saved_pages(out)) == SAVED | {"behind.html"}
    notes = read_page_notes(out)
    assert names(notes.noindex) == {"hidden.html"} and notes.nofollow == frozenset()
    assert tse_here("index", out, index, "--update").returncode == 0
    assert answers(out, index) == [set(), {"nf.html"}, {"behind.html"}]


def test_a_page_noted_before_a_kill_and_answered_otherwise_on_resume_is_noted_as_answered(tmp_path, serve):
    # hidden.html's noindex noted, its file not written, and the kill; the resume fetches it again and
    # it no longer says noindex: the page saved is the one answered, indexed (the last note of a URL wins).
    server = site(tmp_path, serve, {"hidden.html": "noindex", "nf.html": "nofollow"})
    out, index = tmp_path / "out", tmp_path / "index"
    out.mkdir()
    arguments = [*site_crawl_args(server, out, 3), "--links", "html"]
    url = f"{server.url}/hidden.html"
    killed = run_tse_killed("before", url, arguments)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    assert url in read_page_notes(out).noindex
    del server.rules["/hidden.html"]
    resumed = run_tse(*arguments, "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert names(page_url for page_url, _ in saved_pages(out)) == SAVED
    assert read_page_notes(out).noindex == frozenset()
    assert tse_here("index", out, index).returncode == 0
    assert answers(out, index) == [{"hidden.html"}, {"nf.html"}, set()]
