"""Hostile PDFs against ``tse index`` and ``tse serve``'s ``/doc/N``: a title of UTF-16 with lone
surrogates (it crashed the reader: a traceback, the text lost), and a PDF slow to read (every view of it
read it again, one at a time behind one lock: the views of every other PDF waited).  Real crawls of a
real site server, real ``tse index`` runs, real PDFium children; the app in this process where the test
counts what it read."""

from __future__ import annotations

import re
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from starlette.testclient import TestClient

from tests.conftest import BIN, ROOT, clean_env, crawl_site, run_tse
from tests.support.pdfs import pages_pdf, pdf_file, stream
from tests.support.serving import tse_serve
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.pdfs import extract_pdf_text
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.search.app import create_app


def titled_pdf(words: str, title: bytes) -> bytes:
    """One page showing *words*, its Info /Title the PDF string *title* (as written: ``<FEFF...>``)."""
    return pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            stream(b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % words.encode()),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            b" /Contents 4 0 R >>",
            b"<< /Title %s >>" % title,
        ],
        b"/Info 6 0 R",
    )


LONE_SURROGATES = b"<FEFFD800D800DC00DFFF0041>"  # a tester's: high, high, low, low, "A"


def slow_pdf() -> bytes:
    """200 pages sharing a content stream of 20,000 rectangles and two words: PDFium takes seconds."""
    return pages_pdf(
        [4] * 200, [stream(b"BT /F1 12 Tf 72 720 Td (slowcanary words) Tj ET " + b"0 0 1 1 re f " * 20000)]
    )


def scanned_pdf() -> bytes:
    return pages_pdf([4], [stream(b"0 0 1 rg 72 72 468 648 re f")])


def test_a_title_of_lone_surrogates_is_decoded_with_replacement_and_the_text_read():
    read = extract_pdf_text(titled_pdf("badtitlecanary", LONE_SURROGATES))
    assert read.warning is None and read.text == "badtitlecanary"
    assert "\ufffd" in read.title and read.title.endswith("A")
    assert not any("\ud800" <= character <= "\udfff" for character in read.title)
    odd = extract_pdf_text(titled_pdf("oddtitlecanary", b"<FEFF00410042004>"))  # an odd number of hex digits
    assert odd.warning is None and odd.text == "oddtitlecanary"


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """A site of PDFs crawled with --pdf and indexed: (the page directory, the index, docIDs by name)."""
    from tse_scrapy.devtools.siteserver import SiteServer

    root = tmp_path_factory.mktemp("pdfsite")
    site = root / "site"
    site.mkdir()
    files = {
        "badtitle.pdf": titled_pdf("badtitlecanary", LONE_SURROGATES),
        "small.pdf": titled_pdf("smallcanary", b"(Small)"),
        "slow.pdf": slow_pdf(),
        "scanned.pdf": scanned_pdf(),
    }
    for name, data in files.items():
        (site / name).write_bytes(data)
    links = "".join(f'<a href="{name}">{name}</a>' for name in files)
    (site / "index.html").write_text(f"<html><head><title>PDFs</title></head><body>{links}</body></html>")
    pages = root / "pages"
    pages.mkdir()
    with SiteServer(site) as server:
        server.start()
        done = crawl_site(server, pages, 1, "--pdf")
        assert done.returncode == 0, done.stderr.decode()
        urls = {f"{server.url}/{name}": name for name in files}
    index = root / "index"
    indexed = run_tse("index", pages, index)
    doc_ids = {}
    for doc_id in range(1, 6):
        url = (pages / str(doc_id)).read_bytes().split(b"\n", 1)[0].decode()
        if url in urls:
            doc_ids[urls[url]] = doc_id
    return pages, index, doc_ids, indexed


def test_tse_index_reads_the_pdf_whose_title_crashed_the_reader(crawled):
    pages, index, doc_ids, indexed = crawled
    stderr = indexed.stderr.decode()
    assert indexed.returncode == 0, stderr
    assert "Traceback" not in stderr and "UnicodeDecodeError" not in stderr
    assert f"PDF {doc_ids['badtitle.pdf']} " not in stderr  # neither "gave no text" nor "read in part"
    answered = run_tse("query", pages, index, input=b"badtitlecanary\n")
    assert re.search(rf"doc +{doc_ids['badtitle.pdf']}: \S+/badtitle.pdf", answered.stdout.decode())


def test_tse_serve_shows_it_with_no_traceback_in_its_log(crawled):
    pages, index, doc_ids, _ = crawled
    with tse_serve([str(BIN / "tse"), "serve", str(pages), str(index)], clean_env(), ROOT) as run:
        for _ in range(3):
            with urllib.request.urlopen(f"{run.base}/doc/{doc_ids['badtitle.pdf']}", timeout=60) as response:
                assert b"badtitlecanary" in response.read()
    assert run.process.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "UnicodeDecodeError" not in run.stderr, run.stderr


def test_a_slow_pdf_is_read_once_for_views_asked_together_and_kept(crawled):
    pages, index, doc_ids, _ = crawled
    app = create_app(QueryEngine(pages, IndexReader(index)))
    reads = app.state.pdf_reads  # (PdfReads)
    with TestClient(app) as client, ThreadPoolExecutor(4) as pool:
        bodies = list(pool.map(lambda _: client.get(f"/doc/{doc_ids['slow.pdf']}"), range(4)))
        assert [response.status_code for response in bodies] == [200] * 4
        assert all(b"slowcanary words" in response.content for response in bodies)
        assert len({response.content for response in bodies}) == 1
        assert reads.reads == 1  # one read for the four views
        again = client.get(f"/doc/{doc_ids['slow.pdf']}")
        assert again.content == bodies[0].content and reads.reads == 1  # kept
    reads.close()


def test_a_slow_pdf_being_read_does_not_hold_up_the_view_of_another(crawled):
    pages, index, doc_ids, _ = crawled
    app = create_app(QueryEngine(pages, IndexReader(index)))
    with TestClient(app) as client:
        slow = threading.Thread(target=client.get, args=(f"/doc/{doc_ids['slow.pdf']}",))
        slow.start()
        try:
            # Three views of another PDF while the slow one is read (seconds): behind one lock, the
            # second of them waited for the slow read to end.
            for _ in range(3):
                small = client.get(f"/doc/{doc_ids['small.pdf']}")
                assert small.status_code == 200 and b"smallcanary" in small.content
                assert slow.is_alive()
        finally:
            slow.join()
    app.state.pdf_reads.close()


def test_a_pdf_that_gave_the_indexer_no_text_is_not_read_again(crawled):
    pages, index, doc_ids, _ = crawled
    app = create_app(QueryEngine(pages, IndexReader(index)))
    with TestClient(app) as client:
        shown = client.get(f"/doc/{doc_ids['scanned.pdf']}")
    assert shown.status_code == 200
    assert b"No text was found in this PDF when it was indexed." in shown.content
    assert app.state.pdf_reads.reads == 0
