"""A hostile pickle for the tests of entries a client of Redis plants: it creates a file if ever unpickled."""

from __future__ import annotations

from pathlib import Path


class Planted:
    """Pickled, loads as ``open(path, "w")``: *path* exists afterwards only if something unpickled it."""

    def __init__(self, path: Path | str):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))
