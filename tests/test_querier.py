"""tse index / indextest / query end to end on hand-made page directories."""

import contextlib
import os
import pty
import select
import shutil
import sqlite3
import subprocess
import time

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.inprocess import tse_here
from tests.support.pages import snapshot, write_pages
from tests.support.reference import build_page_directory, triples
from tse_scrapy.index.docstore import docs_path
from tse_scrapy.resume.statedb import CrawlStateDB, state_path

PAGES = {  # docID: (URL, body); the worked example of the tests below
    1: ("http://h/one.html", b"<html>cat cat dog</html>"),
    2: ("http://h/two.html", b"dog dog dog emu"),
    3: ("http://h/three.html", b"cat <b class='dog'>emu</b> emu"),
    4: ("http://h/four.html", b"<p>Cat</p> DOG <unclosed emu emu emu"),
}
D = "-" * 47 + "\n"


@pytest.fixture(scope="module")
def built_engine(tmp_path_factory):
    """The pages and their index made once (a tse index); each test's engine is a copy of them."""
    root = tmp_path_factory.mktemp("built")
    pages = write_pages(root / "pages", {doc_id: (url, 1, body) for doc_id, (url, body) in PAGES.items()})
    result = run_tse("index", pages, root / "index")
    assert result.returncode == 0 and result.stdout == result.stderr == b""
    return root


@pytest.fixture
def engine(built_engine, tmp_path):
    """A test's own pages and index (it may change them), copied with their times."""
    for path in built_engine.iterdir():
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, tmp_path / path.name)
    return tmp_path / "pages", tmp_path / "index"


@pytest.fixture(scope="module")
def shared_engine(tmp_path_factory):
    """The engine made once for the module's tests that only query it (a tse index each was most of
    their time); checked untouched once they are done."""
    root = tmp_path_factory.mktemp("shared")
    pages = write_pages(root / "pages", {doc_id: (url, 1, body) for doc_id, (url, body) in PAGES.items()})
    result = run_tse("index", pages, root / "index")
    assert result.returncode == 0 and result.stdout == result.stderr == b""
    before = snapshot(root)
    yield pages, root / "index"
    assert snapshot(root) == before


def query(engine, text):
    pages, index = engine
    result = run_tse("query", pages, index, input=text.encode())
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    return result.stdout.decode()


def test_index_file(engine):
    assert engine[1].read_text() == "cat 1 2 3 1 4 1\ndog 1 1 2 3 4 1\nemu 2 1 3 2\n"


@pytest.mark.parametrize(
    "line, output",
    [
        (
            "cat",
            "Query: cat \nMatches 3 documents (ranked):\n"
            "score   2 doc   1: http://h/one.html\n"
            "score   1 doc   3: http://h/three.html\n"
            "score   1 doc   4: http://h/four.html\n" + D,
        ),
        (
            "cat dog",
            "Query: cat dog \nMatches 2 documents (ranked):\n"
            "score   1 doc   1: http://h/one.html\n"
            "score   1 doc   4: http://h/four.html\n" + D,
        ),
        (
            "Cat OR Dog",
            "Query: cat or dog \nMatches 4 documents (ranked):\n"
            "score   3 doc   1: http://h/one.html\n"
            "score   3 doc   2: http://h/two.html\n"
            "score   2 doc   4: http://h/four.html\n"
            "score   1 doc   3: http://h/three.html\n" + D,
        ),
        (
            "dog or dog",
            "Query: dog or dog \nMatches 3 documents (ranked):\n"
            "score   6 doc   2: http://h/two.html\n"
            "score   2 doc   1: http://h/one.html\n"
            "score   2 doc   4: http://h/four.html\n" + D,
        ),
        (
            "emu and cat or dog",
            "Query: emu and cat or dog \nMatches 4 documents (ranked):\n"
            "score   3 doc   2: http://h/two.html\n"
            "score   1 doc   1: http://h/one.html\n"
            "score   1 doc   3: http://h/three.html\n"
            "score   1 doc   4: http://h/four.html\n" + D,
        ),
        (
            "emu and dog",
            "Query: emu and dog \nMatches 1 documents (ranked):\nscore   1 doc   2: http://h/two.html\n" + D,
        ),
        (
            "\t emu\t\tcat  ",
            "Query: emu cat \nMatches 1 documents (ranked):\nscore   1 doc   3: http://h/three.html\n" + D,
        ),
        ("yak", "Query: yak \nNo documents match.\n" + D),
        ("", ""),
        (" \t ", ""),
        ("cat!", "Error: bad character '!' in query.\n"),
        ("and cat", "Query: and cat \nError: 'and' cannot be first\n"),
        ("or cat", "Query: or cat \nError: 'or' cannot be first\n"),
        ("cat AND", "Query: cat and \nError: 'and' cannot be last\n"),
        ("cat or", "Query: cat or \nError: 'or' cannot be last\n"),
        ("cat and or dog", "Query: cat and or dog \nError: 'and' and 'or' cannot be adjacent\n"),
        ("cat or and dog", "Query: cat or and dog \nError: 'or' and 'and' cannot be adjacent\n"),
    ],
)
def test_query_output(shared_engine, line, output):
    assert query(shared_engine, line + "\n") == output


