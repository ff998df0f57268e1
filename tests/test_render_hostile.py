"""``tse crawl --render`` against hostile pages, in real headless Chromium (Debian's), from sites
served on 127.0.0.1: a browser that stops answering, a page's sockets, shared workers, WebRTC and
popups, a script that never yields, a document far over DOWNLOAD_MAXSIZE in UTF-8, an XHTML page
the browser cannot parse, and --render's settings.
"""

from __future__ import annotations

import contextlib
import http.server
import re
import shutil
import signal
import threading
from pathlib import Path

import psutil
import pytest

from tests.conftest import run_tse
from tests.support.inprocess import tse_here
from tests.test_render import pages_by_url

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")

BOUNDS = ("-s", "TSE_RENDER_TIMEOUT=4", "-s", "TSE_RENDER_ARGS=--js-flags=--max-old-space-size=64", "-s",
          "DOWNLOAD_DELAY=0")  # fmt: skip
# Generous: a crawl that hangs never ends; the crawls here take seconds.
HANG = 240
# A browser call that does not answer (a stopped browser) waited for 4 s, not 10 (TSE_RENDER_CALL_TIMEOUT):
# still far longer than any call to a browser that answers takes here.
CALL_TIMEOUT = ("-s", "TSE_RENDER_CALL_TIMEOUT=4")


class Witness:
    """A server on 127.0.0.1 that answers anything 200 and remembers every request (and WebSocket
    handshake) it sees: a host outside the crawl's prefix that a page's scripts try to reach; with *root*
    (made empty), the site whose files it serves; *redirects*: paths it answers 302 to a URL."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        robots: str = "User-agent: *\nDisallow:\n",
        on_get=None,
        root: Path | None = None,
        redirects: dict[str, str] | None = None,
    ):
        self.seen: list[str] = []
        witness = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                witness.seen.append(("WEBSOCKET " if self.headers.get("Upgrade") else "") + self.path)
                if on_get is not None:
                    on_get(self.path)
                if self.path in (redirects or {}):
                    self.send_response(302)
                    self.send_header("Location", redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = robots.encode() if self.path == "/robots.txt" else b"ok"
                path = Path(witness.root or "/nonexistent") / self.path.lstrip("/").split("?")[0]
                kind = "text/plain"
                if witness.root and path.is_file():
                    body = path.read_bytes()
                    kind = {".xhtml": "application/xhtml+xml", ".js": "text/javascript"}.get(path.suffix, "text/html")
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.root = root
        if root is not None:
            root.mkdir()
        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def witness():
    servers = []

    def start(**kwargs) -> Witness:
        servers.append(Witness(**kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def crawl_site(server, tmp_path: Path, seed: str, depth: int, *options: str):
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse(
        "crawl", f"{server.url}/{seed}", pages, str(depth), "--prefix", f"{server.url}/", "--render", *BOUNDS,
        *options, timeout=HANG,
    )  # fmt: skip
    return pages, result


def summary_of(result) -> str:
    return result.stderr.decode().strip().splitlines()[-1]


def our_browsers() -> list[psutil.Process]:
    """The Chromium browser processes (not their renderers) this test's crawl started."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            line = process.cmdline()
        except psutil.Error:
            continue
        if line and "chrom" in Path(line[0]).name and not any(arg.startswith("--type=") for arg in line):
            found.append(process)
    return found


def test_a_browser_that_stops_answering_is_started_anew(witness, tmp_path):
    """The browser is stopped (SIGSTOP: it neither answers nor goes away) as the third page is
    fetched: that page is kept as fetched, the crawl goes on with another browser and ends.  Before,
    BrowserContext.new_context waited for an answer forever."""
    stopped: list[psutil.Process] = []

    def on_get(path: str) -> None:
        if path == "/p3.html" and not stopped:
            for process in our_browsers():
                process.send_signal(signal.SIGSTOP)
                stopped.append(process)

    site = witness(on_get=on_get, root=tmp_path / "site")
    links = " ".join(f'<a href="p{n}.html">{n}</a>' for n in range(1, 6))
    (site.root / "index.html").write_text(f"<html><head><title>Index</title></head><body>{links}</body></html>")
    for n in range(1, 6):
        script = f'<script>document.title = "Scripted {n}";</script>'
        (site.root / f"p{n}.html").write_text(
            f"<html><head><title>Plain {n}</title></head><body>{script}</body></html>"
        )
    try:
        pages, result = crawl_site(site, tmp_path, "index.html", 1, "-s", "TSE_RENDER_RECYCLE=0", *CALL_TIMEOUT)
    finally:
        for process in stopped:  # gone with the driver, as a rule
            with contextlib.suppress(psutil.Error):
                process.kill()
    stderr = result.stderr.decode()
    assert stopped, "the browser was not found"
    assert result.returncode == 0, stderr[-3000:]
    found = {name: body.decode("utf-8-sig") for name, body in pages_by_url(pages).items()}
    assert len(found) == 6, stderr[-3000:]
    assert "<title>Plain 3</title>" in found["p3.html"]  # kept as fetched
    rendered_after = [n for n in (4, 5) if f"<title>Scripted {n}</title>" in found[f"p{n}.html"]]
    assert rendered_after, stderr[-3000:]  # another browser rendered what came after
    assert "Traceback" not in stderr and "Future exception" not in stderr, stderr[-3000:]
    assert re.search(r"\d+ after a failure\)", summary_of(result))
    assert not re.search(r" 0 after a failure\)", summary_of(result)), summary_of(result)


