"""The project deployed to a real scrapyd on 127.0.0.1 with scrapyd-deploy,
crawls scheduled over its HTTP API."""

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.net import free_port
from tests.support.sitegen import generate_site

PROJECT = "tse_scrapy"


def api(base, endpoint, data=None):
    body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
    with urllib.request.urlopen(f"{base}/{endpoint}", data=body, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory):
    home = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
    (home / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        f"bind_address = 127.0.0.1\nhttp_port = {port}\n"
        f"eggs_dir = {home}/eggs\nlogs_dir = {home}/logs\ndbs_dir = {home}/dbs\nitems_dir =\n"
        "max_proc = 2\npoll_interval = 0.2\n"
    )
    server = subprocess.Popen(
        [str(BIN / "scrapyd"), "--pidfile", str(home / "scrapyd.pid"), "-n", "-l", str(home / "scrapyd.out")],
        cwd=home,
        env=clean_env(),
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            api(base, "daemonstatus.json")
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"scrapyd did not start: {(home / 'scrapyd.out').read_text()}") from None
            time.sleep(0.2)
    # Deploy with scrapyd-deploy from a copy of the project whose target is this scrapyd.
    project = home / "project"
    shutil.copytree(
        ROOT,
        project,
        ignore=shutil.ignore_patterns(".venv", ".git", "data", "bench", "tests", "build", "*.egg-info", "__pycache__"),
    )
    (project / "scrapy.cfg").write_text(
        f"[settings]\ndefault = tse_scrapy.settings\n\n[deploy:test]\nurl = {base}\nproject = {PROJECT}\n"
    )
    deploy = subprocess.run(
        [str(BIN / "scrapyd-deploy"), "test", "--version", "r1"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        timeout=120,
    )
    assert deploy.returncode == 0, deploy.stderr.decode() + deploy.stdout.decode()
    yield base, home
    os.kill(int((home / "scrapyd.pid").read_text()), signal.SIGTERM)
    server.wait(timeout=30)


def run_job(base, **arguments):
    job = api(base, "schedule.json", {"project": PROJECT, "spider": "tse", **arguments})["jobid"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(j["id"] == job for j in api(base, f"listjobs.json?project={PROJECT}")["finished"]):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not finish")


def test_deployed_crawl_equals_a_direct_crawl(scrapyd, tmp_path, serve):
    base, home = scrapyd
    assert PROJECT in api(base, "listprojects.json")["projects"]
    assert api(base, f"listspiders.json?project={PROJECT}")["spiders"] == ["tse"]
    site = generate_site(tmp_path / "site", pages=25, seed=2)
    server = serve(site.root)
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    via_scrapyd, direct = tmp_path / "scrapyd", tmp_path / "direct"
    via_scrapyd.mkdir()
    direct.mkdir()
    job = run_job(base, seed=seed, pagedir=str(via_scrapyd), depth="3", prefix=prefix, setting="DOWNLOAD_DELAY=0")
    assert run_tse("crawl", seed, direct, 3, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0").returncode == 0
    assert sorted(os.listdir(via_scrapyd)) == sorted(os.listdir(direct))
    for name in os.listdir(direct):
        assert (via_scrapyd / name).read_bytes() == (direct / name).read_bytes(), name
    log = (home / "logs" / PROJECT / "tse" / f"{job}.log").read_text()
    assert "'finish_reason': 'finished'" in log


def test_failed_job_says_so_in_its_log(scrapyd, tmp_path):
    base, home = scrapyd
    job = run_job(base, seed="https://elsewhere.example/index.html", pagedir=str(tmp_path), depth="1")
    last = (home / "logs" / PROJECT / "tse" / f"{job}.log").read_text().splitlines()[-1]
    assert "CRITICAL" in last and "seed URL is not internal" in last
    assert os.listdir(tmp_path) == []


def test_crawl_failure_shows_in_stats_and_last_log_line(scrapyd, tmp_path, serve):
    base, home = scrapyd
    site = generate_site(tmp_path / "site", pages=5, seed=1)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".2.partial").mkdir()  # page 2 cannot be written
    job = run_job(
        base,
        seed=f"{server.url}/index.html",
        pagedir=str(out),
        depth="1",
        prefix=f"{server.url}/",
        setting="DOWNLOAD_DELAY=0",
    )
    log = (home / "logs" / PROJECT / "tse" / f"{job}.log").read_text()
    assert "'finish_reason': 'tse_write_error'" in log and "'tse/error':" in log
    assert "The crawl failed: cannot write page file" in log.splitlines()[-1]
