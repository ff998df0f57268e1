"""The site server's validators (ETag, Last-Modified) and conditional GET (RFC 9110), over real HTTP on
127.0.0.1; and the changing test site (tests/support/changingsite.py) served and crawled for real."""

from __future__ import annotations

import email.utils
import http.client
import os
import subprocess
import sys

import pytest

from tests.conftest import crawl_site
from tests.support.changingsite import EPOCH, ChangingSite
from tests.support.net import free_port
from tests.support.pages import saved_pages
from tests.support.sitegen import model_crawl
from tests.support.wait import wait_until
from tse_scrapy.devtools.siteserver import Rule, SiteServer, entity_tag

T = 1_700_000_000  # a whole second


def get(server, path, method="GET", connection=None, **headers):
    """(status, headers, body) of one request to a server (or a port); header names given with _ for -."""
    own = connection is None
    port = server if isinstance(server, int) else server.port
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers={name.replace("_", "-"): value for name, value in headers.items()})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        if own:
            connection.close()


def http_date(seconds: float) -> str:
    return email.utils.formatdate(seconds, usegmt=True)


def write(path, data: bytes, mtime: float = T):
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    write(root / "a.html", b"<p>version one</p>\n")
    return root


def test_a_file_carries_a_strong_etag_of_its_bytes_and_its_mtime(serve, site):
    server = serve(site)
    status, headers, body = get(server, "/a.html")
    assert status == 200 and body == b"<p>version one</p>\n"
    etag = headers["ETag"]
    assert etag == entity_tag(body) and etag.startswith('"') and etag.endswith('"') and len(etag) > 8
    assert headers["Last-Modified"] == http_date(T) == "Tue, 14 Nov 2023 22:13:20 GMT"
    assert get(server, "/a.html")[1]["ETag"] == etag  # stable
    assert server.hits[0].status == 200


def test_if_none_match_answers_304_without_a_body(serve, site):
    server = serve(site)
    etag = get(server, "/a.html")[1]["ETag"]
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        status, headers, body = get(server, "/a.html", connection=connection, If_None_Match=etag)
        assert (status, body) == (304, b"")
        assert headers["ETag"] == etag and headers["Last-Modified"] == http_date(T)
        assert "Content-Length" not in headers
        # the connection is still in step: the next answer on it is whole
        assert get(server, "/a.html", connection=connection)[::2] == (200, b"<p>version one</p>\n")
    finally:
        connection.close()
    assert [(hit.status, hit.header("if-none-match")) for hit in server.hits] == [(200, None), (304, etag), (200, None)]


@pytest.mark.parametrize(
    ("field", "status"),
    [
        ("{etag}", 304),
        ('"nope", {etag}', 304),
        ('"nope",{etag} , "other"', 304),
        ("W/{etag}", 304),  # weak comparison for GET
        ("*", 304),
        ('"nope"', 200),
        ('"nope", W/"other"', 200),
        ("", 200),
        ("garbage", 200),
    ],
)
def test_if_none_match_lists(serve, site, field, status):
    server = serve(site)
    etag = get(server, "/a.html")[1]["ETag"]
    answer = get(server, "/a.html", If_None_Match=field.format(etag=etag))
    assert answer[0] == status
    assert answer[2] == (b"" if status == 304 else b"<p>version one</p>\n")


def test_if_none_match_is_for_the_file_it_names(serve, site):
    write(site / "b.html", b"<p>b</p>\n")
    server = serve(site)
    etag_a = get(server, "/a.html")[1]["ETag"]
    assert get(server, "/b.html", If_None_Match=etag_a)[0] == 200
    assert get(server, "/missing.html", If_None_Match="*")[0] == 404  # no representation: * does not match


def test_a_changed_file_gets_a_new_etag(serve, site):
    server = serve(site)
    old = get(server, "/a.html")[1]["ETag"]
    write(site / "a.html", b"<p>version two, longer</p>\n", T + 5)
    status, headers, body = get(server, "/a.html", If_None_Match=old, If_Modified_Since=http_date(T))
    assert (status, body) == (200, b"<p>version two, longer</p>\n")
    assert headers["ETag"] != old and headers["Last-Modified"] == http_date(T + 5)
    assert get(server, "/a.html", If_None_Match=headers["ETag"])[0] == 304


def test_a_change_within_the_same_second_is_seen_through_the_etag(serve, site):
    server = serve(site)
    _, first, _ = get(server, "/a.html")
    write(site / "a.html", b"<p>version two</p>\n", T + 0.5)  # same length, same second
    # If-Modified-Since alone cannot see it ...
    assert get(server, "/a.html", If_Modified_Since=first["Last-Modified"])[0] == 304
    # ... the ETag does, and If-None-Match overrides If-Modified-Since
    status, headers, body = get(
        server, "/a.html", If_None_Match=first["ETag"], If_Modified_Since=first["Last-Modified"]
    )
    assert (status, body) == (200, b"<p>version two</p>\n")
    assert headers["ETag"] != first["ETag"] and headers["Last-Modified"] == first["Last-Modified"]


