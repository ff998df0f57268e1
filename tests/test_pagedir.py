import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.inprocess import tse_here
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.pagedir import Page, PageFileError


def test_page_file_format(tmp_path):
    pagedir.write_page(tmp_path, 1, Page("http://h/x.html", 2, b"<html>\r\nbody"))
    assert (tmp_path / "1").read_bytes() == b"http://h/x.html\n2\n<html>\r\nbody\n"


@given(
    st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=["Cs"])),
    st.integers(0, 10),
    st.binary(),
)
def test_encode_decode_round_trip(url, depth, body):
    assert pagedir.decode_page(pagedir.encode_page(Page(url, depth, body))) == Page(url, depth, body)


@given(
    st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=["Cs"]), min_size=1),
    st.integers(0, 10),
    st.binary(),
)
def test_a_written_page_file_reads_back_as_its_page(tmp_path_factory, url, depth, body):
    directory = tmp_path_factory.mktemp("pages")
    pagedir.write_page(directory, 7, Page(url, depth, body))
    assert pagedir.read_page(directory, 7) == Page(url, depth, body)
    assert os.listdir(directory) == ["7"]  # no partial file left


def test_a_page_file_is_whole_however_few_bytes_each_write_takes(tmp_path, monkeypatch):
    writev = os.writev
    monkeypatch.setattr(os, "writev", lambda fd, buffers: writev(fd, [bytes(buffers[0][:7])]))
    body = bytes(range(256)) * 40
    pagedir.write_page(tmp_path, 1, Page("http://h/long.html", 3, body))
    assert (tmp_path / "1").read_bytes() == b"http://h/long.html\n3\n" + body + b"\n"


# The one tolerance of every reader: the final newline may be missing.
@pytest.mark.parametrize(
    "data, page",
    [
        (b"http://h/\n1\nbody\n", Page("http://h/", 1, b"body")),
        (b"http://h/\n1\nbody\n\n", Page("http://h/", 1, b"body\n")),  # exactly one newline is stripped
        (b"http://h/\n1\nno final newline", Page("http://h/", 1, b"no final newline")),
        (b"http://h/\n10\n", Page("http://h/", 10, b"")),
        (b"\n0\n\n", Page("", 0, b"")),
    ],
)
def test_decode(data, page):
    assert pagedir.decode_page(data) == page


@pytest.mark.parametrize(
    "data",
    [b"", b"http://h/\n", b"http://h/\n1", b"http://h/\nx\nbody\n", b"http://h/\n 1\nbody\n", b"http://h/\n-1\nb\n"],
)
def test_decode_rejects_what_is_not_a_page_file(data):
    with pytest.raises(PageFileError):
        pagedir.decode_page(data)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "it is empty"),
        (b"http://h/", "it is one line, without a line break (a page file's URL, then its depth)"),
        (b"<html>\xff\x00</html>", "it is one line, without a line break (a page file's URL, then its depth)"),
        (b"http://h/\n", "it ends after line 1 (a page file's depth is its second line)"),
        (b"http://h/\n\n<p>body</p>\n", "line 2 is empty (a page file's depth is its second line)"),
        (b"http://h/\n\r\n", "line 2 is not a depth (a number, digits 0-9 only)"),
        (b"http://h/\nx\nbody\n", "line 2 is not a depth (a number, digits 0-9 only)"),
        (b"http://h/\n 1\nbody\n", "line 2 is not a depth (a number, digits 0-9 only)"),
        (b"http://h/\n-1\nb\n", "line 2 is not a depth (a number, digits 0-9 only)"),
        ("http://h/\n\u0661\nb\n".encode(), "line 2 is not a depth (a number, digits 0-9 only)"),  # Arabic-Indic 1
        (b"http://h/\n12", "line 2, the depth, has no line break after it"),
        (b"http://h/\n" + b"9" * 19 + b"\nb\n", "line 2 is not a depth (a number of at most 18 digits)"),
        # (int() refuses past 4,300 digits: tse index, query and serve failed with a traceback)
        (b"http://h/\n" + b"9" * 5000 + b"\nb\n", "line 2 is not a depth (a number of at most 18 digits)"),
    ],
)
def test_what_is_not_a_page_file_is_said_by_line(tmp_path, data, reason):
    with pytest.raises(PageFileError) as raised:
        pagedir.decode_page(data)
    assert str(raised.value) == f"not a page file (URL, depth, page): {reason}"
    (tmp_path / "1").write_bytes(data)
    with pytest.raises(PageFileError) as raised:
        pagedir.check_page_files(tmp_path)
    assert str(raised.value) == f"{tmp_path}/1: not a page file (URL, depth, page): {reason}"


