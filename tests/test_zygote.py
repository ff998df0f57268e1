"""``run_tse``'s commands forked from a process that has imported Scrapy (tests/support/zygote.py) say,
write and end as the same commands started anew: the suite's other tests rely on it."""

from __future__ import annotations

import signal
import subprocess

import pytest

from tests import conftest
from tests.conftest import BIN, ROOT, clean_env, crawl_site, run_tse, site_crawl_args
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tests.support.wait import wait_until
from tse_scrapy.devtools.siteserver import Rule


def started_anew(*args, input: bytes | None = None) -> subprocess.CompletedProcess:
    command = [str(BIN / "tse"), *map(str, args)]
    return subprocess.run(command, capture_output=True, env=clean_env(), cwd=ROOT, input=input, timeout=120)


def test_refusals_help_and_stdin_are_as_started_anew(tmp_path, monkeypatch):
    monkeypatch.delenv("TSE_TEST_EXEC", raising=False)
    cases = [
        ("--help",),
        ("crawl",),
        ("crawl", "http://127.0.0.1:9/", tmp_path / "missing", "1"),
        ("index", tmp_path / "missing", tmp_path / "index"),
        ("crawl", "ftp://x/", tmp_path, "1"),
    ]
    for args in cases:
        forked, anew = run_tse(*args), started_anew(*args)
        assert (forked.returncode, forked.stdout, forked.stderr) == (anew.returncode, anew.stdout, anew.stderr), args
    # These were forked: the zygote's imports gave no warning (a command forked would not say it).
    assert conftest._zygotes and conftest._zygotes[0].ready and conftest._zygotes[0].alive()
    # A query's words read from stdin, the index missing: the same refusal, input or none.
    forked = run_tse("query", tmp_path / "pages", tmp_path / "index", input=b"word\n")
    anew = started_anew("query", tmp_path / "pages", tmp_path / "index", input=b"word\n")
    assert (forked.returncode, forked.stdout, forked.stderr) == (anew.returncode, anew.stdout, anew.stderr)
    assert forked.returncode != 0


def test_a_forked_crawl_crawls_and_one_past_its_timeout_is_killed(tmp_path, serve, monkeypatch):
    monkeypatch.delenv("TSE_TEST_EXEC", raising=False)
    site = serve(write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []}).root)
    out = tmp_path / "out"
    out.mkdir()
    done = crawl_site(site, out, 1)
    assert done.returncode == 0, done.stderr.decode()
    assert sorted(url.rsplit("/", 1)[1] for url, _ in saved_pages(out)) == ["a.html", "index.html"]
    assert f"{site.url}/a.html" in done.stdout.decode()
    site.rules["/slow.html"] = Rule(delay=60)
    slow = tmp_path / "slow"
    slow.mkdir()
    with pytest.raises(subprocess.TimeoutExpired):
        crawl_site(site, slow, 0, seed="slow.html", timeout=3)
    assert not (slow / "1").exists()


def test_a_forked_crawl_watched_as_it_runs_stops_on_ctrl_c_as_one_started_anew(tmp_path, serve, monkeypatch):
    monkeypatch.delenv("TSE_TEST_EXEC", raising=False)
    site = serve(write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []}).root)
    # a.html answers 3 s late: the crawl is under way when Ctrl-C comes, and its graceful stop, which
    # waits for the download under way, short (it was 30 s: a minute of the suite).
    site.rules["/a.html"] = Rule(delay=3)
    ended = {}
    for way, start in (("forked", conftest.popen), ("anew", subprocess.Popen)):
        out = tmp_path / way
        out.mkdir()
        command = [str(BIN / "tse"), *map(str, site_crawl_args(site, out, 1))]
        process = start(command, env=clean_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stdout.readline().startswith(b" 0 ")  # the progress log's first line, read as it comes
        wait_until(lambda out=out: (out / "1").exists(), 30, "the seed was never saved")
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=0)
        _, err = process.communicate(timeout=60)
        ended[way] = (process.returncode, err.decode().splitlines()[-1])
    assert ended["forked"] == ended["anew"] and ended["forked"][0] != 0, ended
