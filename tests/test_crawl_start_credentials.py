"""A seed or a prefix with a user name and password is refused in one line, before anything is
fetched or written, with the password masked.  It was crawled: Scrapy took ``alice:s3cretpw@host``
for a host name ("the seed URL could not be fetched (ValueError)", exit 0), and the password was on
stdout, on stderr and in the crawl record."""

import pytest

from tests.conftest import run_scrapy, run_tse
from tests.support.pages import snapshot
from tests.support.sitegen import write_site

PASSWORD = "s3cretpw"


@pytest.fixture
def site(tmp_path, serve):
    root = write_site(tmp_path / "site", {"news.html": ["a.html"], "a.html": []}).root
    server = serve(root)
    out = tmp_path / "out"
    out.mkdir()
    return server, out


def with_credentials(url):
    return url.replace("http://", f"http://alice:{PASSWORD}@", 1)


@pytest.mark.parametrize("where", ["seed", "prefix", "both"])
@pytest.mark.parametrize("command", ["tse", "scrapy"])
def test_a_url_with_a_password_is_refused_without_showing_it(tmp_path, site, where, command):
    server, out = site
    seed, prefix = f"{server.url}/news.html", f"{server.url}/"
    given = {"seed": seed, "prefix": prefix}
    for name in ("seed", "prefix") if where == "both" else (where,):
        given[name] = with_credentials(given[name])
    record = tmp_path / "crawl.jsonl"
    before = snapshot(tmp_path)
    if command == "tse":
        refused = run_tse(
            *("crawl", given["seed"], out, 1, "--prefix", given["prefix"], "--record", record), timeout=60
        )
        program = "tse crawl"
    else:
        arguments = [f"seed={given['seed']}", f"pagedir={out}", "depth=1", f"prefix={given['prefix']}"]
        refused = run_scrapy(
            *("crawl", "tse"), *(x for a in arguments for x in ("-a", a)), "-s", f"TSE_RECORD={record}", timeout=60
        )
        program = "scrapy crawl tse"
    # The prefixes are checked first.
    what, url = ("seed URL", given["seed"]) if where == "seed" else ("prefix", given["prefix"])
    masked = url.replace(PASSWORD, "***")
    assert (refused.returncode, refused.stdout, refused.stderr.decode()) == (
        2,
        b"",
        f"{program}: {what} holds a user name or password, not supported: {masked}\n",
    )
    assert server.hits == []
    assert snapshot(tmp_path) == before  # no record, no marker, no crawl state
