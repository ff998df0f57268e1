"""What an archive or a page holds never drives the terminal: a URL or text quoted in a message of
``tse import``, or a URL ``tse query`` prints, has its control characters percent-encoded (ESC is
``%1B``), as the crawl's progress log shows a link's.  A terminal given ``ESC [2J`` clears its
screen, ``ESC ] 0; ... BEL`` sets its title, and a message could be overwritten with another."""

from __future__ import annotations

import io
import re

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import run_tse
from tse_scrapy.rules.files import pagedir

# Any C0 control but the line break, DEL, and C1 (as UTF-8).
TERMINAL_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x9b31m"
SHOWN = "%1B[2J%1B]0;owned%07%C2%9B31m"


def test_a_url_quoted_in_an_import_message_is_escaped(tmp_path):
    archive = tmp_path / "cut.warc"
    with open(archive, "wb") as output:
        writer = WARCWriter(output, gzip=False)
        for url in ("http://site.test/", f"http://site.test/{HOSTILE}.html"):
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            body = b"<html><body>" + b"words " * 2000 + b"</body></html>"
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) - 5000])  # the second record cut short in its payload
    pages = tmp_path / "pages"
    pages.mkdir()

    result = run_tse("import", archive, pages)

    assert result.returncode == 1, result.stderr.decode()
    assert TERMINAL_CONTROL.search(result.stderr) is None, result.stderr
    assert SHOWN.encode() in result.stderr  # the record is named: its URL, escaped
    assert (pages / "1").read_bytes().startswith(b"http://site.test/\n")  # what was read before it stays


def test_tse_query_prints_a_page_files_url_escaped_and_its_secrets_masked(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    pagedir.mark(pages)
    body = b"<html><body>escapeword</body></html>"
    pagedir.write_page(pages, 1, pagedir.Page(f"http://site.test/{HOSTILE}.html", 0, body))
    pagedir.write_page(pages, 2, pagedir.Page("http://site.test/plain.html", 0, body))
    pagedir.write_page(pages, 3, pagedir.Page("http://user:s3cret@site.test/?password=hunter2", 0, body))
    index = tmp_path / "pages.index"
    assert run_tse("index", pages, index).returncode == 0

    for rank in ("tse", "bm25", "relevance"):
        result = run_tse("query", "--rank", rank, pages, index, input=b"escapeword\n")

        assert result.returncode == 0, result.stderr.decode()
        assert TERMINAL_CONTROL.search(result.stdout) is None, (rank, result.stdout)
        assert f"doc   1: http://site.test/{SHOWN}.html\n".encode() in result.stdout, (rank, result.stdout)
        assert b"doc   2: http://site.test/plain.html\n" in result.stdout  # as the reference prints it
        assert b"doc   3: http://user:***@site.test/?password=***\n" in result.stdout  # secrets never shown
