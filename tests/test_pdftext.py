"""PDF text: the pure rules (rules/text/pdftext.py) by table and property, and the extractor
(index/pdfs.py) on real PDFs that Debian ships and on hostile ones made here.

The real PDFs are read from their system paths (debian-reference-en, libtasn1-doc,
shared-mime-info, maint-guide-ru, bzip2-doc); a test whose PDF is absent is skipped.
Their expected strings were read off ``pdftotext`` (poppler-utils), and where it is
installed the tests also compare words with what it reads at test time.  The
encrypted PDFs come from ``qpdf`` (Debian's qpdf) when it is installed, and from a
hand-made PDF whose password nobody knows in any case."""

# ruff: noqa: RUF001 (Russian text: letters that look like Latin ones are the point)

from __future__ import annotations

import gzip
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import zlib
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.pdfs import pages_pdf, stream
from tse_scrapy.index.pdfs import (
    CRASHED,
    DAMAGED,
    ENCRYPTED,
    NO_TEXT,
    NOT_A_PDF,
    OUT_OF_MEMORY,
    TIMED_OUT,
    TOO_LARGE,
    PdfExtractor,
    PdfText,
    extract_pdf_text,
)
from tse_scrapy.rules.text.pdftext import PDF_MAGIC, TITLE_MAX, clean_pdf_text, looks_like_pdf, pdf_title

DEBIAN_REFERENCE = Path("/usr/share/debian-reference/debian-reference.en.pdf")  # debian-reference-en
LIBTASN1 = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")  # libtasn1-doc
SHARED_MIME_INFO = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")  # shared-mime-info
MAINT_GUIDE_RU = Path("/usr/share/doc/maint-guide-ru/maint-guide.ru.pdf")  # maint-guide-ru
BZIP2_MANUAL = Path("/usr/share/doc/bzip2/manual.pdf.gz")  # bzip2-doc

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def system_pdf(path: Path) -> bytes:
    """The PDF at *path* (gunzipped in memory if it ends in .gz), or a skip when it is absent."""
    if not path.is_file():
        pytest.skip(f"{path} not found (a Debian package's documentation; not part of the repository)")
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


# PDFs made here: a few objects, an xref table, a trailer (tests/support/pdfs.py).


def text_pdf(*pages: list[str], title: bytes | None = None, trailer: bytes = b"", extra: list[bytes] = ()) -> bytes:
    """A PDF of *pages*, each a list of lines of (plain ASCII) text."""
    streams = [
        stream(b"BT /F1 12 Tf 72 720 Td 14 TL " + b" ".join(b"(%s) '" % line.encode() for line in lines) + b" ET")
        for lines in pages
    ]
    return pages_pdf(list(range(4, 4 + len(streams))), streams + list(extra), title, trailer)


def scanned_pdf() -> bytes:
    """One page with a drawing and no text, as a scan's page has an image and no text."""
    return pages_pdf([4], [stream(b"0 0 1 rg 72 72 468 648 re f 0 0 m 612 792 l S")])


@cache
def slow_pdf() -> bytes:
    """2,000 pages sharing one content stream of 10,000 characters: a 200 KB file that takes PDFium
    about 10 s to read whole, with little memory (a second when max_chars stops it)."""
    return pages_pdf([4] * 2000, [stream(b"BT /F1 1 Tf " + b"(abcdefghij) Tj " * 1000 + b"ET")])


@cache
def bomb_pdf(megabytes: int = 256) -> bytes:
    """One page whose content stream inflates to *megabytes* of spaces from about 1/1000 of that."""
    compressor = zlib.compressobj(9)
    spaces = b" " * (1 << 20)
    compressed = b"".join(compressor.compress(spaces) for _ in range(megabytes))
    compressed += compressor.compress(b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET") + compressor.flush()
    return pages_pdf([4], [stream(b"", compressed)])


def locked_pdf() -> bytes:
    """A PDF under the standard security handler whose user password is not the empty one (its /U
    matches no password anyone knows): readers ask for a password."""
    encrypt = b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <%s> /U <%s> >>" % (
        b"6b" * 32,
        b"3c" * 32,
    )
    trailer = b"/Encrypt 5 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]"
    return text_pdf(["Secret words"], trailer=trailer, extra=[encrypt])


