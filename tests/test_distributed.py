"""Distributed crawls end to end: real workers (``tse crawl --redis`` and
``scrapy crawl``), a real Redis, three virtual hosts served through the
test proxy.  Each result is compared with a single-process ``order=bfs``
crawl of the same site and with a model of it."""

import hashlib
import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import lxml.html
import pytest
import redis
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import BIN, ROOT, clean_env, popen, run_tse
from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages
from tests.support.sitegen import bfs_depths, generate_multisite
from tests.support.wait import wait_until, while_running
from tests.support.warcs import warcio_check
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.files import pagedir as pagedir_module

HOSTS = ["a.test", "b.test", "c.test"]
SEEDS = ["http://a.test/index.html", "http://b.test/index.html"]
PREFIX = ",".join(f"http://{host}/" for host in HOSTS)
DEPTH = 3
# The delay between requests to a host: the politeness checked is that no two are closer (min gap >= DELAY),
# whatever the delay; 0.1 s keeps a crawl of the site to a few seconds (57 pages, 22 on a.test and b.test).
DELAY = 0.1


@pytest.fixture
def site(tmp_path):
    graph = generate_multisite(tmp_path / "site", HOSTS, pages=25, cross=3, seed=3)
    assert {url.split("/")[2] for url in bfs_depths(graph, SEEDS, DEPTH)} == set(HOSTS)
    with SiteServer(tmp_path / "site") as proxy:
        yield graph, proxy


def crawl_args(pagedir):
    return [",".join(SEEDS), str(pagedir), str(DEPTH), "--prefix", PREFIX]


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_worker_outlives_its_test():
    """A test that fails while waiting leaves no worker running."""
    yield
    while STARTED:
        worker = STARTED.pop()
        if worker.poll() is None:
            worker.kill()
            worker.communicate()