SOCKETS_AND_WORKERS = """<!doctype html>
<html><head><title>Loading</title></head><body><p id="p">static</p>
<iframe id="frame" src="about:blank"></iframe>
<script>
const other = "OTHER";
const said = [];
for (let i = 0; i < 20; i++) {
  try { new WebSocket(other.replace("http", "ws") + "/socket" + i); } catch (e) {}
}
try { new WebSocket(location.origin.replace("http", "ws") + "/own-socket"); } catch (e) {}
const blob = URL.createObjectURL(new Blob(["fetch('" + other + "/from-shared-worker')"]));
try { new SharedWorker(blob); said.push("shared worker made"); } catch (e) { said.push("no shared worker"); }
const frame = document.getElementById("frame").contentWindow;
try { new frame.SharedWorker(blob); said.push("frame shared worker made"); }
catch (e) { said.push("no frame shared worker"); }
try { new frame.RTCPeerConnection({iceServers: [{urls: "stun:127.0.0.2:3478"}]}); said.push("rtc made"); }
catch (e) { said.push("no webrtc"); }
let opened = 0;
for (let i = 0; i < 30; i++) if (window.open(other + "/popup" + i)) opened++;
said.push("opened " + opened);
document.getElementById("p").textContent = said.join(", ") + " gecko";
document.title = "Hostile Done";
</script></body></html>
"""


REACHING_IN = """<!doctype html>
<html><head><title>Reaching In</title></head><body><p id="p">static</p>
<script src="SCRIPTS/writer.js"></script>
<script src="/hop.js"></script>
<script>
fetch("INTERNAL/admin").catch(() => {});
fetch("http://localhost:NEAR_PORT/near").catch(() => {});
fetch("/to-internal").catch(() => {});
</script>
<script src="/script-to-internal.js"></script>
<script src="ROBOTS_AWAY/away.js"></script>
<iframe src="INTERNAL/frame.html"></iframe>
</body></html>
"""


def test_a_page_makes_the_crawler_contact_no_host_of_its_network(witness, tmp_path):
    """The site on 127.0.0.3; its page names 127.0.0.2 (another host of the crawler's network: not even
    its robots.txt is asked for), localhost (127.0.0.1 here: not the address of the prefix's host), and
    redirects to 127.0.0.2; a script from another port of 127.0.0.3, and one a redirect leads there, still load."""
    internal = witness(host="127.0.0.2")
    near = witness(host="127.0.0.1")
    scripts = witness(host="127.0.0.3", root=tmp_path / "scripts")
    (scripts.root / "writer.js").write_text(
        'document.getElementById("p").textContent = "from the other port capybara";'
    )
    (scripts.root / "hopped.js").write_text('document.title = "Hopped Here";')
    # Another port whose robots.txt redirects to 127.0.0.2 (Scrapy follows a robots.txt's redirects): the
    # hop is not made, that robots.txt fails, and its script is not fetched (a review's find).
    robots_away = witness(
        host="127.0.0.3", root=tmp_path / "away", redirects={"/robots.txt": f"{internal.url}/robots.txt"}
    )
    (robots_away.root / "away.js").write_text('document.title = "Should Not Run";')
    redirects = {
        "/hop.js": f"{scripts.url}/hopped.js",
        "/to-internal": f"{internal.url}/redirected",
        "/script-to-internal.js": f"{internal.url}/redirected.js",
    }
    site = witness(host="127.0.0.3", root=tmp_path / "site", redirects=redirects)
    page = REACHING_IN.replace("SCRIPTS", scripts.url).replace("INTERNAL", internal.url)
    page = page.replace("ROBOTS_AWAY", robots_away.url)
    (site.root / "reach.html").write_text(page.replace("NEAR_PORT", near.url.rsplit(":", 1)[1]))
    pages, result = crawl_site(site, tmp_path, "reach.html", 0)
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert internal.seen == [] and near.seen == [], (internal.seen, near.seen)
    assert sorted(scripts.seen) == ["/hopped.js", "/robots.txt", "/writer.js"], scripts.seen
    assert robots_away.seen == ["/robots.txt"], robots_away.seen
    rendered = pages_by_url(pages)["reach.html"].decode("utf-8-sig")
    assert "from the other port capybara" in rendered and "<title>Hopped Here</title>" in rendered, rendered
    # The six: a fetch and a frame to 127.0.0.2, a fetch to localhost, two redirects and a robots.txt's
    # redirect to 127.0.0.2 (the script behind that robots.txt is then one blocked by robots.txt).
    assert re.search(r" 1 blocked by robots.txt, 6 to hosts not public, ", summary_of(result)), summary_of(result)


