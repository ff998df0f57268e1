"""FTS5's ``bm25()`` as an auxiliary function in Python: the same float, without FTS5's walk of every
phrase's rows.

To weigh a phrase, FTS5's own ``bm25()`` counts the rows holding it by walking its whole list of rows
(``xQueryPhrase``), each statement again: on the known-item bench that walk was four fifths of the
scoring statement, whose median matches 8 rows.  This function takes a word's count from the
vocabulary (kept for the query's words anyway, ``matching.Vocabulary``) and walks only a phrase of
several words, once a phrase (the index is read-only); each matched row is then scored in Python
(``rules.queries.fts5bm25.score``), so it pays only where few rows match: ``SearchIndex`` asks it for
statements matching at most ``ROWS_SCORED_HERE`` rows by their words' counts, FTS5's own for the others.

Only on apsw's connections (the standard library's sqlite3 has no FTS5 auxiliary functions), and
for whole-number column weights: FTS5 adds a column's weight once an instance, which a product
equals only then.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from ..rules.queries import fts5bm25
from .matching import Vocabulary

# A statement is scored here when its rows, by its words' counts, are at most this many (measured on
# the known-item bench: below about 100 rows this is faster, above about 150 FTS5's own).
ROWS_SCORED_HERE = 200
# Phrases of several words whose rows are counted and kept (an entry is a few hundred bytes).
PHRASE_COUNTS_KEPT = 100_000


class Bm25Function:
    """``bm25()`` of one FTS5 table, registered on its connection as ``name``, called with the same
    column weights."""

    def __init__(self, db: apsw.Connection, table: str, vocabulary: Vocabulary, name: str):
        self.table = table
        self.name = name
        self._vocabulary = vocabulary
        self._held: dict[tuple[str | None, ...], int] = {}  # a phrase of several words -> its rows
        db.register_fts5_function(name, self._bm25)

    @staticmethod
    def usable(weights: Sequence[float]) -> bool:
        """Whether the function gives FTS5's float for these column weights (whole numbers)."""
        return all(float(weight).is_integer() and abs(weight) < 2**20 for weight in weights)

    def _bm25(self, api: apsw.FTS5ExtensionApi, *weights: float) -> float:
        data = api.aux_data  # worked out once a statement
        if data is None:
            rows = api.row_count
            average = float(api.column_total_size(-1)) / float(rows)
            idfs = [fts5bm25.idf(rows, self._rows_holding(api, number)) for number in range(len(api.phrases))]
            columns = api.column_count
            # As FTS5 reads them: a column past the weights given weighs 1.
            weighed = [float(weights[column]) if column < len(weights) else 1.0 for column in range(columns)]
            data = api.aux_data = (idfs, average, weighed)
        idfs, average, weighed = data
        # Each phrase's instances a column it is in (most of a query's phrases, word forms joined by
        # OR, are in none of a row's columns), times the column's weight; a weight of 0 adds nothing.
        columns_holding, offsets = api.phrase_columns, api.phrase_column_offsets
        frequencies = []
        for number in range(len(idfs)):
            frequency = 0.0
            for column in columns_holding(number):
                if weighed[column]:
                    frequency += weighed[column] * len(offsets(number, column))
            frequencies.append(frequency)
        return fts5bm25.score(frequencies, idfs, api.column_size(-1), average)

    def _rows_holding(self, api: apsw.FTS5ExtensionApi, number: int) -> int:
        """How many rows hold phrase *number* of the statement's expression."""
        phrase = api.phrases[number]
        known = None not in phrase  # (a token FTS5 does not give is None: such a phrase is walked each time)
        if len(phrase) == 1 and known:
            return self._vocabulary.documents(phrase[0], self.table)
        found = self._held.get(phrase) if known else None
        if found is None:
            counted = [0]
            api.query_phrase(number, _count_row, counted)
            found = counted[0]
            if known:
                if len(self._held) >= PHRASE_COUNTS_KEPT:
                    self._held.clear()
                self._held[phrase] = found
        return found


def _count_row(_api: apsw.FTS5ExtensionApi, counted: list[int]) -> None:
    counted[0] += 1
