"""What an output file may replace (rules/files/outputfile.py): ``tse report --out`` and ``tse crawl --update
--changes`` replace only a file of their own kind, an empty file or nothing, never a device, a FIFO or a page
directory's own file (of any page directory), and what they refuse is one line, exit 2, nothing written.

A tester's finds: as root, ``--out /dev/null`` replaced the device with a regular file (a node made with
``mknod -m 666 fakenull c 1 3`` became one, exit 0); ``--out a/5`` made page 5 of the crawl ``a`` HTML;
``--changes x.index`` replaced an index.  Real processes, real files, a site served on 127.0.0.1."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import crawl_site, run_scrapy, run_tse
from tests.support.fulldisk import files_of_at_most
from tests.support.inprocess import tse_here
from tests.support.pages import snapshot, write_pages
from tests.support.sitegen import write_site
from tse_scrapy.report.page import EARLIER_REPORT_HEAD, REPORT_FILE, looks_like_a_report, write_report
from tse_scrapy.rules.crawling.changes import CHANGES, CHANGES_FILE, looks_like_changes
from tse_scrapy.rules.files.indexfile import INDEX_FILE
from tse_scrapy.rules.files.outputfile import (
    BLOCK_DEVICE,
    CHARACTER_DEVICE,
    DIRECTORY,
    FIFO,
    NOTHING,
    REGULAR,
    SOCKET,
    Found,
    OutputFileRefused,
    replacement_problem,
)

CHANGE = b'{"docid": 3, "url": "http://h/b.html", "change": "changed", "status": 200}\n'
NOT_A_CHANGE = "exists and is not a changes file"

# (path, what is there, the problem said: None when the changes file may be written there; else the start
# of the message after the path)
RULE_TABLE = [
    ("c.jsonl", Found(NOTHING), None),
    ("c.jsonl", Found(REGULAR, start=b""), None),  # empty
    ("c.jsonl", Found(REGULAR, start=CHANGE), None),  # last night's
    ("c.jsonl", Found(REGULAR, start=CHANGE * 2, whole=False), None),
    ("x.index", Found(REGULAR, start=b"cat 1 1\n"), NOT_A_CHANGE),
    ("r.jsonl", Found(REGULAR, start=b'{"url": "http://h/", "outcome": "saved"}\n'), NOT_A_CHANGE),  # a record
    ("fakenull", Found(CHARACTER_DEVICE), "is a character device, not a regular file"),
    ("/dev/sda", Found(BLOCK_DEVICE), "is a block device, not a regular file"),
    ("pipe", Found(FIFO), "is a FIFO, not a regular file"),
    ("sock", Found(SOCKET), "is a socket, not a regular file"),
    ("out", Found(DIRECTORY), "is a directory"),
    # A page directory's own files, in any page directory, whatever is there (or nothing yet)
    ("a/5", Found(REGULAR, True, b"http://h/\n1\n<html>\n"), "is a page file of the page directory a"),
    ("a/99", Found(NOTHING, True), "is a page file of the page directory a"),
    ("a/.crawler", Found(REGULAR, True), "is the marker of the page directory a"),
    ("a/.tse-charsets", Found(NOTHING, True), "is one of the page directory a's own files"),
    ("a/.tse-robots", Found(DIRECTORY, True), "is one of the page directory a's own files"),
    ("a/5/", Found(REGULAR, True, b"http://h/\n1\n"), "is a page file of the page directory a"),
    # Other names in a page directory are the user's; those names outside one are any file's
    ("a/changes.jsonl", Found(NOTHING, True), None),
    ("b/5", Found(NOTHING, False), None),
    ("b/.crawler", Found(REGULAR, False), None),
]


@pytest.mark.parametrize(("path", "found", "said"), RULE_TABLE)
def test_what_a_changes_file_may_replace(path, found, said):
    problem = replacement_problem(path, found, CHANGES_FILE)
    if said is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(f"{path} {said}"), problem


OTHER_TYPES = st.sampled_from([DIRECTORY, CHARACTER_DEVICE, BLOCK_DEVICE, FIFO, SOCKET])
OWN_NAMES = st.one_of(
    st.from_regex(r"[1-9][0-9]{0,5}", fullmatch=True),  # a page file's name (0 and 01 are no page's)
    st.just(".crawler"),
    st.from_regex(r"\.tse-[a-z.-]{0,12}", fullmatch=True),
)
ANY_FOUND = st.builds(
    Found, st.sampled_from([NOTHING, REGULAR, DIRECTORY, FIFO]), st.booleans(), st.binary(max_size=40), st.booleans()
)


@given(OTHER_TYPES, st.booleans(), st.from_regex(r"[a-z][a-z0-9.]{0,10}", fullmatch=True))
def test_what_is_no_regular_file_is_never_replaced(kind, in_page_directory, name):
    assert replacement_problem(f"d/{name}", Found(kind, in_page_directory), CHANGES_FILE) is not None
    assert replacement_problem(f"d/{name}", Found(kind, in_page_directory), REPORT_FILE) is not None
    assert replacement_problem(f"d/{name}", Found(kind, in_page_directory), INDEX_FILE) is not None


@given(OWN_NAMES, ANY_FOUND)
def test_a_page_directory_file_is_never_replaced(name, found):
    found = Found(found.type, True, found.start, found.whole)
    assert "of the page directory d" in (replacement_problem(f"d/{name}", found, CHANGES_FILE) or "")


@given(st.from_regex(r"[a-z0-9.-]{1,12}", fullmatch=True), st.booleans())
def test_nothing_or_an_empty_file_outside_a_page_directory_may_be_replaced(name, empty):
    found = Found(REGULAR) if empty else Found(NOTHING)
    assert replacement_problem(f"d/{name}", found, CHANGES_FILE) is None
    assert replacement_problem(f"d/{name}", found, REPORT_FILE) is None


@pytest.mark.parametrize(
    ("start", "whole", "changes"),
    [
        (CHANGE, True, True),
        (CHANGE.rstrip(b"\n"), True, True),  # no final newline
        (b'{"docid": 1, "url": "http://h/", "change": "gone", "status": 404, "reason": "http 404"}\n', True, True),
        (b'{"docid": 7, "url": "http://h/' + b"a" * 100, False, True),  # a first line longer than the read
        (b'{"docid": 1, "url": "http://h/", "change": "moved"}\n', True, False),  # no change of CHANGES
        (b'{"docid": 0, "url": "http://h/", "change": "new"}\n', True, False),  # no docID
        (b'{"docid": true, "url": "http://h/", "change": "new"}\n', True, False),
        (b'{"docid": 2, "change": "new"}\n', True, False),  # no URL
        (b"[1, 2]\n", True, False),
        (b"cat 1 1\n", True, False),  # an index
        (b"http://h/a.html\n0\n<html>", True, False),  # a page file
        (b'{"url":"http://h/","outcome":"saved","doc":1}\n', True, False),  # a crawl record
        (b"[" * 100_000, False, False),
        (b"[" * 100_000, True, False),  # nested past Python's recursion limit
        (b"\xff\xfe\n", True, False),
    ],
)
def test_a_changes_file_is_told_by_its_first_line(start, whole, changes):
    assert looks_like_changes(start, whole) is changes


def entry(doc_id: int, url: str, change: str, status: int | None, reason: str | None) -> dict:
    """A changes file's entry, its keys in the order the update writes them (update/merge.py)."""
    written = {"docid": doc_id, "url": url, "change": change, "status": status}
    return written if reason is None else {**written, "reason": reason}


