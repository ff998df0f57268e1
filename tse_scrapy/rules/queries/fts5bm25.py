"""SQLite FTS5's ``bm25()`` worked out in Python: for a field whose rows are kept in memory (titles),
and for the rows an FTS5 auxiliary function is given.

FTS5 scores a row of a one-column table (``fts5Bm25Function``, fts5_aux.c) as

    -sum over the expression's phrases i of
        idf(i) * f(i) * (k1 + 1) / (f(i) + k1 * (1 - b + b * D / avgdl))

    idf(i) = ln((N - n(i) + 0.5) / (n(i) + 0.5)), 1e-6 when that is not above 0

with N the table's rows, n(i) the rows holding phrase i, f(i) its instances in
the row, D the row's tokens, avgdl the table's tokens over N; k1 = 1.2, b =
0.75.  In a table of several columns, f(i) counts each instance its column's
weight and D is the row's tokens in all its columns.  Every phrase of the
expression counts, one written twice twice.  Asked of FTS5, each query walks
each phrase's whole list of rows to count n(i), and every row holding any
phrase is scored; here n(i) is counted once a phrase (the index is read-only)
and only the rows asked for are scored, to the same float (the same
operations in the same order).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

K1 = 1.2
B = 0.75
LEAST_IDF = 1e-6
# Groups nested deeper than this in an expression are not read (FTS5 scores it): the expressions
# the searcher builds nest one deep.
MAX_NESTING = 100

# The ascii tokenizer's separators: ASCII characters other than letters and digits (every other
# character is part of a token); ASCII letters are lowered.
_SEPARATORS = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
# The pieces of a match expression: a quoted phrase (and the * of a prefix query after it), a
# parenthesis, OR, anything else.
_PIECE = re.compile(r'"((?:[^"]|"")*)"(\*?)|(\()|(\))|(OR)(?![^\s()"])|(\S)')
# The pieces of an expression for ``plain_phrases``: a quoted phrase with whatever follows it up to a
# separator (a prefix query's *), a parenthesis, a run of anything else, a quote left open.
_PLAIN_PIECE = re.compile(r'"(?:[^"]|"")*"[^\s()"]*|[()]|[^\s()"]+|"')


def ascii_tokens(text: str) -> tuple[str, ...]:
    """*text*'s tokens as FTS5's ``ascii`` tokenizer makes them."""
    lowered = text.translate(_ASCII_LOWER) if not text.islower() else text
    return tuple(token for token in _SEPARATORS.split(lowered) if token)


def expression_phrases(expression: str) -> list[tuple[str, ...]] | None:
    """The phrases of a match expression of quoted phrases joined by ``OR`` (a group of them in
    parentheses standing for a phrase), in the order FTS5 numbers them; None for any other
    expression (phrases side by side, ``AND``, ``NOT``, a column filter, a prefix query ``"x"*``, one
    FTS5 refuses), which a row matches in ways not counted here."""
    phrases: list[tuple[str, ...]] = []
    pieces = list(_PIECE.finditer(expression))
    position = 0
    depth = 0

    def alternatives() -> bool:  # a phrase or a group, then any number of "OR" and another
        nonlocal position, depth
        while True:
            if position == len(pieces):
                return False
            phrase, star, opening = pieces[position].group(1, 2, 3)
            position += 1
            if opening:
                depth += 1
                # (Compiled, a recursion past the C stack would end the process, not raise.)
                if depth > MAX_NESTING or not alternatives():
                    return False
                depth -= 1
                if position == len(pieces) or not pieces[position].group(4):
                    return False
                position += 1
            elif phrase is None or star:
                return False
            else:
                phrases.append(ascii_tokens(phrase.replace('""', '"')))
            if position == len(pieces) or not pieces[position].group(5):
                return True
            position += 1

    if not pieces or not alternatives() or position != len(pieces):
        return None
    return phrases


def idf(rows: int, hits: int) -> float:
    """The IDF of a phrase held by *hits* of a table's *rows*."""
    ratio = (rows - hits + 0.5) / (hits + 0.5)
    # More hits than rows (a damaged table): C's log() of a negative number is NaN, which FTS5 keeps.
    value = math.log(ratio) if ratio > 0.0 else math.nan
    return LEAST_IDF if value <= 0.0 else value


def plain_phrases(expression: str) -> bool:
    """Whether *expression* is quoted phrases joined by AND and OR, in parentheses or not: nothing
    that changes which rows a phrase is counted in (a column filter, ``^``, a prefix query ``"x"*``,
    NEAR, NOT)."""
    pieces = _PLAIN_PIECE.findall(expression)
    phrases = [piece for piece in pieces if piece not in ("(", ")", "AND", "OR")]
    return bool(phrases) and all(len(piece) > 1 and piece.endswith('"') for piece in phrases)


def instances(tokens: tuple[str, ...], phrase: tuple[str, ...]) -> int:
    """How many times *phrase* stands in *tokens* (overlapping instances counted, as FTS5 does)."""
    if len(phrase) <= 1:
        return tokens.count(phrase[0]) if phrase else 0
    size, first, count, start = len(phrase), phrase[0], 0, 0
    try:
        while True:  # each place the first token stands, found in C
            start = tokens.index(first, start)
            count += tokens[start : start + size] == phrase
            start += 1
    except ValueError:
        return count


def bm25(
    tokens: tuple[str, ...], phrases: Sequence[tuple[str, ...]], idfs: Sequence[float], average: float
) -> float | None:
    """The ``bm25()`` of a row of *tokens* for *phrases* (their *idfs*) in a table whose rows hold
    *average* tokens; None when the row holds none of them (FTS5 does not return it)."""
    frequencies = [tokens.count(phrase[0]) if len(phrase) == 1 else instances(tokens, phrase) for phrase in phrases]
    if not any(frequencies):
        return None
    return score(frequencies, idfs, len(tokens), average)


def score(frequencies: Sequence[float], idfs: Sequence[float], length: int, average: float) -> float:
    """The ``bm25()`` of a row of *length* tokens whose phrases (their *idfs*) stand *frequencies* times
    (each instance counted its column's weight) in a table whose rows hold *average* tokens."""
    # FTS5 works this out again for each phrase, to the same float.
    saturation = K1 * (1 - B + B * float(length) / average)
    total = 0.0
    for value, frequency in zip(idfs, frequencies, strict=True):
        total += value * ((frequency * (K1 + 1.0)) / (frequency + saturation))
    return -1.0 * total


def averages(record: bytes) -> tuple[int, int]:
    """The rows and tokens of a one-column FTS5 table, from its averages record (the ``block`` of
    row 1 of its ``_data`` table: SQLite varints, the rows, then each column's tokens)."""
    values = []
    position = 0
    while position < len(record) and len(values) < 2:
        value = 0
        for step in range(9):
            if position >= len(record):
                raise ValueError("an averages record cut short")
            byte = record[position]
            position += 1
            if step == 8:  # the ninth byte gives all its 8 bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    if len(values) < 2:
        raise ValueError("an averages record without a column's tokens")
    if any(value >= 1 << 63 for value in values):  # FTS5's counts are signed: a damaged record
        raise ValueError("an averages record with a negative count")
    return values[0], values[1]