def test_many_queries_and_no_final_newline(shared_engine):
    assert query(shared_engine, "yak\n\nemu and dog") == (
        "Query: yak \nNo documents match.\n"
        + D
        + "Query: emu and dog \nMatches 1 documents (ranked):\nscore   1 doc   2: http://h/two.html\n"
        + D
    )


# Python decodes stdin strictly in UTF-8 locales other than C.UTF-8 (en_US.UTF-8, say); so does this.
STRICT_LOCALE = {"PYTHONIOENCODING": "utf-8:strict"}


@pytest.mark.parametrize("rank", ["tse", "relevance"])
def test_a_closed_stdin_is_the_end_of_input_and_a_closed_stdout_one_line(shared_engine, rank):
    # `tse query ... <&-` read from a stdin Python sees as None (a traceback); `>&-` wrote to None.
    pages, index = shared_engine
    shell = f"{BIN / 'tse'} query {pages} {index} --rank {rank}"
    closed_in = subprocess.run(["sh", "-c", shell + " <&-"], capture_output=True, env=clean_env(), timeout=60)
    assert (closed_in.returncode, closed_in.stdout, closed_in.stderr) == (0, b"", b"")
    closed_out = subprocess.run(
        ["sh", "-c", shell + " >&- </dev/null"], capture_output=True, env=clean_env(), timeout=60
    )
    assert closed_out.returncode == 1
    assert closed_out.stderr == b"tse query: standard output is closed: the answers would be lost\n"
    # A full disk: one line, no traceback (there was one).
    with open("/dev/full", "wb") as full:
        command = [str(BIN / "tse"), "query", str(pages), str(index), "--rank", rank]
        result = subprocess.run(
            command, input=b"emu\n", stdout=full, stderr=subprocess.PIPE, env=clean_env(), timeout=60
        )
    assert (result.returncode, result.stderr) == (1, b"tse query: No space left on device\n")


@pytest.mark.parametrize("locale", [{}, STRICT_LOCALE], ids=["C.UTF-8", "strict"])
def test_relevance_refuses_a_line_that_is_not_utf8_and_goes_on(shared_engine, locale):
    pages, index = shared_engine
    lines = [
        b"emu\xe9",  # Latin-1
        b"yak",
        b"deb\xffian",
        b"\xef\xbf\xbd",  # U+FFFD typed as UTF-8: text
        b"\xed\xb2\x80",  # a surrogate encoded as UTF-8: none
    ]
    result = run_tse(
        "query", pages, index, "--rank", "relevance", input=b"\n".join(lines) + b"\n", env=clean_env(**locale)
    )
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert result.stdout.decode() == (
        "Error: the query must be UTF-8 text.\n"
        "Query: yak\nNo documents match.\n" + D + "Error: the query must be UTF-8 text.\n"
        "Nothing to find: the query has no letters or digits.\n"
        "Error: the query must be UTF-8 text.\n"
    )


