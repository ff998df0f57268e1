"""``tse import`` of an archive a real crawl wrote (``tse crawl --warc`` of a site on 127.0.0.1):
its summary counts in good grammar, and an archive that cannot be read, or is given twice, is
refused before anything is written (exit 2), as ``tse report`` refuses a record given twice."""

from __future__ import annotations

import gzip
import os

import pytest

from tests.conftest import crawl_site, run_tse
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import SiteServer


@pytest.fixture(scope="module")
def one_page_warc(tmp_path_factory):
    """The WARC of a crawl of a one-page site, made once for the module: its tests only read it."""
    tmp_path = tmp_path_factory.mktemp("one-page")
    site = write_site(tmp_path / "site", {"index.html": []})
    out = tmp_path / "crawled"
    out.mkdir()
    warc = tmp_path / "crawl.warc.gz"
    with SiteServer(site.root) as server:
        result = crawl_site(server, out, 0, "--warc", warc)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return warc


def stderr_lines(result) -> list[str]:
    err = result.stderr.decode()
    assert "Traceback" not in err
    return err.splitlines()


def test_one_page_and_one_bad_archive_are_said_in_the_singular(tmp_path, one_page_warc):
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse("import", one_page_warc, pages)
    assert result.returncode == 0, result.stderr.decode()
    said = stderr_lines(result)[-1]
    assert said.startswith("tse import: 1 page saved; "), said
    assert "pages" not in said

    cut = tmp_path / "cut.warc"
    data = gzip.decompress(one_page_warc.read_bytes())
    cut.write_bytes(data[: data.rindex(b"WARC/1.") + 40])  # the last record cut in its headers
    again = tmp_path / "again"
    again.mkdir()
    result = run_tse("import", one_page_warc, cut, again)
    assert result.returncode == 1
    said = stderr_lines(result)[-1]
    assert said.startswith("tse import: 1 page saved; ") and said.endswith("; 1 archive not read to the end"), said


@pytest.mark.parametrize("case", ["missing", "a directory", "unreadable", "twice", "twice by two names"])
def test_an_archive_that_cannot_be_imported_is_refused_before_anything_is_written(tmp_path, one_page_warc, case):
    pages = tmp_path / "it3"
    pages.mkdir()
    archives = [one_page_warc]
    if case == "missing":
        archives.append(tmp_path / "nonexist.warc.gz")
        expected = f"tse import: cannot read {tmp_path / 'nonexist.warc.gz'}: No such file or directory"
    elif case == "a directory":
        archives.append(tmp_path)
        expected = f"tse import: cannot read {tmp_path}: Is a directory"
    elif case == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads any file")
        locked = tmp_path / "locked.warc.gz"
        locked.write_bytes(one_page_warc.read_bytes())
        locked.chmod(0)
        archives.append(locked)
        expected = f"tse import: cannot read {locked}: Permission denied"
    elif case == "twice":
        archives.append(one_page_warc)
        expected = f"tse import: {one_page_warc} is given twice"
    else:
        link = tmp_path / "link.warc.gz"
        os.link(one_page_warc, link)
        archives.append(link)
        expected = f"tse import: {link} is given twice (as {one_page_warc} too)"
    result = run_tse("import", *archives, pages)
    assert (result.returncode, stderr_lines(result)) == (2, [expected])
    assert os.listdir(pages) == []  # not even .crawler
