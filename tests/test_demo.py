"""`make run`'s demo removes only an earlier demo crawl, never a user's directory."""

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, clean_env
from tse_scrapy.devtools.demo import is_demo_crawl


def run_demo(pagedir):
    return subprocess.run(
        [sys.executable, "-m", "tse_scrapy.devtools.demo", str(pagedir)],
        capture_output=True, env=clean_env(), cwd=ROOT, timeout=60,
    )  # fmt: skip


def page(directory, doc_id, url):
    (directory / str(doc_id)).write_bytes(f"{url}\n0\n<html></html>\n".encode())


@pytest.fixture
def demo_crawl(tmp_path):
    directory = tmp_path / "demo"
    directory.mkdir()
    (directory / ".crawler").touch()
    page(directory, 1, "http://127.0.0.1:40123/index.html")
    page(directory, 2, "http://127.0.0.1:40123/projects/crawler.html")
    return directory


def test_an_earlier_demo_crawl_is_recognized(demo_crawl):
    assert is_demo_crawl(demo_crawl)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: page(d, 3, "http://cs50tse.cs.dartmouth.edu/tse/letters/index.html"),  # another site
        lambda d: page(d, 3, "http://127.0.0.1:40123/not-in-the-demo.html"),  # another local site
        lambda d: (d / "notes.txt").write_text("mine"),  # a file of the user's
        lambda d: (d / ".crawler").unlink(),  # not a page directory
    ],
)
def test_anything_else_is_refused_and_left_alone(demo_crawl, change):
    change(demo_crawl)
    before = {name: (demo_crawl / name).read_bytes() for name in os.listdir(demo_crawl)}
    assert not is_demo_crawl(demo_crawl)
    result = run_demo(demo_crawl)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().splitlines() == [
        f"demo: {demo_crawl} is not an earlier demo crawl: give a new or empty directory"
    ]
    assert {name: (demo_crawl / name).read_bytes() for name in os.listdir(demo_crawl)} == before


def test_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("mine")
    assert run_demo(tmp_path / "file").returncode == 2
    assert (tmp_path / "file").read_text() == "mine"