def test_a_script_that_never_yields_is_counted_once(witness, tmp_path):
    """Its page load is cut at TSE_RENDER_TIMEOUT and its document cannot be read (the renderer is
    held): kept as fetched, counted failed, once (it was counted cut at the timeout and failed).
    And a browser slow to start (5 s, over TSE_RENDER_TIMEOUT's 4, as on a loaded machine) cuts no
    page that renders quickly: the page's time starts when the page is given to the browser (the
    first page's deadline was spent on the browser's start, and it was cut)."""
    slow = tmp_path / "slow-chromium"
    started = tmp_path / "started-once"
    # Slow from its second start on: the first reads Chromium's default feature switches.
    slow.write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && exec {CHROMIUM} --version\n[ -e {started} ] && sleep 5\n'
        f'touch {started}\nexec {CHROMIUM} "$@"\n'
    )
    slow.chmod(0o755)
    site = witness(root=tmp_path / "site")
    # Quick, but not settled within the 1 s a deadline already past leaves: a request after 0.3 s,
    # then 0.5 s without one.
    (site.root / "index.html").write_text(
        '<html><head><title>Start</title></head><body><a href="hang.html">hang</a> <a href="after.html">a</a>'
        '<script>setTimeout(() => fetch("after.html"), 300)</script></body></html>'
    )
    (site.root / "hang.html").write_text(
        '<html><head><title>Hang</title></head><body>before the loop<script>document.title = "Set"; while (true) {}'
        "</script></body></html>"
    )
    (site.root / "after.html").write_text('<html><head><title>After</title></head><body><script>document.title="Late"'
                                          "</script></body></html>")  # fmt: skip
    pages, result = crawl_site(site, tmp_path, "index.html", 1, "-s", f"TSE_CHROMIUM={slow}")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    found = {name: body.decode("utf-8-sig") for name, body in pages_by_url(pages).items()}
    assert "<title>Hang</title>" in found["hang.html"]  # as fetched
    assert "<title>Late</title>" in found["after.html"]  # the crawl went on rendering
    assert re.search(r"rendered: 2 \(0 cut at the timeout, 0 crashed, 1 failed; ", summary_of(result)), stderr[-2000:]
    assert len([line for line in stderr.splitlines() if "hang.html" in line and "Rendering" in line]) == 1


