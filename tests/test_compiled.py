"""The compiled copies of a search's modules (tse_scrapy/compiled.py, built by ``make``): used while
their source is unchanged, the source otherwise, and answering exactly as the sources do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, run_tse
from tests.support.multilingual import fixture_pages, write_fixture_directory
from tse_scrapy import compiled
from tse_scrapy.devtools import compile as compiler


def python(code: str, *, cwd=ROOT, **env) -> str:
    """What *code* prints, run by a fresh interpreter in *cwd* with *env* added."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=clean_env(**env), timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def can_compile() -> bool:
    """Whether `make` can compile here: Cython, a C compiler and the Python headers."""
    try:
        import Cython  # noqa: F401
    except ImportError:
        return False
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(compiler) is not None and Path(sysconfig.get_path("include"), "Python.h").is_file()


# The tests of the copies `make test` made: none where it cannot compile, or runs the sources as asked.
compiled_by_make = pytest.mark.skipif(
    os.environ.get(compiled.PURE_PYTHON) == "1" or not can_compile(),
    reason="TSE_PURE_PYTHON=1, or no Cython, C compiler or Python headers: `make` runs the sources",
)


@compiled_by_make
def test_make_compiled_every_module_of_a_search_and_they_are_used():
    # `make test` compiles them first; run from a fresh interpreter, as `tse serve` would be.
    loaded = json.loads(
        python(
            "import importlib, json; from tse_scrapy import compiled\n"
            "print(json.dumps({name: compiled.loaded_compiled(importlib.import_module(name))"
            " for name in compiled.MODULES}))"
        )
    )
    assert loaded == dict.fromkeys(compiled.MODULES, True), "run make: it compiles them"
    # And with TSE_PURE_PYTHON=1, none.
    pure = python(
        "import importlib; from tse_scrapy import compiled\n"
        "print(sum(compiled.loaded_compiled(importlib.import_module(name)) for name in compiled.MODULES))",
        TSE_PURE_PYTHON="1",
    )
    assert pure.strip() == "0"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """A package of two modules under a fresh folder, one of them compiled."""
    root = tmp_path_factory.mktemp("compiled")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "fast.py").write_text("def answer() -> str:\n    return 'as compiled'\n")
    (root / "pkg" / "plain.py").write_text("def answer() -> str:\n    return 'plain'\n")
    manifest = root / "pkg" / "compiled.json"
    done = compiler.build(root, ("pkg.fast",), manifest, root / "build")
    assert done == ["pkg.fast"]
    return root, manifest


def importing(root, manifest, module="pkg.fast", **env) -> tuple[str, bool]:
    """What *module*'s ``answer()`` gives, imported by a fresh interpreter through the finder of
    ``pkg.fast``, and whether the compiled copy answered."""
    code = (
        "import importlib, json, sys; from pathlib import Path; from tse_scrapy import compiled\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        f"sys.meta_path.insert(0, compiled.CompiledFinder(('pkg.fast',), Path({str(manifest)!r})))\n"
        f"module = importlib.import_module({module!r})\n"
        "print(json.dumps([module.answer(), compiled.loaded_compiled(module)]))"
    )
    answer, is_compiled = json.loads(python(code, **env))
    return answer, is_compiled


def test_a_compiled_copy_is_used_while_its_source_is_unchanged(package):
    root, manifest = package
    assert list((root / "pkg").glob("fast.*.so")), "the copy lies next to its source"
    assert importing(root, manifest) == ("as compiled", True)
    assert importing(root, manifest, "pkg.plain") == ("plain", False)  # not listed: the usual import
    assert importing(root, manifest, TSE_PURE_PYTHON="1") == ("as compiled", False)