@pytest.fixture(scope="module")
def extractor():
    with PdfExtractor(timeout=20) as shared:
        yield shared


# looks_like_pdf


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"%PDF-1.7\n...", True),
        (b"%PDF-", True),
        (b"\xef\xbb\xbf%PDF-1.4", True),  # a byte-order mark first
        (b"From: a mail header\r\n\r\n%PDF-1.4", True),
        (b" " * 1019 + b"%PDF-1.4", True),  # ends at byte 1,024
        (b" " * 1020 + b"%PDF-1.4", False),  # one byte further
        (b"", False),
        (b"%PDF", False),
        (b"%pdf-1.4", False),  # readers want it in capitals
        (b"<html><body>%PDF-</body></html>"[:10], False),
        (b"PK\x03\x04 a zip", False),
        (b"\x00" * 2000, False),
    ],
)
def test_looks_like_pdf(body, expected):
    assert looks_like_pdf(body) is expected


@given(st.binary(max_size=1100), st.binary(max_size=200))
def test_looks_like_pdf_finds_the_magic_in_the_first_kilobyte(junk, rest):
    body = junk + PDF_MAGIC + rest
    assert looks_like_pdf(body) is (PDF_MAGIC in body[:1024])
    assert looks_like_pdf(memoryview(body)) is looks_like_pdf(body)


# clean_pdf_text


@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        (["Hello world"], "Hello world"),
        (["one", "two"], "one\n\ntwo"),
        (["one", "", "  ", "two"], "one\n\ntwo"),  # empty pages add no blank lines
        ([], ""),
        (["line one\r\nline two\r\n"], "line one\nline two"),
        (["NUL\x00 and\x01 bell\x07 and\x1f unit\x7f"], "NUL and bell and unit"),
        (["a\tb"], "a\tb"),  # a tab inside a line stays
        (["Copyright \rc 2001"], "Copyright c 2001"),  # a lone CR is a glyph TeX maps to 13, not a line end
        (["exam-\nple"], "example"),
        (["exam-\r\nple"], "example"),
        (["exam-  \n  ple"], "example"),  # spaces at the line's ends first
        (["при-\nмер"], "пример"),  # lowercase in any script
        (["Jean-\nPaul"], "Jean-\nPaul"),
        (["ISO-\n8859"], "ISO-\n8859"),
        (["OP-\nTIONAL"], "OP-\nTIONAL"),  # not lowercase: kept
        (["well-\nKnown"], "well-\nKnown"),
        (["x -\ny"], "x -\ny"),  # a dash, not a hyphen
        (["exam-\n\nple"], "exam-\n\nple"),  # not a line end: a paragraph's
        (["a-\nb-\nc"], "abc"),
        (["exam-", "ple"], "exam-\n\nple"),  # never across pages
        (["manip\ufffeulation"], "manipulation"),  # PDFium's hyphen at a line end, line break dropped
        (["DIS\ufffeCLAIMED"], "DIS-\nCLAIMED"),
        (["Fc\ufffeConfig"], "Fc-\nConfig"),
        (["end\ufffe"], "end-"),
        (["many    spaces  here"], "many spaces here"),
        (["  indented\n   lines  \n"], "indented\nlines"),
        (["a\n\n\n\n\nb"], "a\n\nb"),
        (["a\n \n \n \nb"], "a\n\nb"),
        (["lone \ud800 surrogate \uffff"], "lone surrogate"),
        (["\u00a0non-breaking\u00a0space"], "\u00a0non-breaking\u00a0space"),  # not a space run: kept
    ],
)
def test_clean_pdf_text(pages, expected):
    assert clean_pdf_text(pages) == expected


