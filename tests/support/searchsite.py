"""A small crawl for the search tests: titled and untitled pages, hostile ones, and 25 alike for paging."""

from __future__ import annotations

import random
from pathlib import Path

from tests.conftest import run_tse
from tests.support.pages import write_pages

EVIL = '"><script>alert(1)</script>'
PAGES = {  # docID: (URL, body)
    1: (
        "http://h/cats.html",
        b"<html><head><title>Cats &amp;\n  Dogs</title></head>"
        b"<body><p>A cat and a dog. The cat sleeps.</p></body></html>",
    ),
    2: ("http://h/dogs.html", b"<title>Dogs</title><body>dog dog dog, and one cat</body>"),
    3: (
        "http://h/evil.html?x=" + EVIL,
        b"<title><script>alert('title')</script>Evil cat</title><body>"
        b'<img src=x onerror=alert(1)><a href="javascript:alert(2)">cat</a> &lt;b&gt;escaped&lt;/b&gt;'
        b"<script>document.title = 'ran'</script></body>",
    ),
    4: ("javascript:alert(3)", b"<body>a cat in a javascript URL</body>"),
    5: ("http://h/untitled.html", b"<body>no title, one cat</body>"),
}
MANY = 25  # pages 6..30: "emu" twice each (title and body), for paging


def write_search_site(root: Path) -> tuple[Path, Path]:
    """The page directory and its index (made by `tse index`) under *root*."""
    many = {
        doc_id: (
            f"http://h/emu{doc_id}.html",
            1,
            f"<title>Emu {doc_id}</title><body>{'filler ' * doc_id} emu</body>".encode(),
        )
        for doc_id in range(6, 6 + MANY)
    }
    pages = write_pages(root / "pages", {**{d: (url, 0, body) for d, (url, body) in PAGES.items()}, **many})
    result = run_tse("index", pages, root / "index")
    assert result.returncode == 0, result.stderr
    return pages, root / "index"


def damaged_fts(index: Path) -> None:
    """*index*'s search index with the pages of its body's FTS5 data overwritten by random
    bytes (the file's size and its other pages as they were)."""
    import apsw

    path = f"{index}.search"
    db = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    numbers = [number for (number,) in db.execute("SELECT pageno FROM dbstat WHERE name = 'fts_data'")]
    (size,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    assert numbers
    bytes_of = random.Random(7)
    with open(path, "r+b") as search:
        for number in numbers:
            search.seek((number - 1) * size)
            search.write(bytes_of.randbytes(size))
