"""`tse serve --workers 2` killed with SIGKILL takes its workers with it (the port is free again), and says
once, not once a worker, that its index cannot be opened any more; `tse status --every` takes seconds, 0
or more, and a subcommand's unrecognized arguments are refused in its name.  Real processes and servers
on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.net import free_port
from tests.support.searchsite import write_search_site
from tests.support.serving import QUICK_LOOKS, every_worker_opened
from tests.support.wait import still_running, wait_until, while_running

psutil = pytest.importorskip("psutil")

INDEX_FILES = ("", ".bin", ".stamp", ".docs", ".search")
# Longer than a server process's looks at the files (served.CHECK_SECONDS, 0.25 s with QUICK_LOOKS:
# settled, then opened): 3 looks, and its try at opening them.
SETTLED = 2.0


def answers(port: int | str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return response.read() == b"ok"
    except OSError:
        return False


def workers_of(process: subprocess.Popen, count: int) -> list[int]:
    """The pids of *process*'s *count* worker processes, once it has them all."""

    pids: list[int] = []

    def started() -> bool:
        pids[:] = [child.pid for child in psutil.Process(process.pid).children()]
        return len(pids) == count

    wait_until(while_running(process, started, "its workers started"), 30, f"not {count} workers")
    return pids


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="Linux: the workers end with their parent")
def test_the_workers_of_a_killed_server_end_with_it_and_the_port_is_free_again(tmp_path):
    pages, index = write_search_site(tmp_path)
    port = free_port()
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2", "--port", str(port)]
    first = subprocess.Popen(
        command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    workers: list[int] = []
    try:
        wait_until(while_running(first, lambda: answers(port), "answering"), 30, "tse serve never answered")
        workers = workers_of(first, 2)
        first.kill()  # kill -9 of tse serve itself: it cannot stop its workers
        assert first.wait(timeout=30) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while running := still_running(workers):  # before: they went on serving, children of PID 1
            assert time.monotonic() < deadline, f"workers left running: {running}"
            time.sleep(0.05)
        assert not answers(port)
        # Started again on the same port (before: "cannot listen on 127.0.0.1:PORT: Address already in use").
        with serving(command) as again:
            pass
        assert (again.returncode, again.stdout) == (0, b"")
    finally:
        for pid in still_running(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)


@contextlib.contextmanager
def serving(command: list[str], env: dict | None = None) -> Iterator[subprocess.CompletedProcess]:
    """*command* (`tse serve ... --port PORT`) run until /healthz answers; Ctrl-C on leaving, then its exit
    status and output in what it gave."""
    port = command[-1]
    process = subprocess.Popen(
        command, env=env or clean_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    done = subprocess.CompletedProcess(command, None)
    done.pid = process.pid  # type: ignore[attr-defined]
    try:
        wait_until(while_running(process, lambda: answers(port), "answering"), 30, "tse serve never answered")
        yield done
    finally:
        process.send_signal(signal.SIGINT)
        done.stdout, done.stderr = process.communicate(timeout=30)
        done.returncode = process.returncode


def test_an_index_removed_is_said_once_not_once_a_worker(tmp_path):
    pages, index = write_search_site(tmp_path)
    port = free_port()
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2", "--port", str(port)]
    with serving(command, clean_env(**QUICK_LOOKS)) as run:
        wait_until(lambda: len(psutil.Process(run.pid).children()) == 2, 30, "not two workers")
        # (Each has opened the index: one still starting would wait for it, and say so otherwise.)
        wait_until(lambda: every_worker_opened(run.pid, index), 30, "a worker never opened the index")
        for suffix in INDEX_FILES:  # rm INDEXFILE*
            os.unlink(f"{index}{suffix}")
        time.sleep(SETTLED)  # each worker has looked at the files, seen them gone and settled, and tried them
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stderr.decode().splitlines() if "written anew" in line]
    assert len(said) == 1, said  # before: once a worker
    assert said[0].startswith(f"tse serve: {index} was written anew but cannot be opened ([Errno 2] "), said


@pytest.mark.parametrize("interval", ["0", "soon"])
def test_the_servers_look_interval_is_refused_in_one_line_when_it_is_no_interval(tmp_path, interval):
    """TSE_SERVE_CHECK_SECONDS (served.CHECK_SECONDS, 1 s): 0 would look without a pause, a word is none."""
    env = clean_env(TSE_SERVE_CHECK_SECONDS=interval)  # (refused before the page directory is looked at)
    result = run_tse("serve", tmp_path / "pages", tmp_path / "index", "--port", free_port(), env=env, timeout=30)
    message = f"tse serve: TSE_SERVE_CHECK_SECONDS must be a number of seconds from 0.01 to 3600: {interval}\n"
    assert (result.returncode, result.stdout, result.stderr.decode()) == (2, b"", message)


@pytest.mark.parametrize("every", ["-1", "nan", "inf", "-inf", "1e400", "-0.5"])
def test_status_every_takes_seconds_0_or_more(every):
    """No Redis runs: the argument is refused before any is asked."""
    result = run_tse("status", "--redis", f"redis://127.0.0.1:{free_port()}/0", "crawl", f"--every={every}", timeout=60)
    message = f"tse status: argument --every: the interval is a number of seconds, 0 or more: {every}\n"
    assert (result.returncode, result.stdout, result.stderr.decode()) == (2, b"", message)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["report", "r.jsonl", "-o", "x.html"], "tse report: unrecognized arguments: -o x.html"),
        (["index", "pages", "out.index", "--bogus"], "tse index: unrecognized arguments: --bogus"),
        (["query", "pages", "out.index", "extra"], "tse query: unrecognized arguments: extra"),
        (["--bogus"], "tse: unrecognized arguments: --bogus"),  # no subcommand: the program's
    ],
)
def test_unrecognized_arguments_are_refused_in_the_subcommands_name(tmp_path, arguments, message):
    result = subprocess.run(
        [str(BIN / "tse"), *arguments], capture_output=True, env=clean_env(), cwd=tmp_path, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr.decode()) == (2, b"", message + "\n")
    assert list(tmp_path.iterdir()) == []  # nothing written (no x.html)