def test_relevance_echoes_a_querys_direction_controls_by_their_code_points(shared_engine):
    """An override typed in a query would turn the rest of its echo around, on a terminal that lays out
    bidirectional text: it is shown as U+202E, as the search page shows it (URLs are shown encoded)."""
    pages, index = shared_engine
    typed = 'e\u202emu\n\u2066"dog emu"\u2069\nemu y\u200fak\n'
    result = run_tse("query", pages, index, "--rank", "relevance", input=typed.encode())
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    out = result.stdout.decode()
    assert not set(out) & set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert [line for line in out.splitlines() if line.startswith("Query: ")] == [
        "Query: eU+202Emu", 'Query: U+2066"dog emu"U+2069', "Query: emu yU+200Fak"
    ]  # fmt: skip
    assert "(partial matches: no document has yU+200Fak)" in out


@pytest.mark.parametrize("locale", [{}, STRICT_LOCALE], ids=["C.UTF-8", "strict"])
@pytest.mark.parametrize("rank", ["tse", "bm25"])
def test_bytes_that_are_no_utf8_are_bad_characters_as_the_reference_says(shared_engine, rank, locale):
    pages, index = shared_engine
    text = b"emu\xe9\ndeb\xffian\n\xef\xbf\xbd\nyak\n"
    result = run_tse("query", pages, index, "--rank", rank, input=text, env=clean_env(**locale))
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert result.stdout == (
        b"Error: bad character '\xe9' in query.\n"
        b"Error: bad character '\xff' in query.\n"
        b"Error: bad character '\xef\xbf\xbd' in query.\n"
        b"Query: yak \nNo documents match.\n" + D.encode()
    )


@pytest.mark.parametrize("rank", ["tse", "relevance"])
def test_an_endless_line_is_not_held_whole(shared_engine, rank):
    # 30 MB of letters on one line, then a query: the long line answered as too long, in bounded
    # memory, and the next line answered as usual.
    pages, index = shared_engine
    text = b"emu" * 10_000_000 + b"\nemu\n"
    limit = 200 * 1024 * 1024  # address space: far less than the line held whole several times over
    result = subprocess.run(
        [
            "/bin/sh",
            "-c",
            f'ulimit -v {limit // 1024} && exec "$0" "$@"',
            BIN / "tse",
            "query",
            pages,
            index,
            "--rank",
            rank,
        ],
        input=text,
        capture_output=True,
        env=clean_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "Error: the query is too long (at most 2,000,000 characters)."
    assert lines[1].startswith("Query: emu") and "doc   2" in result.stdout.decode()


def test_same_answers_without_the_sidecar(engine):
    everything = "cat\ncat or dog\nemu and cat or dog\nyak\n"
    with_sidecar = query(engine, everything)
    os.remove(str(engine[1]) + ".bin")
    assert query(engine, everything) == with_sidecar


def test_bm25_reads_the_lengths_from_their_index_or_from_every_row(engine):
    pages, index = engine
    everything = "cat\ncat or dog\nemu and cat or dog\nyak\n"

    def bm25() -> bytes:
        result = run_tse("query", pages, index, "--rank", "bm25", input=everything.encode())
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        return result.stdout

    with contextlib.closing(sqlite3.connect(docs_path(index))) as db:
        plan = db.execute("EXPLAIN QUERY PLAN SELECT doc_id, length FROM docs").fetchall()
    assert "COVERING INDEX docs_lengths" in str(plan)
    with_index = bm25()
    assert b"score" in with_index
    with contextlib.closing(sqlite3.connect(docs_path(index))) as db:  # as a store written before it
        db.execute("DROP INDEX docs_lengths")
        db.commit()
    assert bm25() == with_index


class Terminal:
    """The controlling side of a pty: reads what the program writes, up to a marker."""

    def __init__(self, fd):
        self.fd, self.pending = fd, b""

    def expect(self, marker: bytes, timeout=10.0) -> bytes:
        deadline = time.monotonic() + timeout
        while marker not in self.pending and time.monotonic() < deadline:
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    self.pending += os.read(self.fd, 4096)
                except OSError:
                    break
        head, found, self.pending = self.pending.partition(marker)
        return head + found


def test_prompt_on_a_terminal_only(engine):
    pages, index = engine
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [str(BIN / "tse"), "query", str(pages), str(index)],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=clean_env(TERM="dumb"),
        cwd=ROOT,
    )
    os.close(terminal)
    screen = Terminal(controller)
    try:
        assert screen.expect(b"Query? ").endswith(b"Query? ")
        os.write(controller, b"emu and dog\n")
        answer = screen.expect(b"-" * 47)
        assert b"Query: emu and dog \r\nMatches 1 documents (ranked):\r\n" in answer
        assert screen.expect(b"Query? ").endswith(b"Query? ")
        os.write(controller, b"\x04")  # end of input
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        os.close(controller)
    assert "Query?" not in query(engine, "emu and dog\n")


