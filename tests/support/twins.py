"""The Python path of a module compiled from a ``.pyx`` of its own (``tse_scrapy/compiled.py``): its
``.py`` beside it, loaded under another name, to compare the two."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def python_path(module: ModuleType) -> ModuleType:
    """*module*'s ``.py`` loaded as a module of its own (``NAME_python_path``), whichever copy *module* is."""
    source = Path(module.__file__).with_name(module.__name__.rpartition(".")[2] + ".py")
    spec = importlib.util.spec_from_file_location(module.__name__ + "_python_path", source)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded
