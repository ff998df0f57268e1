"""Crash-safe crawls: killed at random points and resumed, a crawl ends with
the same page directory as an uninterrupted one.  What ``tse crawl`` refuses (or finds nothing to
do for) before Scrapy starts is asked in the test's process (``cli.main``: tests/support/inprocess.py);
the crawls, and the commands a test is about, stay processes."""

import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_scrapy, run_tse
from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages, snapshot, tree
from tests.support.resumestate import uncommitted
from tests.support.sample import run_seed
from tests.support.sitegen import generate_site, write_site
from tests.support.wait import wait_until, while_running
from tests.support.warcs import assert_valid
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.resume.pagedirlock import lock_page_directory
from tse_scrapy.rules.crawling.crawlargs import ArgumentError


def page_files(directory):
    return sum(1 for name in os.listdir(directory) if name.isdigit())


@pytest.fixture(scope="module")
def slow_site(tmp_path_factory):
    """One site and server for the module: its tests only read it (and the whole crawls below are
    of this server's URLs)."""
    # 150 pages (144 saved in tse order, 150 in bfs): room for the kills drawn among them (250 before:
    # a hundred pages more crawled by each of the module's dozen crawls and resumes for the same proof).
    site = generate_site(tmp_path_factory.mktemp("slow") / "site", pages=150, fanout=3, seed=11, external=5, dead=5)
    server = SiteServer(site.root).start()
    for name in site.links:
        server.rules["/" + name] = Rule(delay=0.004)  # ~150 pages in a second or two
    yield site, server
    server.stop()


def crawl_command(server, out, order, *extra):
    return [
        str(BIN / "tse"),
        "crawl",
        f"{server.url}/index.html",
        str(out),
        "10",
        "--prefix",
        f"{server.url}/",
        "--order",
        order,
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        "LOG_LEVEL=WARNING",
        *extra,
    ]


@pytest.fixture(scope="module")
def whole_crawl(slow_site, tmp_path_factory):
    """The uninterrupted crawl of slow_site in an order at a concurrency, made once for the tests
    that ask for it: its page directory."""
    _, server = slow_site
    made = {}

    def whole(order, concurrency):
        if (order, concurrency) not in made:
            out = tmp_path_factory.mktemp(f"whole-{order}-{concurrency}")
            command = crawl_command(server, out, order, "-s", f"CONCURRENT_REQUESTS={concurrency}")
            assert subprocess.run(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL).returncode == 0
            made[order, concurrency] = out
        return made[order, concurrency]

    return whole


def interrupt_at(command, out, target, signals, rng):
    """Run *command* until *target* page files exist (or it ends), then send *signals*."""
    process = subprocess.Popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(
            lambda: process.poll() is not None or page_files(out) >= target,
            60,
            f"the crawl neither saved {target} pages nor ended",
            0.002,
        )
    except AssertionError:
        process.kill()
        process.communicate()
        raise
    time.sleep(rng.uniform(0, 0.01))  # land anywhere in a page's life
    for sig in signals:
        if process.poll() is None:
            process.send_signal(sig)
        time.sleep(0.05)
    process.wait(timeout=60)
    return process


