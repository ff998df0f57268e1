"""``tse crawl --render``: pages built by scripts, loaded in real headless Chromium (Debian's),
from a site served by nginx on 127.0.0.1.

The catalog page is built by its script from JSON (title, text, a link); a script asks for a URL
robots.txt disallows; a page's script never lets the network settle; a page crashes its renderer
(a memory bomb, with V8's heap bounded by a Chromium flag so that it crashes at once).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import run_tse
from tests.support.inprocess import query_here, tse_here
from tests.support.sitecrawl import interrupted_crawl
from tse_scrapy.crawl.downloader import render

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")

CATALOG = """<!doctype html>
<html><head><meta charset="utf-8"><title>Loading</title></head>
<body><p id="status">Loading</p><ul id="list"></ul>
<script>
fetch("/private/secret.json").catch(() => {});
// The same server under another host name: its own robots.txt is read for it first.
fetch(location.protocol + "//localhost:" + location.port + "/private/other.json").catch(() => {});
fetch("/data/catalog.json").then(r => r.json()).then(data => {
  document.title = data.title;
  document.getElementById("status").textContent = data.text;
  for (const item of data.items) {
    const a = document.createElement("a");
    a.href = item.href;
    a.textContent = item.name;
    const li = document.createElement("li");
    li.appendChild(a);
    document.getElementById("list").appendChild(li);
  }
});
</script></body></html>
"""
NEVER_SETTLES = """<!doctype html>
<html><head><title>Busy</title></head><body><p id="p">static words</p>
<script>
document.getElementById("p").textContent = "written at once kiwifruit";
setInterval(() => fetch("/data/catalog.json?" + Date.now()), 100);
</script></body></html>
"""
CRASHES = """<!doctype html>
<html><head><title>Crasher</title></head><body><p>crash page text</p>
<script>
const hoard = [];
for (;;) hoard.push(new Array(1e6).fill(Math.random()));
</script></body></html>
"""
BOOK = "<html><head><title>Hidden Book</title></head><body><p>armadillo</p></body></html>"
INDEX = (
    "<html><head><title>Start</title></head><body>"
    '<a href="catalog.html">catalog</a> <a href="busy.html">busy</a> <a href="crash.html">crash</a>'
    "</body></html>"
)


def write_site(site: Path) -> None:
    (site / "index.html").write_text(INDEX)
    (site / "catalog.html").write_text(CATALOG)
    (site / "busy.html").write_text(NEVER_SETTLES)
    (site / "crash.html").write_text(CRASHES)
    (site / "book.html").write_text(BOOK)
    (site / "data").mkdir()
    (site / "data" / "catalog.json").write_text(
        json.dumps(
            {
                "title": "Zebra Quokka Catalogue",
                "text": "Marsupial zebra quokka listing",
                "items": [{"href": "/book.html", "name": "the hidden book"}],
            }
        )
    )
    (site / "private").mkdir()
    (site / "private" / "secret.json").write_text("{}")
    (site / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")


# The browser and its driver started anew every 2 page loads: the crawls of several pages that
# recycling concerns (the full crawl, the resumed one) cross a recycling.
BOUNDS = (
    "-s",
    "TSE_RENDER_TIMEOUT=4",
    "-s",
    "TSE_RENDER_ARGS=--js-flags=--max-old-space-size=24",
    "-s",
    "TSE_RENDER_RECYCLE=2",
)
# The same bounds with one browser for the whole crawl: where what is checked is not about recycling
# (a Chromium start, with Playwright's driver, is the costliest part of a rendered crawl: ~1.5 s of CPU).
ONE_BROWSER = (*BOUNDS[:-2], "-s", "TSE_RENDER_RECYCLE=0")


def serve(nginx, tmp_path: Path):
    """The site, served: (the server, the site's directory, an empty page directory)."""
    site = tmp_path / "site"
    site.mkdir()
    write_site(site)
    pages = tmp_path / "pages"
    pages.mkdir()
    return nginx(tmp_path / "hosts", origin=site), site, pages


def crawl(nginx, tmp_path: Path, *options: str):
    """Serve the site, crawl it at depth 2 with *options*; (the server, the pages, tse crawl's result)."""
    server, _, pages = serve(nginx, tmp_path)
    result = run_tse(
        "crawl", f"{server.url}/index.html", pages, "2", "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0",
        *BOUNDS, *options,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return server, pages, result


def pages_by_url(pages: Path) -> dict[str, bytes]:
    found = {}
    for path in pages.iterdir():
        if path.name.isdigit():
            url, _, body = path.read_bytes().split(b"\n", 2)
            found[url.decode().rsplit("/", 1)[1]] = body
    return found


def test_render_reads_what_scripts_write_and_follows_their_links(nginx, tmp_path):
    from tests.support.warcs import read_warc

    warc = tmp_path / "render.warc.gz"
    # A browser started anew every 3 page loads (the last -s wins): the crawl's 5 loads cross one recycling,
    # with one Chromium start fewer than every 2.
    server, pages, result = crawl(nginx, tmp_path, "--render", "--warc", str(warc), "-s", "TSE_RENDER_RECYCLE=3")
    found = pages_by_url(pages)
    catalog = found["catalog.html"].decode("utf-8-sig")
    assert "<title>Zebra Quokka Catalogue</title>" in catalog, result.stderr.decode()[-3000:]
    assert "Marsupial zebra quokka listing" in catalog
    assert "book.html" in found  # the script-written link was followed
    # The page that never settles: cut at the timeout, kept as rendered so far.
    assert "written at once kiwifruit" in found["busy.html"].decode("utf-8-sig")
    # The page whose renderer crashed: kept as fetched; the pages after it were still rendered.
    assert found["crash.html"].startswith(b"<!doctype html>")
    assert found["book.html"].startswith("\ufeff".encode())
    summary = result.stderr.decode().strip().splitlines()[-1]
    assert "Traceback" not in result.stderr.decode()
    assert re.search(r"rendered: 4 \(1 cut at the timeout, 1 crashed, 0 failed; ", summary), summary
    assert re.search(r" 2 blocked by robots.txt", summary), summary
    assert re.search(r"browser started anew [12] times by rule", summary), summary  # every 3 page loads
    # robots.txt held for the browser's requests, on both host names: no disallowed URL was asked for.
    accesses = server.accesses()
    targets = [access.target for access in accesses]
    assert not any(target.startswith("/private/") for target in targets), targets
    assert {access.host for access in accesses if access.target == "/robots.txt"} == {"127.0.0.1", "localhost"}
    assert "/data/catalog.json" in targets
    # The archive holds the browser's exchanges too.
    archived = [r["warc"]["WARC-Target-URI"] for r in read_warc(warc) if r["type"] == "response"]
    assert any(url.endswith("/data/catalog.json") for url in archived), archived
    index = tmp_path / "index"
    assert tse_here("index", pages, index).returncode == 0  # the set-up of the query: in this process
    queries = ["Zebra Quokka Catalogue", "zebra quokka marsupial"]
    for query, answer in zip(queries, query_here(pages, index, queries, "relevance"), strict=True):
        assert answer and answer[0][1].endswith("/catalog.html"), (query, answer)


def test_without_render_the_script_written_page_is_not_found(nginx, tmp_path):
    _, pages, _ = crawl(nginx, tmp_path)
    found = pages_by_url(pages)
    assert "book.html" not in found
    assert b"Zebra" not in found["catalog.html"]
    index = tmp_path / "index"
    assert tse_here("index", pages, index).returncode == 0  # the set-up of the query: in this process
    # Neither the script-set title nor the script-written text: only the URL's "catalog" could match.
    (answer,) = query_here(pages, index, ["zebra quokka marsupial"], "relevance")
    assert answer == []


def test_render_goes_with_links_html(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    # A refusal, its message what is checked: in this process (cli.main).
    result = tse_here("crawl", "http://127.0.0.1:9/index.html", pages, "1", "--prefix", "http://127.0.0.1:9/",
                      "--links", "tse", "--render")  # fmt: skip
    assert result.returncode == 2
    assert re.search(r"--render goes with --links html", result.stderr.decode())


def test_render_with_resume_and_update(nginx, tmp_path):
    server, site, pages = serve(nginx, tmp_path)
    # Without the page that never settles: each crawl here would wait out TSE_RENDER_TIMEOUT on it while its
    # script asks for a URL every 0.1 s (a page cut at the timeout is test_render_reads_what_scripts_...'s);
    # the crashing page stays (a renderer crashed in a resumed crawl, then in an update).
    (site / "index.html").write_text(INDEX.replace(' <a href="busy.html">busy</a>', ""))
    args = ("crawl", f"{server.url}/index.html", pages, "2", "--prefix", f"{server.url}/", "--render")
    # Interrupted (Ctrl-C) once two pages are saved, 0.3 s apart; then resumed (across a recycling).
    status = interrupted_crawl((*args, *ONE_BROWSER), lambda: len(pages_by_url(pages)), 2)
    assert status != 0 and len(pages_by_url(pages)) < 4
    # A browser started anew after every page load (the last -s wins): the two or three left cross a recycling.
    done = run_tse(*args, *BOUNDS, "--resume", "-s", "DOWNLOAD_DELAY=0", "-s", "TSE_RENDER_RECYCLE=1")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    found = pages_by_url(pages)
    assert set(found) == {"index.html", "catalog.html", "crash.html", "book.html"}
    summary = done.stderr.decode().strip().splitlines()[-1]
    assert re.search(r"browser started anew [1-9]\d* times by rule", summary), summary
    assert "Zebra Quokka Catalogue" in found["catalog.html"].decode("utf-8-sig")
    # An update renders again: the script's JSON changed, so does the page it builds.
    catalog = json.loads((site / "data" / "catalog.json").read_text())
    (site / "data" / "catalog.json").write_text(json.dumps({**catalog, "title": "Wombat Edition"}))
    done = run_tse(*args, *ONE_BROWSER, "--update", "-s", "DOWNLOAD_DELAY=0")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "<title>Wombat Edition</title>" in pages_by_url(pages)["catalog.html"].decode("utf-8-sig")
    # An update without --render would save the pages unrendered: refused.
    plain = [arg for arg in args if arg != "--render"]
    refused = tse_here(*plain, "--update", "-s", "DOWNLOAD_DELAY=0")  # a refusal: in this process
    assert refused.returncode == 2 and "render" in refused.stderr.decode()


def crawl_through_proxy(nginx, tmp_path, host, depth, *options):
    """The site at *host*, a name only the proxy knows (nginx, answering absolute-form requests from
    ROOT/HOST/), crawled with --render through ``http_proxy``: the proxy, the page directory, the run."""
    from tests.conftest import clean_env

    hosts = tmp_path / "hosts"
    site = hosts / host
    site.mkdir(parents=True)
    write_site(site)
    proxy = nginx(hosts)
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse(
        "crawl", f"http://{host}/catalog.html", pages, str(depth), "--prefix", f"http://{host}/", "--render",
        "-s", "DOWNLOAD_DELAY=0", *BOUNDS, *options, env=clean_env(http_proxy=proxy.url),
    )  # fmt: skip
    return proxy, pages, result


def test_render_without_a_browser_is_one_line(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    # A refusal, its message what is checked: in this process (cli.main).
    result = tse_here("crawl", "http://127.0.0.1:9/index.html", pages, "1", "--prefix", "http://127.0.0.1:9/",
                      "--render", "-s", f"TSE_CHROMIUM={tmp_path / 'no-chromium'}")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        f"tse crawl: --render needs Chromium: {tmp_path / 'no-chromium'} not found"
        " (apt-get install chromium, or -s TSE_CHROMIUM=PATH)"
    ]
    assert sorted(p.name for p in pages.iterdir()) == []


# Pages that send the browser elsewhere while they render: a script during the parse, a script after
# the load (to a page the crawl reaches by a link too), and a <meta> refresh.
GOES_AWAY = """<!doctype html>
<html><head><title>Leaving Early</title></head><body><p id="p">static</p>
<script>document.getElementById("p").textContent = "written then gone pangolin"; location.href = "away.html";</script>
<p>parsed after the script wombat: <a href="moved.html">moved here</a></p></body></html>
"""
REPLACED = """<!doctype html>
<html><head><title>Replaced Later</title></head><body><p id="p">static</p><a href="built.html">built</a>
<script>
document.getElementById("p").textContent = "replaced later narwhal";
addEventListener("load", () => setTimeout(() => location.replace("built.html"), 100));
</script></body></html>
"""
REFRESHED = (
    '<!doctype html><html><head><title>Refreshed</title><meta http-equiv="refresh" content="0; url=target.html">'
    "</head><body><p>refresh page okapi</p></body></html>"
)


def test_a_page_that_navigates_is_kept_as_rendered_and_a_script_from_another_port_is_loaded(nginx, tmp_path):
    """Not Chromium's error page: the page as it renders, its navigation cancelled (while it loads) or
    answered 204 (after); the browser fetches nothing for it, and a <meta> refresh target is no link
    (as without --render).

    And a page's script from another port of the host is loaded: Chromium's Local Network Access checks
    would block it (the page, handed over by the route, counts as public); robots.txt still holds for the
    other server's scripts.  (One crawl for both: a tse crawl and two Chromium starts fewer.)"""
    from tests.support.warcs import read_warc

    scripts = tmp_path / "scripts"
    (scripts / "private").mkdir(parents=True)
    (scripts / "writer.js").write_text('document.getElementById("p").textContent = "written from afar axolotl";')
    (scripts / "private" / "hidden.js").write_text('document.title = "Hidden Script Ran";')
    (scripts / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    other = nginx(tmp_path / "other-hosts", origin=scripts)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<html><body><a href="gone.html">1</a> <a href="replaced.html">2</a> <a href="refresh.html">3</a>'
        ' <a href="far.html">4</a></body></html>'
    )
    (site / "gone.html").write_text(GOES_AWAY)
    (site / "replaced.html").write_text(REPLACED)
    (site / "refresh.html").write_text(REFRESHED)
    (site / "far.html").write_text(
        '<!doctype html><html><head><title>Far Scripts</title></head><body><p id="p">static</p>'
        f'<script src="{other.url}/writer.js"></script><script src="{other.url}/private/hidden.js"></script>'
        "</body></html>"
    )
    for name in ("away.html", "built.html", "target.html", "moved.html"):
        (site / name).write_text(f"<html><head><title>{name}</title></head><body>elsewhere</body></html>")
    server = nginx(tmp_path / "hosts", origin=site)
    pages = tmp_path / "pages"
    pages.mkdir()
    warc = tmp_path / "render.warc.gz"
    result = run_tse(
        "crawl", f"{server.url}/index.html", pages, "2", "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0",
        "--render", "--warc", warc, *ONE_BROWSER,
    )  # fmt: skip
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    found = {name: body.decode("utf-8-sig") for name, body in pages_by_url(pages).items()}
    # The links of the pages were followed, the places they sent the browser were not.
    expected = {"index.html", "gone.html", "replaced.html", "refresh.html", "built.html", "moved.html", "far.html"}
    assert set(found) == expected, stderr[-3000:]
    for name, words in {
        "gone.html": ("<title>Leaving Early</title>", "written then gone pangolin", "parsed after the script wombat"),
        "replaced.html": ("<title>Replaced Later</title>", "replaced later narwhal"),
        "refresh.html": ("<title>Refreshed</title>", "refresh page okapi", 'http-equiv="refresh"'),
    }.items():
        assert all(word in found[name] for word in words), (name, found[name][:3000])
        assert "ERR_BLOCKED" not in found[name] and len(found[name]) < 2000, name
    # The script from the other port ran; the one its robots.txt disallows was not fetched.
    assert "written from afar axolotl" in found["far.html"], found["far.html"]
    assert "<title>Far Scripts</title>" in found["far.html"]
    # Loaded at once, none cut at the timeout.
    summary = stderr.strip().splitlines()[-1]
    assert re.search(r"rendered: 7 \(0 cut at the timeout, 0 crashed, 0 failed; ", summary), summary
    assert re.search(r" 1 blocked by robots.txt", summary), summary
    assert [access.target for access in other.accesses()] == ["/robots.txt", "/writer.js"]
    targets = [access.target for access in server.accesses()]
    assert "/away.html" not in targets and "/target.html" not in targets, targets
    assert targets.count("/built.html") == 1, targets  # by the crawl, as a link
    # Nor is the browser's answer to itself archived: only what the servers sent (the other's robots.txt
    # and script too).
    archived = [r["warc"]["WARC-Target-URI"] for r in read_warc(warc) if r["type"] == "response"]
    assert sorted(url.rsplit("/", 1)[1] for url in archived if url.startswith(server.url)) == sorted(
        [*expected, "robots.txt"]
    ), archived
    assert sorted(url for url in archived if not url.startswith(server.url)) == [
        f"{other.url}/robots.txt",
        f"{other.url}/writer.js",
    ], archived
    index = tmp_path / "index"
    assert tse_here("index", pages, index).returncode == 0  # the set-up of the query: in this process
    (answer,) = query_here(pages, index, ["pangolin wombat"], "relevance")
    assert [url.rsplit("/", 1)[1] for _, url in answer] == ["gone.html"], answer


def test_the_browsers_requests_go_through_the_crawls_proxy_and_feature_switches_keep_playwrights(nginx, tmp_path):
    """A site at a host name only the proxy knows: the page and the JSON its script fetches both come
    through ``http_proxy`` (nginx, answering absolute-form requests from ROOT/HOST/).

    And Chromium heeds the last --disable-features only: the crawl's and TSE_RENDER_ARGS' are merged with
    Playwright's, which keep HTTP pages on HTTP (HttpsUpgrades off).  Without them, this page, at a
    host name that Chromium upgrades (not 127.0.0.1, not .test), would be taken for an https one, and
    its JSON asked for over https, which the proxy does not answer.  (One crawl for both: a Chromium
    start and a tse crawl fewer.)"""
    switches = "TSE_RENDER_ARGS=--js-flags=--max-old-space-size=24,--disable-features=Translate"
    proxy, pages, result = crawl_through_proxy(nginx, tmp_path, "www.example.com", 1, "-s", switches)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert "Zebra Quokka Catalogue" in pages_by_url(pages)["catalog.html"].decode("utf-8-sig")
    targets = [access.target for access in proxy.accesses()]
    assert "http://www.example.com/data/catalog.json" in targets, targets  # absolute form: through the proxy
    assert not any(target.startswith("http://www.example.com/private/") for target in targets), targets
    # Nothing else reached the proxy: not Chromium's own calls home, nor its favicon request.
    hosts = {urlsplit(target).hostname for target in targets if "://" in target}
    assert hosts <= {"www.example.com", "localhost"} and all("://" in target for target in targets), targets
    assert not any(target.endswith("/favicon.ico") for target in targets), targets


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("docs.localhost", True),
        ("192.168.1.20", True),
        ("10.0.0.5", True),
        ("::1", True),
        ("fe80::1", True),
        ("93.184.216.34", False),
        ("docs.example.org", False),  # a name is not looked up: it may resolve anywhere
        ("localhost.example.org", False),
        (None, False),
    ],
)
def test_local_network_checks_are_off_only_for_a_site_on_this_machine_or_a_lan(host, local):
    # (A public site's scripts must not reach 127.0.0.1 or the LAN through the crawl's browser.)
    assert render._is_local_host(host) is local


def test_the_crawls_features_are_merged_only_where_it_disables_some():
    defaults = {"--disable-features": ["HttpsUpgrades", "PaintHolding"]}
    assert render._merged_features(defaults, [], ()) == []  # a public site: Playwright's switches as they are
    assert render._merged_features(defaults, []) == [
        "--disable-features=HttpsUpgrades,PaintHolding,LocalNetworkAccessChecks"
    ]
    given = ["--enable-features=LocalNetworkAccessChecks"]
    assert render._merged_features(defaults, given) == [
        "--disable-features=HttpsUpgrades,PaintHolding",
        "--enable-features=LocalNetworkAccessChecks",
    ]