@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"\n", b"1", b"x", b" ", b"http://h/"])).map(b"".join))
def test_a_page_file_is_refused_exactly_when_its_first_lines_say_why(data):
    lines = data.split(b"\n", 2)  # the first two lines and their line breaks
    head = b"\n".join(lines[:2]) + (b"\n" if len(lines) == 3 else b"")
    problem = pagedir.lines_problem(head)
    try:
        pagedir.decode_page(data)
    except PageFileError as error:
        assert str(error) == problem != ""
    else:
        assert problem == ""


def test_read_page_names_a_malformed_file(tmp_path):
    (tmp_path / "3").write_bytes(b"no depth line")
    with pytest.raises(PageFileError, match=f"^{tmp_path}/3: not a page file"):
        pagedir.read_page(tmp_path, 3)
    with pytest.raises(OSError):
        pagedir.read_page(tmp_path, 4)


def test_marker_holds_pages_and_url(tmp_path):
    pagedir.mark(tmp_path)
    marker = tmp_path / ".crawler"
    assert marker.read_bytes() == b""
    os.utime(marker, ns=(1_000_000_000, 1_000_000_000))
    pagedir.mark(tmp_path)  # there and empty: left as it is, its time included
    assert marker.stat().st_mtime_ns == 1_000_000_000
    marker.write_bytes(b"left over")
    pagedir.mark(tmp_path)
    assert marker.read_bytes() == b""
    (tmp_path / "\u00b2").write_text("a digit, but not a docID")
    (tmp_path / ".1.partial").write_text("")
    assert not pagedir.holds_pages(tmp_path)
    pagedir.write_page(tmp_path, 2, Page("http://h/\u00e9.html", 0, b"x" * 100_000))
    assert pagedir.holds_pages(tmp_path)
    assert pagedir.read_page_url(tmp_path, 2) == "http://h/\u00e9.html"
    assert pagedir.read_page(tmp_path, 2) == Page("http://h/\u00e9.html", 0, b"x" * 100_000)


def test_failed_write_leaves_no_file(tmp_path):
    (tmp_path / "3").mkdir()  # the final name cannot be replaced
    with pytest.raises(OSError):
        pagedir.write_page(tmp_path, 3, Page("u", 0, b"x" * 1000))
    assert sorted(os.listdir(tmp_path)) == ["3"]
    assert (tmp_path / "3").is_dir()


def test_write_replaces_atomically(tmp_path):
    pagedir.write_page(tmp_path, 1, Page("old", 0, b"old"))
    pagedir.write_page(tmp_path, 1, Page("new", 1, b"new"), fsync=True)
    assert pagedir.read_page(tmp_path, 1) == Page("new", 1, b"new")
    assert os.listdir(tmp_path) == ["1"]


def test_move_and_remove(tmp_path):
    pagedir.write_page(tmp_path, 5, Page("u5", 1, b"five"))
    (tmp_path / ".2.partial").write_bytes(b"left by a killed write")
    pagedir.move_page(tmp_path, 5, 2)
    assert sorted(os.listdir(tmp_path)) == [".2.partial", "2"]
    pagedir.remove_partial_files(tmp_path)
    assert os.listdir(tmp_path) == ["2"]
    pagedir.remove_page(tmp_path, 2)
    assert os.listdir(tmp_path) == []


def test_remove_pages_above_a_last_doc_id(tmp_path):
    for doc_id in (1, 2, 3, 10, 12):
        pagedir.write_page(tmp_path, doc_id, Page(f"u{doc_id}", 0, b""))
    for other in (".crawler", "007", "0", "notes"):  # not page files of this crawl's numbering
        (tmp_path / other).write_bytes(b"")
    assert pagedir.remove_pages_above(tmp_path, 3) == [10, 12]
    assert sorted(os.listdir(tmp_path)) == [".crawler", "0", "007", "1", "2", "3", "notes"]
    assert pagedir.remove_pages_above(tmp_path, 3) == []


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("1", True), ("20000", True), (".crawler", True), (".tse-gone", True), (".tse-robots", True),
        (".tse-state.sqlite", True), (".tse-pages.sqlite-wal", True), (".tse-import-unfinished", True),
        ("²", False), ("1.html", False), ("crawl.warc.gz", False), (".crawler.bak", False), ("tse-gone", False),
        (".1.partial", False), ("notes.txt", False), ("0", False), ("01", False), ("007", False),
    ],
)  # fmt: skip
def test_the_files_a_crawl_or_an_import_keeps_in_a_page_directory(name, kept):
    assert pagedir.is_page_directory_file(name) is kept


