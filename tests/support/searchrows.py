"""Reading a search index back in tests, to compare two of them row by row."""

from __future__ import annotations

import contextlib
from pathlib import Path

import apsw

from tse_scrapy.fulltext import store
from tse_scrapy.fulltext.store import search_path


def opened(indexfile: Path) -> contextlib.closing[apsw.Connection]:
    return contextlib.closing(apsw.Connection(str(search_path(indexfile))))


def search_rows(indexfile: Path) -> dict[str, list[tuple]]:
    """The search index's tables, and what each FTS5 table holds: every term where it stands (its
    fts5vocab instance table; its shadow tables say the same in a form that a build's history changes)."""
    with opened(indexfile) as db:
        tables = (
            "pages",
            "anchors",
            "links",
            "vocabulary",
            "respellings",
            "heads",
            "rests",
            "term_counts",
            "same",
            "groups",
        )
        found = {table: db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in tables}
        for table in store.FTS_TABLES:
            db.execute(f"CREATE VIRTUAL TABLE temp.{table}_held USING fts5vocab(main, {table}, instance)")
            found[table] = sorted(db.execute(f"SELECT * FROM temp.{table}_held").fetchall())
        return found
