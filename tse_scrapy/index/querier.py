"""The querier: answers queries read from stdin against an index (SPEC 4)."""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from typing import TextIO

from ..rules.crawling.secrets import shown_message
from ..rules.files import pagedir
from ..rules.web.urls import text_as_shown, url_as_shown
from .engine import Answer, QueryEngine
from .storage import IndexReader

PROMPT = "Query? "
# A line is read to at most this many characters: one endless line (hostile input) is not held whole.
# A longer one is read on to its end and answered as too long, whatever the rank: twice the 1 MB
# line answered in bounded time and memory (bench/RESULTS.md); rank=relevance refuses more than
# 1,000 characters anyway.
MAX_LINE_CHARACTERS = 2_000_000
DIVIDER = "-" * 47
# rank=relevance: a line with bytes that are no UTF-8, which stdin hands over as lone surrogates
# (surrogateescape: ``tse query`` reads them so whatever the locale).  rank=tse and bm25 answer such
# a line as the reference does: a bad character.  (A U+FFFD typed as UTF-8 is text.)
NOT_UTF8 = "Error: the query must be UTF-8 text."
_UNDECODED = re.compile("[\ud800-\udfff]")
SCORE_FORMATS = {
    "tse": "score {:3d} doc {:3d}: {}\n",
    "bm25": "score {:8.3f} doc {:3d}: {}\n",
    "relevance": "score {:8.3f} doc {:3d}: {}\n",
}


class Querier:
    """Answers query lines as the reference querier prints them (SPEC 4); BM25 scores with 3 decimals."""

    def __init__(self, directory: str | os.PathLike, index: IndexReader, ranking: str = "tse"):
        self.directory = directory
        self.engine = QueryEngine(directory, index)
        self.score_format = SCORE_FORMATS[ranking]
        self.ranking = ranking
        self._urls: dict[int, str] = {}
        self._store_failed = False  # the document store could not be read: the page files from then on

    def answer(self, line: str) -> str:
        """The output for one input line (without its newline), possibly empty."""
        if self.ranking == "relevance" and _UNDECODED.search(line):
            return NOT_UTF8 + "\n"
        answer = self.engine.answer(line, self.ranking)
        if answer is None:
            return ""
        if answer.search_query is not None:
            return self._relevance_lines(answer)
        if answer.query is None:
            return f"{answer.error}\n"
        echo = "Query: " + "".join(token + " " for token in answer.query.tokens) + "\n"
        if answer.error:
            return echo + answer.error + "\n"
        if not answer.ranked:
            return echo + "No documents match.\n" + DIVIDER + "\n"
        return echo + self._ranked_lines(answer, "ranked")

    def _relevance_lines(self, answer: Answer) -> str:
        """rank=relevance: the query as understood, the corrections, and the pages (partial matches said so)."""
        assert answer.search_query is not None
        # The query's bidirectional controls by their code points, as its pages' URLs are shown encoded.
        lines = "Query: " + text_as_shown(answer.search_query.typed()) + "\n"
        if answer.corrections:
            lines += (
                "Did you mean: "
                + ", ".join(f"{text_as_shown(typed)} -> {found}" for typed, found in answer.corrections.items())
                + "\n"
            )
        if not answer.ranked:
            return lines + "No documents match.\n" + DIVIDER + "\n"
        missing = text_as_shown(" or ".join(answer.missing)) or "every word"
        return lines + self._ranked_lines(
            answer, f"partial matches: no document has {missing}" if answer.partial else "ranked"
        )

    def _ranked_lines(self, answer: Answer, how: str) -> str:
        urls = self._urls
        self._find_urls([doc_id for doc_id, _ in answer.ranked if doc_id not in urls])
        line = self.score_format.format
        aliases = [alias for aliased in answer.aliases.values() for alias in aliased if alias not in urls]
        self._find_urls(aliases)
        lines = [f"Matches {len(answer.ranked)} documents ({how}):\n"]
        # A URL's password masked and its control characters percent-encoded (a page file a crawl did not
        # write may hold them), as every message shows one; its bidirectional controls too (a terminal
        # that lays out bidirectional text would let an override turn the line around).
        for doc_id, value in answer.ranked:
            lines.append(line(value, doc_id, shown_message(url_as_shown(urls[doc_id]))))
            # rank=relevance: the duplicates that answered too, under the page that stands for them
            also = answer.aliases.get(doc_id, ())
            lines += [f"      also at doc {alias:3d}: {shown_message(url_as_shown(urls[alias]))}\n" for alias in also]
        return "".join(lines) + DIVIDER + "\n"

    def url(self, doc_id: int) -> str:
        """Line 1 of page *doc_id*, or ``(no page file)``."""
        if doc_id not in self._urls:
            self._find_urls([doc_id])
        return self._urls[doc_id]

    def _find_urls(self, doc_ids: list[int]) -> None:
        """Cache the URLs of *doc_ids*: from the document store when it was written with this index
        and these very page files (the URLs it recorded are their line 1), else from the page files."""
        if not doc_ids:
            return
        store = None if self._store_failed else self.engine.stored_docs()
        if store is not None:
            try:
                self._urls.update(store.urls(doc_ids))
            except sqlite3.Error:  # damaged or truncated since it was opened: the page files, as without it
                self._store_failed = True
        for doc_id in doc_ids:
            if doc_id not in self._urls:
                try:
                    self._urls[doc_id] = pagedir.read_page_url(self.directory, doc_id)
                except OSError:
                    self._urls[doc_id] = "(no page file)"


def run(querier: Querier, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    """Answer every line of *stdin* until EOF; prompt only on a terminal."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if stdin is None:  # closed (``<&-``): no query to read, as at the end of input
        return
    interactive = stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401  (line editing and history for input())
        except ImportError:
            pass
    while True:
        if interactive and stdin is sys.stdin:
            try:
                line = input(PROMPT)
            except EOFError:
                stdout.write("\n")
                break
        else:
            if interactive:
                stdout.write(PROMPT)
                stdout.flush()
            line = stdin.readline(MAX_LINE_CHARACTERS + 1)
            if not line:
                break
            if len(line) > MAX_LINE_CHARACTERS and not line.endswith("\n"):
                while (rest := stdin.readline(MAX_LINE_CHARACTERS)) and not rest.endswith("\n"):
                    pass
                stdout.write(f"Error: the query is too long (at most {MAX_LINE_CHARACTERS:,} characters).\n")
                stdout.flush()
                continue
            line = line.removesuffix("\n")
        stdout.write(querier.answer(line))
        stdout.flush()