def start_worker(command, proxy, agent="tse-test"):
    env = clean_env(http_proxy=proxy.url)
    worker = popen(
        [*command, "-s", f"USER_AGENT={agent}"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    STARTED.append(worker)
    return worker


def tse_worker(redis_url, pagedir, proxy, *extra, agent="tse-test", delay=DELAY):
    return start_worker(
        [
            str(BIN / "tse"),
            "crawl",
            *crawl_args(pagedir),
            "--redis",
            redis_url,
            "-s",
            f"DOWNLOAD_DELAY={delay}",
            *extra,
        ],
        proxy,
        agent,
    )


def finish(workers, timeout=120):
    """(exit status, stdout, stderr) of each worker; a worker still running at the timeout is killed."""
    results = []
    try:
        for worker in workers:
            try:
                out, err = worker.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                # What a hung worker last said is what tells why it hung.
                worker.kill()
                out, err = worker.communicate()
                pytest.fail(f"a worker still ran after {timeout} s; its log's end:\n{err.decode()[-6000:]}")
            results.append((worker.returncode, out.decode(), err.decode()))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    return results


# The single crawl's pages for each site served, by what the site is (its files, byte for byte, and
# the proxy's rules still in force): a dozen tests of this process compare their crawl with that of
# the same generated site, one crawl of 1.5 to 2 s each.
SINGLE_CRAWLS: dict[str, set] = {}


def served_site(proxy) -> str:
    """What *proxy* serves, as a digest: every file under its root (name and bytes), and its rules
    (but those used up: ``times`` 0)."""
    digest = hashlib.sha256()
    for path in sorted(proxy.root.rglob("*")):
        if path.is_file():
            digest.update(repr((str(path.relative_to(proxy.root)), path.read_bytes())).encode())
    rules = sorted((key, repr(rule)) for key, rule in proxy.rules.items() if rule.times != 0)
    digest.update(repr(rules).encode())
    return digest.hexdigest()


def single_process_bfs(tmp_path, proxy):
    site = served_site(proxy)
    if site not in SINGLE_CRAWLS:
        pagedir = tmp_path / "single"
        pagedir.mkdir()
        done = run_tse(
            *("crawl", *crawl_args(pagedir), "--order", "bfs", "-s", "DOWNLOAD_DELAY=0"),
            env=clean_env(http_proxy=proxy.url),
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        SINGLE_CRAWLS[site] = set(saved_pages(pagedir))
    return SINGLE_CRAWLS[site]


def check_shared_directory(pagedir, graph, tmp_path, proxy):
    pages = saved_pages(pagedir)
    files = {name for name in os.listdir(pagedir) if not name.startswith(".")}
    assert files == {str(i) for i in range(1, len(pages) + 1)}  # 1..N, no gap
    assert len({url for url, _ in pages}) == len(pages)  # each URL once
    assert set(pages) == set(bfs_depths(graph, SEEDS, DEPTH).items())  # the model
    assert set(pages) == single_process_bfs(tmp_path, proxy)  # the single crawl
    assert not [name for name in os.listdir(pagedir) if name.endswith(".partial")]


def host_gaps(proxy) -> dict[str, float]:
    times = defaultdict(list)
    for hit in proxy.hits:
        times[hit.key.split("/", 1)[0]].append(hit.time)
    return {host: min(b - a for a, b in itertools.pairwise(sorted(t))) for host, t in times.items()}


def overlaps(proxy) -> list[tuple[str, str]]:
    """Requests to one host answered while another to it was still being answered: (earlier, later)."""
    by_host = defaultdict(list)
    for hit in proxy.hits:
        by_host[hit.key.split("/", 1)[0]].append(hit)
    return [
        (a.key, b.key)
        for hits in by_host.values()
        for a, b in itertools.pairwise(sorted(hits, key=lambda hit: hit.time))
        if a.done is None or b.time < a.done
    ]


def test_three_workers_share_one_polite_crawl(redis_url, site, tmp_path):
    graph, proxy = site
    # A page slower than the delay: while it is answered, no other worker's request to its host may start.
    slow = next(url for url, depth in bfs_depths(graph, SEEDS, DEPTH).items() if depth == 2)
    proxy.rules[slow.split("//", 1)[1]] = Rule(delay=6 * DELAY, times=1)
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    workers = [tse_worker(redis_url, pagedir, proxy)]
    time.sleep(0.5)
    workers += [tse_worker(redis_url, pagedir, proxy) for _ in range(2)]
    results = finish(workers)
    assert [status for status, _, _ in results] == [0, 0, 0], results[0][2][-3000:]
    gaps = host_gaps(proxy)
    assert set(gaps) == set(HOSTS) and min(gaps.values()) >= DELAY, gaps
    assert overlaps(proxy) == []
    saved = [int(m) for _, _, err in results for m in re.findall(r"tse crawl: (\d+) pages? saved", err)]
    assert len([n for n in saved if n > 0]) >= 2, saved  # the work was shared
    check_shared_directory(pagedir, graph, tmp_path, proxy)
    assert redis.Redis.from_url(redis_url).keys("tse:*:*") == []  # a finished crawl leaves no keys


def test_a_killed_worker_loses_nothing(redis_url, site, tmp_path):
    graph, proxy = site
    # A page that takes 2 s: whoever fetches it holds its lease when killed.
    slow = next(url for url, depth in bfs_depths(graph, SEEDS, DEPTH).items() if depth == 2)
    slow_key = slow.split("//", 1)[1]
    proxy.rules[slow_key] = Rule(delay=2.0, times=1)
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    workers = [
        tse_worker(redis_url, pagedir, proxy, "-s", "TSE_LEASE_SECONDS=1.5", agent=f"worker-{i}") for i in range(3)
    ]
    hits = wait_until(
        lambda: [hit for hit in proxy.hits if hit.key == slow_key], 60, "the slow page was never fetched", 0.02
    )
    victim = int(hits[0].headers["User-Agent"].split("-")[1])
    workers[victim].send_signal(signal.SIGKILL)
    results = finish(workers)
    assert results[victim][0] == -signal.SIGKILL
    survivors = [result for i, result in enumerate(results) if i != victim]
    assert [status for status, _, _ in survivors] == [0, 0]
    assert any("back in the frontier" in err for _, _, err in survivors)
    assert len([hit for hit in proxy.hits if hit.key == slow_key]) == 2  # fetched again
    check_shared_directory(pagedir, graph, tmp_path, proxy)


def test_a_worker_stopped_with_ctrl_c_hands_its_pages_back_at_once(redis_url, site, tmp_path):
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    long_leases = ("--name", "ctrlc", "-s", "TSE_LEASE_SECONDS=60")
    first = tse_worker(redis_url, pagedir, proxy, *long_leases)
    six_files = while_running(first, lambda: len(os.listdir(pagedir)) >= 6, "writing 6 files")
    wait_until(six_files, 60, "the first worker never wrote 6 files", 0.02)
    first.send_signal(signal.SIGINT)
    assert finish([first])[0][0] == 1  # interrupted
    leases = redis.Redis.from_url(redis_url).zrangebyscore("tse:ctrlc:leases", 1, "+inf")
    assert leases == []  # none left to run out
    second = tse_worker(redis_url, pagedir, proxy, *long_leases)
    assert finish([second], timeout=40)[0][0] == 0  # no 60 s wait for a lease
    check_shared_directory(pagedir, graph, tmp_path, proxy)


def test_a_worker_joins_with_only_the_crawl_name_and_redis(redis_url, site, tmp_path):
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    # A slower crawl (about 8 s): the second worker starts once the first has registered it, and must
    # still find pages to fetch after its own start-up (seconds, on a loaded machine).
    first = tse_worker(redis_url, pagedir, proxy, "--name", "joined", "--keep", delay=0.2)
    client = redis.Redis.from_url(redis_url)
    registered = while_running(first, lambda: client.exists("tse:joined:params"), "registering its crawl")
    wait_until(registered, 60, "the first worker never registered crawl 'joined' in Redis", 0.05)
    second = start_worker(
        [
            str(BIN / "scrapy"),
            "crawl",
            "tse",
            "-s",
            f"TSE_REDIS_URL={redis_url}",
            "-s",
            "TSE_CRAWL_NAME=joined",
            "-s",
            "DOWNLOAD_DELAY=0.2",
        ],
        proxy,
    )
    results = finish([first, second])
    assert [status for status, _, _ in results] == [0, 0], results[1][2][-3000:]
    assert f"Distributed crawl joined: seeds {', '.join(SEEDS)}, depth {DEPTH}" in results[1][2]
    assert int(re.search(r"'tse/pages_saved': (\d+)", results[1][2]).group(1)) > 0
    check_shared_directory(pagedir, graph, tmp_path, proxy)
    assert client.exists("tse:joined:params")  # --keep
    status = tse_here("status", "--redis", redis_url, "joined")  # what Redis kept, read in this process
    assert status.returncode == 0
    assert f"saved {len(saved_pages(pagedir))}" in status.stdout.decode()


def test_redirects_and_crawl_delay_across_workers(redis_url, site, tmp_path):
    graph, proxy = site
    depths = bfs_depths(graph, SEEDS, DEPTH)
    on_a = sorted(
        (url for url, depth in depths.items() if url.startswith("http://a.test/") and depth in (1, 2)),
        key=lambda url: (depths[url], url),
    )
    moved, looping = on_a[0], on_a[1]
    # The target gets moved's depth through the redirect, and no page that
    # shallow links to it: otherwise its depth would depend on which of two
    # pages of one level is fetched first, in any concurrent crawl.
    target = next(
        url
        for url in sorted(graph)
        if url.startswith("http://a.test/")
        and url not in (moved, looping)
        and all(depths.get(page, DEPTH + 1) > depths[moved] + 1 for page, links in graph.items() if url in links)
    )
    proxy.rules[moved.split("//", 1)[1]] = Rule(status=301, location=target)
    proxy.rules[looping.split("//", 1)[1]] = Rule(status=302, location=looping)
    # A Crawl-delay longer than DELAY (0.1 s): c.test's requests are spaced by it, not by DELAY.
    (tmp_path / "site" / "c.test" / "robots.txt").write_text("User-agent: *\nCrawl-delay: 0.25\n")
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    # The single crawl of this site (its rules, its robots.txt: no other test's) runs beside the
    # workers, its requests told from theirs by their User-Agent: not 4 s more after them.
    with ThreadPoolExecutor(max_workers=1) as pool:
        single = pool.submit(single_process_bfs, tmp_path, proxy)
        results = finish([tse_worker(redis_url, pagedir, proxy) for _ in range(2)])
        single_pages = single.result()
    assert [status for status, _, _ in results] == [0, 0]
    c_hits = sorted(
        hit.time for hit in proxy.hits if hit.key.startswith("c.test/") and hit.headers["User-Agent"] == "tse-test"
    )
    assert len(c_hits) > 3 and min(b - a for a, b in itertools.pairwise(c_hits)) >= 0.25
    pages = saved_pages(pagedir)
    assert len({url for url, _ in pages}) == len(pages)
    assert moved not in {url for url, _ in pages} and looping not in {url for url, _ in pages}
    assert (target, depths[moved]) in pages  # saved under its own URL, at moved's depth
    assert any(f"Failed: {looping}" in out for _, out, _ in results)
    assert set(pages) == single_pages


def test_bad_distributed_arguments_are_one_line(redis_url, tmp_path):
    for args, message in [
        (["--redis", redis_url, "--name", "nope"], "no crawl named nope"),
        ([*crawl_args(tmp_path), "--redis", redis_url, "--order", "tse"], "breadth-first"),
        ([*crawl_args(tmp_path), "--redis", redis_url, "--max-pages", "5"], "page limit"),
        ([*crawl_args(tmp_path), "--redis", "redis://127.0.0.1:1/0"], "cannot use Redis"),
    ]:
        done = tse_here("crawl", *args)  # a refusal, its message what is checked: in this process (cli.main)
        assert done.returncode == 2
        assert message in done.stderr.decode() and len(done.stderr.decode().splitlines()) == 1
    assert os.listdir(tmp_path) == []


def test_several_seeds_in_one_process(site, tmp_path):
    graph, proxy = site
    assert single_process_bfs(tmp_path, proxy) == set(bfs_depths(graph, SEEDS, DEPTH).items())


def test_each_worker_archives_and_records_its_own_exchanges(redis_url, site, tmp_path):
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    archives = [tmp_path / f"worker{i}.warc.gz" for i in range(2)]
    records = [tmp_path / f"worker{i}.jsonl" for i in range(2)]
    workers = [tse_worker(redis_url, pagedir, proxy, "--warc", archives[0], "--record", records[0])]
    time.sleep(0.5)
    workers.append(tse_worker(redis_url, pagedir, proxy, "--warc", archives[1], "--record", records[1]))
    results = finish(workers)
    assert [status for status, _, _ in results] == [0, 0], results[0][2][-3000:]
    check_shared_directory(pagedir, graph, tmp_path, proxy)
    bodies = {}
    for archive in archives:
        status, report = warcio_check(archive)  # warcio's checker (what `warcio check` runs), in this process
        assert status == 0, report
        with open(archive, "rb") as stream:
            pages = {
                record.rec_headers.get_header("WARC-Target-URI"): record.content_stream().read()
                for record in ArchiveIterator(stream)
                if record.rec_type == "response" and record.http_headers.get_statuscode() == "200"
            }
        assert pages, f"{archive.name} holds no page: the work was not shared"
        bodies.update(pages)
        assert archive.with_name(archive.name.replace(".warc.gz", ".cdxj")).is_file()
    # Together, the workers' archives hold every saved page, as it was saved.
    saved = {page.url: page.body for _, page in pagedir_module.read_pages(pagedir)}
    assert {url: bodies.get(url) for url in saved} == saved
    # Each worker's record names the worker; together they hold each page saved, once, with its docID
    # (the one a "moved" line gives it, when the last worker gave it a docID freed by a failed page).
    recorded, moves, names = {}, [], set()  # docID -> URL
    for record in records:
        entries = [json.loads(line) for line in record.read_text().splitlines()]
        workers_named = {entry["worker"] for entry in entries}
        assert len(workers_named) == 1 and None not in workers_named
        names |= workers_named
        for entry in entries:
            if entry["outcome"] == "saved":
                assert entry["doc"] not in recorded
                recorded[entry["doc"]] = entry["url"]
            elif entry["outcome"] == "moved":
                moves.append((entry["moved_from"], entry["doc"]))
    assert len(names) == 2
    for old, new in moves:
        assert new not in recorded
        recorded[new] = recorded.pop(old)
    assert recorded == {doc: page.url for doc, page in pagedir_module.read_pages(pagedir)}


def test_the_last_worker_records_the_pages_it_moves_into_freed_doc_ids(redis_url, tmp_path):
    # index.html links to a missing page on b.test, then to a page of its own host: 4 requests at a
    # time lease 2 a round trip, so both at once (docIDs 2 and 3). The missing one frees docID 2, and
    # no page leased after it takes it.
    for host in ("a.test", "b.test"):
        (tmp_path / "site" / host).mkdir(parents=True)
    (tmp_path / "site" / "a.test" / "index.html").write_text(
        '<a href="http://b.test/missing.html">gone</a> <a href="there.html">there</a>'
    )
    (tmp_path / "site" / "a.test" / "there.html").write_text("<p>here</p>")
    pagedir, record = tmp_path / "pages", tmp_path / "worker.jsonl"
    pagedir.mkdir()
    seed = "http://a.test/index.html"
    command = [str(BIN / "tse"), "crawl", seed, str(pagedir), "1", "--prefix", "http://a.test/,http://b.test/"]
    command += ["--redis", redis_url]
    command += ["--record", str(record)]
    command += ["-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS=4"]
    with SiteServer(tmp_path / "site") as proxy:
        [(status, _, err)] = finish([start_worker(command, proxy)])
    assert status == 0, err[-3000:]
    assert saved_pages(pagedir) == [(seed, 0), ("http://a.test/there.html", 1)]
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    assert {entry["url"]: entry["doc"] for entry in entries if entry["outcome"] == "saved"} == {
        seed: 1,
        "http://a.test/there.html": 3,
    }
    assert [
        (entry["url"], entry["depth"], entry["moved_from"], entry["doc"], entry["worker"] is not None)
        for entry in entries
        if entry["outcome"] == "moved"
    ] == [("http://a.test/there.html", 1, 3, 2, True)]
    # The report counts requests: the moved line is not one.
    report = tmp_path / "report.html"
    made = tse_here("report", record, "--out", report)  # the record's reading, in this process
    counts = f"{len(entries) - 1} requests, 2 pages saved, 1 failed, from 1 record file"
    assert made.stderr.decode() == f"tse report: wrote {report}: {counts}\n"
    [listed] = lxml.html.fromstring(report.read_bytes()).xpath('//ul[@id="record-files"]/li')
    assert " ".join(listed.text_content().split()) == f"{record}: {len(entries) - 1} requests"
