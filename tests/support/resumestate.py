"""A crawl's resume state (``JOBDIR/tse-state.sqlite``) set as a kill at a chosen instant leaves it."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def uncommitted(jobdir: Path, doc_id: int) -> None:
    """The state as a kill between page file *doc_id*'s rename and its commit leaves it: the page back
    in the frontier as being written under that docID, not recorded, the next docID its own."""
    db = sqlite3.connect(jobdir / "tse-state.sqlite")
    try:
        with db:
            db.execute(
                "INSERT INTO frontier (request, writing_doc) SELECT request, doc_id FROM pages WHERE doc_id = ?",
                (doc_id,),
            )
            db.execute("DELETE FROM pages WHERE doc_id = ?", (doc_id,))
            db.execute("UPDATE meta SET value = ? WHERE key = 'next_doc_id'", (str(doc_id),))
    finally:
        db.close()
