"""A distributed worker says the robots.txt Crawl-delay it honours as a single-machine crawl does: at
WARNING, so that the default log level (tse crawl's quiet terminal) shows it.  A real Redis, a real
site on 127.0.0.1, a real worker."""

from __future__ import annotations

from tests.conftest import run_tse
from tests.support.sitegen import write_site


def test_a_worker_says_an_honoured_crawl_delay_at_the_default_log_level(tmp_path, serve, redis_url):
    # It was logged at INFO: a worker's terminal (from WARNING) never showed it; tse crawl without
    # --redis says it (test_crawl.py: test_an_honoured_crawl_delay_is_said_at_the_default_log_level).
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    (site.root / "robots.txt").write_text("User-agent: *\nCrawl-delay: 0.5\n")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    distributed = ("--redis", redis_url, "--name", "delayed", "--no-progress")
    result = run_tse("crawl", seed, out, 1, "--prefix", prefix, *distributed, "-s", "DOWNLOAD_DELAY=0", timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(name for name in out.iterdir() if name.name.isdigit()) == [out / "1", out / "2", out / "3"]
    said = [line for line in result.stderr.decode().splitlines() if "Crawl-delay" in line]
    host = server.url.removeprefix("http://")
    assert len(said) == 1, result.stderr.decode()
    assert said[0].endswith(f"WARNING: robots.txt asks for a Crawl-delay of 0.5 s: honoured for {host}")
