"""Reading page directories back in tests."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from tse_scrapy.rules.files import pagedir


def write_pages(directory: Path, pages: dict[int, tuple[str | bytes, int, bytes]]) -> Path:
    """A page directory written by hand, as the crawler writes one: ``.crawler`` and, for each
    docID, ``URL\nDEPTH\n`` + the body + ``\n``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".crawler").touch()
    for doc_id, (url, depth, body) in pages.items():
        url = url if isinstance(url, bytes) else url.encode()
        (directory / str(doc_id)).write_bytes(url + b"\n%d\n" % depth + body + b"\n")
    return directory


def page_count(directory: Path) -> int:
    """The number of contiguous page files ``1, 2, ...``."""
    doc_id = 0
    while pagedir.page_path(directory, doc_id + 1).is_file():
        doc_id += 1
    return doc_id


def saved_pages(directory: Path) -> list[tuple[str, int]]:
    """(URL, depth) of each page file, in docID order."""
    return [
        (page.url, page.depth)
        for page in (pagedir.read_page(directory, i) for i in range(1, page_count(directory) + 1))
    ]


def page_file_states(directory: Path) -> dict[int, tuple[str, int, int, bytes]]:
    """docID -> (URL, inode, mtime_ns, bytes) of every page file, gone ones included: a page file
    written again, even with the same bytes, shows."""
    files = {}
    for name in os.listdir(directory):
        if pagedir.is_page_name(name):
            path = directory / name
            status = path.stat()
            data = path.read_bytes()
            files[int(name)] = (pagedir.decode_page(data).url, status.st_ino, status.st_mtime_ns, data)
    return files


def tree(directory: Path) -> dict[str, bytes]:
    """Name -> bytes of every file directly in *directory*, hidden ones included."""
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def catalog_rows(directory: Path) -> list[tuple]:
    """The catalog without its times (an interrupted update ran at other instants)."""
    connection = sqlite3.connect(directory / ".tse-pages.sqlite")
    try:
        rows = [json.loads(record) for (record,) in connection.execute("SELECT record FROM pages ORDER BY doc_id")]
    finally:
        connection.close()
    timeless = ("first_seen", "last_visit", "last_change", "fetched")
    return [tuple((k, v) for k, v in row.items() if k not in timeless) for row in rows]


def snapshot(directory: Path) -> dict:
    """Everything under *directory*, hidden files included: each file's bytes and modification time,
    and each directory's modification time (a file created then removed changes it)."""
    entries = {".": directory.stat().st_mtime_ns}
    for path in sorted(directory.rglob("*")):
        name = path.relative_to(directory).as_posix()
        entries[name] = (path.read_bytes(), path.stat().st_mtime_ns) if path.is_file() else path.stat().st_mtime_ns
    return entries


def changes(path: Path) -> list[dict]:
    """The entries of a changes file (``--changes``)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_many_pages(directory: Path, count: int) -> Path:
    """*count* page files of about 6 KB of random words (seeded) and a ``.crawler`` in *directory*: a
    crawl `tse index --jobs 2` takes a second or more over, time to stop or kill it mid-work."""
    import random

    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".crawler").touch()
    rng = random.Random(4)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(5000)]
    text = " ".join(rng.choices(vocabulary, k=6_000 // 7)).encode()
    for doc_id in range(1, count + 1):
        (directory / str(doc_id)).write_bytes(b"http://h/%d\n1\n<p>%s page%d</p>\n" % (doc_id, text, doc_id))
    return directory
