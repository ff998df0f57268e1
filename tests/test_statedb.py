"""The crawl state's commit order, read from a second connection as a resumed crawl would."""

import sqlite3

from tse_scrapy.resume.statedb import CrawlStateDB


def committed(path):
    """What a crawl resumed now would find: frontier rows (with their docID being written) and seen keys."""
    reader = sqlite3.connect(path)
    try:
        frontier = reader.execute("SELECT row, writing_doc FROM frontier ORDER BY row").fetchall()
        seen = {key for (key,) in reader.execute("SELECT key FROM seen")}
        pages = [doc for (doc,) in reader.execute("SELECT doc_id FROM pages ORDER BY doc_id")]
    finally:
        reader.close()
    return frontier, seen, pages


def request(url):
    return {"url": url, "meta": {"depth": 1}}


def test_links_are_committed_with_their_pages_writing_never_by_another_pages_saved(tmp_path):
    path = tmp_path / "state.sqlite"
    state = CrawlStateDB(path)
    seed = state.push(request("http://h/index.html"))
    state.add_seen("http://h/index.html")
    state.writing(seed, 1)  # page 1's file is being written
    assert committed(path) == ([(seed, 1)], {"http://h/index.html"}, [])
    # Meanwhile the next page is scanned: its links are found ...
    a = state.push(request("http://h/a.html"))
    state.add_seen("http://h/a.html")
    assert state.request(a)["url"] == "http://h/a.html"  # held, and readable
    # ... when page 1's write ends: its saved commits, and not the links of the page being scanned.
    state.saved(seed, 1)
    assert committed(path) == ([], {"http://h/index.html"}, [1])
    b = state.push(request("http://h/b.html"))
    state.add_seen("http://h/b.html")
    state.writing(None, 2)  # the page of those links (a redirect target: no row of its own)
    assert committed(path) == (
        [(a, None), (b, None)],
        {"http://h/index.html", "http://h/a.html", "http://h/b.html"},
        [1],
    )
    assert state.request(b)["url"] == "http://h/b.html"  # read back from the database
    state.close()


def test_a_failed_page_commits_the_links_held_and_rows_go_on_after_a_restart(tmp_path):
    path = tmp_path / "state.sqlite"
    state = CrawlStateDB(path)
    first = state.push(request("http://h/a.html"))
    second = state.push(request("http://h/b.html"))
    state.finished(first)  # a.html failed
    assert committed(path)[0] == [(second, None)]
    held = state.push(request("http://h/c.html"))
    state.close()  # stopped with a link held: it was not committed
    assert committed(path)[0] == [(second, None)]
    state = CrawlStateDB(path)
    again = state.push(request("http://h/c.html"))
    assert again > second and again >= held  # never the number of a row committed
    state.finished(None)
    assert committed(path)[0] == [(second, None), (again, None)]
    state.close()


def test_a_page_not_written_commits_its_links_with_its_saved(tmp_path):
    """A page read back on resume, or unchanged in an update, has no ``writing`` commit: its
    ``saved`` commits its own row (moved to pages) and the links found on it."""
    path = tmp_path / "state.sqlite"
    state = CrawlStateDB(path)
    seed = state.push(request("http://h/index.html"))  # never written to the database before its page is done
    state.add_seen("http://h/index.html")
    a = state.push(request("http://h/a.html"))  # found on the seed
    state.add_seen("http://h/a.html")
    state.saved(seed, 1, with_links=True)
    assert committed(path) == ([(a, None)], {"http://h/index.html", "http://h/a.html"}, [1])
    state.close()