def test_indextest_round_trip(engine, tmp_path):
    result = run_tse("indextest", engine[1], tmp_path / "copy")
    assert result.returncode == 0 and result.stdout == result.stderr == b""
    assert (tmp_path / "copy").read_bytes() == engine[1].read_bytes()


def one_line_failure(result):
    assert result.returncode != 0 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


def test_bad_invocations(engine, tmp_path):
    pages, index = engine
    bare = tmp_path / "bare"
    bare.mkdir()
    no_first = tmp_path / "nofirst"
    no_first.mkdir()
    (no_first / ".crawler").touch()
    (no_first / "2").write_text("u\n0\nx\n")
    assert "arguments" in one_line_failure(run_tse("index", pages))  # the command's own exit and line
    # The other refusals through the command's code in this process (their messages are the point).
    assert "unrecognized" in one_line_failure(tse_here("query", pages, index, "extra"))
    assert "arguments" in one_line_failure(tse_here("indextest", index))
    for command in ("index", "query"):
        assert "not a crawler directory" in one_line_failure(tse_here(command, bare, index))
        assert "no readable page 1" in one_line_failure(tse_here(command, no_first, index))
    assert "No such file" in one_line_failure(tse_here("query", pages, tmp_path / "missing"))
    assert "No such file" in one_line_failure(tse_here("indextest", tmp_path / "missing", tmp_path / "new"))
    assert "no directory" in one_line_failure(tse_here("index", pages, tmp_path / "nodir" / "index"))
    assert "is a directory" in one_line_failure(tse_here("index", pages, tmp_path))
    assert "is a directory" in one_line_failure(tse_here("indextest", index, tmp_path))


def test_another_crawls_directory_is_refused_in_every_ranking(engine, tmp_path):
    # It printed the other crawl's URLs for the index's docIDs and exited 0 (bm25 after a warning).
    index = engine[1]
    other = write_pages(tmp_path / "other", {1: ("http://elsewhere/index.html", 0, b"cat dog emu")})
    for rank in ("tse", "bm25", "relevance"):  # (the command itself for tse; its code in this process after)
        if rank == "tse":
            result = run_tse("query", other, index, "--rank", rank, input=b"cat\n")
        else:
            result = tse_here("query", other, index, "--rank", rank)
        assert result.returncode == 1
        assert one_line_failure(result) == (
            f"tse query: {other} is not the crawl {index} was written from (its page 1 is"
            " 'http://elsewhere/index.html', the index's 'http://h/one.html')"
        )


def test_a_page_whose_url_is_longer_than_a_url_line_is_read_is_still_its_crawls(tmp_path):
    # A URL of 70,000 bytes (an import took one): the page file's URL line is read to 64 KB, and the index
    # was refused as another crawl's, in a message holding the whole URL twice (1 MB for a URL of 900 KB).
    long_url = "http://e.com/?q=" + "b" * 70_000
    pages = write_pages(tmp_path / "pages", {1: ("http://e.com/", 0, b"cat"), 2: (long_url, 1, b"cat dog")})
    index = tmp_path / "index"
    assert tse_here("index", pages, index).returncode == 0
    found = tse_here("query", pages, index, "--rank", "relevance", input=b"dog\n")
    assert found.returncode == 0 and long_url.encode() in found.stdout, found.stderr
    # Another crawl's page 2 with such a URL: said, the URLs cut.
    other_url = long_url.replace("?q=", "?r=")
    other = write_pages(tmp_path / "other", {1: ("http://e.com/", 0, b"cat"), 2: (other_url, 1, b"cat")})
    refused = tse_here("query", other, index, "--rank", "relevance", input=b"dog\n")
    said = one_line_failure(refused)
    assert refused.returncode == 1 and said.startswith(f"tse query: {other} is not the crawl {index}")
    assert len(said) < 1_000 and said.count("\u2026") == 2, said