@pytest.mark.parametrize(
    "order, kinds, concurrency",
    [
        # One crawl stopped by turns with each: a SIGKILL, a Ctrl-C, two Ctrl-Cs (and resumed after each).
        ("tse", [[signal.SIGKILL], [signal.SIGINT], [signal.SIGINT, signal.SIGINT]], 1),
        ("bfs", [[signal.SIGKILL]], 1),
        # Several pages in flight at once.
        ("bfs", [[signal.SIGKILL]], 8),
    ],
)
def test_interrupted_crawl_resumes_to_the_same_directory(tmp_path, slow_site, whole_crawl, order, kinds, concurrency):
    _, server = slow_site

    def command(out, *more):
        return crawl_command(server, out, order, "-s", f"CONCURRENT_REQUESTS={concurrency}", *more)

    # The uninterrupted crawl at concurrency 1: in bfs order every page gets its shortest depth at any
    # concurrency (docs/crawling.md), so a crawl of 8 in flight saves the very pages of 1 in flight (one
    # whole crawl of the site fewer, and the documented promise checked on the way).
    whole = whole_crawl(order, 1)
    total = page_files(whole)
    assert total > 120

    # Also at 0 pages (during start-up) for SIGKILL (the first kind); a Ctrl-C that early stops
    # Python itself while it imports its site module, with its own traceback.  Then a stop of each
    # kind, anywhere in the lives of the pages: every stop of a kind is the same one, at a random
    # instant of a page's life, and each run of the suite draws other pages (the seed in every
    # message; TSE_TEST_SEED=all: four of each kind, six when there is one).  (One a kind, not two:
    # the start-up kill and the others already make every run but the first a resume of a resume;
    # a second stop of a kind was a process start and a resume more for the same code.)
    seed, replay = run_seed()
    rng = random.Random(f"{order}{kinds}{seed}")
    each = 1 if seed is not None else 6 if len(kinds) == 1 else 4
    targets = [0, *sorted(rng.sample(range(1, total - 5), each * len(kinds)))]
    out = tmp_path / "interrupted"
    out.mkdir()
    interrupted = Counter()
    for run, target in enumerate(targets):
        signals = kinds[run % len(kinds)]
        extra = ["--resume"] if run else []
        if signals != [signal.SIGKILL]:  # Ctrl-C once the crawl has started
            target = max(target, page_files(out) + 1)
        process = interrupt_at(command(out, *extra), out, target, signals, rng)
        assert b"Traceback" not in process.stderr.read(), (signals, target, replay)
        if process.returncode == 0:
            break
        interrupted[str(signals)] += 1
        if page_files(out):
            assert (out / ".tse-state.sqlite").is_file()
    assert sorted(interrupted) == sorted(map(str, kinds)), (interrupted, replay)
    assert min(interrupted.values()) >= each, (interrupted, replay)
    final = subprocess.run(command(out, "--resume"), env=clean_env(), cwd=ROOT, capture_output=True)
    assert final.returncode == 0, (replay, final.stderr.decode()[-2000:])
    if concurrency == 1:
        assert tree(out) == tree(whole), (targets, replay)  # no state, no partial file left
    else:
        # Concurrent saves number pages in any order: the same pages (URL, depth, body) under docIDs 1..N.
        assert sorted(tree(out)) == sorted(tree(whole)), (targets, replay)
        assert sorted(tree(out).values()) == sorted(tree(whole).values()), (targets, replay)


