"""The status line, the quiet log and the index bar on real pseudo-terminals.

Each program runs with stderr (and sometimes stdout) on a pty; everything it
writes there is read until it exits, then rendered the way a terminal shows
it (``screen``).  The crawls are of the demo site on a real SiteServer, with a
quarter of a second between requests: 17 requests, so at least 4 s, in which
the status line is drawn every 0.5 s.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.inprocess import tse_here
from tests.support.pages import page_count, write_pages
from tests.support.sitegen import write_site
from tse_scrapy.crawl.extensions.progress import fit
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.terminal import locale_is_ascii

DEMO_SITE = ROOT / "tse_scrapy" / "devtools" / "demo_site"
DEPTH = 3
SAVED, FAILED = 14, 2  # the demo site crawled to depth 3 (tests/test_demo.py)
COLUMNS = 200
POLITE = ("-s", "DOWNLOAD_DELAY=0.25")
FAST = ("-s", "DOWNLOAD_DELAY=0")
CLOCK = r"\d+:\d\d(?::\d\d)?"
STATUS = re.compile(
    rf"saved (\d+) · queued (\d+)(?: \(([^)]*)\))? · failed (\d+) · (\d+\.\d) req/s · ({CLOCK})"
    rf"(?: · ETA (≥ )?({CLOCK}))?"
)
SUMMARY = re.compile(
    r"tse crawl: (\d+) pages? saved, (\d+) failed, (\d+) links? ignored \((\d+) external, (\d+) duplicate, "
    rf"(\d+) denied\); (\d+) requests?, [\d.]+ (?:bytes|kB|MB) in {CLOCK}, \d+\.\d pages/min"
)
STATUS_START = re.compile(r"saved \d+ · queued")


# Running a program on a pseudo-terminal.


def open_pty(sized: bool = True) -> tuple[int, int]:
    """(controller, terminal); a sized one reports 24 rows of COLUMNS columns, like a window."""
    controller, terminal = pty.openpty()
    if sized:
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
    return controller, terminal


def terminal_env() -> dict:
    """A UTF-8 terminal whatever the locale of the test run, its size only from the pty."""
    env = clean_env(TERM="xterm", PYTHONUTF8="1", PYTHONIOENCODING="utf-8")
    for name in ("COLUMNS", "LINES"):
        env.pop(name, None)
    return env


def on_pty(command, *, stdout="pty", stderr="pty", sized=True, timeout=90.0, env=None):
    """Run *command* with stdout and/or stderr on a new pty ("pty"), else on *stdout*/*stderr*
    (a file, or subprocess.PIPE); read the pty until the program exits.

    Returns (exit status, the bytes written to the pty, stdout bytes if piped, stderr bytes if piped).
    """
    controller, terminal = open_pty(sized)
    env = env or terminal_env()
    process = subprocess.Popen(
        [str(part) for part in command],
        stdin=subprocess.DEVNULL,
        stdout=terminal if stdout == "pty" else stdout,
        stderr=terminal if stderr == "pty" else stderr,
        env=env,
        cwd=ROOT,
    )
    os.close(terminal)
    written, piped = b"", {}
    pipes = {p: name for p, name in ((process.stdout, "stdout"), (process.stderr, "stderr")) if p is not None}
    chunks = {name: [] for name in pipes.values()}
    readers = [controller, *(p.fileno() for p in pipes)]
    deadline = time.monotonic() + timeout
    try:
        while readers:
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"{command} did not end in {timeout} s; it wrote: {written!r}")
            for fd in select.select(readers, [], [], 0.2)[0]:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: every writer of the pty is gone
                    data = b""
                if not data:
                    readers.remove(fd)
                elif fd == controller:
                    written += data
                else:
                    chunks[next(n for p, n in pipes.items() if p.fileno() == fd)].append(data)
        status = process.wait(timeout=30)
    finally:
        process.kill()
        os.close(controller)
        for p in pipes:
            p.close()
    for name, parts in chunks.items():
        piped[name] = b"".join(parts)
    return status, written, piped.get("stdout"), piped.get("stderr")


def screen(written: bytes, columns: int = COLUMNS) -> list[str]:
    """The rows a terminal of *columns* columns shows for *written* (CR, LF and text only:
    a status line must need nothing else), trailing blanks removed."""
    rows: list[list[str]] = [[]]
    column = 0
    for char in written.decode():
        if char == "\r":
            column = 0
        elif char == "\n":
            rows.append([])
        elif char.isprintable():
            if column == columns:  # the terminal wraps
                rows.append([])
                column = 0
            row = rows[-1]
            row.extend(" " * (column + 1 - len(row)))
            row[column] = char
            column += 1
        else:
            raise AssertionError(f"a control character on the terminal: {char!r} in {written!r}")
    return ["".join(row).rstrip() for row in rows]


def status_draws(written: bytes) -> list[re.Match]:
    """Every status line drawn: the text between carriage returns and line ends."""
    pieces = re.split(r"[\r\n]", written.decode())
    draws = [STATUS.fullmatch(piece.rstrip()) for piece in pieces if STATUS_START.match(piece)]
    assert all(draws), [piece for piece in pieces if STATUS_START.match(piece)]
    return draws


# The demo site, served once for the crawls of this module.


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("site") / "demo"
    shutil.copytree(DEMO_SITE, root)
    server = SiteServer(root).start()
    yield server
    server.stop()


def failed_lines(server) -> list[str]:
    """What tse crawl says after its summary of the demo site's two failures (on purpose: README), a
    line each with the reason, in the order they failed (the crawl's, depth first)."""
    return [
        f"tse crawl: failed: {server.url}/private/notes.html (robots.txt forbids it)",
        f"tse crawl: failed: {server.url}/docs/install.html (HTTP 404)",
    ]


def tse_crawl(server, pagedir: Path, *options) -> list:
    pagedir.mkdir()
    return [BIN / "tse", "crawl", f"{server.url}/index.html", pagedir, DEPTH, "--prefix", f"{server.url}/", *options]


def scrapy_crawl(server, pagedir: Path, *arguments) -> list:
    pagedir.mkdir()
    given = [f"seed={server.url}/index.html", f"pagedir={pagedir}", f"depth={DEPTH}", f"prefix={server.url}/"]
    return [BIN / "scrapy", "crawl", "tse", *(x for a in [*given, *arguments] for x in ("-a", a)), *FAST]


@pytest.fixture(scope="module")
def polite_crawls(demo, tmp_path_factory):
    """The same polite crawl three ways: (a) stderr on a pty, stdout to a file; (b) both to pipes;
    (c) stdout and stderr on the same pty."""
    base = tmp_path_factory.mktemp("crawls")

    def a():
        with open(base / "a.out", "wb") as out:
            status, written, _, _ = on_pty(tse_crawl(demo, base / "a", *POLITE), stdout=out)
        return status, written, (base / "a.out").read_bytes(), None

    def b():
        result = run_tse(*tse_crawl(demo, base / "b", *POLITE)[1:], env=terminal_env(), timeout=90)
        return result.returncode, b"", result.stdout, result.stderr

    def c():
        return on_pty(tse_crawl(demo, base / "c", *POLITE))

    # At once: each is a separate process with its own delay between requests (at least 4 s), and
    # nothing of one depends on another's (run one after the other, they took 14 s of setup).
    with ThreadPoolExecutor(max_workers=3) as pool:
        running = {name: pool.submit(crawl) for name, crawl in (("a", a), ("b", b), ("c", c))}
        runs = {name: future.result() for name, future in running.items()}
    return base, runs


def test_status_line_on_a_terminal_with_stdout_to_a_file(polite_crawls, demo):
    base, runs = polite_crawls
    status, written, stdout, _ = runs["a"]
    assert status == 0, written
    text = written.decode()
    for part in ("saved ", "queued ", "failed ", " req/s", "ETA"):
        assert part in text
    draws = status_draws(written)
    assert len(draws) >= 3, text  # at least 4 s of crawl, a line every 0.5 s
    saved = [int(d[1]) for d in draws]
    failed = [int(d[4]) for d in draws]
    assert saved == sorted(saved) and failed == sorted(failed) and saved[-1] <= SAVED and failed[-1] <= FAILED
    clocks = [tuple(map(int, d[6].split(":"))) for d in draws]
    assert clocks == sorted(clocks)
    for draw in draws:
        # The ETA is shown from the first answer on (a page saved is one).
        assert draw[8] is not None or draw[1] == "0", draw[0]
        depths = dict(part.split(" ") for part in draw[3].split(", ")) if draw[3] else {}
        assert sum(int(n) for n in depths.values()) == int(draw[2]), draw[0]
        # A queued page shallower than the maximum depth may add links: the ETA is then a lower bound.
        if any(int(depth[1:]) < DEPTH for depth in depths):
            assert draw[7] == "≥ ", draw[0]
    # Early on, the seed's links wait at depth 1: a lower bound.
    early = [d for d in draws if re.search(r"\bd[01] [1-9]", d[3] or "")]
    assert early and all(d[7] == "≥ " for d in early), [d[0] for d in draws]
    # The last line is cleared (spaces over it, back to the start), then the pages that failed, a line
    # each, then the summary, last.
    last = draws[-1][0]
    between, said, after = text[text.rindex(last) + len(last) :].partition("tse crawl: ")
    assert set(between) <= {" ", "\r"} and between.endswith("\r") and " " * len(last) in between, repr(between)
    *failed, summary, end = (said + after).split("\r\n")
    assert failed == failed_lines(demo) and end == "" and "\r" not in summary and "\n" not in summary
    assert [row for row in screen(written) if row] == [*failed, summary]
    # Its counts, from the pages written and the progress log on stdout.
    counted = SUMMARY.fullmatch(summary)
    assert counted, summary
    log = stdout.decode().splitlines()
    words = [line.split()[1] for line in log]
    assert page_count(base / "a") == SAVED == words.count("Fetched:") == int(counted[1])
    assert words.count("Failed:") == FAILED == int(counted[2])
    assert (int(counted[4]), int(counted[5]), int(counted[6])) == (words.count("IgnExtrn:"), words.count("IgnDupl:"), 0)
    assert int(counted[3]) == int(counted[4]) + int(counted[5])
    assert int(counted[7]) == SAVED + FAILED + 1  # and robots.txt
    assert "[scrapy" not in text  # Scrapy's INFO log is off by default


def test_no_status_line_off_a_terminal(polite_crawls, demo):
    _, runs = polite_crawls
    status, _, stdout, stderr = runs["b"]
    assert status == 0, stderr
    assert stdout == runs["a"][2]  # the progress log is the same, byte for byte
    for output in (stdout, runs["a"][2]):
        assert b"\x1b" not in output and b"\r" not in output
        assert output.count(b"Fetched: ") == SAVED
    *failed, summary = stderr.decode().splitlines()
    assert stderr.endswith(b"\n") and failed == failed_lines(demo), stderr
    counted = SUMMARY.fullmatch(summary)
    assert counted and (int(counted[1]), int(counted[2])) == (SAVED, FAILED), summary


def test_log_lines_scroll_above_the_status_line(polite_crawls, demo):
    base, runs = polite_crawls
    status, written, _, _ = runs["c"]
    assert status == 0, written
    log = runs["b"][2].decode().splitlines()
    assert len(status_draws(written)) >= 3
    # What the terminal shows: every log line whole, in order, then the summary; no status line left.
    rows = screen(written)
    assert rows[:-4] == log, "\n".join(rows)
    assert rows[-4:-2] == failed_lines(demo) and SUMMARY.fullmatch(rows[-2]) and rows[-1] == ""
    # The same from the bytes: between line ends, whatever follows the last carriage return.
    lines = [chunk.rpartition("\r")[2] for chunk in written.decode().split("\r\n")]
    assert lines[:-4] == log and lines[-4:] == rows[-4:]
    assert page_count(base / "c") == SAVED


def test_the_first_failed_pages_are_said_and_the_rest_counted(tmp_path, serve):
    """A crawl of 23 broken links says the first 20 before its summary, with the reason, and counts the rest."""
    missing = [f"missing{number}.html" for number in range(23)]
    server = serve(write_site(tmp_path / "site", {"index.html": missing}).root)
    result = run_tse(*tse_crawl(server, tmp_path / "pages", *FAST)[1:], env=terminal_env(), timeout=90)
    assert result.returncode == 0, result.stderr.decode()
    *failed, summary = result.stderr.decode().splitlines()
    assert SUMMARY.fullmatch(summary) and " 23 failed, " in summary, summary
    failed_logged = [line.split()[-1] for line in result.stdout.decode().splitlines() if " Failed: " in line]
    assert failed == [
        *(f"tse crawl: failed: {url} (HTTP 404)" for url in failed_logged[:20]),
        "tse crawl: and 3 more pages failed (--record lists each, and why)",
    ]
    assert sorted(failed_logged) == sorted(f"{server.url}/{name}" for name in missing)


def test_unsized_terminal_still_shows_the_line(demo, tmp_path):
    with open(tmp_path / "out", "wb") as out:
        status, written, _, _ = on_pty(tse_crawl(demo, tmp_path / "pages", *FAST), stdout=out, sized=False)
    assert status == 0, written
    draws = status_draws(written)
    # Drawn for 80 columns: short enough not to wrap (a wrapped line could not be redrawn in place).
    assert draws and all(len(d[0]) <= 80 for d in draws)
    # Only the failed pages' lines and the summary are left, each wrapped.
    shown, failed = "".join(row for row in screen(written, columns=80) if row), "".join(failed_lines(demo))
    assert shown.startswith(failed) and SUMMARY.fullmatch(shown.removeprefix(failed)), shown
    assert page_count(tmp_path / "pages") == SAVED


def test_a_c_locale_gets_ascii_separators(demo, tmp_path):
    # Python writes UTF-8 in the C locale (its UTF-8 mode): the line drew `·` and `≥` there all the same.
    env = {k: v for k, v in terminal_env().items() if k not in ("PYTHONUTF8", "PYTHONIOENCODING", "LC_CTYPE")}
    with open(tmp_path / "out", "wb") as out:
        command = tse_crawl(demo, tmp_path / "pages", *FAST)
        status, written, _, _ = on_pty(command, stdout=out, env={**env, "LANG": "C", "LC_ALL": "C"})
    assert status == 0, written
    assert written.isascii(), written
    assert re.search(rb"saved \d+ \| queued \d+", written), written


def test_no_progress(demo, tmp_path):
    with open(tmp_path / "out", "wb") as out:
        status, written, _, _ = on_pty(tse_crawl(demo, tmp_path / "pages", *FAST, "--no-progress"), stdout=out)
    assert status == 0
    assert not STATUS_START.search(written.decode())
    *failed, summary, empty = written.decode().split("\r\n")
    assert SUMMARY.fullmatch(summary) and failed == failed_lines(demo) and empty == ""
    assert (tmp_path / "out").read_bytes().count(b"Fetched: ") == page_count(tmp_path / "pages") == SAVED


@pytest.mark.parametrize("job, shown", [(["_job=abc"], False), ([], True)])
def test_scrapyd_job_has_no_status_line(demo, tmp_path, job, shown):
    with open(tmp_path / "out", "wb") as out:
        status, written, _, _ = on_pty(scrapy_crawl(demo, tmp_path / "pages", *job), stdout=out)
    assert status == 0, written
    text = written.decode()
    assert bool(STATUS_START.search(text)) is shown, text
    assert "[scrapy.core.engine] INFO: Spider opened" in text  # scrapy crawl keeps Scrapy's log
    assert page_count(tmp_path / "pages") == SAVED
    if shown:  # the log lines are written whole above it
        assert any(row.endswith("[scrapy.core.engine] INFO: Spider closed (finished)") for row in screen(text.encode()))


@pytest.mark.parametrize(
    "options, present, absent",
    [
        (["-v"], ["[scrapy.core.engine] INFO: Spider opened"], ["DEBUG: "]),
        (["-vv"], ["[scrapy.core.engine] INFO: Spider opened", "DEBUG: Crawled (200)"], []),
        (["-s", "LOG_LEVEL=DEBUG"], ["[scrapy.core.engine] INFO: Spider opened", "DEBUG: Crawled (200)"], []),
        (["--log-file", "{log}"], [], ["[scrapy"]),
        (["--log-file", "{log}", "-s", "LOG_LEVEL=WARNING"], [], ["[scrapy"]),
    ],
)
def test_quiet_terminal_and_verbosity(demo, tmp_path, options, present, absent):
    log = tmp_path / "crawl.log"
    options = [option.format(log=log) for option in options]
    with open(tmp_path / "out", "wb") as out:
        status, written, _, _ = on_pty(tse_crawl(demo, tmp_path / "pages", *FAST, *options), stdout=out)
    assert status == 0, written
    rows = screen(written)
    for text in present:
        assert any(text in row for row in rows), "\n".join(rows)
    for text in absent:
        assert text not in written.decode()
    said = [row for row in rows if row]
    assert said[-3:-1] == failed_lines(demo) and SUMMARY.fullmatch(said[-1])
    if "--log-file" in options:
        logged = log.read_text()
        if "LOG_LEVEL=WARNING" in options:
            assert "[scrapy.core.engine] INFO" not in logged  # -s LOG_LEVEL wins
        else:
            assert "[scrapy.core.engine] INFO: Spider opened" in logged and "DEBUG: " not in logged
        assert "saved " not in logged  # the status line is the terminal's only
    assert page_count(tmp_path / "pages") == SAVED


@pytest.mark.parametrize("pages, bar", [(600, True), (100, False)])
def test_index_bar_on_a_terminal(tmp_path, pages, bar):
    directory = write_pages(
        tmp_path / "pages",
        {i: (f"http://h.test/p{i}.html", 1, b"<html><p>common words</p></html>") for i in range(1, pages + 1)},
    )
    status, written, stdout, _ = on_pty(
        [BIN / "tse", "index", directory, tmp_path / "on-terminal"], stdout=subprocess.PIPE
    )
    assert status == 0 and stdout == b"", written
    text = written.decode()
    if bar:
        assert re.search(rf"indexing: .*\b\d+/{pages}\b", text), text
        assert not any(screen(written)), text  # the bar is cleared at the end
    else:
        assert written == b""
    # The same index off a terminal, made in this process (its output not a terminal either): what it writes.
    result = tse_here("index", directory, tmp_path / "off-terminal")
    assert result.returncode == 0 and result.stdout == result.stderr == b""
    for suffix in ("", ".bin", ".docs"):
        on = (tmp_path / f"on-terminal{suffix}").read_bytes()
        assert on == (tmp_path / f"off-terminal{suffix}").read_bytes(), suffix
    assert (tmp_path / "on-terminal").read_text().startswith("common 1 1 2 1 3 1 ")


PARTS = ["saved 212", "queued 590 (d1 12, d2 578)", "failed 3", "1.0 req/s", "3:41", "ETA ≥ 9:52"]


@pytest.mark.parametrize(
    "width, shown",
    [
        (200, "saved 212 · queued 590 (d1 12, d2 578) · failed 3 · 1.0 req/s · 3:41 · ETA ≥ 9:52"),
        (83, "saved 212 · queued 590 (d1 12, d2 578) · failed 3 · 1.0 req/s · 3:41 · ETA ≥ 9:52"),
        (79, "saved 212 · queued 590 · failed 3 · 1.0 req/s · 3:41 · ETA ≥ 9:52"),  # the detail by depth first
        (60, "saved 212 · queued 590 · failed 3 · 3:41 · ETA ≥ 9:52"),  # then the rate
        (45, "saved 212 · queued 590 · failed 3 · ETA ≥ 9:52"),  # then the time so far: the ETA stays
        (20, "saved 212 · queued 590 · failed 3 · ETA ≥ 9:52"),  # what is left is cut by tqdm
    ],
)
def test_the_status_line_keeps_its_eta_on_a_narrow_terminal(width, shown):
    assert fit(PARTS, " · ", width) == shown


@pytest.mark.parametrize(
    "environ, utf8_mode, ascii_only",
    [
        ({}, False, True),  # no locale: C
        ({"LANG": "C"}, False, True),
        ({"LANG": "POSIX"}, False, True),
        ({"LANG": "en_GB.UTF-8"}, False, False),
        ({"LANG": "C.UTF-8"}, False, False),
        ({"LANG": "en_GB.UTF-8", "LC_ALL": "C"}, False, True),  # LC_ALL first
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, False, False),  # then LC_CTYPE
        ({"LANG": "C", "LC_ALL": "", "LC_CTYPE": "C.UTF-8"}, False, False),  # an empty one is not set
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, True, True),  # Python's own LC_CTYPE, in the mode it set
        # The mode asked for: LC_CTYPE, Python's or the user's (no telling), is taken as said.
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8", "PYTHONUTF8": "1"}, True, False),
        ({"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "1"}, True, True),
        ({"LANG": "en_GB.UTF-8", "PYTHONUTF8": "1"}, True, False),
        ({"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "utf-8"}, True, False),  # the stream's encoding says
        ({"LANG": "en_GB.ISO-8859-1"}, False, False),  # (the stream's encoding, latin-1, has no ≥)
    ],
)
def test_locale_is_ascii(environ, utf8_mode, ascii_only):
    assert locale_is_ascii(environ, utf8_mode) == ascii_only


@pytest.mark.parametrize(
    "options, lang, from_the_locale",
    [
        ((), "C", True),  # Python turned the mode on for the C locale
        ((), "C.UTF-8", False),
        (("-X", "utf8"), "C.UTF-8", False),  # asked for: it says nothing of the locale (all of 3.15's)
        (("-X", "utf8"), "C", False),  # (then LC_CTYPE, Python's C.UTF-8 or the user's, is taken as said)
    ],
)
def test_the_utf8_mode_tells_a_c_locale_only_when_python_turned_it_on_for_one(options, lang, from_the_locale):
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("LC_", "PYTHONUTF8"))}
    said = subprocess.run(
        [sys.executable, *options, "-c", "from tse_scrapy.terminal import *; print(utf8_mode_of_a_c_locale())"],
        env={**environ, "LANG": lang},
        capture_output=True,
        text=True,
        check=True,
    )
    assert said.stdout.strip() == str(from_the_locale)


LOCALES = st.sampled_from(["", "C", "POSIX", "C.UTF-8", "en_US.UTF-8", "fr_FR.ISO-8859-1"])


@given(st.dictionaries(st.sampled_from(["LC_ALL", "LC_CTYPE", "LANG"]), LOCALES), st.booleans(), st.booleans())
def test_the_first_locale_set_decides_unless_the_encoding_is_given(locales, utf8_mode, encoding_given):
    environ = {**locales, **({"PYTHONIOENCODING": "utf-8"} if encoding_given else {})}
    first = next((locales[name] for name in ("LC_ALL", "LC_CTYPE", "LANG") if locales.get(name)), "")
    expected = not encoding_given and (utf8_mode or first in ("", "C", "POSIX"))
    assert locale_is_ascii(environ, utf8_mode) == expected
