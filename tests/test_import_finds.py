"""A tester's finds about ``tse import`` and the gone pages it leaves: the archives of a crawl and of
its updates import to the pages the updates left live (a page found gone, 404, 410 or a redirect
elsewhere, is listed in ``.tse-gone`` as the update lists it; a failure for a while keeps it);
a revisit whose record is in a later archive is resolved, and the archives' order said to be wrong;
and a gone list that cannot be read is said once by a ``tse serve`` of two workers, not once each.

Real crawls (``tse crawl --warc``, ``--update --warc``) of a site served on 127.0.0.1, WARCs written
with warcio, a real ``tse index``, ``tse query`` and ``tse serve``."""

from __future__ import annotations

import io
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import BIN, clean_env, crawl_site, run_tse
from tests.support.net import free_port
from tests.support.searchsite import write_search_site
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.files import pagedir

NAMES = ("deleted", "withdrawn", "moved", "failing", "steady")
LINKS = "".join(f'<a href="{name}.html">{name}</a> ' for name in NAMES)


def write_page(site: Path, name: str, words: str) -> None:
    (site / f"{name}.html").write_text(f"<html><head><title>{name}</title></head><body>{words}</body></html>")


def gone_urls(pages: Path) -> set[str]:
    """The URLs of the pages listed in PAGEDIR/.tse-gone."""
    return {pagedir.read_page_url(pages, doc_id) for doc_id in pagedir.gone_docs(pages)}


def all_pages(pages: Path) -> dict[str, bytes]:
    """URL -> body of every page file 1, 2, ..., gone or not, in docID order."""
    found = {}
    doc_id = 1
    while pagedir.page_path(pages, doc_id).is_file():
        page = pagedir.read_page(pages, doc_id)
        found[page.url] = page.body
        doc_id += 1
    return found


def imported(tmp_path: Path, name: str, *archives: Path) -> tuple[Path, str]:
    """The page directory the archives import to, and the summary line (the import succeeded)."""
    pages = tmp_path / name
    pages.mkdir()
    done = run_tse("import", *archives, pages)
    said = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in said, said
    return pages, said.splitlines()[-1]


def updated(server, crawled: Path, warc: Path) -> None:
    done = crawl_site(server, crawled, 1, "--update", "--warc", warc)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_pages_the_updates_found_gone_are_gone_in_the_import_and_back_when_they_are(tmp_path, serve):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(f"<html><body>{LINKS}</body></html>")
    for name in NAMES:
        write_page(site, name, f"{name} zebraword")
    server = serve(site)
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    first = tmp_path / "crawl.warc.gz"
    done = crawl_site(server, crawled, 1, "--warc", first)
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    # Gone: a 404, a 410 and a redirect to another page; kept: a 503 (a failure for a while).
    (site / "deleted.html").unlink()
    server.rules["/withdrawn.html"] = Rule(status=410)
    server.rules["/moved.html"] = Rule(status=301, location="/steady.html")
    server.rules["/failing.html"] = Rule(status=503)
    update1 = tmp_path / "u1.warc.gz"
    updated(server, crawled, update1)
    gone_now = {f"{server.url}/{name}.html" for name in ("deleted", "withdrawn", "moved")}
    assert gone_urls(crawled) == gone_now  # what the update made of them

    pages, said = imported(tmp_path, "imported", first, update1)
    assert list(all_pages(pages)) == list(all_pages(crawled))  # a gone page keeps its file and docID, as in the update
    assert gone_urls(pages) == gone_now  # before: none (the page directory had no .tse-gone)
    assert "; 3 gone (a later 404, 410 or redirect: listed in .tse-gone); " in said, said
    # Searched, the gone pages are no answer, as in the updated crawl; the one failing for a while is.
    for directory in (crawled, pages):
        index = tmp_path / f"{directory.name}.index"
        assert run_tse("index", directory, index).returncode == 0
        found = run_tse("query", directory, index, input=b"zebraword\n").stdout.decode()
        shown = {line.split(": ", 1)[1] for line in found.splitlines() if line.startswith("score")}
        assert shown == {f"{server.url}/{name}.html" for name in ("failing", "steady")}, found

    # The deleted page comes back, changed: live again, its last capture the page.
    write_page(site, "deleted", "deleted again, quaggaword")
    server.rules.pop("/failing.html")
    update2 = tmp_path / "u2.warc.gz"
    updated(server, crawled, update2)
    again, _ = imported(tmp_path, "again", first, update1, update2)
    assert gone_urls(again) == gone_urls(crawled) == gone_now - {f"{server.url}/deleted.html"}
    assert b"quaggaword" in all_pages(again)[f"{server.url}/deleted.html"]


