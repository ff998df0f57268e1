"""`tse serve` with several processes stops on a hang-up (its terminal closed) and on Ctrl-\\ as on Ctrl-C,
as a server of one process does, and keeps as many processes as `--workers` says: uvicorn's supervisor
restarted its workers on SIGHUP and ignored SIGQUIT (a server left running, its port taken, after an SSH
session dropped; a reviewer's find), and adds or removes one on SIGTTIN and SIGTTOU."""

import glob
import os
import signal
import tempfile
import time

import psutil
import pytest

from tests.conftest import BIN, ROOT, clean_env
from tests.support.searchsite import write_search_site
from tests.support.serving import tse_serve
from tests.support.wait import wait_until
from tse_scrapy.search.sharedanswers import PREFIX


@pytest.mark.parametrize("number", [signal.SIGHUP, signal.SIGQUIT])
def test_a_server_of_several_processes_stops_on_a_hang_up_and_ctrl_backslash(tmp_path, number):
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(), ROOT) as run:
        workers = psutil.Process(run.process.pid).children()
        assert len(workers) == 2
        root = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()  # (sharedanswers.py's)
        shared = glob.glob(f"{root}/{PREFIX}{run.process.pid}-*")  # the answers its workers share
        run.process.send_signal(number)
        wait_until(lambda: run.process.poll() is not None, 20, "the server went on after the signal")
        assert run.process.returncode == 0
        wait_until(lambda: not any(worker.is_running() for worker in workers), 20, "a worker was left running")
    assert "Traceback" not in run.stderr, run.stderr
    assert shared and not any(os.path.exists(path) for path in shared)  # removed


def test_a_server_keeps_as_many_processes_as_it_was_given(tmp_path):
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(), ROOT) as run:
        supervisor = psutil.Process(run.process.pid)
        before = {worker.pid for worker in supervisor.children()}
        run.process.send_signal(signal.SIGTTIN)  # uvicorn: one worker more
        run.process.send_signal(signal.SIGTTOU)  # one fewer
        run.process.send_signal(signal.SIGTTIN)
        time.sleep(1.5)  # (the supervisor looks at the signals it was sent every half second)
        assert {worker.pid for worker in supervisor.children()} == before
        assert run.process.poll() is None
    assert run.process.returncode == 0, run.stderr
