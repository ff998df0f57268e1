"""A distributed worker's progress log: link order as in a single crawl, and
the lines of the links it pushes when it stops (real worker, real Redis,
a site served on 127.0.0.1)."""

import re

from tests.conftest import crawl_site
from tests.support.fulldisk import files_of_at_most
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import Rule

# A page's links, interleaved: new, external, denied and duplicate ones.
MIXED_LINKS = [
    "p1.html",
    "http://x.test/ext.html",
    "p2.html",
    "p1.html",
    "private/p5.html",
    "index.html",
    "http://y.test/other.html",
    "p3.html",
    "http://x.test/ext.html",
    "slow.html",
    "p2.html",
]
MIXED_VERDICTS = ["Added", "IgnExtrn", "Added", "IgnDupl", "IgnDeny", "IgnDupl", "IgnExtrn", "Added", "IgnExtrn"]
MIXED_VERDICTS += ["IgnDupl", "IgnDupl"]
P1_LINKS = ["index.html", "http://x.test/ext.html", "p4.html", "p2.html", "private/p6.html", "p4.html"]
P1_VERDICTS = ["IgnDupl", "IgnExtrn", "Added", "IgnDupl", "IgnDeny", "IgnDupl"]
# One request at a time (one leased at a time): mixed.html is scanned while
# slow.html is being fetched, so the worker does not settle between its links.
ONE_AT_A_TIME = ("--deny", "/private/", "-s", "CONCURRENT_REQUESTS=1")


def interleaved_site(root, serve):
    site = write_site(
        root,
        {
            "index.html": ["mixed.html", "slow.html"],
            "mixed.html": MIXED_LINKS,
            "slow.html": [],
            "p1.html": P1_LINKS,
            "p2.html": [],
            "p3.html": [],
            "p4.html": [],
        },
    )
    server = serve(site.root)
    server.rules["/slow.html"] = Rule(delay=1.0)
    return site, server


def found_and_verdicts(depth, links, verdicts, base):
    """The progress lines of *links* found at *depth*: Found, then its verdict, per link."""
    lines = []
    for link, verdict in zip(links, verdicts, strict=True):
        url = link if link.startswith("http://") and not link.startswith(base) else f"{base}/{link}"
        lines += [f"{depth:2d} {'':{depth}}{'Found':>9}: {url}", f"{depth:2d} {'':{depth}}{verdict:>9}: {url}"]
    return lines


def at_depth(stdout, depth, words=("Found", "Added", "IgnDupl", "IgnExtrn", "IgnDeny")):
    pattern = re.compile(rf"^{depth:2d} {'':{depth}}\s*({'|'.join(words)}): ")
    return [line for line in stdout.splitlines() if pattern.match(line)]


def test_a_workers_log_keeps_each_pages_link_order(redis_url, serve, tmp_path):
    _, server = interleaved_site(tmp_path / "site", serve)
    base = server.url
    runs = {}
    for mode, extra in (("single", ("--order", "bfs")), ("worker", ("--redis", redis_url))):
        out = tmp_path / mode
        out.mkdir()
        done = crawl_site(server, out, 3, *ONE_AT_A_TIME, *extra, timeout=120)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        runs[mode] = done.stdout.decode()
    for stdout in runs.values():
        # mixed.html is the one page of depth 1 with links, p1.html the one of depth 2.
        assert at_depth(stdout, 1) == found_and_verdicts(1, MIXED_LINKS, MIXED_VERDICTS, base)
        assert at_depth(stdout, 2) == found_and_verdicts(2, P1_LINKS, P1_VERDICTS, base)
        # Each page's Found lines follow its Scanning line, in one block.
        lines = stdout.splitlines()
        scanning = lines.index(f" 1   Scanning: {base}/mixed.html")
        assert lines[scanning + 1 : scanning + 1 + 2 * len(MIXED_LINKS)] == at_depth(stdout, 1)
    assert sorted(runs["worker"].splitlines()) == sorted(runs["single"].splitlines())


def test_a_worker_stopped_by_an_error_logs_the_links_it_pushes(redis_url, serve, tmp_path):
    site, server = interleaved_site(tmp_path / "site", serve)
    # mixed.html's links are found, then its page file cannot be written: the
    # worker stops, and pushes those links to Redis as it does.
    mixed = site.root / "mixed.html"
    mixed.write_text(mixed.read_text().replace("</body>", "<!--" + "x" * 128 * 1024 + "--></body>"))
    out = tmp_path / "out"
    out.mkdir()
    done = crawl_site(
        server,
        out,
        3,
        *ONE_AT_A_TIME,
        "--redis",
        redis_url,
        "-v",
        preexec_fn=files_of_at_most(64 * 1024),  # a page file past 64 KiB fails
    )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 1
    assert "Traceback" not in stderr
    assert re.search(rf"cannot write page file {out}/\d+: File too large", stderr)
    assert at_depth(stdout, 1) == found_and_verdicts(1, MIXED_LINKS, MIXED_VERDICTS, server.url)
    # Every push is counted: the seed, mixed.html and slow.html, then p1, p2 and p3.
    assert re.search(r"'scheduler/enqueued/redis': 6\b", stderr), stderr[-3000:]