def write_warc(path: Path, records: list[tuple[str, str, str, bytes, dict]]) -> None:
    """WARC records (type, URL, HTTP status line, payload, WARC headers) written by warcio."""
    with open(path, "wb") as output:
        writer = WARCWriter(output, gzip=True)
        for kind, url, status, payload, warc_headers in records:
            http = StatusAndHeaders(status, [("Content-Type", "text/html")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, kind, payload=io.BytesIO(payload), http_headers=http, warc_headers_dict=warc_headers
            )
            writer.write_record(record)


def test_a_revisit_of_a_record_in_a_later_archive_is_resolved_in_its_place_and_the_order_said(tmp_path):
    original = tmp_path / "original.warc.gz"
    write_warc(
        original,
        [
            ("response", "http://site.test/orig.html", "200 OK", b"<title>orig</title> walrusword", {}),
            ("response", "http://site.test/copy.html", "404 Not Found", b"<title>no</title>", {}),
        ],
    )
    with open(original, "rb") as stream:
        digest = next(ArchiveIterator(stream)).rec_headers.get_header("WARC-Payload-Digest")
    revisits = tmp_path / "revisits.warc.gz"
    profile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    revisit = {"WARC-Payload-Digest": digest, "WARC-Profile": profile}
    write_warc(
        revisits,
        [
            ("revisit", "http://site.test/copy.html", "200 OK", b"", revisit),
            ("revisit", "http://site.test/other.html", "200 OK", b"", revisit),
        ],
    )
    # Given newest first: the revisits' record is read after them.
    pages, said = imported(tmp_path, "pages", revisits, original)
    assert said.endswith(
        "; 2 revisits resolved, 0 not found; 2 revisits point to records later in the archives given: "
        "give the archives oldest first"
    ), said  # before: "0 revisits resolved, 2 not found", and no word of the order
    found = all_pages(pages)
    # Each in the place of its first capture: the revisits first.
    assert list(found) == ["http://site.test/copy.html", "http://site.test/other.html", "http://site.test/orig.html"]
    assert set(found.values()) == {b"<title>orig</title> walrusword"}
    # copy.html's 404 comes after its revisit in the order given: it is gone.
    assert gone_urls(pages) == {"http://site.test/copy.html"}

    # Given oldest first: resolved as they are read, nothing said of the order.
    ordered, said = imported(tmp_path, "ordered", original, revisits)
    assert said.endswith("; 2 revisits resolved, 0 not found"), said
    assert not (ordered / pagedir.GONE_NAME).exists()  # copy.html's revisit, after its 404, is the page now


def test_a_gone_list_that_cannot_be_read_is_said_once_by_a_server_of_two_workers(tmp_path):
    from tests.support.serving import QUICK_LOOKS
    from tests.test_index_serve_fixes_serve import SETTLED, serving

    pages, index = write_search_site(tmp_path)
    port = free_port()
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2", "--port", str(port)]
    with serving(command, clean_env(**QUICK_LOOKS)) as run:  # SETTLED is 8 looks apart
        (pages / pagedir.GONE_NAME).write_text("not a docID\n")
        time.sleep(SETTLED)  # each worker has looked at the list, seen it settled, and read it
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stderr.decode().splitlines() if "gone pages cannot be read" in line]
    assert len(said) == 1, said  # before: once a worker
    assert said[0].startswith("tse serve: the gone pages cannot be read again ("), said
