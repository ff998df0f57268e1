"""`tse serve` as a user runs it: a real server on 127.0.0.1, refusals at start, and a real browser."""

import http.client
import json
import os
import re
import shutil
import socket
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.pages import write_pages
from tests.support.searchsite import MANY, write_search_site
from tests.support.serving import tse_serve
from tse_scrapy.rules.files import pagedir
from tse_scrapy.search.protocol import MAX_REQUEST_HEAD_BYTES

CHROMIUM = shutil.which("chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return write_search_site(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(site):
    """`tse serve` on a free port, until the module's tests are done."""
    pages, index = site
    with tse_serve([str(BIN / "tse"), "serve", str(pages), str(index)], clean_env(), ROOT) as run:
        yield run.base
    assert run.process.returncode == 0, run.stderr
    assert run.stderr.splitlines()[0] == f"tse serve: searching {pages} on {run.base}/ (Ctrl-C to stop)"


def test_a_real_server_answers_searches(server):
    with urllib.request.urlopen(f"{server}/search?q=emu&page=2", timeout=10) as response:
        html = response.read().decode()
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert f"{MANY} documents match" in html and "page 2 of 3" in html


def _exchange(base: str, data: bytes, pieces: int = 1) -> bytes:
    """What the server at *base* answers to *data*, sent in *pieces* writes, read until it closes
    the connection or goes quiet for a second."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        size = -(-len(data) // pieces)
        try:
            for start in range(0, len(data), size):
                connection.sendall(data[start : start + size])
        except OSError:  # closed by the server before all was sent (its answer is read below)
            pass
        connection.settimeout(1)
        answer = b""
        try:
            while chunk := connection.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer


def _get(path: str, header: bytes = b"", close: bool = False) -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s\r\n" % (
        path.encode(),
        header,
        b"Connection: close\r\n" if close else b"",
    )


def test_a_request_head_past_the_bound_is_refused_431(server):
    # 1 MB in one write, and 600 KB a kilobyte at a time: both past the 64 KB bound, and more than
    # the server's reads can take at once (256 KB), however the writes come together.
    for size, pieces in ((1_000_000, 1), (600_000, 600)):
        answer = _exchange(server, _get("/healthz", b"X-Big: " + b"a" * size + b"\r\n"), pieces)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert answer.endswith(b"Request header fields too large.\n")
    # The worker that refused is free at once: a search is answered.
    with urllib.request.urlopen(f"{server}/search?q=emu", timeout=10) as response:
        assert response.status == 200


def test_a_request_head_is_bounded_to_the_byte_however_it_comes(server):
    # A head of the bound exactly is answered, a byte more refused: in one write, as many reads as
    # the kernel makes of it (one, most often: once 64-200 KB in one read went unrefused), or a
    # kilobyte at a time; the byte in the request line (which past 64 KB once made httptools'
    # parse_url fail: 400) or in a header.
    for extra, status in ((0, b"200"), (1, b"431")):
        for pieces in (1, 70):
            line = _get("/healthz?", close=True)
            size = MAX_REQUEST_HEAD_BYTES + extra - len(line)
            in_line = line.replace(b"?", b"?q=" + b"u" * (size - 2))
            in_header = line.replace(b"\r\n\r\n", b"\r\nX-Pad: " + b"p" * (size - 9) + b"\r\n\r\n")
            for request in (in_line, in_header):
                assert len(request) == MAX_REQUEST_HEAD_BYTES + extra
                answer = _exchange(server, request, pieces)
                assert answer.startswith(b"HTTP/1.1 " + status + b" "), (extra, pieces, answer[:200])
    # Past the bound and past httptools' 64 KB for a URL, in one write: 431, not 400.
    answer = _exchange(server, _get("/healthz?q=" + "u" * 150_000))
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


def test_request_heads_within_the_bound_are_answered_however_they_come(server):
    # A 40 KB header; then 300 requests on one kept-alive connection (about 240 KB of heads in all,
    # each one small), sent a request a write, then all in one write (over 64 KB in that write).
    answer = _exchange(server, _get("/healthz", b"X-Big: " + b"a" * 40_000 + b"\r\n", close=True))
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"ok"), answer[:200]
    padding = b"X-Pad: " + b"p" * 700 + b"\r\n"
    for pieces in (300, 1):
        requests = [_get("/healthz", padding) for _ in range(299)] + [_get("/healthz", padding, close=True)]
        answer = _exchange(server, b"".join(requests), pieces)
        assert answer.count(b"HTTP/1.1 200 ") == 300 and b" 431 " not in answer, answer[-300:]
    # A small head in two reads, then a body of 70 KB: the body is no head (refused as a POST: 405).
    host, port = server.removeprefix("http://").split(":")
    request = b"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 70000\r\nConnection: close\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request[:5])
        time.sleep(0.2)  # (read apart)
        connection.sendall(request[5:] + b"b" * 70_000)
        answer = connection.recv(200)
    assert answer.startswith(b"HTTP/1.1 405 "), answer


def test_a_request_line_with_letters_past_ascii_is_answered(server):
    # As curl sends a query typed in its URL: UTF-8 as it is (httptools refused it: 400), in one write
    # or three; then on the same kept-alive connection, after an answer; a header's own such bytes kept.
    for pieces in (1, 3):
        request = "GET /api/search?q=café+日本語+ελλάδα HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        answer = _exchange(server, request.encode(), pieces)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["query"] == "café 日本語 ελλάδα"
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        answers = []
        for query in ("emu", "ёлка", "مرحبا"):
            connection.sendall(_get(f"/api/search?q={query}", "Referer: http://h/café\r\n".encode()))
            answers.append(http.client.HTTPResponse(connection))
            answers[-1].begin()
            assert answers[-1].status == 200 and json.loads(answers[-1].read())["query"] == query
    # After the empty lines a client may send before a request line (a reviewer's find: 400).
    answer = _exchange(server, b"\r\n\r\n" + request.encode())
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    # Past the head's bound, such a line is refused as any is: 431, in one write or 70.
    for pieces in (1, 70):
        answer = _exchange(server, _get("/api/search?q=" + "é" * 40_000, close=True), pieces)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    # Bytes that are no UTF-8 (Latin-1): refused as the same bytes percent-encoded are; a path is no page.
    answer = _exchange(server, b"GET /api/search?q=caf\xe9 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ") and b"the query string must be UTF-8" in answer, answer
    answer = _exchange(server, _get("/doc/été", close=True))
    assert answer.startswith(b"HTTP/1.1 404 "), answer[:200]


def test_a_bad_request_pipelined_behind_good_ones_is_answered_after_them(server):
    # A tester's find: the 400 was written at once, read as the first request's answer, theirs lost.
    good = [_get("/api/search?q=emu"), _get("/healthz")]
    for bad in (b"GET /a b c HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"GET /\x01 HTTP/1.1\r\n\r\n"):
        answer = _exchange(server, b"".join(good) + bad)
        statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)
        assert statuses == [b"200", b"200", b"400"], answer[-500:]
        assert answer.endswith(b"Invalid HTTP request received.")
    # Alone, or after an answer, it is answered at once, as before.
    assert _exchange(server, b"GET /a b c HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400 ")


def refusal(*args):
    result = run_tse("serve", *args, timeout=60)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2 and result.stdout == b"", result
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


def test_bad_start_is_one_line_and_exit_2(site, tmp_path):
    pages, index = site
    assert refusal(tmp_path, index).endswith("is not a crawler directory (no readable .crawler)")
    (tmp_path / ".crawler").touch()
    assert refusal(tmp_path, index) == f"tse serve: {tmp_path} has no readable page 1"
    assert "No such file or directory" in refusal(pages, tmp_path / "missing.index")
    (tmp_path / "corrupt.index").write_text("cat 1 2\nDog 1\n")
    corrupt = refusal(pages, tmp_path / "corrupt.index")
    assert corrupt == f"tse serve: {tmp_path}/corrupt.index:2: not a lowercase word: 'Dog'"
    assert "unrecognized arguments" in refusal(pages, index, "extra")
    for port in ("70000", "-5", "http"):
        assert f"a port is a number from 0 to 65535: {port}" in refusal(pages, index, f"--port={port}")
    assert refusal(pages, index, "--workers", "0") == "tse serve: --workers must be from 1 to 64: 0"
    for seconds in ("0.5", "nan", "3600.0001"):  # (the last was said "3600", in the range)
        assert refusal(pages, index, f"--head-timeout={seconds}") == (
            f"tse serve: --head-timeout must be from 1 to 3600 seconds: {seconds}"
        )
    assert "invalid float value: 'soon'" in refusal(pages, index, "--head-timeout", "soon")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = refusal(pages, index, "--port", port)
    assert message == f"tse serve: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_another_crawls_directory_is_refused(site, tmp_path):
    # A page directory that is not the index's crawl (its page 1 another URL) was served with rank=tse,
    # the index's docIDs shown as that directory's pages (blank where it had none); a crawl changed in
    # place (page 1 the same URL) is still served, from its pages.
    pages, index = site
    other = write_pages(tmp_path / "other", {1: ("http://elsewhere/index.html", 0, b"<title>Elsewhere</title> cat")})
    line = refusal(other, index)
    assert line == (
        f"tse serve: {other} is not the crawl {index} was written from (its page 1 is"
        f" 'http://elsewhere/index.html', the index's {pagedir.read_page_url(pages, 1)!r})"
    )
    # Its first pages another crawl's first pages (a crawl of the first site of several): the index's
    # last page is none of its.
    last = max(int(name) for name in os.listdir(pages) if name.isdigit())
    first_pages = tmp_path / "first"
    shutil.copytree(pages, first_pages)
    (first_pages / str(last)).unlink()
    line = refusal(first_pages, index)
    assert line == (
        f"tse serve: {first_pages} is not the crawl {index} was written from (it has no page {last},"
        f" the index's {pagedir.read_page_url(pages, last)!r})"
    )
    changed = tmp_path / "changed"
    shutil.copytree(pages, changed)
    (changed / "2").write_bytes(pagedir.encode_page(pagedir.Page(pagedir.read_page_url(pages, 2), 0, b"<p>new</p>")))
    with tse_serve([str(BIN / "tse"), "serve", str(changed), str(index)], clean_env(), ROOT) as run:
        assert _api_status(run.base, "q=cat")[0] == 200
    assert run.process.returncode == 0, run.stderr


def _api_status(base: str, query: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{base}/api/search?{query}", timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_a_search_index_that_cannot_be_used_is_one_line_at_start(site, tmp_path):
    pages, index = site
    damaged, missing = tmp_path / "damaged" / "index", tmp_path / "missing" / "index"
    for copy in (damaged, missing):
        copy.parent.mkdir()
        for file in index.parent.glob(f"{index.name}*"):  # (beside the same pages: the store matches)
            shutil.copy2(file, copy.parent / file.name)
    search = damaged.with_name("index.search")
    os.truncate(search, search.stat().st_size // 4)
    missing.with_name("index.search").unlink()  # as an index written before the search index existed
    whys = {
        damaged: f"{search} cannot be read (database disk image is malformed)",
        missing: f"no search index {missing}.search",
    }
    for copy, why in whys.items():
        with tse_serve([str(BIN / "tse"), "serve", str(pages), str(copy)], clean_env(), ROOT) as run:
            status, body = _api_status(run.base, "q=cat")
            assert (status, body["rank"], body["total"]) == (200, "tse", 5)
            status, body = _api_status(run.base, "q=cat&rank=relevance")
            assert status == 400 and body["error"].endswith(f"{why}: run tse index again")
        assert run.process.returncode == 0, run.stderr
        assert run.stderr.splitlines() == [
            f"tse serve: the search index cannot be used, so results use rank=tse: {why}: run tse index again",
            f"tse serve: searching {pages} on {run.base}/ (Ctrl-C to stop)",
        ]


def test_pages_copied_without_their_times_are_said_so_after_a_port_taken(site, tmp_path):
    # cp -r of a crawl and its index: the store records the page files' times, which the copy does not
    # keep; the server said only "no document store matches", and searched with rank=tse.
    pages, index = site
    copied = tmp_path / "copy"
    shutil.copytree(pages, copied / "pages", copy_function=shutil.copyfile)
    for file in index.parent.glob(f"{index.name}*"):
        shutil.copyfile(file, copied / file.name)
    why = (
        f"the page files of {copied / 'pages'} are not those {copied / 'index'}.docs was written with (changed since,"
        " or copied without their times: cp -a keeps them)"
    )
    # A port taken is said at once, alone, before the pages are read for titles and snippets.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        line = refusal(copied / "pages", copied / "index", "--port", str(port))
        assert line == f"tse serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    command = [str(BIN / "tse"), "serve", str(copied / "pages"), str(copied / "index"), "--workers", "2"]
    with tse_serve(command, clean_env(), ROOT) as run:
        status, body = _api_status(run.base, "q=cat")
        assert (status, body["rank"], body["total"]) == (200, "tse", 5)
    assert run.process.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [
        f"tse serve: {why}: reading the pages for titles and snippets",  # (a tester's find: no prefix)
        "tse serve: one process, not 2: run tse index to store titles and snippets",
        f"tse serve: the search index cannot be used, so results use rank=tse: {why}: run tse index again",
        f"tse serve: searching {copied / 'pages'} on {run.base}/ (Ctrl-C to stop)",
    ]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it as root)")
def test_in_a_real_browser(server, tmp_path):
    from playwright.sync_api import sync_playwright

    flags = ["--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*flags, "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 420, "height": 900})  # a phone's width
            page.goto(f"{server}/")
            page.get_by_label("Search the crawled pages").fill("emu or cat")
            page.get_by_label("Ranking").select_option("tse")  # SPEC 4's "or" (relevance is the default)
            page.get_by_label("Search the crawled pages").press("Enter")
            page.wait_for_url("**/search?*")
            assert page.locator(".count").inner_text().startswith("30 documents match")
            titles = page.locator("ol.results li .title").all_inner_texts()
            assert titles[0] == "Cats & Dogs" and len(titles) == 10
            snippets = page.locator("ol.results li .snippet").all_inner_texts()
            assert snippets[0] == "A cat and a dog. The cat sleeps."
            assert page.locator("ol.results li").first.locator("mark").all_inner_texts() == ["cat", "cat"]
            page.screenshot(path=str(tmp_path / "results.png"), full_page=True)
            page.locator('a[rel="next"]').click()
            page.wait_for_url("**page=2*")
            assert page.locator("ol.results").get_attribute("start") == "11"
            assert page.locator("ol.results li").count() == 10
            # The saved copy of a page with a script: the script does not run.
            page.goto(f"{server}/search?q=evil")
            page.get_by_text("saved copy").click()
            page.wait_for_url("**/saved/3")
            copy = page.frame_locator("iframe.copy")
            assert "escaped" in copy.locator("body").inner_text()
            assert page.title() != "ran" and copy.locator("title").inner_text() != "ran"
            page.goto(f"{server}/doc/3")  # the copy alone
            assert "escaped" in page.locator("body").inner_text()
            assert page.title() != "ran"
            assert page.evaluate("document.title") != "ran"
            page.screenshot(path=str(tmp_path / "saved.png"))
        finally:
            browser.close()
    assert (tmp_path / "results.png").stat().st_size > 1000