ENTRIES = st.lists(
    st.builds(
        entry,
        st.integers(1, 10**9),
        st.text(max_size=300),
        st.sampled_from(CHANGES),
        st.none() | st.integers(100, 599),
        st.none() | st.text(max_size=20),
    ),
    min_size=1,
    max_size=5,
)


@given(ENTRIES, st.integers(0, 2000))
def test_every_changes_file_written_is_one_read_in_part_or_whole(entries, cut):
    data = "".join(json.dumps(entry) + "\n" for entry in entries).encode()
    start = data[: max(cut, len(b'{"docid": %d, "url": "' % entries[0]["docid"]))]
    assert looks_like_changes(start, len(start) == len(data))


RECORD = '{"url":"http://h/","outcome":"saved","doc":1,"depth":0,"host":"h","start":1,"end":2}\n'


def test_a_report_is_told_by_its_head_and_an_earlier_report_by_its_first_lines(tmp_path):
    record = tmp_path / "r.jsonl"
    record.write_text(RECORD)
    write_report([record], tmp_path / "report.html")
    written = (tmp_path / "report.html").read_bytes()
    assert looks_like_a_report(written[:1024], False) and looks_like_a_report(written, True)
    # What reports before the mark began with (templates/report.html then), as they were written.
    assert looks_like_a_report(EARLIER_REPORT_HEAD + b"<style>", False)
    for other in (
        b"<!DOCTYPE html>\n<html><head><title>Crawl report</title></head>",  # another page of that title
        b'<!DOCTYPE html>\n<html><head></head><body><meta name="generator" content="tse report">',  # not in its head
        b"http://h/\n0\n" + written,  # a page file of a report's page
        RECORD.encode(),
    ):
        assert not looks_like_a_report(other, True), other


