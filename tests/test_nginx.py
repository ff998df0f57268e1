"""A real nginx for tests (tests/support/nginxserver.py, the ``nginx`` fixture): its own configuration on
127.0.0.1, files with ETag and Last-Modified, 304s, and absolute-form requests as an HTTP proxy."""

from __future__ import annotations

import email.utils
import http.client
import os
import urllib.request

import pytest

from tests.support.changingsite import ChangingSite
from tests.support.wait import wait_until

T = 1_700_000_000


def get(server, target, method="GET", **headers):
    """(status, headers, body) of one request sent as is (a path, or an absolute URI as to a proxy)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, target, headers={name.replace("_", "-"): value for name, value in headers.items()})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def logged(server, count):
    """The access log once it holds *count* requests (nginx logs a request just after answering it)."""
    return wait_until(lambda: len(server.accesses()) == count and server.accesses(), 5, f"{count} requests not logged")


def write(path, data: bytes, mtime: float = T):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def test_serves_a_file_with_etag_and_last_modified(nginx, tmp_path):
    server = nginx(tmp_path / "root")
    write(server.site_dir() / "page.html", b"<p>hello</p>\n")
    assert server.site_dir() == tmp_path.resolve() / "root" / "127.0.0.1"
    status, headers, body = get(server, "/page.html")
    assert (status, body) == (200, b"<p>hello</p>\n")
    assert headers["Content-Type"] == "text/html"
    assert headers["ETag"] == f'"{T:x}-{len(body):x}"'  # nginx's: mtime and length
    assert headers["Last-Modified"] == email.utils.formatdate(T, usegmt=True)
    assert get(server, "/missing.html")[0] == 404


def test_answers_304_to_if_none_match_and_if_modified_since(nginx, tmp_path):
    server = nginx(tmp_path / "root")
    write(server.site_dir() / "page.html", b"<p>hello</p>\n")
    _, headers, _ = get(server, "/page.html")
    status, answer, body = get(server, "/page.html", If_None_Match=headers["ETag"])
    assert (status, body) == (304, b"") and answer["ETag"] == headers["ETag"]
    assert get(server, "/page.html", If_None_Match=f'"x", {headers["ETag"]}')[0] == 304
    assert get(server, "/page.html", If_None_Match='"other"')[0] == 200
    assert get(server, "/page.html", If_Modified_Since=headers["Last-Modified"])[0] == 304
    # nginx's default "if_modified_since exact": a later date is not a match
    assert get(server, "/page.html", If_Modified_Since=email.utils.formatdate(T + 60, usegmt=True))[0] == 200

    write(server.site_dir() / "page.html", b"<p>hello, again</p>\n", T + 1)
    status, changed, body = get(server, "/page.html", If_None_Match=headers["ETag"])
    assert (status, body) == (200, b"<p>hello, again</p>\n") and changed["ETag"] != headers["ETag"]

    accesses = logged(server, 7)
    assert [access.status for access in accesses] == [200, 304, 304, 200, 304, 200, 200]
    assert accesses[1].if_none_match == headers["ETag"] and accesses[0].if_none_match is None
    assert accesses[4].if_modified_since == headers["Last-Modified"]
    assert {access.target for access in accesses} == {"/page.html"}


def test_if_modified_since_before(nginx, tmp_path):
    server = nginx(tmp_path / "root", if_modified_since="before")
    write(server.site_dir() / "page.html", b"<p>hello</p>\n")
    assert get(server, "/page.html", If_Modified_Since=email.utils.formatdate(T + 60, usegmt=True))[0] == 304
    assert get(server, "/page.html", If_Modified_Since=email.utils.formatdate(T - 60, usegmt=True))[0] == 200


def test_answers_absolute_form_requests_as_a_proxy(nginx, tmp_path):
    server = nginx(tmp_path / "root")
    write(tmp_path / "root" / "example.test" / "dir" / "page.html", b"<p>example.test</p>\n")
    write(tmp_path / "root" / "example.test" / "dir" / "index.html", b"<p>index</p>\n")
    write(tmp_path / "root" / "other.test" / "dir" / "page.html", b"<p>other.test</p>\n")

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.url}))
    with opener.open("http://example.test/dir/page.html", timeout=10) as response:
        assert response.read() == b"<p>example.test</p>\n"
        assert response.headers["ETag"] and response.headers["Last-Modified"]
    with opener.open("http://other.test/dir/page.html", timeout=10) as response:
        assert response.read() == b"<p>other.test</p>\n"
    with opener.open("http://example.test/dir", timeout=10) as response:  # 301 to the slashed URL, followed
        assert (response.url, response.read()) == ("http://example.test/dir/", b"<p>index</p>\n")

    # the host in the URI chooses the directory, whatever the Host header says
    assert get(server, "http://other.test/dir/page.html", Host="example.test")[2] == b"<p>other.test</p>\n"
    redirect = get(server, "http://example.test/dir")
    assert redirect[0] == 301 and redirect[1]["Location"] == "/dir/"
    etag = get(server, "http://example.test/dir/page.html")[1]["ETag"]
    assert get(server, "http://example.test/dir/page.html", If_None_Match=etag)[0] == 304
    assert get(server, "http://nowhere.test/dir/page.html")[0] == 404

    accesses = logged(server, 9)
    assert accesses[0].target == "http://example.test/dir/page.html" and accesses[0].host == "example.test"
    assert accesses[4].target == "http://other.test/dir/page.html" and accesses[4].host == "other.test"


def test_origin_serves_a_directory_as_127_0_0_1(nginx, tmp_path):
    site = ChangingSite.build(tmp_path / "site")
    write(tmp_path / "root" / "example.test" / "page.html", b"<p>proxied</p>\n")
    server = nginx(tmp_path / "root", origin=site.root)
    assert server.site_dir() == site.root.resolve()
    status, headers, body = get(server, "/index.html")
    assert (status, body) == (200, site.body("index.html"))
    assert headers["Last-Modified"] == email.utils.formatdate(site.clock, usegmt=True)
    assert get(server, "/", Host="localhost")[2] == site.body("index.html")
    assert get(server, "http://example.test/page.html")[2] == b"<p>proxied</p>\n"

    etags = {name: get(server, f"/{name}")[1]["ETag"] for name in site.pages()}
    change = site.change("news1.html")
    deleted = site.delete("archive.html")
    assert get(server, "/news1.html", If_None_Match=etags["news1.html"])[0] == 200
    assert get(server, "/news2.html", If_None_Match=etags["news2.html"])[0] == 304
    assert get(server, f"/{deleted.page}")[0] == 404
    assert change.changed == {"news1.html"}


def test_a_same_second_same_length_change_keeps_nginx_etag(nginx, tmp_path):
    """What nginx's ETag (mtime and length) cannot see, and the site server's (the bytes) can."""
    server = nginx(tmp_path / "root")
    page = server.site_dir() / "page.html"
    write(page, b"<p>one</p>\n")
    etag = get(server, "/page.html")[1]["ETag"]
    write(page, b"<p>two</p>\n")  # same mtime, same length
    assert get(server, "/page.html", If_None_Match=etag)[0] == 304


def test_stops_by_its_pid(nginx, tmp_path):
    server = nginx(tmp_path / "root")
    assert server.process.poll() is None
    server.stop()
    assert server.process.returncode is not None
    with pytest.raises(OSError):
        get(server, "/")
    assert "[emerg]" not in server.error_log()
