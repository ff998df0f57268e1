"""What review K found in updates in place, mended: an update in priority order (a revisit policy)
kept live, for ever, the pages the site no longer links to from its seed that still link to one
another or to themselves (a page's link to itself, a site's navigation), and saved the pages only
they link to, and listed gone a page the site reaches only through a redirect; ``tse index --update``
stopped, exit 1, on a search index damaged where only the update reads (where a damaged document
store gives way to a full build).  Real crawls of real files served on 127.0.0.1, real indexes
(docs/updating.md, docs/indexing.md)."""

from __future__ import annotations

import random

import apsw

from tests.conftest import crawl_site
from tests.support.inprocess import query_here, tse_here, tse_ok_here
from tests.support.pages import changes, page_file_states, write_pages
from tse_scrapy.rules.files import pagedir

DEPTH = 3
PRIORITY = ("--order", "priority", "-s", "TSE_PRIORITIZER=tse_scrapy.update.prioritizer.ChangeRatePrioritizer")


def live_pages(directory) -> dict[str, bytes]:
    """URL -> the page file's bytes (its URL, depth and body) of the live pages of a page directory
    (not in ``.tse-gone``)."""
    gone = pagedir.gone_docs(directory)
    return {url: data for doc, (url, _, _, data) in page_file_states(directory).items() if doc not in gone}


def html(*links: str, text: str = "") -> str:
    return (
        "<html><body><p>"
        + text
        + "</p>"
        + "".join(f'<a href="{link}">{link}</a> ' for link in links)
        + "</body></html>\n"
    )


def _crawled_first(server, tmp_path):
    """(the page directory *server*'s site was crawled into, with validators, and an empty one for the
    fresh crawl the update is compared with)."""
    updated, fresh = tmp_path / "updated", tmp_path / "fresh"
    updated.mkdir()
    fresh.mkdir()
    first = crawl_site(server, updated, DEPTH, "--validators")
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    return updated, fresh


def test_a_priority_update_takes_pages_no_longer_linked_from_the_seed_for_gone(tmp_path, serve):
    # The seed linked to a page of a cycle (a <-> b) and to a page that links to itself (c); it no
    # longer links to any of them, and a now links to a page new today (d), which only it links to.
    # A fresh crawl saves the seed alone: a, b and c were kept "unchanged" (each is linked to by a
    # page of the crawl: each other, itself) and d saved as "new", live, for ever.
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(html("a.html", "c.html", text="home"))
    (site / "a.html").write_text(html("b.html", text="page a"))
    (site / "b.html").write_text(html("a.html", text="page b"))
    (site / "c.html").write_text(html("index.html", "c.html", text="page c"))
    server = serve(site)
    updated, fresh = _crawled_first(server, tmp_path)
    assert len(live_pages(updated)) == 4
    (site / "index.html").write_text(html(text="home, and no link"))
    (site / "a.html").write_text(html("b.html", "d.html", text="page a"))
    (site / "d.html").write_text(html(text="page d, new"))
    listed = tmp_path / "changes.jsonl"
    done = crawl_site(server, updated, DEPTH, "--update", *PRIORITY, "--changes", listed)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    again = crawl_site(server, fresh, DEPTH)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    seed = f"{server.url}/index.html"
    saved_seed = f"{seed}\n0\n".encode() + (site / "index.html").read_bytes() + b"\n"
    assert live_pages(updated) == live_pages(fresh) == {seed: saved_seed}
    said = {entry["url"].rsplit("/", 1)[1]: (entry["change"], entry.get("reason")) for entry in changes(listed)}
    assert said == {
        "index.html": ("changed", None),
        "a.html": ("gone", "not reached"),
        "b.html": ("gone", "not reached"),
        "c.html": ("gone", "not reached"),
    }
    assert "1 changed, 0 unchanged, 3 gone" in done.stderr.decode()


def test_a_priority_update_reaches_a_page_through_a_redirect_to_it_after_its_revisit(tmp_path, serve):
    # The seed linked to p.html; it now links to old.html, which redirects to p.html.  A fresh crawl
    # saves p.html through the redirect; an update in priority order had queued p.html at its start
    # (a revisit), so the redirect's hop to it was a duplicate, and p.html was taken for gone ("not
    # reached"): its page left out of every index made after.
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(html("p.html", text="home"))
    (site / "p.html").write_text(html(text="page p"))
    (site / ".redirects").write_text("/old.html 301 /p.html\n")
    server = serve(site)
    updated, fresh = _crawled_first(server, tmp_path)
    (site / "index.html").write_text(html("old.html", text="home, moved"))
    listed = tmp_path / "changes.jsonl"
    done = crawl_site(server, updated, DEPTH, "--update", *PRIORITY, "--changes", listed)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    again = crawl_site(server, fresh, DEPTH)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert sorted(live_pages(fresh)) == [f"{server.url}/index.html", f"{server.url}/p.html"]
    assert live_pages(updated) == live_pages(fresh)
    said = {entry["url"].rsplit("/", 1)[1]: (entry["change"], entry["status"]) for entry in changes(listed)}
    assert said == {"index.html": ("changed", 200), "p.html": ("unchanged", 304)}


def test_an_index_update_that_finds_its_search_index_damaged_indexes_every_page(tmp_path):
    # A page in the middle of the search index's FTS5 data overwritten (a bad disk block): not read
    # by the check an update makes as it opens the index (its first pages, the FTS5 configuration and
    # structure), read as the update merges the segments.  It stopped with "tse index: INDEX.search:
    # database disk image is malformed", exit 1, and again at every --update.
    rng = random.Random(7)
    words = [f"w{number}" for number in range(3000)]

    def body() -> bytes:
        return ("<html><body>" + " ".join(rng.choice(words) for _ in range(300)) + "</body></html>").encode()

    pages = write_pages(tmp_path / "pages", {doc: (f"http://h.test/p{doc}.html", 1, body()) for doc in range(1, 61)})
    index, fresh = tmp_path / "index", tmp_path / "fresh"
    tse_ok_here("index", "--jobs", "1", pages, index)
    search = tmp_path / "index.search"
    db = apsw.Connection(str(search), flags=apsw.SQLITE_OPEN_READONLY)
    page_size = next(db.execute("PRAGMA page_size"))[0]
    leaves = [row[0] for row in db.execute("SELECT pageno FROM dbstat WHERE name = 'fts_data' AND pagetype = 'leaf'")]
    db.close()
    assert len(leaves) > 4
    with open(search, "r+b") as file:
        file.seek((leaves[len(leaves) // 2] - 1) * page_size)
        file.write(b"\xff" * page_size)
    write_pages(pages, {5: ("http://h.test/p5.html", 1, b"<html><body>changed today</body></html>")})
    done = tse_here("index", "--update", "--jobs", "1", pages, index)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode() == (
        f"tse index: cannot update: {search} is damaged (database disk image is malformed); indexing every page\n"
    )
    tse_ok_here("index", "--jobs", "1", pages, fresh)
    for suffix in ("", ".docs"):
        assert (tmp_path / f"index{suffix}").read_bytes() == (tmp_path / f"fresh{suffix}").read_bytes()
    queries = ["changed", "today", *rng.sample(words, 20)]
    assert query_here(pages, index, queries, "relevance") == query_here(pages, fresh, queries, "relevance")
    assert query_here(pages, index, ["changed"], "relevance") == [[(5, "http://h.test/p5.html")]]