def outcome_here(*args) -> tuple[int, bytes, str]:
    """`tse ARGS` in this process (the command's code without its start-up; what it refuses, it refuses
    before a crawl or a report begins): its exit status, stdout and stderr."""
    done = tse_here(*args)
    return done.returncode, done.stdout, done.stderr.decode()


def make_device(path: Path) -> bool:
    """A character device node like /dev/null at *path* (root only): whether it was made."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return False
    return True


def test_report_refuses_what_is_no_report_and_writes_nothing(tmp_path):
    record = tmp_path / "r.jsonl"
    record.write_text(RECORD)
    crawl = write_pages(tmp_path / "a", {1: ("http://h/", 0, b"<p>one</p>"), 5: ("http://h/5", 1, b"<p>5</p>")})
    (tmp_path / "notes.html").write_text("<html><head><title>mine</title></head></html>")
    os.mkfifo(tmp_path / "fifo")
    device = make_device(tmp_path / "fakenull")
    before = snapshot(tmp_path)
    said = {}
    for out in ["a/5", "a/7", "a/.crawler", "a/.tse-charsets", "notes.html", "fifo", *(["fakenull"] if device else [])]:
        with pytest.raises(OutputFileRefused) as refused:
            write_report([record], tmp_path / out)
        said[out] = str(refused.value).removeprefix(f"{tmp_path}/")
    assert snapshot(tmp_path) == before  # nothing written: no page, no marker, no partial file beside
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)
    assert said["a/5"] == "a/5 is a page file of the page directory " + f"{crawl}: write the report elsewhere"
    assert said["a/.crawler"].startswith("a/.crawler is the marker of the page directory")
    assert said["a/.tse-charsets"].startswith("a/.tse-charsets is one of the page directory")
    assert said["notes.html"] == (
        "notes.html exists and is not a report (its head does not name tse report): it is left as it is; "
        "write the report elsewhere, or remove it first"
    )
    assert said["fifo"] == "fifo is a FIFO, not a regular file: write the report elsewhere"


def test_tse_report_says_one_line_exit_2_and_replaces_its_own_report(tmp_path):
    record = tmp_path / "r.jsonl"
    record.write_text(RECORD)
    out = tmp_path / "fakenull"
    device = make_device(out)
    if not device:  # (not root: a FIFO, which the write replaced as well)
        os.mkfifo(out)
    what = "a character device" if device else "a FIFO"
    done = outcome_here("report", record, "--out", out)
    # Before: exit 0, "wrote .../fakenull: ...", and a regular file where the device was.
    assert done == (
        2,
        b"",
        f"tse report: --out {out} is {what}, not a regular file: write the report elsewhere\n",
    )
    assert not stat.S_ISREG(os.stat(out).st_mode)
    # A directory, a file in no directory: refused as the device is, exit 2 (a directory exited 1).
    nowhere = tmp_path / "no" / "report.html"
    for target, why in (
        (tmp_path, f"{tmp_path} is a directory"),
        (nowhere, f"cannot write {nowhere}: no directory {nowhere.parent}"),
    ):
        done = outcome_here("report", record, "--out", target)
        assert done == (2, b"", f"tse report: --out {why}\n"), target
    # Its own report is replaced (written again from the same record), and one written before the mark.
    report = tmp_path / "report.html"
    write_report([record], report)
    # (In this process too, as the refusals above: the check of what --out may replace is the command's
    # code, which a process start adds nothing to.)
    done = outcome_here("report", record, "--out", report)
    assert done[0] == 0, done
    report.write_bytes(EARLIER_REPORT_HEAD + b"<style></style>\n</head>\n</html>\n")
    done = outcome_here("report", record, "--out", report)
    assert done[0] == 0 and looks_like_a_report(report.read_bytes(), True), done


def test_changes_replace_only_changes_in_tse_crawl_and_scrapy_crawl(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1).returncode == 0
    (tmp_path / "fresh").mkdir()
    other = write_pages(tmp_path / "other", {1: ("http://h/", 0, b"<p>one</p>"), 2: ("http://h/2", 1, b"<p>2</p>")})
    index = tmp_path / "x.index"
    index.write_bytes(b"cat 1 1\n")
    os.mkfifo(tmp_path / "fifo")
    device = make_device(tmp_path / "fakenull")
    before = snapshot(tmp_path)
    refused = {
        other / "2": f"{other / '2'} is a page file of the page directory {other}: write the changes elsewhere",
        other / ".crawler": f"{other / '.crawler'} is the marker of the page directory {other}",
        index: f"{index} exists and is not a changes file (its first line is no page's change",
        tmp_path / "fifo": f"{tmp_path / 'fifo'} is a FIFO, not a regular file",
    }
    if device:
        refused[tmp_path / "fakenull"] = f"{tmp_path / 'fakenull'} is a character device, not a regular file"
    crawl = ("crawl", f"{server.url}/index.html", out, 1, "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0")
    for path, said in refused.items():
        status, _, err = outcome_here(*crawl, "--update", "--changes", path)
        assert status == 2 and err.startswith(f"tse crawl: --changes: {said}") and err.count("\n") == 1, err
    arguments = [f"seed={server.url}/index.html", f"pagedir={out}", "depth=1", f"prefix={server.url}/", "update=yes"]
    done = run_scrapy("crawl", "tse", *[x for a in arguments for x in ("-a", a)], "-s", f"TSE_CHANGES={index}")
    err = done.stderr.decode()
    assert done.returncode == 2 and err.startswith(f"scrapy crawl tse: --changes: {refused[index]}"), err
    # The log and the record named after another crawl's page file (appended to: a review's find).
    for option, path in (("--log-file", other / "2"), ("--record", other / "12")):
        fresh = ("crawl", f"{server.url}/index.html", tmp_path / "fresh", 1, "--prefix", f"{server.url}/")
        status, _, err = outcome_here(*fresh, "-s", "DOWNLOAD_DELAY=0", option, path)
        assert status == 2 and err == f"tse crawl: {option}: {path} is a file of the page directory {other}\n"
    assert snapshot(tmp_path) == before  # nothing fetched, nothing written
    # An empty file, then last time's changes, are replaced: a nightly --changes today.jsonl.
    listed = tmp_path / "today.jsonl"
    listed.write_bytes(b"")
    for _ in range(2):
        done = crawl_site(server, out, 1, "--update", "--changes", listed)
        assert done.returncode == 0, done.stderr.decode()
        assert {entry["change"] for entry in map(json.loads, listed.read_text().splitlines())} == {"unchanged"}


def test_indextest_refuses_a_page_directory_file_and_names_newindex_when_it_cannot_write_it(tmp_path):
    old = tmp_path / "old.index"
    letters = "abcdefghijklmnopqrstuvwxyz"
    old.write_bytes("".join(f"word{a}{b} 1 1\n" for a in letters for b in letters).encode())  # 8 KiB
    base = write_pages(tmp_path / "base", {1: ("http://h/", 0, b"<p>one</p>")})
    before = snapshot(base)
    for name, said in (
        (".crawler", f"is the marker of the page directory {base}"),  # before: replaced by the index
        # before: made a file, where a crawl makes a directory of its own
        (".tse-charsets", f"is one of the page directory {base}'s own files"),
        ("1", f"is a page file of the page directory {base}"),
        ("7", f"is a page file of the page directory {base}"),
    ):
        # (In this process: the refusal's message is the command's code; the processes below show the
        # command's own exit 1 and one line.)
        done = outcome_here("indextest", old, base / name)
        said = f"tse indextest: {base / name} {said}: write the index elsewhere\n"
        assert done == (1, b"", said)
    assert snapshot(base) == before
    # NEWINDEX past what may be written (as on a full disk): it is named, not OLDINDEX (before: "old.index:
    # File too large", or on a small tmpfs "old.index: No space left on device").
    new = tmp_path / "out" / "new.index"
    new.parent.mkdir()
    done = run_tse("indextest", old, new, timeout=60, preexec_fn=files_of_at_most(1024))
    assert (done.returncode, done.stdout, done.stderr.decode()) == (1, b"", f"tse indextest: {new}: File too large\n")
    assert os.listdir(new.parent) == ["new.index.lock"]  # no index, no partial file (the lock file stays)
    # A malformed line's word shown as the UTF-8 it is (before: 'caf\ufffd\ufffd'), its control characters and
    # bytes that are no UTF-8 percent-encoded.
    old.write_bytes("caf\u00e9 1 1\n".encode() + b"ok 1 1\nx\x1b[2J\xe9 1 1\n")
    done = run_tse("indextest", old, new, timeout=60)  # the command's own exit and line
    assert (done.returncode, done.stderr.decode()) == (
        1,
        f"tse indextest: {old}:1: not a lowercase word: 'caf\u00e9'\n",
    )
    old.write_bytes(b"ok 1 1\nx\x1b[2J\xe9 1 1\n")
    done = tse_here("indextest", old, new)  # (the message through the command's code, in this process)
    assert (done.returncode, done.stderr.decode()) == (
        1,
        f"tse indextest: {old}:2: not a lowercase word: 'x%1B[2J%E9'\n",
    )


def test_no_output_file_is_the_index_a_warc_file_has_beside_it(tmp_path, serve):
    # crawl.cdxj is written beside --warc crawl.warc.gz at the end, replacing what is there: a --record
    # (or log, or changes) of that name was lost (a reviewer's find).
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    (tmp_path / "fresh").mkdir()
    (tmp_path / "out").mkdir()
    assert crawl_site(server, tmp_path / "out", 1).returncode == 0  # (--changes goes with --update of a crawl)
    warc, index = tmp_path / "crawl.warc.gz", tmp_path / "crawl.cdxj"
    before = snapshot(tmp_path)
    for option in ("--record", "--log-file", "--changes"):
        crawled = ("out", "--update") if option == "--changes" else ("fresh",)
        crawl = ("crawl", f"{server.url}/index.html", tmp_path / crawled[0], 1, "--prefix", f"{server.url}/")
        status, _, err = outcome_here(*crawl, *crawled[1:], "-s", "DOWNLOAD_DELAY=0", "--warc", warc, option, index)
        assert status == 2, err
        assert err == f"tse crawl: {option}: {index} is the index --warc {warc} writes beside it (crawl.cdxj)\n"
    assert snapshot(tmp_path) == before  # nothing fetched, nothing written