def test_a_page_whose_url_no_parser_takes_is_indexed_and_found(tmp_path):
    # "http://[e.com/a" (an archive's record held one): tse index failed with a traceback (the URL's
    # language, its links' host: urlsplit raises ValueError). Its relative links lead nowhere; the others count.
    pages = write_pages(
        tmp_path / "pages",
        {
            1: ("http://e.com/", 0, b"<p>hello world</p>"),
            2: (
                "http://[e.com/a",
                1,
                b'<title>t</title><p>hi <a href="b.html">bee</a> <a href="http://e.com/">e</a></p>',
            ),
            3: ("http://e.com/z", 1, b'<p>Ein langer Text <a href="http://[e.com/a">verweis</a></p>'),
        },
    )
    index = tmp_path / "index"
    done = tse_here("index", pages, index, "--jobs", "2")
    assert done.returncode == 0, done.stderr
    for rank, query in (("relevance", b"hi\n"), ("tse", b"bee\n")):
        found = tse_here("query", pages, index, "--rank", rank, input=query)
        assert found.returncode == 0 and b"doc   2: http://[e.com/a" in found.stdout, (rank, found.stdout)


def test_the_reference_index_alone_is_queried_with_its_crawls_urls(reference_dir, mirror, tmp_path):
    # No document store beside it (the reference indexer writes none): nothing says which crawl it was
    # written from, so it is queried as the reference querier would, with the page files' URLs.
    pages = build_page_directory(reference_dir, mirror, "letters-5", tmp_path / "letters")
    index = tmp_path / "letters.index"
    shutil.copyfile(reference_dir / "index" / "letters-5.index", index)
    counts = triples(index.read_bytes())
    rows = (reference_dir / "crawls" / "letters-5.tsv").read_text().splitlines()[1:]
    urls = dict(row.split("\t")[::2] for row in rows)
    scores: dict[int, int] = {}
    for word, doc_id, count in counts:
        if word in ("breadth", "depth"):
            scores[doc_id] = scores.get(doc_id, 0) + count
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    expected = f"Query: breadth or depth \nMatches {len(ranked)} documents (ranked):\n" + "".join(
        f"score {score:3d} doc {doc_id:3d}: {urls[str(doc_id)]}\n" for doc_id, score in ranked
    )
    assert len(ranked) >= 2
    result = run_tse("query", pages, index, input=b"breadth or depth\n")
    assert result.returncode == 0 and result.stderr == b""
    assert result.stdout.decode() == expected + D


SWAPPED = "; the arguments are PAGEDIR INDEXFILE: were they swapped?"


@pytest.mark.parametrize("command, status", [("index", 1), ("query", 1), ("serve", 2)])
def test_swapped_arguments_are_said_in_the_same_line(engine, tmp_path, command, status):
    pages, index = engine
    files = sorted(os.listdir(pages))
    before = index.read_bytes()
    result = run_tse(command, index, pages, input=b"")
    assert result.returncode == status
    assert (
        one_line_failure(result) == f"tse {command}: {index} is not a crawler directory (no readable .crawler){SWAPPED}"
    )
    assert sorted(os.listdir(pages)) == files and index.read_bytes() == before
    # No hint unless INDEXFILE is a crawler directory and PAGEDIR a file.
    bare = tmp_path / "bare"
    bare.mkdir()
    for pagedir, indexfile in ((index, bare), (bare, pages), (index, tmp_path / "missing")):
        # (The command's code in this process, but tse serve's: were it to refuse nothing, it would serve.)
        if command == "serve":
            result = run_tse(command, pagedir, indexfile, input=b"")
        else:
            result = tse_here(command, pagedir, indexfile)
        assert result.returncode == status
        assert one_line_failure(result) == f"tse {command}: {pagedir} is not a crawler directory (no readable .crawler)"