@pytest.mark.parametrize(
    ("name", "page"),
    [
        ("1", True), ("9", True), ("10", True), ("20000", True), ("0", False), ("00", False), ("01", False),
        ("007", False), ("010", False), ("²", False), ("\u0661", False), ("", False), ("-1", False), ("+1", False),
        (" 1", False), ("1 ", False), ("1.0", False),
    ],
)  # fmt: skip
def test_a_page_files_name_is_a_doc_id_1_2_3_without_leading_zeros(name, page):
    assert pagedir.is_page_name(name) is page


def _is_doc_id_name(name: str) -> bool:
    """SPEC's page file names: the decimal docIDs 1, 2, 3 ..., each written one way."""
    return name.isascii() and name.isdigit() and int(name) >= 1 and f"{int(name)}" == name


@given(st.text(max_size=30) | st.integers(min_value=0).map(str) | st.from_regex(r"0*[0-9]{1,5}", fullmatch=True))
def test_a_page_name_is_exactly_a_doc_ids_decimal_name(name):
    assert pagedir.is_page_name(name) is _is_doc_id_name(name)


@given(st.text(max_size=30) | st.from_regex(r"0*[0-9]{1,5}", fullmatch=True))
def test_a_page_directorys_own_files_are_its_pages_marker_and_dot_tse_names(name):
    expected = _is_doc_id_name(name) or name == ".crawler" or name.startswith(".tse-")
    assert pagedir.is_page_directory_file(name) is expected


@pytest.mark.parametrize(
    ("data", "gone"),
    [
        (b"", frozenset()),
        (b"3\n1\n", frozenset({1, 3})),
        (b"2\r\n 2\n\n", frozenset({2})),  # (blank space and repeats: one docID)
        (b"9" * 18 + b"\n", frozenset({10**18 - 1})),
        (b"9" * 19 + b"\n", None),  # past DOCID_DIGITS
        (b"9" * 5000 + b"\n", None),  # past int()'s 4,300 digits: a ValueError, not the one line
        (b"0\n", None),
        (b"-1\n", None),
        (b"\xd9\xa3\n", None),  # (Arabic-Indic three: a digit to str.isdigit, not to a docID)
        (b"abc\n", None),
    ],
)
def test_a_gone_list_is_docids_one_a_line(data, gone):
    if gone is None:
        with pytest.raises(PageFileError, match="not a list of docIDs"):
            pagedir.parse_gone(data)
    else:
        assert pagedir.parse_gone(data) == gone


@given(st.lists(st.integers(min_value=1, max_value=10**18 - 1), max_size=20))
def test_a_gone_list_reads_back_as_written(doc_ids):
    assert pagedir.parse_gone(pagedir.format_gone(doc_ids)) == frozenset(doc_ids)


def test_a_page_or_gone_list_that_is_no_regular_file_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "1")  # read, it would wait for a writer for ever
    (tmp_path / "2").symlink_to("/dev/zero")  # read, it would never end
    os.mkfifo(tmp_path / pagedir.GONE_NAME)
    for doc_id in (1, 2):
        with pytest.raises(OSError, match="not a regular file"):
            pagedir.read_page(tmp_path, doc_id)
        with pytest.raises(OSError, match="not a regular file"):
            pagedir.read_page_url(tmp_path, doc_id)
    with pytest.raises(OSError, match="not a regular file"):
        pagedir.gone_docs(tmp_path)
    with pytest.raises(OSError, match="not a regular file"):
        pagedir.check_page_files(tmp_path)  # (an update's check of every page file's first lines)


@pytest.mark.parametrize("name", ["1", ".crawler"])
def test_a_page_1_or_marker_that_is_a_fifo_is_refused_without_waiting(tmp_path, name):
    # tse index, query and serve opened them with a plain open(): a FIFO waits for a writer, for good.
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / ".crawler").write_bytes(b"")
    (pages / "1").write_bytes(b"http://h/\n0\n<p>cat</p>\n")
    index = tmp_path / "index"
    assert tse_here("index", pages, index).returncode == 0
    (pages / name).unlink()
    os.mkfifo(pages / name)
    said = "has no readable page 1" if name == "1" else "is not a crawler directory (no readable .crawler)"
    runs = {"index": (pages, tmp_path / "other.index"), "query": (pages, index), "serve": (pages, index, "--port", "0")}
    for command, arguments in runs.items():
        done = tse_here(command, *arguments, input=b"cat\n")
        status = 2 if command == "serve" else 1  # (serve's usage errors are 2)
        assert done.returncode == status and done.stderr.decode() == f"tse {command}: {pages} {said}\n", done
    assert not (tmp_path / "other.index").exists()
