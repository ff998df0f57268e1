"""A tester's finds about ``tse status``: a wrong password is told from a missing one (the password never
shown); a watcher (``--every``) of a distributed crawl that finishes says it finished and exits 0, with
its keys removed or kept (``--keep``), and says so when a Redis restarted without persistence lost it.
A real redis-server and real workers (``tse crawl --redis``) crawling a site served on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess

import msgpack
import pytest
import redis

from tests.conftest import BIN, ROOT, clean_env, popen, run_tse
from tests.support.inprocess import tse_here
from tests.support.net import free_port
from tests.support.redisserver import RedisServer
from tests.support.sitegen import write_site
from tests.support.wait import wait_until
from tse_scrapy.distributed.store import CRAWL_FORMAT, RedisCrawl

PASSWORD = "s3cret-pw"
THIS_FORMAT = json.dumps({"format": CRAWL_FORMAT})  # a crawl's params, as far as status reads them
WRONG = "not-the-Zq7-password"


def test_a_wrong_password_is_told_from_a_missing_one(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    try:
        server.client().config_set("requirepass", PASSWORD)
        host = f"127.0.0.1:{server.port}/0"
        said = {}
        for url in (f"redis://{host}", f"redis://:{WRONG}@{host}", f"redis://crawler:{WRONG}@{host}"):
            # Refusals, their messages what is checked: in this process (cli.main; tests/support/inprocess.py).
            done = tse_here("status", "--redis", url, "c", env=clean_env())
            assert done.returncode == 1 and done.stdout == b"", done
            said[url] = done.stderr.decode()
            assert WRONG not in said[url]
    finally:
        server.stop()
    assert list(said.values()) == [
        f"tse status: Redis at redis://{host} wants a password: give it in the URL, before the host and an @ "
        "(user:password@)\n",
        # Before: "wants a password" for these too.
        f"tse status: Redis at redis://:***@{host} refused the password given (WRONGPASS): it is wrong, or the user "
        "is unknown or disabled\n",
        f"tse status: Redis at redis://crawler:***@{host} refused the password given (WRONGPASS): it is wrong, or the "
        "user is unknown or disabled\n",
    ]


def watch(redis_url: str, name: str) -> subprocess.Popen:
    command = [str(BIN / "tse"), "status", name, "--redis", redis_url, "--every", "0.1"]
    return popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("keep", [False, True])
def test_a_watcher_of_a_crawl_that_finishes_says_so_and_exits_0(redis_server, redis_url, serve, tmp_path, keep):
    pages = [f"p{number}.html" for number in range(6)]
    site = write_site(tmp_path / "site", {"index.html": pages, **{page: [] for page in pages}})
    server = serve(site.root)
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    crawl = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(pagedir), "1", "--prefix", f"{server.url}/"]
    crawl += ["--redis", redis_url, "--name", "w", "-s", "DOWNLOAD_DELAY=0.5", *(["--keep"] if keep else [])]
    worker = popen(crawl, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    watcher = None
    try:
        client = redis_server.client()
        wait_until(lambda: client.exists("tse:w:params"), 30, "the crawl never began")
        watcher = watch(redis_url, "w")
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()[-2000:]
        out, err = watcher.communicate(timeout=60)
    finally:
        for process in (worker, watcher):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    # Before: "tse status: no crawl named w in Redis at URL", exit 1 (without --keep), or on and on (with it).
    assert (watcher.returncode, err.decode()) == (0, "")
    lines = out.decode().splitlines()
    assert lines[0].startswith("crawl w: saved "), lines  # it saw the crawl at work
    if keep:
        assert lines[-1].startswith("crawl w: finished (kept with --keep): saved 7, frontier 0, leased 0, seen "), lines
        once = tse_here("status", "w", "--redis", redis_url, env=clean_env())  # what Redis kept, read in this process
        assert (once.returncode, once.stdout.decode()) == (0, lines[-1] + "\n")
    else:
        assert lines[-1].startswith("crawl w: finished (its last worker removed its keys); last seen: saved "), lines


def test_a_watcher_of_a_crawl_that_a_restarted_redis_lost_says_so(tmp_path):
    server = RedisServer(tmp_path / "redis").start()  # no persistence
    watcher = None
    try:
        server.client().set("tse:c:params", THIS_FORMAT)  # a crawl, as far as status reads one
        watcher = watch(server.url, "c")
        assert watcher.stdout.readline().decode().startswith("crawl c: saved 0")
        server.stop()
        server.start()
        _, err = watcher.communicate(timeout=60)
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.communicate()
        server.stop()
    assert watcher.returncode == 1
    assert err.decode() == (
        f"tse status: crawl c in Redis at {server.url}: Redis restarted and holds the crawl no more (it kept no "
        "persistence): its record is lost\n"
    )


def test_a_query_password_masked_in_a_message_keeps_the_separator_after_it():
    url = f"redis://127.0.0.1:{free_port()}/0?password=s3cret"
    done = run_tse("status", "--redis", url, "c", timeout=30)
    masked = url.replace("s3cret", "***")
    # Before: "... at redis://127.0.0.1:PORT/0?password=*** connection refused" (its ":" masked with the password).
    assert (done.returncode, done.stderr.decode()) == (
        1,
        f"tse status: cannot reach Redis at {masked}: connection refused\n",
    )


# Redis commands that change what it holds: `tse status` sends none (it only reads).
WRITES = {"set", "del", "unlink", "hset", "hdel", "zadd", "zrem", "zpopmin", "sadd", "srem", "lpush", "ltrim"}
WRITES |= {"incr", "decr", "expire", "pexpire", "rename", "flushall", "flushdb", "eval", "evalsha", "restore"}


def everything(client) -> dict:
    return {key: client.dump(key) for key in client.keys("*")}


def test_status_refuses_the_reserved_name_and_any_a_crawl_could_not_have(redis_server, redis_url):
    client = redis_server.client()
    client.set("tse:polite:127.0.0.1:8000", "worker-1", px=600_000)  # every crawl's politeness lease of a host
    client.set("tse:other:params", THIS_FORMAT)
    client.sadd("tse:other:seen", "x")
    before = everything(client)
    # Refusals, their messages what is checked: in this process (cli.main; tests/support/inprocess.py).
    crawl = tse_here("crawl", "--redis", redis_url, "--name", "polite", env=clean_env())
    reserved = "crawl name polite is reserved (the politeness leases use it)\n"
    assert (crawl.returncode, crawl.stderr.decode()) == (2, f"tse crawl: {reserved}")
    # Before: "its record is lost, 1 leftover key(s) remain: remove them (redis-cli --scan --pattern
    # 'tse:polite:*', then DEL each)", the leases of every crawl on the server; and for '*', every crawl's keys.
    said = {name: tse_here("status", "--redis", redis_url, name, env=clean_env()) for name in ("polite", "*", "o?her")}
    assert {name: (done.returncode, done.stdout, done.stderr.decode()) for name, done in said.items()} == {
        "polite": (2, b"", f"tse status: {reserved}"),
        "*": (2, b"", "tse status: crawl name must be 1-100 letters, digits, '.', '_' or '-': *\n"),
        "o?her": (2, b"", "tse status: crawl name must be 1-100 letters, digits, '.', '_' or '-': o?her\n"),
    }
    assert everything(client) == before


@pytest.mark.parametrize(
    ("params", "said"),
    [
        (b"not json", "its record (tse:c:params) is not JSON"),
        (b"[1, 2]", "its record (tse:c:params) is not a JSON object"),
        (json.dumps({"format": 99}), "begun by another version of tse-scrapy (crawl format 99, this one reads"),
        (b'{"seed": "http://h/"}', "begun by another version of tse-scrapy (crawl format 1, this one reads"),
        (None, "its record (tse:c:params) cannot be read: WRONGTYPE"),  # a hash
    ],
)
def test_status_says_in_one_line_a_record_it_cannot_read_and_writes_nothing(redis_server, redis_url, params, said):
    client = redis_server.client()
    if params is None:
        client.hset("tse:c:params", "format", CRAWL_FORMAT)
    else:
        client.set("tse:c:params", params)
    client.hset("tse:c:pages", "f", 1)
    before = everything(client)
    client.config_resetstat()
    # The refusal, its message what is checked: in this process (cli.main; tests/support/inprocess.py).
    done = tse_here("status", "--redis", redis_url, "c", env=clean_env())
    sent = {name.removeprefix("cmdstat_") for name in client.info("commandstats")}
    # Before: "crawl c: saved 1, frontier 0, leased 0, seen 0, workers 0", exit 0, as if it meant that.
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (1, b"") and err.startswith(
        f"tse status: crawl c in Redis at {redis_url}: "
    )
    assert said in err and err.count("\n") == 1, err
    assert everything(client) == before and "get" in sent and not sent & WRITES, sent


def test_a_joining_worker_refuses_a_record_that_is_no_json_object_in_one_line(redis_url):
    redis.Redis.from_url(redis_url).set("tse:c:params", "[1, 2]")
    # The refusal, its message what is checked: in this process (cli.main; tests/support/inprocess.py).
    done = tse_here("crawl", "--redis", redis_url, "--name", "c", env=clean_env())
    # Before: an AttributeError traceback ('list' object has no attribute 'get').
    assert (done.returncode, done.stderr.decode()) == (
        2,
        f"tse crawl: cannot read crawl c in Redis at {redis_url}: not a JSON object\n",
    )


def test_a_quarantine_record_written_by_another_client_runs_no_terminal_sequence(redis_server, redis_url):
    # A record planted in the quarantine list (anyone who may write to Redis) was printed raw: an escape
    # clearing the screen, a terminal's title set, a line of its own ("crawl c: finished ... saved
    # 999999"), 30 KB of it (a reviewer's find). Its control characters are shown encoded, cut.
    client = redis_server.client()
    client.set("tse:c:params", THIS_FORMAT)
    forged = b"ok\ncrawl c: finished (kept with --keep): saved 999999\x1b[2J\x1b]0;pwned\x07" + b"A" * 30_000
    client.lpush("tse:c:quarantine", msgpack.packb([1, 1796643330.5, b"tse:c:frontier\x1b[31m", forged, 5, b""]))
    client.lpush("tse:c:quarantine", msgpack.packb([1, 1796643330.5, b"tse:c:frontier", b"why", "5", b""]))
    done = tse_here("status", "--redis", redis_url, "c", env=clean_env())
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    lines = out.splitlines()
    assert lines[0].startswith("crawl c: ") and len(lines) == 3, out
    assert not any(character in out for character in "\x1b\x07\r"), out
    assert "quarantined: (a record of" in lines[1]  # a size that is no number: not one of tse's
    assert lines[2].startswith("  quarantined: tse:c:frontier%1B[31m: ok%0Acrawl c: finished"), lines[2]
    assert "%1B[2J%1B]0;pwned%07" in lines[2] and len(lines[2]) < 700


def test_worker_marks_no_worker_wrote_count_no_worker_alive(redis_url):
    # A mark "seen" in the year 10^300, or with a lease of 10^308 seconds (any client of Redis may write
    # one), was a worker alive for ever: `tse status` counted it, `--migrate` was refused for good.
    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "marks")
    crawl.register_worker("real", 30)
    now = crawl.now()
    marks = {
        "stepped back": {"seen": now + 10, "lease": 30},  # Redis's clock set back 10 s: still alive
        "seen in 10^308": {"seen": 1e308, "lease": 30},
        "lease of 10^308 s, two days ago": {"seen": now - 2 * 86_400, "lease": 1e308},
        "seen never": {"seen": float("-inf"), "lease": 30},
        "seen NaN": {"seen": float("nan"), "lease": 30},
        "lease NaN": {"seen": now, "lease": float("nan")},
        "gone": {"seen": now - 31, "lease": 30},
    }
    crawl.server.hset(crawl.keys.workers, mapping={name: json.dumps(mark) for name, mark in marks.items()})
    assert crawl.status()["workers"] == 2
