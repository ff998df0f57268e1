"""Compiled copies of the modules a search spends its time in, used only while they are current.

``make`` compiles the modules of MODULES with Cython, next to their sources, and lists in MANIFEST
each source's size and modification time when it was compiled.  A module's source is its ``.py``,
compiled as it is, but where a ``.pyx`` of the same name is beside it (typed code of our own that
gives what the ``.py`` gives: ``rules/text/wordpass``): that is compiled, and its copy checked against
it; the ``.py`` is what is loaded without a copy.  The finder installed here loads a module's
compiled copy only while its source still has that size and time; else, or with
``TSE_PURE_PYTHON=1`` set, or with no compiled copy (no C compiler, a wheel), the source is loaded,
as it would be without this module.  The compiled code is the same code (or, from a ``.pyx``, code
giving the same): it answers the same (the tests run on it), with fewer instructions (docs/search.md).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

# A search's modules (about 15 % fewer instructions a query compiled); the indexer runs three of them.
# Its own modules' time is mostly in C already (regular expressions, str and bytes methods): 2 % fewer
# instructions compiled, not worth it.
MODULES = (
    "tse_scrapy.fulltext.bm25function",
    "tse_scrapy.fulltext.matching",
    "tse_scrapy.fulltext.searcher",
    "tse_scrapy.index.docstore",
    "tse_scrapy.index.engine",
    "tse_scrapy.index.storage",
    "tse_scrapy.rules.queries.fts5bm25",
    "tse_scrapy.rules.queries.query",
    "tse_scrapy.rules.queries.ranking",
    "tse_scrapy.rules.queries.searchquery",
    "tse_scrapy.rules.queries.searchsnippet",
    "tse_scrapy.rules.text.analysis",
    "tse_scrapy.rules.text.markuppass",  # a page's visible text and links, for the indexer (its .pyx)
    "tse_scrapy.rules.text.wordpass",  # the indexer's word counts and analysis (its .pyx)
)
# What a module's .pyx mirrors (files beside it: its .py, whose Python path it gives; the tables and
# patterns it copies): its compiled copy is current only while they are unchanged too, and `make`
# compiles it again when one of them changes.
MIRRORS = {
    "tse_scrapy.rules.text.markuppass": ("markuppass.py", "cleaning.py"),
    "tse_scrapy.rules.text.wordpass": ("wordpass.py", "analysis.py", "words.py"),
}
MANIFEST = Path(__file__).with_name("compiled-modules.json")
PURE_PYTHON = "TSE_PURE_PYTHON"  # set to 1: every module from its source


class CompiledFinder:
    """A ``sys.meta_path`` finder choosing, for each of *modules*, its compiled copy listed in the
    manifest at *manifest* when its source is unchanged since, else its source."""

    def __init__(self, modules: Sequence[str], manifest: Path, mirrors: Mapping[str, Sequence[str]] | None = None):
        """*mirrors*: what each module's ``.pyx`` mirrors (MIRRORS)."""
        self.modules = frozenset(modules)
        self.manifest_path = manifest
        self.mirrors = dict(mirrors or {})
        self._manifest: dict[str, dict[str, object]] | None = None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.modules:
            return None
        name = fullname.rpartition(".")[2]
        for directory in path or ():
            source = os.path.join(directory, name + ".py")
            if os.path.isfile(source):
                break
        else:  # not in a folder (a zipped egg): the usual finders' to find
            return None
        typed = source[: -len(".py")] + ".pyx"
        compiled_from = typed if os.path.isfile(typed) else source
        compiled = None if os.environ.get(PURE_PYTHON) == "1" else self.current_copy(fullname, compiled_from)
        if compiled is None:
            # Named explicitly: in the folder the compiled copy would come first.
            return importlib.util.spec_from_file_location(fullname, source)
        loader = importlib.machinery.ExtensionFileLoader(fullname, compiled)
        return importlib.util.spec_from_file_location(fullname, compiled, loader=loader)

    def current_copy(self, fullname: str, source: str) -> str | None:
        """The compiled copy of *fullname* when the manifest lists one made from *source* (its ``.py``, or
        its ``.pyx``) as it is now, and from what that mirrors (``mirrors``) as it is now."""
        entry = self.entries().get(fullname)
        file = entry.get("file") if isinstance(entry, dict) else None
        name = fullname.rpartition(".")[2]
        if file not in [name + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES]:
            return None  # none, made for another interpreter, or not beside its source
        try:
            status = os.stat(source)
        except OSError:
            return None
        if [status.st_size, status.st_mtime_ns] != [entry.get("size"), entry.get("mtime_ns")]:
            return None
        if mirrored_states(os.path.dirname(source), self.mirrors.get(fullname, ())) != entry.get("mirrors", {}):
            return None
        copy = os.path.join(os.path.dirname(source), file)
        return copy if os.path.isfile(copy) else None

    def entries(self) -> dict[str, dict[str, object]]:
        """The manifest's entries by module, read once (none when it cannot be read)."""
        if self._manifest is None:
            try:
                found = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                found = {}
            self._manifest = found if isinstance(found, dict) else {}
        return self._manifest


def mirrored_states(directory: str, names: Sequence[str]) -> dict[str, list[int] | None]:
    """The size and modification time of each file of *names* in *directory* (None: it cannot be read),
    as the manifest lists them (none listed for none mirrored)."""
    states: dict[str, list[int] | None] = {}
    for name in names:
        try:
            status = os.stat(os.path.join(directory, name))
            states[name] = [status.st_size, status.st_mtime_ns]
        except OSError:
            states[name] = None
    return states


def install() -> None:
    """Put the finder of MODULES first in ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, CompiledFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, CompiledFinder(MODULES, MANIFEST, MIRRORS))


def loaded_compiled(module: ModuleType) -> bool:
    """Whether *module* was loaded from a compiled copy."""
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)
