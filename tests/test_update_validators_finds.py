"""`tse crawl --update` asking with validators (a review's finds): a redirect's next hop asked with the
validators of the page it left, and a page whose saved copy was removed by hand.  Each update must
leave the page directory a fresh crawl of the site as it is now writes."""

from __future__ import annotations

import http.server
import json
import os
import threading
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import crawl_site
from tests.support.pages import page_file_states
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.rules.files import pagedir


def pages_by_url(directory: Path) -> dict[str, bytes]:
    """The page files of a page directory (not those listed gone), by URL: their bytes."""
    gone = pagedir.gone_docs(directory)
    return {url: data for doc_id, (url, _, _, data) in page_file_states(directory).items() if doc_id not in gone}


class LastModifiedOnly(http.server.SimpleHTTPRequestHandler):
    """Python's own file server (validators: Last-Modified only, If-Modified-Since honoured), with the
    redirects of the site's ``.redirects`` (``PATH STATUS LOCATION`` a line)."""

    def do_GET(self) -> None:
        redirects = Path(self.directory) / ".redirects"
        if redirects.is_file():
            for line in redirects.read_text().splitlines():
                path, status, location = line.split()
                if self.path == path:
                    self.send_response(int(status))
                    self.send_header("Location", location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
        super().do_GET()

    def log_message(self, *args) -> None:
        pass


class StdlibSite:
    def __init__(self, root: Path):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(LastModifiedOnly, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_redirect_to_a_new_page_is_not_answered_with_the_old_pages_copy(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<html><body>OLD HOME <a href="b.html">b</a></body></html>')
    (site / "b.html").write_text("<html><body>b</body></html>")
    server = StdlibSite(site)
    try:
        pages = tmp_path / "pages"
        pages.mkdir()
        done = crawl_site(server, pages, 1, "--validators")
        assert done.returncode == 0, done.stderr.decode()
        # The home page moves to a new address, a file older than the old page's Last-Modified: the
        # redirect's next hop carried index.html's If-Modified-Since, the server said 304, and the update
        # saved home.html's URL with index.html's old body (for good: the next update said 304 again).
        (site / "home.html").write_text('<html><body>NEW HOME PAGE <a href="b.html">b</a></body></html>')
        os.utime(site / "home.html", (1_577_836_800, 1_577_836_800))  # 2020-01-01
        (site / ".redirects").write_text("/index.html 301 /home.html\n")
        for _ in range(2):
            done = crawl_site(server, pages, 1, "--update", "--changes", tmp_path / "changes.jsonl")
            assert done.returncode == 0, done.stderr.decode()
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        assert crawl_site(server, fresh, 1).returncode == 0
    finally:
        server.stop()
    assert b"NEW HOME PAGE" in pages_by_url(pages)[f"{server.url}/home.html"]
    assert pages_by_url(pages) == pages_by_url(fresh)


@pytest.mark.parametrize("validators", [True, False], ids=["validators", "none sent"])
def test_a_page_file_removed_by_hand_is_written_again(tmp_path, validators):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<html><body><a href="b.html">b</a></body></html>')
    (site / "b.html").write_text('<html><body><a href="c.html">c</a></body></html>')
    (site / "c.html").write_text("<html><body>c</body></html>")
    with SiteServer(site, validators=validators) as server:
        pages = tmp_path / "pages"
        pages.mkdir()
        assert crawl_site(server, pages, 2, "--validators").returncode == 0
        before = {name: (pages / name).read_bytes() for name in ("1", "2", "3")}
        (pages / "2").unlink()
        # b.html was asked for with its validators, its 304 found no copy to read (a failure), and c.html,
        # linked only from it, was listed gone; with no validators, b.html was found unchanged, not written.
        changes = tmp_path / "changes.jsonl"
        done = crawl_site(server, pages, 2, "--update", "--changes", changes)
        assert done.returncode == 0, done.stderr.decode()
    assert {name: (pages / name).read_bytes() for name in ("1", "2", "3")} == before
    assert pagedir.gone_docs(pages) == frozenset()
    lines = [json.loads(line) for line in changes.read_text().splitlines()]
    assert not [line for line in lines if line.get("change") == "gone"], lines
