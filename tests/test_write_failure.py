"""A page that cannot be written stops the crawl: non-zero exit, a valid directory."""

import json
import os

import pytest

from tests.conftest import crawl_site, scrapy_crawl_site
from tests.support.fulldisk import files_of_at_most, leave_free, tmpfs
from tests.support.pages import saved_pages
from tests.support.sitegen import generate_site, write_site
from tests.support.warcs import assert_valid, responses

LIMIT = 256 * 1024  # room for the crawl state; not for the big page


@pytest.mark.parametrize("command", ["tse", "scrapy"])
def test_write_failure_stops_the_crawl(tmp_path, serve, command):
    site = write_site(tmp_path / "site", {"index.html": ["big.html", "a.html", "b.html"], "a.html": [], "b.html": []})
    (site.root / "big.html").write_bytes(b"<html>" + b"x" * 2 * LIMIT + b"</html>")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    run = crawl_site if command == "tse" else scrapy_crawl_site
    result = run(server, out, 1, preexec_fn=files_of_at_most(LIMIT), timeout=120)
    assert result.returncode != 0
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    go_on = "--resume" if command == "tse" else "-a resume=yes"  # (it did not say how to go on)
    assert stderr.splitlines()[-1].endswith(f"cannot write page file {out}/4: File too large: go on with {go_on}")
    # Stack order: index, b, a saved; big (pushed first) fails; nothing after it.
    assert saved_pages(out) == [(seed, 0), (prefix + "b.html", 1), (prefix + "a.html", 1)]
    assert sorted(os.listdir(out)) == [".crawler", ".tse-state.sqlite", "1", "2", "3"]
    # Once there is room again, --resume finishes the crawl; the state goes away.
    again = crawl_site(server, out, 1, "--resume")
    assert again.returncode == 0, again.stderr.decode()
    assert saved_pages(out)[3:] == [(prefix + "big.html", 1)]
    assert sorted(os.listdir(out)) == [".crawler", "1", "2", "3", "4"]


@pytest.mark.parametrize("option, what", [("--warc", "the WARC file"), ("--record", "the crawl record")])
def test_a_warc_or_record_that_cannot_be_written_says_so_once_and_how_to_go_on(tmp_path, serve, option, what):
    # (A tester's find: a full disk under the WARC or the record logged a timestamped ERROR, then the
    # reason again, and neither said how to go on.)  Now: the summary and one line naming the file and
    # what to do, which works once there is room.
    site = generate_site(tmp_path / "site", pages=40, fanout=3, seed=5, external=0, dead=0)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    with tmpfs(tmp_path / "small", 64 * 1024) as small:
        leave_free(small, 4 * 1024)  # room for the first pages' records, not for all
        written = small / ("crawl.warc.gz" if option == "--warc" else "crawl.jsonl")
        failed = crawl_site(server, out, 3, option, written)
        assert failed.returncode == 1, failed.stderr.decode()[-2000:]
        summary, reason = failed.stderr.decode().splitlines()
        assert summary.startswith("tse crawl: ")
        assert reason == f"tse crawl: cannot write {what} {written}: No space left on device: go on with --resume"
        (small / "filler").unlink()
        done = crawl_site(server, out, 3, option, written, "--resume")
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        saved = {url for url, _ in saved_pages(out)}
        if option == "--warc":
            assert {r["warc"]["WARC-Target-URI"] for r in responses(assert_valid(written))} >= saved
        else:
            # (Pages in flight when the record failed are saved without a line: the crawl stops as it can.)
            recorded = {
                line["url"] for line in map(json.loads, written.read_text().splitlines()) if line["outcome"] == "saved"
            }
            assert recorded <= saved and len(recorded) >= len(saved) - 4, (recorded, saved)
