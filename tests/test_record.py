"""The crawl record (`tse crawl --record`) against what the crawl wrote, and `tse report` on it."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import lxml.html
import pytest

from tests.conftest import BIN, ROOT, clean_env, crawl_site, popen, run_tse
from tests.support.browser import CHROMIUM, FIGURES, NO_CHROMIUM, render_report
from tests.support.inprocess import tse_here
from tests.support.sitegen import generate_site
from tests.support.wait import wait_until
from tse_scrapy.devtools.demo import SITE as DEMO_SITE
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.report.records import read_records

PROGRESS = re.compile(r"^ *(\d+) +(\w+): (.*)$")


def page_files(directory: Path) -> dict[int, tuple[str, int, bytes]]:
    """docID -> (URL, depth, body), read straight from the page files."""
    pages = {}
    for name in os.listdir(directory):
        if name.isdigit():
            url, depth, body = (directory / name).read_bytes().split(b"\n", 2)
            pages[int(name)] = (url.decode(), int(depth), body[:-1])  # a page file ends with a newline of its own
    return pages


def progress(stdout: bytes) -> list[tuple[int, str, str]]:
    """The progress log as (depth, word, URL)."""
    return [(int(m[1]), m[2], m[3]) for m in map(PROGRESS.match, stdout.decode().splitlines())]


def lines(record: Path) -> list[dict]:
    text = record.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def demo(serve):
    return serve(DEMO_SITE)


def test_a_recorded_crawl_matches_what_it_wrote(demo, tmp_path):
    pages, plain, record = tmp_path / "pages", tmp_path / "plain", tmp_path / "crawl.jsonl"
    pages.mkdir()
    plain.mkdir()
    done = crawl_site(demo, pages, 3, "--record", record, "-s", "DOWNLOAD_DELAY=0.05")
    assert done.returncode == 0, done.stderr.decode()
    without = crawl_site(demo, plain, 3, "-s", "DOWNLOAD_DELAY=0.05")
    # The record changes nothing else: the same progress log, the same page directory (no new file in it).
    assert done.stdout == without.stdout
    assert sorted(os.listdir(pages)) == sorted(os.listdir(plain))
    assert page_files(pages) == page_files(plain)

    entries = lines(record)
    written = page_files(pages)
    saved = [entry for entry in entries if entry["outcome"] == "saved"]
    assert {(e["doc"], e["url"], e["depth"]) for e in saved} == {(d, u, depth) for d, (u, depth, _) in written.items()}
    assert len(saved) == len(written)
    assert all(e["bytes"] == len(written[e["doc"]][2]) and e["status"] == 200 for e in saved)
    log = progress(done.stdout)
    words = Counter(word for _, word, _ in log)
    assert sum(e["outcome"] == "failed" for e in entries) == words["Failed"] == 2
    failures = {e["url"].rsplit("/", 1)[1]: (e["status"], e["failure"]) for e in entries if e["outcome"] == "failed"}
    assert failures == {"notes.html": (None, "robots.txt"), "install.html": (404, None)}
    assert [(e["url"].rsplit("/", 1)[1], e["status"]) for e in entries if e["outcome"] == "redirect"] == [
        ("old-news.html", 301)
    ]
    robots = [e for e in entries if e["outcome"] == "robots"]
    assert [(e["url"], e["status"]) for e in robots] == [(f"{demo.url}/robots.txt", 200)]
    # The links ignored, by kind, add up to the progress log's verdicts.
    ignored = Counter()
    for entry in entries:
        ignored.update(entry.get("ignored", {}))
    assert ignored == Counter({"external": words["IgnExtrn"], "duplicate": words["IgnDupl"]})
    # Each scanned page lists the links found on it, in order.
    found: dict[str, list[str]] = {}
    for _, word, url in log:
        if word == "Scanning":
            found[url] = current = []
        elif word == "Found":
            current.append(url)
    assert {e["url"]: e.get("links", []) for e in saved if e["url"] in found} == found
    # Times: every request sent was answered after it started, one at a time, 0.05 s apart at least.
    sent = sorted((e for e in entries if e["start"] is not None), key=lambda e: e["start"])
    assert all(e["start"] <= e["end"] and e["wait"] >= 0 and e["worker"] is None for e in sent)
    assert all(after["start"] - before["end"] >= 0.045 for before, after in itertools.pairwise(sent))

    # The report: its totals are what the crawl wrote.
    report = tmp_path / "report.html"
    made = run_tse("report", record, "--out", report)
    assert made.returncode == 0, made.stderr.decode()
    sent = sum(entry["start"] is not None for entry in entries)  # notes.html, refused by robots.txt, was not
    assert sent == len(entries) - 1
    counts = f"{sent} requests, 1 page refused before sending, {len(written)} pages saved, 2 failed, from 1 record file"
    assert made.stderr.decode() == f"tse report: wrote {report}: {counts}\n"
    html = lxml.html.fromstring(report.read_bytes())
    totals = {cell.get("data-total"): cell.text_content().strip() for cell in html.xpath("//*[@data-total]")}
    assert int(totals["pages_saved"]) == len(written)
    assert int(totals["pages_failed"]) == 2
    assert int(totals["ignored_external"]) == words["IgnExtrn"]
    assert int(totals["ignored_duplicate"]) == words["IgnDupl"]
    assert int(totals["max_depth"]) == max(depth for _, depth, _ in written.values())
    per_depth = {int(cell.get("data-depth")): int(cell.text_content()) for cell in html.xpath("//*[@data-depth]")}
    assert per_depth == dict(Counter(depth for _, depth, _ in written.values()))
    for figure in FIGURES:
        assert html.xpath(f'//figure[@id="{figure}"]//*[local-name()="svg"]'), figure
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    # In a real browser: nothing fetched, no error, every figure drawn, the totals shown.
    seen = render_report(report, tmp_path / "report.png")
    assert seen.problems == [] and seen.requests == [report.as_uri()]
    assert all(box and box["width"] > 200 and box["height"] > 100 for box in seen.boxes.values()), seen.boxes
    assert seen.totals["pages_saved"] == str(len(written)) and seen.totals["pages_failed"] == "2"
    assert seen.screenshot_size[0] == 1280


def test_a_new_crawl_never_overwrites_a_record(demo, tmp_path):
    record = tmp_path / "crawl.jsonl"
    record.write_text("earlier\n")
    # Refusals before Scrapy starts: run in this process (tests/support/inprocess.py).
    fast = ("--prefix", f"{demo.url}/", "-s", "DOWNLOAD_DELAY=0")
    done = tse_here("crawl", f"{demo.url}/index.html", tmp_path, 1, *fast, "--record", record)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"tse crawl: --record: {record} exists: a new crawl writes a new record: give a new file name"
        " (--resume goes on with an interrupted crawl's own)\n"
    )
    assert record.read_text() == "earlier\n"
    assert os.listdir(tmp_path) == ["crawl.jsonl"]
    # --resume is no way out here: no crawl of the directory was writing it.
    resumed = tse_here("crawl", f"{demo.url}/index.html", tmp_path, 1, *fast, "--record", record, "--resume")
    assert resumed.returncode == 2
    assert resumed.stderr.decode() == (
        f"tse crawl: --record: {record} exists, and no interrupted crawl of {tmp_path} was writing it\n"
    )


def test_a_resumed_crawl_appends_to_its_record_and_cuts_a_torn_line(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=60, fanout=3, seed=5, external=3, dead=3)
    server = serve(site.root)
    pages, record = tmp_path / "pages", tmp_path / "crawl.jsonl"
    pages.mkdir()
    command = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(pages), "10", "--prefix", f"{server.url}/"]
    command += ["-s", "DOWNLOAD_DELAY=0.01", "--record", str(record)]
    crawl = popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_until(lambda: len(page_files(pages)) >= 20 or crawl.poll() is not None, 60, "no 20 pages", 0.005)
    crawl.send_signal(signal.SIGKILL)
    crawl.wait(timeout=30)
    before = record.read_bytes()
    assert before.endswith(b"\n")
    with open(record, "ab") as torn:  # as if killed in the middle of a line
        torn.write(b'{"url":"http://torn')
    # The crawl resumed later: its report counts the runs' time, not the time between them (a pause of
    # half a second or more, besides the start-up: wall_seconds is compared to a millionth).
    time.sleep(0.5)
    resumed = run_tse(*command[1:], "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()
    after = record.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    entries = lines(record)  # every line whole JSON: the torn one was cut
    written = page_files(pages)
    saved = Counter(e["doc"] for e in entries if e["outcome"] == "saved")
    # Every page has its line, once; a page saved in the instant before the kill may lack it.
    assert set(saved) <= set(written) and max(saved.values()) == 1
    assert len(written) - len(saved) <= 1
    assert all(written[e["doc"]][0] == e["url"] for e in entries if e["outcome"] == "saved")
    first_run, second_run = entries[: before.count(b"\n")], entries[before.count(b"\n") :]
    # A run begins by asking for robots.txt again (a page read back from its file first has no times).
    assert next(e for e in second_run if e["start"] is not None)["outcome"] == "robots"
    times = [[t for e in run for t in (e["start"], e["end"]) if t is not None] for run in (first_run, second_run)]
    totals = read_records([record]).totals()
    assert totals.runs == 2
    assert totals.wall_seconds == pytest.approx(sum(max(run) - min(run) for run in times))
    assert min(times[1]) - max(times[0]) >= 0.5  # the pause, left out


def test_a_report_by_a_user_whose_home_cannot_be_written_says_one_line(tmp_path):
    # matplotlib said two lines of its cache folder first (a tester's find).
    record = tmp_path / "r.jsonl"
    record.write_text('{"url":"http://h/","outcome":"saved","doc":1,"start":1.0,"end":2.0}\n')
    env = {k: v for k, v in clean_env(HOME="/dev/null").items() if k not in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    done = run_tse(
        "report", record, "--out", tmp_path / "r.html", env={k: v for k, v in env.items() if k != "MPLCONFIGDIR"}
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stderr.decode()
        == f"tse report: wrote {tmp_path / 'r.html'}: 1 request, 1 page saved, 0 failed, from 1 record file\n"
    )


def test_report_refusals_are_one_line(tmp_path):
    record = tmp_path / "r.jsonl"
    record.write_text('{"url":"http://h/","outcome":"saved","doc":1}\n')
    update = tmp_path / "u.jsonl"
    update.write_text('{"url":"http://h/","outcome":"unchanged","doc":1,"update":true}\n')
    for args, status, message in [
        ([tmp_path / "missing.jsonl"], 1, "missing.jsonl"),
        ([record, "--out", record], 2, "is one of the records"),
        ([record, "--out", tmp_path / "no" / "r.html"], 2, "no directory"),  # refused as every --out is
        ([record, update], 1, f"{record} is a crawl's record and {update} an update's: report each alone"),
    ]:
        done = tse_here("report", *args)  # (refused before a page of the report is made: in this process)
        assert done.returncode == status, done.stderr
        text = done.stderr.decode()
        assert text.startswith("tse report: ") and message in text and text.count("\n") == 1, text
    assert record.read_text() == '{"url":"http://h/","outcome":"saved","doc":1}\n'


def test_each_attempt_has_one_line_with_what_became_of_it(tmp_path, serve):
    site = tmp_path / "site"
    site.mkdir()
    names = ["ok", "flaky", "slow", "loop1", "away", "moved", "ftp"]
    links = "".join(f'<a href="{name}.html">{name}</a>' for name in names)
    (site / "index.html").write_text(f"<html><body>{links}</body></html>")
    for name in names:
        (site / f"{name}.html").write_text(f"<html><body>{name}</body></html>")
    server = serve(site)
    server.rules.update(
        {
            "/flaky.html": Rule(status=503, times=1),  # then served: saved on its second attempt
            "/slow.html": Rule(delay=3),  # longer than the timeout, every time
            "/loop1.html": Rule(location="/loop2.html"),
            "/loop2.html": Rule(location="/loop1.html"),
            "/away.html": Rule(location="http://elsewhere.invalid/page.html"),  # off the site: never sent
            "/moved.html": Rule(location="/ok.html"),  # a page already saved
            "/ftp.html": Rule(location="ftp://127.0.0.1/file.html"),  # not followed
        }
    )
    record = tmp_path / "crawl.jsonl"
    pages = tmp_path / "pages"
    pages.mkdir()
    options = ["-s", "DOWNLOAD_TIMEOUT=1", "-s", "RETRY_TIMES=1", "--record", record]
    done = crawl_site(server, pages, 1, *options)
    assert done.returncode == 0, done.stderr.decode()
    found = Counter(
        (e["url"].rsplit("/", 1)[1], e["outcome"], e["status"], e["failure"], e["start"] is None) for e in lines(record)
    )
    assert found == Counter(
        {
            ("robots.txt", "robots", 404, None, False): 1,
            ("index.html", "saved", 200, None, False): 1,
            ("ok.html", "saved", 200, None, False): 1,
            ("flaky.html", "retried", 503, None, False): 1,
            ("flaky.html", "saved", 200, None, False): 1,
            ("slow.html", "retried", None, "timeout", False): 1,
            ("slow.html", "failed", None, "timeout", False): 1,
            ("loop1.html", "redirect", 302, None, False): 1,
            ("loop2.html", "failed", 302, "redirect loop", False): 1,
            ("away.html", "redirect", 302, None, False): 1,
            ("page.html", "failed", None, "offsite", True): 1,
            ("moved.html", "redirect", 302, None, False): 1,
            ("ftp.html", "failed", 302, None, False): 1,
        }
    )
    # Every request the server answered has its line (robots.txt, every attempt and hop).
    assert len(server.hits) == sum(found.values()) - 1  # all but the one never sent
    # The summary counts what the progress log calls Failed: the loop, the timeout, off the site, not followed.
    log = Counter(word for _, word, _ in progress(done.stdout))
    assert log["Failed"] == 4
    assert ", 4 failed, " in done.stderr.decode()
