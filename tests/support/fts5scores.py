"""What the tests of FTS5's bm25() worked out in Python share: the words of their random tables (every
script, digits), a phrase as an FTS5 expression, and how equal a score must be to SQLite's own."""

import math
import platform

WORDS = ["a", "boot", "loader", "de", "sécurité", "установка", "インス", "ンス", "安装", "نصب", "3", "11"]


def same_scores(kept, asked):
    """Equal to the last bit where SQLite's C does the operations one at a time, as on x86-64; a C
    compiler fusing multiplies and adds (aarch64's default) moves a score by an ulp."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        return kept == asked
    return kept.keys() == asked.keys() and all(math.isclose(kept[k], asked[k], rel_tol=1e-12) for k in kept)


def quoted(phrase):
    """*phrase* (its tokens) as an FTS5 phrase."""
    return '"' + " ".join(phrase) + '"'