def test_a_changed_source_is_used_as_it_is_until_compiled_again(tmp_path):
    root = tmp_path
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    source = root / "pkg" / "fast.py"
    source.write_text("def answer() -> str:\n    return 'first'\n")
    manifest = root / "pkg" / "compiled.json"
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build") == ["pkg.fast"]
    assert importing(root, manifest) == ("first", True)
    # Edited after it was compiled: the folder's finder would take the stale copy; this one takes the source.
    source.write_text("def answer() -> str:\n    return 'second'\n")
    assert importing(root, manifest) == ("second", False)
    # Compiled again (only what changed), then the copy again; nothing left to compile after.
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build") == ["pkg.fast"]
    assert importing(root, manifest) == ("second", True)
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build") == []
    # Put back with a time older than the build's own files (cp -p, tar x): used as it is, then
    # compiled anew, not taken from what the build made before.
    source.write_text("def answer() -> str:\n    return 'third'\n")
    os.utime(source, ns=(1, 1))
    assert importing(root, manifest) == ("third", False)
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build") == ["pkg.fast"]
    assert importing(root, manifest) == ("third", True)
    # The same size and time as listed, but other bytes: compiled again.
    source.write_text("def answer() -> str:\n    return 'fifth'\n")
    os.utime(source, ns=(1, 1))
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build") == ["pkg.fast"]
    assert importing(root, manifest) == ("fifth", True)


def test_a_pyx_copy_is_current_only_while_what_it_mirrors_is_unchanged(tmp_path):
    # A .pyx gives what its .py gives from tables it copies (wordpass.pyx: analysis.py's and words.py's):
    # one of them changed, the copy no longer answers as the sources do, and the .py is used until
    # `make` compiles the .pyx again (it did not: a .pyx alone was fingerprinted).
    root = tmp_path
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "table.py").write_text("WORD = 'first'\n")
    (root / "pkg" / "fast.py").write_text("from .table import WORD\n\ndef answer() -> str:\n    return WORD\n")
    (root / "pkg" / "fast.pyx").write_text("def answer():\n    return 'first'  # table.WORD, copied\n")
    manifest = root / "pkg" / "compiled.json"
    mirrors = {"pkg.fast": ("fast.py", "table.py")}
    code = (
        "import importlib, json, sys; from pathlib import Path; from tse_scrapy import compiled\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        f"sys.meta_path.insert(0, compiled.CompiledFinder(('pkg.fast',), Path({str(manifest)!r}), {mirrors!r}))\n"
        "module = importlib.import_module('pkg.fast')\n"
        "print(json.dumps([module.answer(), compiled.loaded_compiled(module)]))"
    )
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build", mirrors=mirrors) == ["pkg.fast"]
    assert json.loads(python(code)) == ["first", True]
    (root / "pkg" / "table.py").write_text("WORD = 'second'\n")
    assert json.loads(python(code)) == ["second", False]
    # Its copy made again from the .pyx brought up to date; nothing left to compile after.
    (root / "pkg" / "fast.pyx").write_text("def answer():\n    return 'second'  # table.WORD, copied\n")
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build", mirrors=mirrors) == ["pkg.fast"]
    assert json.loads(python(code)) == ["second", True]
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build", mirrors=mirrors) == []
    # The same size and time as listed, other bytes: compiled again (its digest listed too).
    status = (root / "pkg" / "table.py").stat()
    (root / "pkg" / "table.py").write_text("WORD = 'thirds'\n"[: status.st_size])
    os.utime(root / "pkg" / "table.py", ns=(status.st_atime_ns, status.st_mtime_ns))
    assert compiler.build(root, ("pkg.fast",), manifest, root / "build", mirrors=mirrors) == ["pkg.fast"]


@pytest.mark.parametrize(
    "entry",
    [
        "not json {",
        "[1, 2]",
        '{"pkg.fast": "fast.so"}',
        '{"pkg.fast": {"file": "fast.cpython-27-x86_64-linux-gnu.so", "size": SIZE, "mtime_ns": TIME}}',
        '{"pkg.fast": {"file": "../pkg/fast.SUFFIX", "size": SIZE, "mtime_ns": TIME}}',
        '{"pkg.fast": {"file": "fast.SUFFIX", "size": SIZE, "mtime_ns": 1}}',
        '{"pkg.fast": {"file": "fast.SUFFIX", "size": "SIZE", "mtime_ns": TIME}}',
        '{"pkg.other": {"file": "fast.SUFFIX", "size": SIZE, "mtime_ns": TIME}}',
    ],
    ids=[
        "not json",
        "a list",
        "not an entry",
        "another interpreter's",
        "elsewhere",
        "another time",
        "a string",
        "another module's",
    ],
)
def test_a_damaged_or_foreign_manifest_means_the_source(package, tmp_path, entry):
    root, listed = package
    # What the build listed, but for the one thing changed.
    status = (root / "pkg" / "fast.py").stat()
    suffix = json.loads(listed.read_text())["pkg.fast"]["file"].removeprefix("fast.")
    text = entry.replace("SUFFIX", suffix).replace("SIZE", str(status.st_size)).replace("TIME", str(status.st_mtime_ns))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(text)
    assert importing(root, manifest) == ("as compiled", False)
    # The build's own entry, copied, is the copy (what is checked above is what made the difference).
    manifest.write_text(listed.read_text())
    assert importing(root, manifest) == ("as compiled", True)