def test_an_index_is_not_written_over_the_crawls_own_files(engine, tmp_path):
    # (A tester's find: `tse index p0 p0/1` wrote the index over page 1, exit 0; p0/.crawler,
    # .tse-gone and .tse-pages.sqlite likewise, and the crawl could no longer be indexed or updated.)
    pages, _ = engine
    (pages / ".tse-gone").write_text("")
    before = {name: (pages / name).read_bytes() for name in os.listdir(pages)}
    for written, said in [
        (pages / "1", f"{pages / '1'} is a page file of the crawl {pages}"),
        (pages / "." / "2", f"{pages / '.' / '2'} is a page file of the crawl {pages}"),
        (pages / "5", f"{pages / '5'} is a page file of the crawl {pages}"),  # no page 5 yet: the crawl's next
        (pages / ".crawler", f"{pages / '.crawler'} is one of the crawl {pages}'s own files"),
        (pages / ".tse-gone", f"{pages / '.tse-gone'} is one of the crawl {pages}'s own files"),
    ]:
        for update in ([], ["--update"]):
            # The command for the first; its code in this process for the others (the messages are the point).
            first = written == pages / "1" and not update
            refused = (run_tse if first else tse_here)("index", pages, written, *update)
            assert refused.returncode == 1
            assert one_line_failure(refused) == f"tse index: {said}: write the index elsewhere"
    assert {name: (pages / name).read_bytes() for name in os.listdir(pages)} == before
    # Another name in PAGEDIR is the user's: the crawl still indexes (the index's files are not pages),
    # "01" and "٣" too, which are no page file's names (pages are 1, 2, 3 ...: "01" was refused as one).
    for name in ("01", "\u0663"):
        assert run_tse("index", pages, pages / name).returncode == 0
        for path in pages.glob(f"{name}*"):
            path.unlink()
    assert run_tse("index", pages, pages / "index").returncode == 0
    assert run_tse("index", pages, tmp_path / "again.index").returncode == 0
    assert (tmp_path / "again.index").read_bytes() == (pages / "index").read_bytes()


def test_an_unfinished_crawl_is_indexed_with_a_warning(engine, tmp_path):
    # (A tester's find: `tse index` of a directory still being crawled, or stopped, said nothing.)
    pages, _ = engine
    state = CrawlStateDB(state_path(pages))  # as a crawl starts: its state first, removed once finished
    state.set_arguments({"seed": "http://h/one.html", "depth": 1})
    state.db.close()
    warned = run_tse("index", pages, tmp_path / "part.index")
    assert warned.returncode == 0 and warned.stdout == b""
    assert warned.stderr.decode() == (
        f"tse index: warning: {pages} holds a crawl not finished (still running, or stopped: tse crawl --resume"
        " goes on with it): indexing the pages saved so far\n"
    )
    assert (tmp_path / "part.index").read_bytes() == (tmp_path / "index").read_bytes()  # the pages it has
    for path in pages.glob(".tse-state.sqlite*"):
        path.unlink()
    assert run_tse("index", pages, tmp_path / "part.index").stderr == b""
    # An update not finished is gone on with by --update --resume (it said --resume, which is refused).
    state = CrawlStateDB(state_path(pages))
    state.set_arguments({"seed": "http://h/one.html", "depth": 1}, {"catalog": "update"})
    state.db.close()
    assert run_tse("index", pages, tmp_path / "part.index").stderr.decode() == (
        f"tse index: warning: {pages} holds an update not finished (still running, or stopped: tse crawl --update"
        " --resume goes on with it): indexing the pages saved so far\n"
    )


def test_malformed_index_is_named_with_its_line(engine, tmp_path):
    pages, _ = engine
    bad = tmp_path / "bad.index"
    bad.write_text("cat 1 2\ndog 1 x\n")
    assert one_line_failure(run_tse("query", pages, bad)) == f"tse query: {bad}:2: not a positive integer: 'x'"
    refusal = one_line_failure(run_tse("indextest", bad, tmp_path / "new"))
    assert refusal.endswith(f"{bad}:2: not a positive integer: 'x'")
    assert not (tmp_path / "new").exists()


def test_failed_run_keeps_existing_index(engine, tmp_path):
    pages, index = engine
    before = index.read_bytes()
    (pages / "3").write_bytes(b"no depth line")  # a broken page file
    assert "not a page file" in one_line_failure(run_tse("index", pages, index))
    assert index.read_bytes() == before
    bad = tmp_path / "bad.index"
    bad.write_text("cat one\n")
    one_line_failure(run_tse("indextest", bad, index))
    assert index.read_bytes() == before
