"""``python -m tse_scrapy.devtools.compile``: compile the modules of ``tse_scrapy.compiled.MODULES``
with Cython, next to their sources (``make`` runs it).

Only the modules whose source changed since they were compiled are compiled again.  Without Cython
or a C compiler it says so in one line and exits 0: the modules then run from their sources.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from .. import compiled

ROOT = Path(compiled.__file__).resolve().parent.parent  # the folder holding the tse_scrapy package
BUILD = ROOT / "build" / "compiled"
# Cython's pure-Python mode reads annotations as C types and refuses a subclass where they name a
# builtin (a Counter for a dict): the annotations are left to Python, the code compiled as it is.
DIRECTIVES = {"annotation_typing": False}


class CompileError(Exception):
    """The modules could not be compiled (no Cython, no C compiler, a compiler error)."""


def source_of(root: Path, module: str) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def build(root: Path, modules: Sequence[str], manifest: Path, build_dir: Path, jobs: int = 2) -> list[str]:
    """Compile those of *modules* (packages under *root*) whose copy *manifest* does not list as
    current, next to their sources, and list them in *manifest*; the modules compiled, in order.
    Raises CompileError, leaving *manifest* listing only copies still current."""
    finder = compiled.CompiledFinder(modules, manifest)
    entries = {
        module: entry
        for module, entry in finder._entries().items()
        if module in modules and finder._current_copy(module, str(source_of(root, module)))
    }
    wanted = [module for module in modules if module not in entries]
    if not wanted:
        return []
    _write_manifest(manifest, entries)  # the copies about to be replaced are no longer listed
    # Each source's size and time before it is read: one changed while compiling is not listed as current.
    statuses = {module: os.stat(source_of(root, module)) for module in wanted}
    built = _compiled_files(root, wanted, build_dir, jobs)
    for module in wanted:
        source = source_of(root, module)
        target = source.with_name(built[module].name)
        partial = target.with_name(f".{target.name}.partial")
        shutil.copyfile(built[module], partial)
        os.replace(partial, target)  # a process that loaded the copy before keeps its own
        status = statuses[module]
        entries[module] = {"file": target.name, "size": status.st_size, "mtime_ns": status.st_mtime_ns}
    _write_manifest(manifest, entries)
    return wanted


def _compiled_files(root: Path, modules: list[str], build_dir: Path, jobs: int) -> dict[str, Path]:
    """Each of *modules* compiled into *build_dir*: where its extension module was written."""
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
    except ImportError as error:
        raise CompileError(f"{error.name} is not installed") from None
    log = build_dir / "compile.log"
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        with _output_to(log):
            extensions = cythonize(
                [Extension(module, [str(source_of(root, module))]) for module in modules],
                build_dir=str(build_dir / "c"),
                compiler_directives={"language_level": 3, **DIRECTIVES},
                nthreads=jobs,
                quiet=True,
            )
            distribution = Distribution({"ext_modules": extensions, "script_name": "compile"})
            command = distribution.get_command_obj("build_ext")
            command.build_lib = str(build_dir / "lib")
            command.build_temp = str(build_dir / "temp")
            command.parallel = jobs
            command.ensure_finalized()
            command.run()
            built = {module: Path(command.get_ext_fullpath(module)) for module in modules}
    except (Exception, SystemExit) as error:  # setuptools' errors, and Cython's SystemExit on a syntax error
        raise CompileError(f"{type(error).__name__}: {error} (the compiler's output: {log})") from None
    missing = [module for module, path in built.items() if not path.is_file()]
    if missing:
        raise CompileError(f"not built: {', '.join(missing)} (the compiler's output: {log})")
    return built


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Standard output and error (the compiler's commands and warnings, of this process and its
    children) written to *log* instead."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _write_manifest(manifest: Path, entries: dict[str, dict[str, object]]) -> None:
    with tempfile.NamedTemporaryFile("w", dir=manifest.parent, prefix=f".{manifest.name}.", delete=False) as out:
        json.dump(dict(sorted(entries.items())), out, indent=1)
    os.replace(out.name, manifest)


def main() -> int:
    try:
        done = build(ROOT, compiled.MODULES, compiled.MANIFEST, BUILD, jobs=os.cpu_count() or 1)
    except CompileError as error:
        print(f"compile: {error}; the search runs from the Python sources", file=sys.stderr)
        return 0
    if done:
        print(f"compile: {len(done)} modules compiled with Cython")
    return 0


if __name__ == "__main__":
    sys.exit(main())
