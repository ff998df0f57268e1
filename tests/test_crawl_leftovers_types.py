"""Answers that are no page (an image, binary data, an archive) are neither saved nor indexed by a
``--links html`` crawl, as ``tse import`` leaves such records out; ``--links tse`` saves every 200
answer, as the reference did (SPEC 2.2).  A real site on 127.0.0.1, real crawls, a real index."""

from __future__ import annotations

import gzip
import io
import tarfile

from tests.conftest import crawl_site, run_tse
from tests.support.sitegen import write_site
from tse_scrapy.rules.crawling.progress import progress_line

# Binary data with words in it: indexed as text, they made "zebrafish" a word of the blob.
BLOB = b"\x00\x01\x02zebrafish\xff\xfe\x00 quagga zebrafish \x89\x00" * 20
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR zebrafish \x00\x00\x00\x01" * 4
HTML_UNTYPED = b"<!doctype html>\n<html><head><title>Okapi</title></head><body>okapi okapi</body></html>\n"
TEXT = b"Narwhal notes: narwhal tusks.\n"


def _tarball() -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        member = tarfile.TarInfo("zebrafish.txt")
        member.size = len(BLOB)
        archive.addfile(member, io.BytesIO(BLOB))
    return gzip.compress(data.getvalue(), mtime=0)


def _site(tmp_path, serve):
    # Served by their names' types: "blob" and "page" (no extension) as application/octet-stream,
    # logo.png as image/png, notes.txt as text/plain, site.tgz as an archive's.
    site = write_site(tmp_path / "site", {"index.html": ["blob", "logo.png", "page", "notes.txt", "site.tgz"]})
    (site.root / "blob").write_bytes(BLOB)
    (site.root / "logo.png").write_bytes(PNG)
    (site.root / "page").write_bytes(HTML_UNTYPED)
    (site.root / "notes.txt").write_bytes(TEXT)
    (site.root / "site.tgz").write_bytes(_tarball())
    return serve(site.root)


def _page_files(pagedir) -> dict[str, bytes]:
    """URL -> body of each page file (line 1 the URL, line 2 the depth, the body, one newline)."""
    found = {}
    for name in sorted((p for p in pagedir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        url, _depth, body = name.read_bytes().split(b"\n", 2)
        found[url.decode()] = body[:-1]
    return found


def _query(pagedir, index, words: str) -> str:
    result = run_tse("query", pagedir, index, input=(words + "\n").encode(), timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def test_answers_that_are_no_page_are_neither_saved_nor_indexed(tmp_path, serve):
    server = _site(tmp_path, serve)
    u = server.url + "/"
    out = tmp_path / "pages"
    out.mkdir()
    # --deny-ext: every extension but .exe is fetched (the TSE rule would refuse .png, .txt, .tgz).
    result = crawl_site(server, out, 1, "--deny-ext", "exe", timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    stdout = result.stdout.decode()
    pages = _page_files(out)
    assert pages == {
        u + "index.html": (server.root / "index.html").read_bytes(),
        u + "page": HTML_UNTYPED,  # octet-stream, but its bytes are HTML's
        u + "notes.txt": TEXT,  # any text is a page
    }
    for name in ("blob", "logo.png", "site.tgz"):
        assert progress_line(1, "Failed", u + name) in stdout
        assert progress_line(1, "Fetched", u + name) not in stdout
        assert any(hit.key == "/" + name for hit in server.hits)  # fetched, then left out
    assert "3 answers not a page, left out" in result.stderr.decode()

    index = tmp_path / "pages.index"
    indexed = run_tse("index", out, index, timeout=120)
    assert indexed.returncode == 0, indexed.stderr.decode()
    assert b"zebrafish" not in index.read_bytes()
    assert "No documents match." in _query(out, index, "zebrafish")
    okapi, narwhal = _query(out, index, "okapi"), _query(out, index, "narwhal")
    assert "Matches 1 documents" in okapi and okapi.endswith(f": {u}page\n" + "-" * 47 + "\n")
    assert "Matches 1 documents" in narwhal and narwhal.endswith(f": {u}notes.txt\n" + "-" * 47 + "\n")


def test_the_reference_mode_saves_every_answer(tmp_path, serve):
    # --links tse is the reference's crawl: a 200 answer is a page, whatever it is (SPEC 2.2.5, 2.2.7).
    server = _site(tmp_path, serve)
    u = server.url + "/"
    out = tmp_path / "pages"
    out.mkdir()
    result = crawl_site(server, out, 1, "--links", "tse", timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert _page_files(out) == {
        u + "index.html": (server.root / "index.html").read_bytes(),
        u + "blob": BLOB,
        u + "page": HTML_UNTYPED,
    }


def test_a_seed_that_is_no_page_says_why(tmp_path, serve):
    server = _site(tmp_path, serve)
    out = tmp_path / "pages"
    out.mkdir()
    result = crawl_site(server, out, 1, seed="blob", timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stdout.decode() == progress_line(0, "Failed", server.url + "/blob")
    assert (
        "tse crawl: the seed URL could not be fetched (not a page: application/octet-stream): nothing was saved\n"
        in result.stderr.decode()
    )
    assert sorted(p.name for p in out.iterdir()) == [".crawler"]
