"""An update and a known page that fails only for a while (a 503, a timeout, a robots.txt that cannot be
read, the whole site down): the page keeps its saved copy, and its links are followed from that copy,
as after a 304, so the pages below it are visited (or kept) as if it had answered as before; only a
404, a 410 or a robots.txt that forbids a page makes it gone (docs/updating.md).  Real crawls of real
files served on 127.0.0.1."""

from __future__ import annotations

import contextlib
import shutil
from http.server import ThreadingHTTPServer

import pytest

from tests.conftest import crawl_site
from tests.support.inprocess import tse_here
from tests.support.pages import changes, page_file_states
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.files import pagedir
from tse_scrapy.update.prioritizer import ChangeRatePrioritizer

DEPTH = 3
# The hub is the only way to the pages below it; "deep" is two links below it.
LINKS = {
    "index.html": ["hub.html", "a.html"],
    "a.html": [],
    "hub.html": ["below/same.html", "below/edited.html", "below/deleted.html"],
    "below/same.html": ["deep.html"],
    "below/deep.html": [],
    "below/edited.html": [],
    "below/deleted.html": [],
}


def word(name: str) -> str:
    """A word only page *name* has."""
    return "only" + name.replace("/", "").split(".")[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The site, served for the whole module, and its first crawls (with and without the catalog),
    each made once: a test changes the site and the server's rules, and ``crawled`` undoes both; and
    ``down()``, within which the server is stopped (the whole site down)."""
    root = tmp_path_factory.mktemp("transient")
    site = write_site(root / "site", LINKS)
    for name in LINKS:
        path = site.root / name
        path.write_text(path.read_text().replace("</body>", f"<p>{word(name)}</p></body>"))
    files = {name: (site.root / name).read_bytes() for name in LINKS}
    with SiteServer(site.root) as server:
        made: dict[bool, object] = {}

        def first_crawl(validators: bool):
            if validators not in made:
                out = root / f"crawled-{validators}"
                out.mkdir()
                first = crawl_site(server, out, DEPTH, *(["--validators"] if validators else []))
                assert first.returncode == 0, first.stderr.decode()[-2000:]
                made[validators] = out
            return made[validators]

        @contextlib.contextmanager
        def down():
            """The server stopped (nothing listens on its port: connection refused), then listening on
            that port again, as before."""
            address, handler = server.httpd.server_address, server.httpd.RequestHandlerClass
            server.stop()
            try:
                yield
            finally:
                server.httpd = ThreadingHTTPServer(address, handler)  # (the port reused: SO_REUSEADDR)
                server.httpd.daemon_threads = True
                server.start()

        yield site, server, files, first_crawl, down


def crawled(tmp_path, served, validators: bool):
    """The site as it was first crawled, and a copy of that crawl (*validators*: with its catalog)."""
    site, server, files, first_crawl, _ = served
    server.rules.clear()
    for name, data in files.items():  # the same bytes: the same ETag, so a 304 as before
        path = site.root / name
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    out = tmp_path / "out"
    shutil.copytree(first_crawl(validators), out)
    files = page_file_states(out)
    assert len(files) == len(LINKS)
    doc_of = {url.removeprefix(server.url + "/"): doc for doc, (url, *_) in files.items()}
    return site, server, out, doc_of


def found(tmp_path, out, *queries: str) -> list[str]:
    """What ``tse query`` answers each of *queries* with (its block, in their order), once ``tse index``
    has indexed *out*: one index and one ``tse query`` for them all, both in the test's process
    (``cli.main``: tests/support/inprocess.py), as they read what the update wrote."""
    indexfile = tmp_path / "out.index"
    assert tse_here("index", out, indexfile).returncode == 0
    answer = tse_here("query", out, indexfile, input="".join(f"{query}\n" for query in queries).encode())
    assert answer.returncode == 0, answer.stderr.decode()
    blocks = answer.stdout.decode().split("Query: ")[1:]
    assert [block.split("\n", 1)[0].strip() for block in blocks] == list(queries), blocks
    return blocks


FAILURES = {
    "503": (Rule(status=503), [], "http 503", 503),
    "timeout": (Rule(delay=4), ["-s", "DOWNLOAD_TIMEOUT=1"], "timeout", None),
}


# How the update runs: from the seed with or without a catalog, or revisiting every live page at once
# in the order of their change rates (then, before, the pages below the hub were revisited but, no link
# reaching them, gone all the same: "not reached").
MODES = {
    "validators": (True, []),
    "no-catalog": (False, []),
    "revisits": (
        True,
        ["--order", "priority", "-s", f"TSE_PRIORITIZER={ChangeRatePrioritizer.__module__}.ChangeRatePrioritizer"],
    ),
}


# The (mode, failure) after which the hub answers again, and the next update runs.
AGAIN = {("no-catalog", "timeout"), ("revisits", "503"), ("validators", "503")}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_hub_that_fails_for_a_while_keeps_the_pages_below_it(tmp_path, served, mode, failure):
    validators, order = MODES[mode]
    site, server, out, doc_of = crawled(tmp_path, served, validators)
    before = page_file_states(out)
    rule, options, reason, status = FAILURES[failure]
    options = [*options, *order]
    server.rules["/hub.html"] = rule
    # Below the hub, the site changes: the pages there are visited, from the hub's saved copy.
    (site.root / "below/deleted.html").unlink()
    edited = site.root / "below/edited.html"
    edited.write_text(edited.read_text().replace("</body>", "<p>newword</p></body>"))

    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, DEPTH, "--update", "--changes", listed, "-s", "RETRY_TIMES=0", *options)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "0 new, 1 changed, 5 unchanged, 1 gone" in result.stderr.decode()

    # Only the page the site deleted is gone; the hub and everything below it are live.
    assert set(pagedir.gone_docs(out)) == {doc_of["below/deleted.html"]}
    entries = {e["url"].removeprefix(server.url + "/"): e for e in changes(listed)}
    assert entries["hub.html"] == {
        "docid": doc_of["hub.html"],
        "url": f"{server.url}/hub.html",
        "change": "unchanged",
        "status": status,
        "reason": f"kept: {reason}",
    }
    assert entries["below/deleted.html"]["change"] == "gone"
    assert entries["below/deleted.html"]["reason"] == "http 404"
    assert entries["below/edited.html"]["change"] == "changed"
    unchanged = ("index.html", "a.html", "below/same.html", "below/deep.html")
    assert {name: entries[name]["change"] for name in unchanged} == dict.fromkeys(unchanged, "unchanged")
    assert {entries[name]["status"] for name in unchanged} == {304 if validators else 200}
    assert all("reason" not in entries[name] for name in (*unchanged, "below/edited.html"))

    # Every page file as it was (the hub's saved copy untouched), but the one that changed.
    after = page_file_states(out)
    edited_doc = doc_of["below/edited.html"]
    assert {doc: state for doc, state in after.items() if doc != edited_doc} == {
        doc: state for doc, state in before.items() if doc != edited_doc
    }
    assert b"newword" in after[edited_doc][3]

    # The index still finds the pages below the failed hub, and the hub itself.  (tse index reads
    # the page files and the gone list, asserted above to be the same whatever the mode: asked in
    # one mode, for each failure.)
    if mode == "validators":
        below = ("below/deep.html", "below/same.html", "hub.html")
        *kept, edited, deleted = found(tmp_path, out, *map(word, below), "newword", word("below/deleted.html"))
        assert all(f"{server.url}/{name}" in answer for name, answer in zip(below, kept, strict=True)), kept
        assert f"{server.url}/below/edited.html" in edited
        assert f"{server.url}/below/deleted.html" not in deleted

    # Once the hub answers again, the next update sees the site as a fresh crawl would.  (It reads the
    # page files, gone list and changes asserted above to be the same whatever the failure: asked in
    # each mode, after one failure, each failure in one mode at least.)
    if (mode, failure) not in AGAIN:
        return
    del server.rules["/hub.html"]
    again = tmp_path / "again.jsonl"
    result = crawl_site(server, out, DEPTH, "--update", "--changes", again, *order)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "0 new, 0 changed, 6 unchanged, 0 gone" in result.stderr.decode()
    assert set(pagedir.gone_docs(out)) == {doc_of["below/deleted.html"]}


def test_a_known_page_that_is_gone_still_makes_the_pages_below_it_gone(tmp_path, served):
    # A 404 says the page is gone: its links are not followed, and what only it linked to is not reached.
    _, server, out, doc_of = crawled(tmp_path, served, True)
    server.rules["/hub.html"] = Rule(status=404)
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, DEPTH, "--update", "--changes", listed)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    below = {doc_of[name] for name in LINKS if name.startswith("below/")}
    assert set(pagedir.gone_docs(out)) == {doc_of["hub.html"], *below}
    entries = {e["docid"]: e for e in changes(listed)}
    assert entries[doc_of["hub.html"]]["reason"] == "http 404"
    assert {entries[doc]["reason"] for doc in below} == {"not reached"}


def test_a_robots_txt_that_cannot_be_read_loses_no_page(tmp_path, served):
    # "Disallow all" (RFC 9309) for the update, but it says nothing of the pages: every page is kept,
    # its links followed from its saved copy, and none asked for.
    _, server, out, doc_of = crawled(tmp_path, served, True)
    before = page_file_states(out)
    server.rules["/robots.txt"] = Rule(status=503)
    asked = len(server.hits)
    listed = tmp_path / "changes.jsonl"
    result = crawl_site(server, out, DEPTH, "--update", "--changes", listed, "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert [hit.key for hit in server.hits[asked:]] == ["/robots.txt"]
    assert page_file_states(out) == before
    assert pagedir.gone_docs(out) == set()
    assert changes(listed) == [
        {
            "docid": doc,
            "url": f"{server.url}/{name}",
            "change": "unchanged",
            "status": None,
            "reason": "kept: robots.txt answered HTTP 503",
        }
        for name, doc in sorted(doc_of.items(), key=lambda item: item[1])
    ]
    (deep,) = found(tmp_path, out, word("below/deep.html"))
    assert f"{server.url}/below/deep.html" in deep


def test_a_whole_site_down_loses_no_page(tmp_path, served):
    _, server, out, _ = crawled(tmp_path, served, True)
    before = page_file_states(out)
    # Stopped: nothing listens on its port (connection refused).
    listed = tmp_path / "changes.jsonl"
    with served[-1]():
        result = crawl_site(server, out, DEPTH, "--update", "--changes", listed, "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert page_file_states(out) == before
    assert pagedir.gone_docs(out) == set()
    entries = changes(listed)
    assert len(entries) == len(LINKS)
    assert {(e["change"], e["status"], e["reason"]) for e in entries} == {
        ("unchanged", None, "kept: robots.txt: connection refused")
    }
    # The seed is one of them: kept, as the line about it says (it said only "could not be fetched").
    assert b"the seed URL could not be fetched (connection refused, its saved copy kept)\n" in (result.stderr), (
        result.stderr.decode()[-2000:]
    )
