"""`scrapy check tse`: the spider's contracts, run offline on the local check site."""

from tests.conftest import clean_env, run_scrapy
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


def test_scrapy_check_never_sends_its_local_site_through_a_proxy(tmp_path, serve):
    (tmp_path / "empty").mkdir()
    proxy = serve(tmp_path / "empty")  # records every request sent through it
    result = run_scrapy("check", "tse", env=clean_env(http_proxy=proxy.url), timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert b"Ran 12 contracts" in result.stderr
    assert proxy.hits == []