def test_without_cython_make_says_so_and_the_sources_are_used(tmp_path):
    # An interpreter where `import Cython` fails: one line, exit 0 (make goes on), nothing listed.
    (tmp_path / "Cython").mkdir()
    (tmp_path / "Cython" / "__init__.py").write_text("raise ImportError('no Cython here', name='Cython')\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "fast.py").write_text("X = 1\n")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); from pathlib import Path\n"
        "from tse_scrapy.devtools import compile as c\n"
        f"root = Path({str(tmp_path)!r})\n"
        "try:\n"
        "    c.build(root, ('pkg.fast',), root / 'm.json', root / 'build')\n"
        "except c.CompileError as error:\n"
        "    print(error)\n"
    )
    assert python(code).strip() == "Cython is not installed"
    assert json.loads((tmp_path / "m.json").read_text()) == {}


@pytest.fixture(scope="module")
def fixture_pages_directory(tmp_path_factory):
    return write_fixture_directory(tmp_path_factory.mktemp("multilingual") / "pages")


def test_the_compiled_modules_index_as_the_sources_do(fixture_pages_directory, tmp_path):
    # The indexer uses three of them (the analysis, the SPEC index's writer, the document store).
    for name, env in (("compiled", {}), ("source", {compiled.PURE_PYTHON: "1"})):
        result = run_tse("index", fixture_pages_directory, tmp_path / f"{name}.index", env=clean_env(**env))
        assert result.returncode == 0, result.stderr
    for suffix in ("", ".bin", ".docs", ".search"):
        written = (tmp_path / f"compiled.index{suffix}").read_bytes()
        assert written == (tmp_path / f"source.index{suffix}").read_bytes(), suffix


ANSWERS = """
import importlib, json, sys
from tse_scrapy import compiled
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.search import app
engine = QueryEngine(sys.argv[1], IndexReader(sys.argv[2]), True)
out = [sorted(name for name in compiled.MODULES if compiled.loaded_compiled(importlib.import_module(name)))]
for rank, query in json.load(sys.stdin):
    answer = engine.answer(query, rank, limit_size=True)
    if isinstance(answer, str) or answer is None:
        out.append([rank, query, str(answer)])
        continue
    results = app._results(engine, answer, 1, 10) if answer.ranked else []
    out.append([rank, query, answer.ranked[:20], [(r.doc_id, r.snippet, r.highlights) for r in results]])
print(json.dumps(out, ensure_ascii=False))
"""


@compiled_by_make
def test_the_compiled_modules_answer_as_the_sources_do(fixture_pages_directory, tmp_path):
    pages, index = fixture_pages_directory, tmp_path / "index"
    result = run_tse("index", pages, index)
    assert result.returncode == 0, result.stderr
    titles = [page.title for page in fixture_pages()]
    queries = [("relevance", title) for title in titles]
    queries += [("relevance", title.replace(max(title.split(), key=len), max(title.split(), key=len)[::-1]))
                for title in titles[::5]]  # fmt: skip
    queries += [(rank, query) for rank in ("tse", "bm25") for query in ("debian", "installation or system", "the and")]
    queries += [("relevance", '"debian gnu" -linux'), ("relevance", "instalacion OR установка"), ("relevance", "")]
    stdin = json.dumps(queries)

    def answers(**env) -> list:
        result = subprocess.run(
            [sys.executable, "-c", ANSWERS, str(pages), str(index)],
            input=stdin, capture_output=True, text=True, cwd=ROOT, env=clean_env(**env), timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    as_compiled, from_source = answers(), answers(TSE_PURE_PYTHON="1")
    assert as_compiled[0] == sorted(compiled.MODULES) and from_source[0] == []
    assert len(as_compiled) == len(queries) + 1
    assert sum(1 for answer in as_compiled[1:] if len(answer) == 4 and answer[3]) > len(titles)  # most found pages
    assert as_compiled[1:] == from_source[1:]
