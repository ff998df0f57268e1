"""Writing a file whole or not at all: a temporary ``.NAME.partial`` beside it, renamed into place."""

from __future__ import annotations

import os
from pathlib import Path


def partial_path(path: str | os.PathLike) -> Path:
    """Where ``write_atomically`` writes *path* before renaming it."""
    path = Path(path)
    return path.with_name(f".{path.name}.partial")


def write_atomically(path: str | os.PathLike, data: bytes, *, fsync: bool = False) -> None:
    """Replace *path* with *data*; an interrupted or failed write leaves *path* as it was."""
    temporary = partial_path(path)
    try:
        with open(temporary, "wb") as out:
            out.write(data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