def test_documents_over_the_size_bound_or_unparsed_are_kept_as_fetched_and_sockets_or_popups_reach_no_one(
    witness, tmp_path
):
    """Two pages the browser renders but whose document is not kept, in one crawl: 600,000 "中" (fewer
    UTF-16 code units than DOWNLOAD_MAXSIZE, three times as many bytes: not kept), and an XHTML page the
    browser cannot parse (not Chromium's "This page contains the following errors" banner); each is kept
    as fetched and counted failed, while the pages beside them are rendered.

    And beside them, a page of sockets, workers and popups: WebSockets are not routed by Playwright's
    context.route, a SharedWorker's requests neither, and each popup was a page of the browser's: none
    reaches the other server now, and the page's own socket is not opened either (a crawl fetches
    pages).  (One crawl for both: a tse crawl and two Chromium starts fewer.)"""
    other = witness(robots="User-agent: *\nDisallow: /\n")
    site = witness(root=tmp_path / "site")
    (site.root / "hostile.html").write_text(SOCKETS_AND_WORKERS.replace("OTHER", other.url))
    (site.root / "cjk.html").write_text(
        '<html><head><meta charset="utf-8"><title>Wide</title></head><body><p id="p">few</p>'
        '<script>document.getElementById("p").textContent = "\u4e2d".repeat(600000);</script></body></html>'
    )
    broken = (
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>Broken</title></head>'
        "<body><p>unclosed paragraph quetzal<br></p></body></html>"
    )
    (site.root / "bad.xhtml").write_text(broken)
    good = broken.replace("<br>", "<br/>").replace("Broken", "Good")
    (site.root / "good.xhtml").write_text(good)
    (site.root / "index.html").write_text(
        '<html><body><a href="bad.xhtml">b</a> <a href="good.xhtml">g</a> <a href="cjk.html">c</a>'
        ' <a href="hostile.html">h</a></body></html>'
    )
    pages, result = crawl_site(
        site, tmp_path, "index.html", 1, "--deny-ext", "scrapy", "-s", "DOWNLOAD_MAXSIZE=1000000"
    )
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    page = pages_by_url(pages)["cjk.html"]
    assert len(page) < 1000000 and b'<p id="p">few</p>' in page, len(page)
    found = {name: body.decode("utf-8-sig") for name, body in pages_by_url(pages).items()}
    assert found["bad.xhtml"].strip() == broken, found["bad.xhtml"][:2000]
    assert "parsererror" not in found["bad.xhtml"]
    assert "Good" in found["good.xhtml"] and found["good.xhtml"] != good  # rendered: serialized anew
    hostile = found["hostile.html"]
    assert "<title>Hostile Done</title>" in hostile, hostile[-2000:]
    (said,) = re.findall(r'<p id="p">([^<]*) gecko</p>', hostile)  # what the script found (not its source)
    assert said.split(", ") == ["no shared worker", "no frame shared worker", "no webrtc", "opened 0"], said
    assert [seen for seen in other.seen if seen != "/robots.txt"] == [], other.seen
    assert not any(seen.startswith("WEBSOCKET") for seen in site.seen), site.seen
    # index.html, good.xhtml and hostile.html rendered; cjk.html and bad.xhtml (kept as fetched, above) failed.
    assert re.search(r"rendered: 3 \(0 cut at the timeout, 0 crashed, 2 failed; ", summary_of(result)), stderr[-2000:]


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("TSE_RENDER_PAGES=0", "-s TSE_RENDER_PAGES must be a whole number, at least 1: 0"),
        ("TSE_RENDER_PAGES=-3", "-s TSE_RENDER_PAGES must be a whole number, at least 1: -3"),
        ("TSE_RENDER_MAX_REQUESTS=-5", "-s TSE_RENDER_MAX_REQUESTS must be a whole number, at least 0: -5"),
        ("TSE_RENDER_RECYCLE=-1", "-s TSE_RENDER_RECYCLE must be a whole number, at least 0: -1"),
        ("TSE_CHROMIUM=/bin/false", "tse crawl: --render needs Chromium: /bin/false --version does not answer"),
    ],
)
def test_bad_render_settings_are_refused_before_the_crawl(tmp_path, setting, said):
    pages = tmp_path / "pages"
    pages.mkdir()
    # A refusal, its message what is checked: in this process (cli.main), not a Python start each.
    result = tse_here("crawl", "http://127.0.0.1:9/index.html", pages, "1", "--prefix", "http://127.0.0.1:9/",
                      "--render", "-s", setting)  # fmt: skip
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2, lines
    assert len(lines) == 1 and said in lines[0], lines
    assert list(pages.iterdir()) == []


def test_a_browser_that_cannot_start_stops_the_crawl(witness, tmp_path):
    """A program that answers --version as Chromium but does not start as one: one line, exit 1,
    rather than every page saved unrendered with a warning each."""
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Chromium 1.0' && exit 0\nexit 1\n")
    fake.chmod(0o755)
    site = witness(root=tmp_path / "site")
    links = " ".join(f'<a href="p{n}.html">{n}</a>' for n in range(1, 6))
    (site.root / "index.html").write_text(f"<html><body>{links}</body></html>")
    for n in range(1, 6):
        (site.root / f"p{n}.html").write_text(f"<html><body>page {n}</body></html>")
    pages, result = crawl_site(site, tmp_path, "index.html", 1, "-s", f"TSE_CHROMIUM={fake}")
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr[-3000:]
    assert stderr.count("Cannot start the browser") == 1, stderr[-3000:]
    assert "the browser cannot start" in stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr
    assert len(pages_by_url(pages)) < 6


def test_chromium_is_refused_only_when_it_does_not_answer():
    from tse_scrapy.crawl.downloader import render

    assert render.renderer_missing(CHROMIUM) is None
    assert "does not answer" in render.renderer_missing("/bin/true")