@pytest.mark.parametrize(
    ("field", "status"),
    [
        (http_date(T), 304),  # equal
        (http_date(T + 3600), 304),  # later
        (http_date(T - 1), 200),  # a second earlier
        ("Tuesday, 14-Nov-23 22:13:20 GMT", 304),  # RFC 850, obsolete but to be accepted
        ("Tue Nov 14 22:13:20 2023", 304),  # asctime
        ("Tue Nov 14 22:13:19 2023", 200),
        ("not a date", 200),
        ("", 200),
    ],
)
def test_if_modified_since_alone(serve, site, field, status):
    os.utime(site / "a.html", (T + 0.75, T + 0.75))  # second granularity: the fraction does not count
    server = serve(site)
    answer = get(server, "/a.html", If_Modified_Since=field)
    assert answer[0] == status
    assert answer[1]["Last-Modified"] == http_date(T)
    assert answer[2] == (b"" if status == 304 else b"<p>version one</p>\n")
    assert server.hits[-1].header("If-Modified-Since") == field


def test_head_is_conditional_too(serve, site):
    server = serve(site)
    etag = get(server, "/a.html", method="HEAD")[1]["ETag"]
    assert get(server, "/a.html", method="HEAD", If_None_Match=etag)[0] == 304
    assert get(server, "/a.html", method="HEAD", If_Modified_Since=http_date(T))[0] == 304
    assert [hit.status for hit in server.hits] == [200, 304, 304]


def test_a_directory_index_has_validators(serve, site):
    (site / "dir").mkdir()
    write(site / "dir" / "index.html", b"<p>index</p>\n")
    server = serve(site)
    status, headers, _ = get(server, "/dir/")
    assert status == 200 and headers["ETag"] == entity_tag(b"<p>index</p>\n")
    assert get(server, "/dir/", If_None_Match=headers["ETag"])[0] == 304
    redirect = get(server, "/dir", If_None_Match=headers["ETag"])
    assert redirect[0] == 301 and "ETag" not in redirect[1]


def test_proxy_requests_have_validators(serve, tmp_path):
    write_to = tmp_path / "mirror" / "example.test"
    write_to.mkdir(parents=True)
    write(write_to / "p.html", b"<p>mirrored</p>\n")
    server = serve(tmp_path / "mirror")
    status, headers, _ = get(server, "http://example.test/p.html")
    assert status == 200 and headers["Last-Modified"] == http_date(T)
    assert get(server, "http://example.test/p.html", If_None_Match=headers["ETag"])[0] == 304
    assert [(hit.key, hit.status) for hit in server.hits] == [
        ("example.test/p.html", 200),
        ("example.test/p.html", 304),
    ]


def test_injected_answers_have_no_validators_and_ignore_conditionals(serve, site):
    server = serve(site)
    etag = get(server, "/a.html")[1]["ETag"]
    server.rules["/a.html"] = Rule(status=503, times=1)
    status, headers, _ = get(server, "/a.html", If_None_Match=etag)
    assert status == 503 and "ETag" not in headers and "Last-Modified" not in headers
    server.rules["/a.html"] = Rule(body=b"injected body", times=1)
    status, headers, body = get(server, "/a.html", If_None_Match="*")
    assert (status, body) == (200, b"injected body") and "ETag" not in headers
    server.rules["/a.html"] = Rule(delay=0.01, times=1)  # a delay only: the file is served, validators and all
    assert get(server, "/a.html", If_None_Match=etag)[0] == 304
    assert get(server, "/a.html", If_None_Match=etag)[0] == 304  # the rules are used up
    assert [hit.status for hit in server.hits] == [200, 503, 200, 304, 304]


def test_statuses_are_recorded(serve, site):
    (site / "dir").mkdir()
    server = serve(site)
    get(server, "/a.html")
    get(server, "/missing.html")
    get(server, "/dir")
    get(server, "/../../etc/passwd")
    assert [(hit.key, hit.status) for hit in server.hits] == [
        ("/a.html", 200),
        ("/missing.html", 404),
        ("/dir", 301),
        ("/../../etc/passwd", 403),
    ]


def test_without_validators(tmp_path, site):
    with SiteServer(site, validators=False) as server:
        status, headers, body = get(server, "/a.html")
        assert (status, body) == (200, b"<p>version one</p>\n")
        assert "ETag" not in headers and "Last-Modified" not in headers
        assert get(server, "/a.html", If_None_Match="*")[0] == 200
        assert get(server, "/a.html", If_None_Match=entity_tag(body))[0] == 200
        assert get(server, "/a.html", If_Modified_Since=http_date(T + 3600))[0] == 200
        assert [hit.status for hit in server.hits] == [200, 200, 200, 200]


def test_the_command_line_option(site):
    port = free_port()
    command = [sys.executable, "-m", "tse_scrapy.devtools.siteserver", str(site), "--port", str(port)]
    process = subprocess.Popen([*command, "--no-validators"], stdout=subprocess.PIPE)
    try:
        assert process.stdout.readline().decode().startswith(f"serving {site} on http://127.0.0.1:{port}")
        status, headers, _ = get(port, "/a.html", If_None_Match="*")
        assert status == 200 and "ETag" not in headers
    finally:
        process.terminate()
        process.wait(timeout=10)


