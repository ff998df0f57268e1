"""revL's finds in crash-safe and distributed crawls, each with the test that failed before its mend."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3

import pytest

from tests.conftest import run_tse
from tests.support.pages import tree
from tests.support.resumestate import uncommitted
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import SiteServer


def jobdir_crawl(server, out, jobdir):
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    return run_tse("crawl", seed, out, 1, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0", "-s", f"JOBDIR={jobdir}")


@pytest.fixture(scope="module")
def finished_job_once(tmp_path_factory):
    """A four-page site, served for the module, and its finished crawl with a JOBDIR (whose state stays)."""
    root = tmp_path_factory.mktemp("finished_job")
    site = write_site(
        root / "site", {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": [], "c.html": []}
    )
    with SiteServer(site.root) as server:
        out, jobdir = root / "out", root / "job"
        out.mkdir()
        done = jobdir_crawl(server, out, jobdir)
        assert done.returncode == 0, done.stderr.decode()
        yield server, out, jobdir


class _Planted:
    """A pickle that makes a directory when loaded: what a foreign state could hold instead."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _set(jobdir, sql, *parameters):
    db = sqlite3.connect(jobdir / "tse-state.sqlite")
    try:
        with db:
            db.execute(sql, parameters)
    finally:
        db.close()


@pytest.mark.parametrize(
    "damage", ["planted pickle", "planted request class", "damaged request", "damaged arguments", "damaged counter"]
)
def test_a_foreign_or_damaged_resume_state_runs_nothing_and_is_refused_in_one_line(tmp_path, finished_job_once, damage):
    """The state's requests were pickles loaded as they came: a page directory (or a JOBDIR) from
    elsewhere ran whatever its state named on ``--resume``, and a damaged one was a traceback."""
    server, crawled, crawled_job = finished_job_once
    out, jobdir = tmp_path / "out", tmp_path / "job"
    shutil.copytree(crawled, out)
    shutil.copytree(crawled_job, jobdir)
    last = max(int(name) for name in tree(out) if name.isdigit())
    uncommitted(jobdir, last)  # a crawl killed before its last page's commit: its request is read on resume
    (out / str(last)).unlink()
    marker = tmp_path / "ran"
    where = "frontier row"
    if damage == "planted pickle":
        _set(jobdir, "UPDATE frontier SET request = ?", pickle.dumps(_Planted(marker)))
    elif damage == "planted request class":
        request = {"url": f"{server.url}/a.html", "_class": "subprocess.Popen", "args": ["mkdir", str(marker)]}
        _set(jobdir, "UPDATE pages SET request = ? WHERE doc_id = 1", pickle.dumps(request, protocol=4))
        where = "the request of page 1"
    elif damage == "damaged request":
        _set(jobdir, "UPDATE frontier SET request = ?", b"\x80\x04\x95 not a pickle")
    elif damage == "damaged arguments":
        _set(jobdir, "UPDATE meta SET value = ? WHERE key = 'arguments'", '{"seed": ')
        where = "its crawl's arguments are not what tse records"
    else:
        _set(jobdir, "UPDATE meta SET value = ? WHERE key = 'next_doc_id'", "4x")
        where = "its next docID is not a number"
    before, hits = tree(out), len(server.hits)
    result = jobdir_crawl(server, out, jobdir)
    stderr = result.stderr.decode()
    assert not marker.exists()
    assert result.returncode == 2, stderr
    assert stderr.startswith(f"tse crawl: cannot read the crawl state: {jobdir / 'tse-state.sqlite'}: {where}")
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert tree(out) == before
    assert len(server.hits) == hits  # nothing fetched
