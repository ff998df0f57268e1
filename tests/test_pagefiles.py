"""The page files' fingerprint a querier checks at start against what the indexer's walk recorded."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.pages import write_pages
from tse_scrapy.index.pagefiles import PageScan, live_fingerprint

PAGES = {doc_id: (f"http://h/{doc_id}.html", 1, b"<p>page %d</p>" % doc_id) for doc_id in range(1, 6)}


def walked(directory: Path) -> tuple[str, int]:
    """The fingerprint and last docID of the indexer's walk of *directory*."""
    scan = PageScan(directory)
    for _ in scan.files():
        pass
    return scan.fingerprint(), scan.last


def test_the_live_fingerprint_is_the_walks_until_a_page_file_changes(tmp_path):
    pages = write_pages(tmp_path / "pages", PAGES)
    fingerprint, last = walked(pages)
    assert last == 5
    assert live_fingerprint(pages, last) == fingerprint
    assert live_fingerprint(str(pages) + "/", last) == fingerprint  # a path however written
    (pages / ".tse-gone").write_text("2\n")  # a page noted gone: in both
    assert live_fingerprint(pages, last) == walked(pages)[0] != fingerprint
    (pages / ".tse-gone").unlink()
    shutil.copyfile(pages / "5", pages / "6")
    assert live_fingerprint(pages, last) == "changed"  # a page past the last
    (pages / "6").unlink()
    (pages / "3").rename(tmp_path / "3")
    assert live_fingerprint(pages, last) == "changed"  # a page missing
    (tmp_path / "3").rename(pages / "3")
    assert live_fingerprint(pages, last) == fingerprint
    os.utime(pages / "4", ns=(0, 0))
    assert live_fingerprint(pages, last) != fingerprint  # a page rewritten
    assert live_fingerprint(tmp_path / "nowhere", 5) == "changed"


def as_nobody(function, *arguments) -> str:
    """*function*(*arguments*) in a forked process running as the user nobody."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.setuid(65534)
            os.write(write, str(function(*arguments)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as answer:
        return answer.read().decode()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="runs a process as another user")
def test_a_page_directory_searched_but_not_listed_keeps_its_fingerprint():
    # A user who may open page files by name but not list the directory (mode 0311) queries an index
    # written by another: the store must still match (stat by name needs no more).
    base = Path(tempfile.mkdtemp(prefix="tse-unlisted-"))
    try:
        base.chmod(0o711)
        pages = write_pages(base / "pages", PAGES)
        fingerprint, last = walked(pages)
        pages.chmod(0o311)
        assert as_nobody(live_fingerprint, pages, last) == fingerprint != "changed"
        assert last == 5
    finally:
        (base / "pages").chmod(0o755)
        shutil.rmtree(base)