# The changing site: its mutations say what a server then answers, and what a crawl then finds.


def test_changing_site_mutations_are_what_a_server_answers(serve, tmp_path):
    site = ChangingSite.build(tmp_path / "site")
    assert len(site.pages()) == 17 and max(site.depths().values()) == 3
    assert site.reachable() == site.pages()
    assert {path.stat().st_mtime for path in site.root.iterdir()} == {EPOCH}
    server = serve(site.root)
    before = {name: get(server, f"/{name}")[1]["ETag"] for name in sorted(site.pages())}

    changes = site.standard_changes()
    assert [(change.kind, change.page) for change in changes] == [
        ("changed", "news1.html"),
        ("changed", "products.html"),
        ("deleted", "archive.html"),
        ("added", "post3.html"),
        ("unlinked", "team.html"),
    ]
    assert changes[2].unreachable == {"old1.html", "old2.html"}
    assert changes[3].changed == {"blog.html"} and changes[3].reachable == {"post3.html"}
    assert changes[4].changed == {"about.html"} and changes[4].unreachable == {"team.html", "alice.html"}
    assert all(not change.unreachable for change in (changes[0], changes[1], changes[3]))

    changed = set().union(*(change.changed for change in changes))
    assert changed == {"news1.html", "products.html", "blog.html", "about.html"}
    for name, etag in before.items():
        status, headers, _ = get(server, f"/{name}", If_None_Match=etag)
        if name == "archive.html":
            assert status == 404
        else:
            assert status == (200 if name in changed else 304), name
            # Last-Modified moves forward exactly with a change
            assert (headers["Last-Modified"] != http_date(EPOCH)) == (name in changed), name
    assert get(server, "/post3.html")[0] == 200
    assert site.dead_links() == {"archive.html"}
    assert site.reachable() == site.pages() - {"old1.html", "old2.html", "team.html", "alice.html"}


def test_changing_site_same_second_change_and_touch(serve, tmp_path):
    site = ChangingSite.build(tmp_path / "site")
    server = serve(site.root)
    _, first, _ = get(server, "/news2.html")
    change = site.change("news2.html", text="Fresh words here.", keep_mtime=True)
    assert change.changed == {"news2.html"} and b"Fresh words here." in site.body("news2.html")
    status, headers, _ = get(server, "/news2.html", If_None_Match=first["ETag"])
    assert status == 200 and headers["Last-Modified"] == first["Last-Modified"]
    assert get(server, "/news2.html", If_Modified_Since=first["Last-Modified"])[0] == 304  # IMS cannot see it

    touched = site.touch("history.html")
    assert touched.touched == {"history.html"} and not touched.changed
    _, headers, _ = get(server, "/history.html")
    assert headers["ETag"] == entity_tag(site.body("history.html"))
    assert headers["Last-Modified"] == http_date(site.clock) != http_date(EPOCH)


def test_changing_site_links_changed_and_added_back(tmp_path):
    site = ChangingSite.build(tmp_path / "site")
    change = site.change("index.html", links=["about.html", "blog.html"])
    assert change.unreachable == {
        "news.html",
        "news1.html",
        "news2.html",
        "archive.html",
        "old1.html",
        "old2.html",
        "products.html",
        "widget.html",
        "gadget.html",
    }
    back = site.change("index.html", links=["about.html", "blog.html", "news.html"])
    assert back.reachable == {"news.html", "news1.html", "news2.html", "archive.html", "old1.html", "old2.html"}
    with pytest.raises(ValueError):
        site.delete("index.html")
    site.delete("old1.html")
    again = site.add("old1.html", linked_from="history.html")
    assert again.added == {"old1.html"} and "old1.html" not in site.deleted
    assert site.depths()["old1.html"] == 3  # about (1), history (2), old1 (3)


@pytest.mark.parametrize("order", ["tse", "bfs"])
def test_a_crawl_of_the_changing_site_before_and_after_is_its_model(serve, tmp_path, order):
    site = ChangingSite.build(tmp_path / "site")
    server = serve(site.root)
    url = f"{server.url}/"

    def crawl(out):
        out.mkdir()
        result = crawl_site(server, out, 3, "--order", order)
        assert result.returncode == 0, result.stderr
        return [(page_url.removeprefix(url), depth) for page_url, depth in saved_pages(out)]

    assert crawl(tmp_path / "before") == model_crawl(site.as_site(), 3, order)
    assert len(model_crawl(site.as_site(), 3, order)) == 17
    site.standard_changes()
    after = crawl(tmp_path / "after")
    assert after == model_crawl(site.as_site(), 3, order)
    assert {name for name, _ in after} == site.reachable()
    wait_until(lambda: any(hit.key == "/archive.html" and hit.status == 404 for hit in server.hits), 5, "no 404")