TRICKY = st.sampled_from(
    ["\x00", "\x01", "\r", "\n", "\t", " ", "-", "\ufffe", "\uffff", "\ud800", "\x7f", "a", "b", "A", "я", "1"]
)
TEXT = st.text(st.one_of(TRICKY, st.characters()), max_size=80)


@given(st.lists(TEXT, max_size=5))
def test_clean_pdf_text_leaves_no_controls_no_space_runs_no_edge_whitespace(pages):
    text = clean_pdf_text(pages)
    assert not CONTROLS.search(text)
    assert "  " not in text and "\n\n\n" not in text
    assert not re.search("[ \t]\n|\n[ \t]", text)
    assert text == text.strip(" \t\n")
    text.encode()  # storable as UTF-8


@given(st.lists(TEXT, max_size=5))
def test_clean_pdf_text_is_idempotent(pages):
    once = clean_pdf_text(pages)
    assert clean_pdf_text([once]) == once


@given(st.lists(TEXT, max_size=5))
def test_pages_cleaned_one_at_a_time_give_the_whole_text(pages):
    # The extractor cleans each page as it reads it (to stop at max_chars), and joins them.
    assert clean_pdf_text(pages) == "\n\n".join(filter(None, (clean_pdf_text([page]) for page in pages)))


# pdf_title


LONG = "word " * 60


@pytest.mark.parametrize(
    ("metadata", "text", "expected"),
    [
        ("Debian Reference", "i\nsomething else", "Debian Reference"),
        ("  Debian \n Reference\t", "", "Debian Reference"),
        ("Руководство Debian", "", "Руководство Debian"),
        (None, "First line\nSecond line", "First line"),
        ("", "First line", "First line"),
        ("   ", "First line", "First line"),
        ("---", "First line", "First line"),  # no letter, no digit
        ("Untitled", "First line", "First line"),
        ("untitled-1", "First line", "First line"),
        ("Title", "First line", "First line"),
        ("Document1", "First line", "First line"),
        ("unknown", "First line", "First line"),
        ("Microsoft Word - report.doc", "First line", "First line"),
        ("Microsoft PowerPoint - Presentation1", "First line", "First line"),
        ("main.tex", "First line", "First line"),
        ("C:\\Users\\me\\My Documents\\report final.docx", "First line", "First line"),
        ("/tmp/job-42.ps", "First line", "First line"),
        ("Title of the thesis", "First line", "Title of the thesis"),  # a placeholder's word in a real title
        ("The .doc format", "First line", "The .doc format"),
        ("2023", "First line", "2023"),
        (None, "\n\n  •  \n— — —\n  Real   title  here \nnext", "Real title here"),
        (None, "", ""),
        (None, "• • •\n\n", ""),
        (None, "x" * 300, "x" * 200),  # one long word: cut in it
        (None, LONG, ("word " * 40).strip()),  # 200 characters with the space past the limit
        (None, "a" * 150 + " " + "b" * 100, "a" * 150),
        ("T" * 150 + " " + "U" * 100, "", "T" * 150),
        ("Bad\x00title\x07here", "", "Bad title here"),
    ],
)
def test_pdf_title(metadata, text, expected):
    assert pdf_title(metadata, text) == expected


@given(st.one_of(st.none(), TEXT, st.text()), st.text(st.one_of(TRICKY, st.characters()), max_size=500))
def test_pdf_title_is_one_short_clean_line(metadata, text):
    title = pdf_title(metadata, text)
    assert len(title) <= TITLE_MAX
    assert "\n" not in title and "  " not in title and title == title.strip()
    assert not CONTROLS.search(title)
    assert title == "" or any(character.isalnum() for character in title)


# The extractor on real PDFs.


