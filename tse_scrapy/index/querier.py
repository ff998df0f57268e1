"""The querier: answers queries read from stdin against an index (SPEC 4)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from ..rules import pagedir
from ..rules.query import QueryError, is_blank, parse_query, rank, score, structure_error
from .storage import IndexReader

PROMPT = "Query? "
DIVIDER = "-" * 47


class Querier:
    """Answers query lines with the index and the page directory's URLs."""

    def __init__(self, directory: str | os.PathLike, index: IndexReader):
        self.directory = directory
        self.index = index
        self._urls: dict[int, str] = {}

    def answer(self, line: str) -> str:
        """The output for one input line (without its newline), possibly empty."""
        if is_blank(line):
            return ""
        try:
            query = parse_query(line)
        except QueryError as error:
            return f"{error}\n"
        echo = "Query: " + "".join(token + " " for token in query.tokens) + "\n"
        problem = structure_error(query)
        if problem:
            return echo + problem + "\n"
        ranked = rank(score(query, self.index.postings))
        if not ranked:
            return echo + "No documents match.\n" + DIVIDER + "\n"
        lines = [echo, f"Matches {len(ranked)} documents (ranked):\n"]
        lines += [f"score {value:3d} doc {doc_id:3d}: {self.url(doc_id)}\n" for doc_id, value in ranked]
        return "".join(lines) + DIVIDER + "\n"

    def url(self, doc_id: int) -> str:
        if doc_id not in self._urls:
            try:
                self._urls[doc_id] = pagedir.read_page_url(self.directory, doc_id)
            except OSError:
                self._urls[doc_id] = "(no page file)"
        return self._urls[doc_id]


def run(querier: Querier, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    """Answer every line of *stdin* until EOF; prompt only on a terminal."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
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
            line = stdin.readline()
            if not line:
                break
            line = line.removesuffix("\n")
        stdout.write(querier.answer(line))
        stdout.flush()
