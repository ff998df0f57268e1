"""FTS5's ``bm25()`` as an auxiliary function in Python: the same float, without FTS5's walk of every
phrase's rows.

To weigh a phrase, FTS5's own ``bm25()`` counts the rows holding it by walking its whole list of rows
(``xQueryPhrase``), each statement again: on the known-item bench that walk was four fifths of the
scoring statement, whose median matches 8 rows.  This function takes a word's count from the
vocabulary (kept for the query's words anyway, ``matching.Vocabulary``), and a phrase of several
words' from there too, counted once (the index is read-only); each matched row is then scored in
Python (``rules.queries.fts5bm25.score``), which costs more a row than FTS5's C: ``worth_it`` says when.

The contract, which ``SearchIndex`` keeps: an expression of plain quoted phrases joined by AND and OR
(``fts5bm25.plain_phrases``: a column filter, ``^`` or a prefix query would make a word's rows other
than the vocabulary's count), over the one read-only table the function was registered for, with
whole-number column weights (FTS5 adds a column's weight once an instance, which a product equals
only then).  Only on apsw's connections: the standard library's sqlite3 has no FTS5 auxiliary functions.

Where a search weighs a word's forms as one (``weighed``: ``SearchIndex._forms_weighed``), a form
counts as held by that many rows instead: the float FTS5's bm25() gives corrected form by form
(``SearchIndex._add_weighing``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import apsw

from ..rules.queries import fts5bm25
from .matching import Vocabulary

# What FTS5's bm25() costs besides its scoring of a row, in rows scored here: a phrase of the
# statement (its setup and walk) about 80, and its walk about one row for 50 walked; a row scored
# here costs a sixteenth more for each phrase of the statement, which it looks at (``worth_it``).
ROWS_SCORED_A_PHRASE = 80
ROWS_WALKED_A_ROW_SCORED = 50
PHRASES_DOUBLING_A_ROW = 16


class Bm25Function:
    """``bm25()`` of one FTS5 table, registered on its connection under a name, called with the same
    column weights."""

    def __init__(self, db: apsw.Connection, table: str, vocabulary: Vocabulary, name: str):
        self.table = table
        self._vocabulary = vocabulary
        # The rows a word counts as held by, where it is one of a word's forms weighed as one, for the
        # search under way (``SearchIndex._forms_weighed``): FTS5's bm25() weighs each form apart.
        self.weighed: dict[str, int] = {}
        db.register_fts5_function(name, self._bm25)

    @staticmethod
    def usable(weights: Sequence[float]) -> bool:
        """Whether the function gives FTS5's float for these column weights (whole numbers)."""
        return all(float(weight).is_integer() and abs(weight) < 2**20 for weight in weights)

    @staticmethod
    def worth_it(rows: int, phrases: int, walked: int) -> bool:
        """Whether scoring here beats FTS5's own for an expression of *phrases* phrases matching at
        most *rows* rows, whose words' lists FTS5 would walk *walked* rows of: whether
        rows x (1 + phrases / 16) <= 80 x phrases + walked / 50.  A row costs about 3 us here, more
        with more phrases, about 0.8 us in FTS5, which pays 30-300 us a phrase to set up and 0.06 us
        a row walked.  Measured on each body scoring statement of the known-item titles (typed, with a
        typo, and 3 to 8 words joined by OR) and of the 20,000-page bench's titles and OR queries
        (bench/RESULTS.md): within 10 % of the faster way on every set; an earlier rule (a phrase of
        a row as 4 rows walked) scored the 20,000 pages' titles 3 times as slowly as FTS5."""
        scored = rows * (PHRASES_DOUBLING_A_ROW + phrases) * ROWS_WALKED_A_ROW_SCORED
        return scored <= PHRASES_DOUBLING_A_ROW * (phrases * ROWS_SCORED_A_PHRASE * ROWS_WALKED_A_ROW_SCORED + walked)

    def _bm25(self, api: apsw.FTS5ExtensionApi, *weights: float) -> float:
        # The phrases' IDFs and the average row, once a statement (kept by FTS5 for the statement's
        # calls of this function, whatever their weights); each call's column weights, once a
        # call site: as FTS5 reads them, a column past the weights given weighs 1.
        kept = api.aux_data
        if kept is None:
            rows = api.row_count
            average = float(api.column_total_size(-1)) / float(rows)
            idfs = [fts5bm25.idf(rows, self._rows_holding(api, number)) for number in range(len(api.phrases))]
            kept = api.aux_data = (idfs, average, {}, any(map(math.isnan, idfs)))
        idfs, average, weights_read, damaged = kept
        if damaged:  # more rows hold a phrase than the table has: FTS5 scores every row NaN
            return math.nan
        column_weights = weights_read.get(weights)
        if column_weights is None:
            given = len(weights)
            columns = range(api.column_count)
            column_weights = weights_read[weights] = [float(weights[c]) if c < given else 1.0 for c in columns]
        # The phrases in the row (most of a query's, word forms joined by OR, are not), each with its
        # instances a column times the column's weight (a weight of 0 adds nothing): a phrase not in
        # the row adds exactly 0.0 to FTS5's sum, so leaving it out gives the same float.
        columns_holding, offsets = api.phrase_columns, api.phrase_column_offsets
        frequencies, held = [], []
        for number, value in enumerate(idfs):
            columns = columns_holding(number)
            if columns:
                frequency = 0.0
                for column in columns:
                    if column_weights[column]:
                        frequency += column_weights[column] * len(offsets(number, column))
                frequencies.append(frequency)
                held.append(value)
        return fts5bm25.score(frequencies, held, api.column_size(-1), average)

    def _rows_holding(self, api: apsw.FTS5ExtensionApi, number: int) -> int:
        """How many rows hold phrase *number* of the statement's expression: the vocabulary's count
        (a word's counted together with the query's others, a longer phrase's kept)."""
        phrase = api.phrases[number]
        if None in phrase:  # a token FTS5 does not give: walked each time
            return _walked(api, number)
        if len(phrase) == 1 and (weighed := self.weighed.get(phrase[0])) is not None:  # type: ignore[arg-type]
            return weighed
        return self._vocabulary.holding(phrase, self.table)  # type: ignore[arg-type]  (no None in it)


def _walked(api: apsw.FTS5ExtensionApi, number: int) -> int:
    """The rows holding phrase *number*, counted by FTS5's walk of them."""
    counted = [0]
    api.query_phrase(number, _count_row, counted)
    return counted[0]


def _count_row(_api: apsw.FTS5ExtensionApi, counted: list[int]) -> None:
    counted[0] += 1
