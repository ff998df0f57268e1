"""Reference acceptance: crawls through the mirror equal the reference page
directories byte for byte (skipped without ../shared/tse-sites)."""

import filecmp
import os
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_HOST, clean_env, run_scrapy, run_tse
from tests.support.reference import build_page_directory

CRAWLS = [("letters", d) for d in range(7)] + [("toscrape", d) for d in range(3)] + [("wikipedia", d) for d in range(2)]


def assert_same_tree(expected: Path, actual: Path):
    assert sorted(os.listdir(actual)) == sorted(os.listdir(expected))
    for name in os.listdir(expected):
        assert filecmp.cmp(expected / name, actual / name, shallow=False), name


@pytest.fixture(scope="module")
def expected_dirs(reference_dir, mirror, tmp_path_factory):
    root = tmp_path_factory.mktemp("expected")
    return {
        f"{site}-{depth}": build_page_directory(reference_dir, mirror, f"{site}-{depth}", root / f"{site}-{depth}")
        for site, depth in CRAWLS
    }


@pytest.mark.parametrize("links", ["tse", "html"])
@pytest.mark.parametrize("site, depth", CRAWLS)
def test_crawl_equals_reference(expected_dirs, mirror_proxy, tmp_path, site, depth, links):
    out = tmp_path / "out"
    out.mkdir()
    result = run_tse(
        "crawl",
        f"{REFERENCE_HOST}/tse/{site}/index.html",
        out,
        depth,
        "--links",
        links,
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        "LOG_LEVEL=WARNING",
        env=clean_env(http_proxy=mirror_proxy.url),
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert_same_tree(expected_dirs[f"{site}-{depth}"], out)
    assert all(hit.target.startswith(REFERENCE_HOST + "/") for hit in mirror_proxy.hits)


def test_scrapy_crawl_equals_reference(expected_dirs, mirror_proxy, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = run_scrapy(
        "crawl",
        "tse",
        "-a",
        f"seed={REFERENCE_HOST}/tse/letters/index.html",
        "-a",
        f"pagedir={out}",
        "-a",
        "depth=3",
        "-a",
        "links=tse",
        "-s",
        "DOWNLOAD_DELAY=0",
        env=clean_env(http_proxy=mirror_proxy.url),
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert_same_tree(expected_dirs["letters-3"], out)
    fetched = [line for line in result.stdout.decode().splitlines() if "Fetched" in line]
    assert len(fetched) == 6