def pdftotext_words(data: bytes) -> set[str]:
    """The words (4 letters or more, lowercased) that poppler's pdftotext reads in *data*."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext not found (Debian's poppler-utils)")
    output = subprocess.run(["pdftotext", "-", "-"], input=data, capture_output=True, check=True, timeout=60).stdout
    return words(output.decode())


def words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"[^\W\d_]{4,}", text)}


REAL = [
    pytest.param(
        DEBIAN_REFERENCE,
        "Debian Reference",
        261,
        [
            "Osamu Aoki",
            "Chapter 1\nGNU/Linux tutorials",
            "Debian package management",
            "The system initialization",
            "Data conversion",
            "It is wise for you as the system administrator to know roughly how the Debian system is started",
        ],
        id="debian-reference-en",
    ),
    pytest.param(
        MAINT_GUIDE_RU,
        "Руководство начинающего разработчика Debian",
        69,
        ["Хорошее начало", "Первые шаги", "Изменение исходного кода", "Отправка пакета", "Глава 9"],
        id="maint-guide-ru",
    ),
    pytest.param(
        LIBTASN1,
        "Libtasn1",  # no Title in its metadata: its first line
        36,
        ["Abstract Syntax Notation One (ASN.1) library for the GNU system", "ASN.1 structure handling"],
        id="libtasn1",
    ),
    pytest.param(
        SHARED_MIME_INFO,
        "Shared MIME-info Database",
        17,
        ["This is version 0.21 of the Shared MIME-info Database specification, last updated 2 October 2018."],
        id="shared-mime-info",
    ),
    pytest.param(
        BZIP2_MANUAL,
        "bzip2 and libbzip2, version 1.0.8",
        38,
        ["A program and library for data compression", "Julian Seward", "PURPOSE ARE DIS-\nCLAIMED"],
        id="bzip2-pdf-gz",
    ),
]


@pytest.mark.parametrize(("path", "title", "pages", "expected"), REAL)
def test_real_pdfs(extractor, path, title, pages, expected):
    data = system_pdf(path)
    result = extractor.extract(data)
    assert result.warning is None
    assert result.title == title
    assert result.pages == pages
    for passage in expected:
        assert passage in result.text
    assert not CONTROLS.search(result.text)


@pytest.mark.parametrize("path", [DEBIAN_REFERENCE, MAINT_GUIDE_RU, LIBTASN1, BZIP2_MANUAL])
def test_real_pdfs_have_the_words_pdftotext_reads(extractor, path):
    data = system_pdf(path)
    theirs = pdftotext_words(data)
    ours = words(extractor.extract(data).text)
    # Both readers differ only in a few words, where one of them joined or split a hyphenated word.
    assert len(theirs) > 800
    assert len(theirs & ours) >= 0.99 * len(theirs), sorted(theirs - ours)[:50]


def test_truncated_pdf_is_damaged_and_the_next_one_reads(extractor):
    data = system_pdf(LIBTASN1)
    assert extractor.extract(data[: len(data) // 2]) == PdfText("", "", 0, DAMAGED)
    assert extractor.extract(data).title == "Libtasn1"


def test_a_pdf_nobody_has_the_password_of_is_encrypted(extractor):
    assert extractor.extract(locked_pdf()) == PdfText("", "", 0, ENCRYPTED)


def test_pdfs_encrypted_by_qpdf(extractor, tmp_path):
    if shutil.which("qpdf") is None:
        pytest.skip("qpdf not found (Debian's qpdf)")
    plain = system_pdf(SHARED_MIME_INFO)
    (tmp_path / "plain.pdf").write_bytes(plain)
    for name, user in (("user.pdf", "secret"), ("owner.pdf", "")):
        command = ["qpdf", "--encrypt", user, "owner-secret", "256", "--", "plain.pdf", name]
        subprocess.run(command, cwd=tmp_path, check=True, timeout=60)
    # A user password: no text.  An owner password only: the empty user password opens it.
    assert extractor.extract((tmp_path / "user.pdf").read_bytes()) == PdfText("", "", 0, ENCRYPTED)
    assert extractor.extract((tmp_path / "owner.pdf").read_bytes()) == extractor.extract(plain)


@pytest.mark.parametrize(
    "body",
    [b"", b"<html><body>Not a PDF</body></html>", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, b"%PDF" + b"\x00" * 2000],
)
def test_not_a_pdf(extractor, body):
    assert extractor.extract(body) == PdfText("", "", 0, NOT_A_PDF)


@pytest.mark.parametrize(
    "body", [b"%PDF-1.4\n", b"%PDF-1.4\n" + b"garbage " * 1000, b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF"]
)
def test_a_pdf_in_name_only_is_damaged(extractor, body):
    assert extractor.extract(body) == PdfText("", "", 0, DAMAGED)


def test_made_pdfs(extractor):
    made = text_pdf(["Hello exam-", "ple world"], ["Second page"], title=b"My own title")
    assert extractor.extract(made) == PdfText("My own title", "Hello example world\n\nSecond page", 2, None)
    untitled = text_pdf(["", "Hello world"], title=b"Untitled")
    assert extractor.extract(untitled) == PdfText("Hello world", "Hello world", 1, None)


def test_a_pdf_without_text_is_scanned(extractor):
    assert extractor.extract(scanned_pdf()) == PdfText("", "", 1, NO_TEXT)


def test_bounds_cut_the_text_and_say_so(extractor):
    data = system_pdf(DEBIAN_REFERENCE)
    whole = extractor.extract(data).text
    with PdfExtractor(max_pages=3) as pages:
        first = pages.extract(data)
        assert (first.pages, first.warning, first.title) == (3, TOO_LARGE, "Debian Reference")
        assert "Osamu Aoki" in first.text and whole.startswith(first.text)
    with PdfExtractor(max_chars=1000) as characters:
        cut = characters.extract(data)
        assert cut.warning == TOO_LARGE and 0 < len(cut.text) <= 1000 and cut.pages <= 6
        assert whole.startswith(cut.text)
    with PdfExtractor(max_bytes=len(data) - 1) as size:
        assert size.extract(data) == PdfText("", "", 0, TOO_LARGE)
    with PdfExtractor(max_pages=17) as exact:  # every page read: nothing cut
        assert exact.extract(system_pdf(SHARED_MIME_INFO)).warning is None


def test_out_of_memory_is_bounded_and_the_caller_goes_on():
    with PdfExtractor(memory=64 * 1024 * 1024, timeout=20) as small:
        bombed = small.extract(bomb_pdf())
        # Stopped by its memory bound, not by the timeout (TIMED_OUT): a time bound here failed on a
        # loaded machine (10.1 s against 10), and the warning says which bound stopped it.
        assert bombed.warning in (OUT_OF_MEMORY, CRASHED) and bombed.text == ""
        # A new child, as bounded, reads the next PDF.
        assert small.extract(system_pdf(SHARED_MIME_INFO)).title == "Shared MIME-info Database"


def test_a_hang_times_out_in_about_the_timeout_and_the_next_pdf_reads():
    with PdfExtractor(timeout=0.5, max_chars=10**9) as hurried:
        hurried.extract(scanned_pdf())  # the child started, ready
        start = time.monotonic()
        assert hurried.extract(slow_pdf()) == PdfText("", "", 0, TIMED_OUT)
        assert 0.5 <= time.monotonic() - start < 2.5
        assert hurried.extract(text_pdf(["After the kill"])).text == "After the kill"


def test_a_child_that_crashes_is_a_crash_and_the_next_pdf_reads():
    with PdfExtractor(timeout=20, max_chars=10**9) as extractor:
        extractor.extract(scanned_pdf())
        pid = extractor._child.pid
        results = []
        reading = threading.Thread(target=lambda: results.append(extractor.extract(slow_pdf())))
        reading.start()
        time.sleep(0.3)  # PDFium at work on the slow PDF
        os.kill(pid, signal.SIGSEGV)  # as PDFium would on a hostile file
        reading.join(10)
        assert results == [PdfText("", "", 0, CRASHED)]
        assert extractor.extract(text_pdf(["After the crash"])).text == "After the crash"


def test_a_child_that_died_between_pdfs_does_not_fail_the_next(extractor):
    extractor.extract(scanned_pdf())
    os.kill(extractor._child.pid, signal.SIGKILL)
    extractor._child.wait()
    assert extractor.extract(text_pdf(["Still here"])).text == "Still here"


def test_threads_share_an_extractor(extractor):
    made = {f"Thread {n} words": text_pdf([f"Thread {n} words"]) for n in range(8)}
    results: dict[str, str] = {}

    def read(expected: str) -> None:
        results[expected] = extractor.extract(made[expected]).text

    threads = [threading.Thread(target=read, args=(expected,)) for expected in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {expected: expected for expected in made}


def _in_worker(extractor: PdfExtractor, connection) -> None:
    """In a forked, daemonic worker (as the indexer's): with the inherited extractor, and a new one."""
    first = extractor.extract(text_pdf(["From the worker"])).text
    second = extract_pdf_text(system_pdf(SHARED_MIME_INFO)).title
    connection.send((first, second, extractor._child.pid))


def test_nested_in_a_forked_daemonic_worker(extractor):
    extractor.extract(scanned_pdf())  # the parent's child runs: the worker inherits it
    parents_child = extractor._child.pid
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    worker = context.Process(target=_in_worker, args=(extractor, theirs), daemon=True)
    worker.start()
    assert ours.poll(30)
    first, second, workers_child = ours.recv()
    worker.join(10)
    assert (first, second) == ("From the worker", "Shared MIME-info Database")
    assert workers_child != parents_child  # a child of its own, not its parent's
    assert extractor._child.pid == parents_child  # the parent's still works, untouched
    assert extractor.extract(text_pdf(["Parent again"])).text == "Parent again"


def test_a_fork_while_another_thread_reads_does_not_deadlock(extractor):
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    with extractor._lock:  # as when another thread is reading a PDF at the fork
        worker = context.Process(target=_in_worker, args=(extractor, theirs), daemon=True)
        worker.start()
    assert ours.poll(10), "the worker is stuck on the lock it inherited"
    assert ours.recv()[:2] == ("From the worker", "Shared MIME-info Database")
    worker.join(10)


def test_one_shot_and_close():
    assert extract_pdf_text(text_pdf(["One shot"]), timeout=10).text == "One shot"
    extractor = PdfExtractor()
    extractor.extract(scanned_pdf())
    child = extractor._child
    extractor.close()
    assert child.returncode == 0  # it ended at the end of its input
    extractor.close()  # twice is fine
    assert extractor.extract(text_pdf(["Started again"])).text == "Started again"
    extractor.close()


def test_a_pdf_read_in_part_is_said_so_not_as_giving_no_text(capsys, monkeypatch):
    # (A tester's find: a PDF of 2,520 pages was said to give "no text: too large", and counted so,
    # though its first 2,000 pages were indexed.)
    from tse_scrapy import cli
    from tse_scrapy.index import pagecontent
    from tse_scrapy.rules.files import pagedir
    from tse_scrapy.rules.files.pagenotes import NotedPages

    url = "http://h/reference.pdf"
    page = pagedir.Page(url, 0, system_pdf(DEBIAN_REFERENCE))
    with PdfExtractor(max_pages=3) as extractor:
        monkeypatch.setattr(pagecontent, "_extractor", extractor)
        read = pagecontent.readable(page, NotedPages({}, frozenset(), pdfs=frozenset([url])))
    assert read.warning == TOO_LARGE + pagecontent.PART_INDEXED and b"Osamu Aoki" in read.page.body
    with cli._pdf_warnings_shown([(7, url, read.warning), (8, "http://h/broken.pdf", DAMAGED)]):
        pass
    assert capsys.readouterr().err.splitlines() == [
        f"tse index: warning: PDF 7 ({url}) was read in part: too large",
        "tse index: warning: PDF 8 (http://h/broken.pdf) gave no text: damaged",
        "tse index: 1 PDF(s) indexed without text",
        "tse index: 1 PDF(s) indexed in part",
    ]