@pytest.fixture(scope="module")
def finished_crawl(tmp_path_factory):
    """A three-page site, served for the module, and its finished crawl (``tse crawl``, depth 1), made
    once: each test reads a copy of it (``finished_copy``)."""
    root = tmp_path_factory.mktemp("finished")
    site = write_site(root / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    out = root / "out"
    out.mkdir()
    with SiteServer(site.root) as server:
        seed, prefix = f"{server.url}/index.html", f"{server.url}/"
        done = run_tse("crawl", seed, out, 1, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0")
        assert done.returncode == 0, done.stderr.decode()
        assert sorted(hit.key for hit in server.hits) == ["/a.html", "/b.html", "/index.html", "/robots.txt"]
        yield server, out


@pytest.fixture
def finished_copy(tmp_path, finished_crawl):
    """The module's server and a copy of its finished crawl."""
    server, crawled = finished_crawl
    out = tmp_path / "out"
    shutil.copytree(crawled, out)
    return server, out


def test_refuses_to_mix_crawls(finished_copy):
    server, out = finished_copy
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    before, hits = tree(out), len(server.hits)
    # Refused before Scrapy starts: asked in the test's process.
    result = tse_here("crawl", seed, out, 1, "--prefix", prefix)
    # The same seed's finished crawl is said to be one ("another crawl" was all it said).
    assert result.returncode == 2 and result.stderr.decode() == (
        f"tse crawl: {out} holds a finished crawl of {seed}: crawl it again with --update (-a update=yes),"
        " or crawl into an empty directory\n"
    )
    result = tse_here("crawl", f"{server.url}/a.html", out, 1, "--prefix", prefix)
    assert result.returncode == 2 and result.stderr.decode() == (
        f"tse crawl: {out} already holds the pages of another crawl; crawl into an empty directory\n"
    )
    (out / ".tse-state.sqlite").write_bytes(b"")  # not a crawl state: still refused
    result = tse_here("crawl", seed, out, 1, "--prefix", prefix, "--resume")
    assert result.returncode == 2
    (out / ".tse-state.sqlite").unlink()
    assert tree(out) == before
    assert len(server.hits) == hits  # nothing fetched (the crawl asked for robots.txt and each page once)


@pytest.mark.parametrize("command", ["tse crawl --resume", "scrapy crawl -a resume=yes"])
def test_resuming_a_finished_crawl_does_nothing(finished_copy, command):
    server, out = finished_copy
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    assert {url for url, _ in saved_pages(out)} == {seed, prefix + "a.html", prefix + "b.html"}
    assert not (out / ".tse-state.sqlite").exists()  # finished
    before, fetched = snapshot(out), len(server.hits)
    time.sleep(0.05)  # a file written again would get a later modification time
    if command.startswith("tse"):  # said before Scrapy starts: asked in the test's process
        result = tse_here("crawl", seed, out, 1, "--prefix", prefix, "--resume")
    else:
        result = run_scrapy(
            *("crawl", "tse", "-a", f"seed={seed}", "-a", f"pagedir={out}", "-a", "depth=1"),
            *("-a", f"prefix={prefix}", "-a", "resume=yes"),
        )
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "holds a finished crawl: nothing to resume" in lines[0], lines
    assert result.returncode == 0
    assert len(server.hits) == fetched, [hit.key for hit in server.hits[fetched:]]  # not even robots.txt
    assert snapshot(out) == before


def test_resume_requires_the_same_arguments(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    server.rules["/a.html"] = Rule(delay=30)
    out = tmp_path / "out"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    process = subprocess.Popen(
        [str(BIN / "tse"), "crawl", seed, str(out), "1", "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0"],
        env=clean_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(while_running(process, lambda: page_files(out) >= 1, "saving a page"), 30, "no page saved")
    finally:
        process.kill()
    process.wait()
    server.rules.clear()
    cases = [
        ((seed, out, 2, "--prefix", prefix, "--resume"), "depth was 1 and is now 2"),
        ((seed, out, 1, "--prefix", prefix, "--resume", "--order", "bfs"), "order was tse"),
        ((f"{server.url}/a.html", out, 1, "--prefix", prefix, "--resume"), "seed was"),
        ((seed, out, 1, "--prefix", prefix), "holds an interrupted crawl"),
    ]
    for args, message in cases:  # refused before Scrapy starts: asked in the test's process
        result = tse_here("crawl", *args)
        assert result.returncode == 2 and message in result.stderr.decode(), result.stderr
    result = run_tse("crawl", seed, out, 1, "--prefix", prefix, "--resume", "-s", "DOWNLOAD_DELAY=0")
    assert result.returncode == 0
    assert [url for url, _ in saved_pages(out)] == [seed, prefix + "a.html"]


def test_scrapy_crawl_with_jobdir_resumes_by_running_again(tmp_path, slow_site, whole_crawl):
    _, server = slow_site
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"

    def command(out, jobdir=None):
        return [
            str(BIN / "scrapy"),
            "crawl",
            "tse",
            "-a",
            f"seed={seed}",
            "-a",
            f"pagedir={out}",
            "-a",
            "depth=10",
            "-a",
            f"prefix={prefix}",
            "-s",
            "DOWNLOAD_DELAY=0",
            "-s",
            "LOG_LEVEL=WARNING",
            *(["-s", f"JOBDIR={jobdir}"] if jobdir else []),
        ]

    # The uninterrupted crawl: tse crawl's in the order and at the concurrency scrapy crawl tse has by default.
    whole = whole_crawl("tse", 1)
    out, jobdir = tmp_path / "out", tmp_path / "job"
    out.mkdir()
    rng = random.Random(5)
    for target in (40, 120):
        interrupt_at(command(out, jobdir), out, target, [signal.SIGKILL], rng)
    assert (jobdir / "tse-state.sqlite").is_file() and not (out / ".tse-state.sqlite").exists()
    assert subprocess.run(command(out, jobdir), env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL).returncode == 0
    assert tree(out) == tree(whole)
    assert (jobdir / "tse-state.sqlite").is_file()  # a JOBDIR keeps its state, as in Scrapy


def jobdir_crawl(server, out, jobdir, *options):
    return run_tse(
        "crawl",
        f"{server.url}/index.html",
        out,
        2,
        "--prefix",
        f"{server.url}/",
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        f"JOBDIR={jobdir}",
        *options,
    )


@pytest.fixture(scope="module")
def finished_job_once(tmp_path_factory):
    """A five-page site, served for the module, and its finished crawl with a JOBDIR, made once: each
    test changes a copy of it (``finished_job``)."""
    root = tmp_path_factory.mktemp("finished_job")
    site = write_site(
        root / "site",
        {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": ["d.html"], "c.html": [], "d.html": []},
    )
    with SiteServer(site.root) as server:
        out, jobdir = root / "out", root / "job"
        out.mkdir()
        assert jobdir_crawl(server, out, jobdir).returncode == 0
        yield server, out, jobdir


@pytest.fixture
def finished_job(tmp_path, finished_job_once):
    """The module's server and a copy of its finished JOBDIR crawl (the page files' times kept)."""
    server, crawled, crawled_job = finished_job_once
    out, jobdir = tmp_path / "out", tmp_path / "job"
    shutil.copytree(crawled, out)
    shutil.copytree(crawled_job, jobdir)
    return server, out, jobdir


def test_recorded_page_whose_file_is_lost_is_fetched_again(finished_job):
    server, out, jobdir = finished_job
    before = tree(out)
    (out / "3").unlink()
    server.hits.clear()
    assert jobdir_crawl(server, out, jobdir).returncode == 0
    assert tree(out) == before
    assert [hit.key for hit in server.hits if hit.key != "/robots.txt"] == [
        before["3"].split(b"\n")[0].decode().removeprefix(server.url)
    ]


def test_a_recorded_page_whose_file_is_lost_counts_toward_the_page_limit_once(tmp_path, serve):
    # It is fetched again, and saved under its docID: the crawl is not one page short.
    site = write_site(
        tmp_path / "site", {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": [], "c.html": []}
    )
    server = serve(site.root)
    out, jobdir = tmp_path / "out", tmp_path / "job"
    out.mkdir()
    limit = ("-s", "CLOSESPIDER_PAGECOUNT=3")
    assert jobdir_crawl(server, out, jobdir, *limit).returncode == 0
    before = tree(out)
    assert sorted(name for name in before if name.isdigit()) == ["1", "2", "3"]
    (out / "3").unlink()
    assert jobdir_crawl(server, out, jobdir, *limit).returncode == 0
    assert tree(out) == before


def test_page_written_but_not_recorded_is_read_back_not_written_again(finished_job):
    server, out, jobdir = finished_job
    before = tree(out)
    last = max(int(name) for name in before if name.isdigit())
    uncommitted(jobdir, last)
    (out / str(last)).touch()
    mtime = (out / str(last)).stat().st_mtime_ns
    server.hits.clear()
    assert jobdir_crawl(server, out, jobdir).returncode == 0
    assert tree(out) == before
    assert (out / str(last)).stat().st_mtime_ns == mtime  # not written again
    assert [hit.key for hit in server.hits if hit.key != "/robots.txt"] == []


def quiet_snapshot(directory):
    """The snapshot of *directory*, if it stays the same for 0.2 s (else None)."""
    first = snapshot(directory)
    time.sleep(0.2)
    return first if snapshot(directory) == first else None


def test_a_page_directory_is_crawled_by_one_process_at_a_time(tmp_path, serve):
    """A live crawl holds its page directory: another crawl of it, or a resume, is refused in one
    line and writes nothing.  The kernel drops the lock with its process: after a SIGKILL, the
    resume goes on, with its WARC (locked the same way)."""
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    server = serve(site.root)
    server.rules["/a.html"] = Rule(delay=30)
    out, warc = tmp_path / "out", tmp_path / "crawl.warc.gz"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    command = ["crawl", seed, str(out), "1", "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0", "--warc", str(warc)]
    process = subprocess.Popen(
        [str(BIN / "tse"), *command], env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:

        def waiting_for_a() -> bool:  # then, having saved the other two pages, the live crawl writes nothing
            return page_files(out) == 2 and any(hit.key == "/a.html" for hit in server.hits)

        wait_until(while_running(process, waiting_for_a, "waiting for a.html"), 30, "no request for a.html")
        before = wait_until(lambda: quiet_snapshot(tmp_path), 10, "the crawl's files kept changing")
        busy = f"{out} is in use by another crawl, still running: let it end (or stop it) first"
        for options in (["--resume"], []):  # refused before Scrapy starts: asked in the test's process
            refused = tse_here(*command, *options)
            assert (refused.returncode, refused.stderr.decode()) == (2, f"tse crawl: {busy}\n"), options
        refused = run_scrapy(
            *("crawl", "tse", "-a", f"seed={seed}", "-a", f"pagedir={out}", "-a", "depth=1", "-a", f"prefix={prefix}"),
            *("-a", "resume=yes", "-s", f"TSE_WARC={warc}"),
        )
        assert (refused.returncode, refused.stderr.decode()) == (2, f"scrapy crawl tse: {busy}\n")
        assert snapshot(tmp_path) == before
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    server.rules.clear()
    resumed = run_tse(*command, "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert {url for url, _ in saved_pages(out)} == {seed, prefix + "a.html", prefix + "b.html"}
    assert_valid(warc)


# A crawl run from Python (Scrapy's CrawlerProcess): the spider decides how it starts.
_FROM_PYTHON = """
import sys
from scrapy.crawler import CrawlerProcess
from scrapy.utils.project import get_project_settings
from tse_scrapy.spiders.tse import TseSpider
seed, pagedir, prefix, warc = sys.argv[1:]
settings = get_project_settings()
settings.setdict({"TSE_WARC": warc, "LOG_LEVEL": "WARNING", "DOWNLOAD_DELAY": 0})
process = CrawlerProcess(settings)
process.crawl(TseSpider, seed=seed, pagedir=pagedir, depth="1", prefix=prefix, resume="yes")
process.start()
"""


def test_resuming_a_finished_crawl_from_python_touches_nothing(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out, warc = tmp_path / "out", tmp_path / "crawl.warc.gz"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    done = run_tse("crawl", seed, out, 1, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0", "--warc", warc)
    assert done.returncode == 0, done.stderr.decode()
    before, fetched = snapshot(tmp_path), len(server.hits)
    time.sleep(0.05)  # a file written again would get a later modification time
    env = clean_env(SCRAPY_SETTINGS_MODULE="tse_scrapy.settings")
    command = [str(BIN / "python"), "-c", _FROM_PYTHON, seed, str(out), prefix, str(warc)]
    resumed = subprocess.run(command, capture_output=True, env=env, cwd=ROOT, timeout=120)
    assert resumed.returncode == 0 and b"Traceback" not in resumed.stderr, resumed.stderr.decode()
    assert len(server.hits) == fetched  # not even robots.txt
    assert snapshot(tmp_path) == before  # the pages, the marker, the WARC and its index


def test_the_page_directory_lock_is_held_by_one_crawl_of_any_process(tmp_path):
    first = lock_page_directory(tmp_path)
    with pytest.raises(ArgumentError, match=f"^{tmp_path} is in use by another crawl, still running"):
        lock_page_directory(tmp_path)  # this process's second crawl of it too
    first.release()
    first.release()  # once let go, again is nothing
    lock_page_directory(tmp_path).release()
    lock_page_directory(tmp_path / "gone").release()  # a directory that cannot be opened is not locked


@pytest.mark.parametrize("how", ["tse", "tse --log-file", "tse --update", "scrapy"])
def test_ctrl_c_says_once_how_to_go_on(tmp_path, serve, how):
    # It said "CRITICAL: The crawl failed: crawl stopped: shutdown", then "tse crawl: crawl stopped:
    # shutdown": the same failure twice, and not a word of --resume.
    site = generate_site(tmp_path / "site", pages=12, fanout=3, seed=4)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "crawl.log"
    args = [f"{server.url}/index.html", str(out), "3"]
    # 0.2 s between requests: the Ctrl-C, sent once 3 requests are made, lands with most of the crawl ahead.
    options = ["--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0.2"]
    if how == "scrapy":
        spider_args = [f"seed={args[0]}", f"pagedir={out}", "depth=3", f"prefix={server.url}/"]
        command = [str(BIN / "scrapy"), "crawl", "tse", *(x for a in spider_args for x in ("-a", a))]
        command += ["-s", "DOWNLOAD_DELAY=0.2", "-s", "LOG_LEVEL=WARNING"]
    else:
        command = [str(BIN / "tse"), "crawl", *args, *options]
        if how == "tse --log-file":
            command += ["--log-file", str(log)]
        if how == "tse --update":
            assert run_tse("crawl", *args, "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0").returncode == 0
            command += ["--update"]
    before = len(server.hits)
    process = subprocess.Popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: len(server.hits) >= before + 3, 60, "the crawl did not start")
    finally:
        process.send_signal(signal.SIGINT)
        stderr = process.communicate(timeout=60)[1].decode()
    assert process.returncode == 1, stderr  # docs/robustness.md: a crawl stopped by Ctrl-C exits 1
    go_on = {"tse --update": "--update --resume", "scrapy": "-a resume=yes"}.get(how, "--resume")
    program = "scrapy crawl tse" if how == "scrapy" else "tse crawl"
    said = f"{program}: the crawl was stopped by Ctrl-C (or SIGTERM): go on with {go_on}"
    lines = stderr.splitlines()
    assert lines[-1] == said, lines
    assert [line for line in lines if "stopped" in line] == [said]
    assert "CRITICAL" not in stderr and "Traceback" not in stderr
    if how == "tse --log-file":  # the log file ends with it, once
        logged = [line for line in log.read_text().splitlines() if "The crawl failed" in line]
        assert len(logged) == 1 and logged[0].endswith(f"CRITICAL: The crawl failed: {said.split(': ', 1)[1]}")
    if how != "scrapy":  # and so it does
        resumed = run_tse("crawl", *args, *options[:2], "-s", "DOWNLOAD_DELAY=0", *go_on.split(), timeout=120)
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
