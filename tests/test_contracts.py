"""`scrapy check tse`: the spider's contracts, run offline on the local check site."""

from tests.conftest import run_scrapy
from tests.support.sitegen import write_site


def test_scrapy_check_passes():
    result = run_scrapy("check", "tse")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert b"Ran 12 contracts" in result.stderr and b"OK" in result.stderr


def test_scrapy_check_fails_when_the_page_breaks_its_contract(tmp_path):
    # index.html with 2 links instead of the 7 the contract pins
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "about.html": ["a.html"]})
    result = run_scrapy("check", "tse", "-s", f"TSE_CHECK_SITE={site.root}")
    assert result.returncode == 1
    assert b"@returns post-hook" in result.stderr and b"FAILED" in result.stderr
