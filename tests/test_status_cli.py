"""`tse status`'s arguments and output, against a real Redis: one line and exit 2 for a URL it cannot
use, the NAME typed after --redis, and a reader that goes away (a tester's finds: argparse's error, a
TypeError traceback, a BrokenPipeError traceback)."""

import json
import os
import subprocess

import pytest

from tests.conftest import BIN, clean_env, run_tse
from tse_scrapy.distributed.store import CRAWL_FORMAT

THIS_FORMAT = json.dumps({"format": CRAWL_FORMAT})  # a crawl's params, as far as status reads them


@pytest.mark.parametrize(
    "url",
    ["redis//x", "http://127.0.0.1:6379/0", "redis://127.0.0.1:port/0", "redis://127.0.0.1:6379/0?ssl_cert_reqs=bogus"],
)
def test_a_url_that_cannot_be_used_is_one_line_and_exit_2(url):
    done = run_tse("status", "--redis", url, "c", timeout=30)
    err = done.stderr.decode()
    assert done.returncode == 2 and len(err.splitlines()) == 1 and err.startswith("tse status: "), err
    assert "Traceback" not in err


def test_the_name_typed_after_redis_is_the_name(redis_url):
    done = run_tse("status", "--redis", "t9", env=clean_env(TSE_REDIS_URL=redis_url), timeout=30)
    assert done.returncode == 1 and done.stderr.decode() == f"tse status: no crawl named t9 in Redis at {redis_url}\n"
    missing = run_tse("status", env=clean_env(TSE_REDIS_URL=redis_url), timeout=30)
    assert missing.returncode == 2 and missing.stderr.decode().endswith("required: NAME\n")


def test_a_reader_that_goes_away_ends_it_quietly(redis_server, redis_url):
    client = redis_server.client()
    client.set("tse:c:params", THIS_FORMAT)  # a crawl, as far as status reads one
    for number in range(50):
        client.rpush("tse:c:quarantine", f'{{"why": "forged {number}", "entry": "x"}}')
    command = f"{BIN / 'tse'} status --redis {redis_url} c | head -1"
    done = subprocess.run(command, shell=True, capture_output=True, timeout=60, env=clean_env())
    assert done.stdout.decode().startswith("crawl c: saved 0") and done.stderr.decode() == "", done.stderr
    every = f"{BIN / 'tse'} status --redis {redis_url} c --every 0.01 | head -2; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", every], capture_output=True, timeout=60, env=clean_env())
    assert done.stdout.decode().splitlines()[-1] == "141" and done.stderr.decode() == "", done.stderr


def test_every_0_repeats(redis_server, redis_url):
    # It printed once and exited 0: 0 was taken for no --every, where the doc says 0 or more, repeating.
    redis_server.client().set("tse:z:params", THIS_FORMAT)
    every = f"{BIN / 'tse'} status --redis {redis_url} z --every 0 | head -3; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", every], capture_output=True, timeout=60, env=clean_env())
    lines = done.stdout.decode().splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["crawl z"] * 3 and lines[3:] == ["141"], lines
    assert done.stderr.decode() == ""


@pytest.mark.parametrize("every", ["1e10", "86401"])
def test_an_interval_over_a_day_is_refused(every):
    # (1e10 was an OverflowError traceback from the sleep: a review's find.)
    done = run_tse("status", "--redis", "redis://127.0.0.1:1/0", "c", f"--every={every}", timeout=30)
    message = f"tse status: argument --every: the interval is at most 86,400 seconds (a day): {every}\n"
    assert (done.returncode, done.stderr.decode()) == (2, message)


def test_a_crawl_whose_record_is_lost_is_said_so(redis_server, redis_url):
    # (A Redis without persistence restarted mid-crawl leaves keys without params: "no crawl named" was
    # all it said.)
    redis_server.client().sadd("tse:lost:seen", "x")
    done = run_tse("status", "--redis", redis_url, "lost", timeout=30)
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"tse status: crawl lost in Redis at {redis_url}: its record is lost, 1 leftover key(s) remain: "
        "remove them (redis-cli --scan --pattern 'tse:lost:*', then DEL each)\n"
    )


def test_a_redis_that_wants_a_password_is_said_so(tmp_path):
    # (Its own "HELLO must be called with the client already authenticated ..." was all it said.)
    from tests.support.redisserver import RedisServer

    server = RedisServer(tmp_path / "redis").start()
    try:
        server.client().config_set("requirepass", "s3cret-pw")
        done = run_tse("status", "--redis", server.url, "c", timeout=30)
        assert done.returncode == 1
        assert done.stderr.decode() == (
            f"tse status: Redis at {server.url} wants a password: give it in the URL, before the host and an @ "
            "(user:password@)\n"
        )
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("command", "extra", "missing"),
    [
        (["status", "c"], "redis", "redis"),
        (["serve", "pages", "index"], "search", "uvicorn"),
        (["report", "r.jsonl"], "report", "matplotlib"),
    ],
)
def test_a_command_without_its_extra_is_one_line_and_exit_2(tmp_path, command, extra, missing):
    """An interpreter where the extra's package cannot be imported (as where it is not installed): the
    same bad-arguments exit for each command (tse status exited 1, tse serve and tse report 2)."""
    package = tmp_path / "shadow" / missing
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ImportError('No module named {missing}', name={missing!r})\n")
    path = os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")]))
    done = run_tse(*command, env=clean_env(PYTHONPATH=path), timeout=60)
    err = done.stderr.decode()
    assert (done.returncode, done.stdout, len(err.splitlines())) == (2, b"", 1), err
    assert (
        err.startswith(f"tse {command[0]}: needs the {extra} extra (pip install tse-scrapy[{extra}]): ")
        and missing in err
    )
