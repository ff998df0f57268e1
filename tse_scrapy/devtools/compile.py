"""``python -m tse_scrapy.devtools.compile``: compile the modules of ``tse_scrapy.compiled.MODULES``
with Cython, next to their sources (``make`` runs it).

Only the modules whose source changed since they were compiled are compiled again.  Without Cython
or a C compiler it says so in one line and exits 0: the modules then run from their sources.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
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
    """What *module* is compiled from: its ``.pyx`` where there is one (``compiled``), else its ``.py``."""
    source = root.joinpath(*module.split(".")).with_suffix(".py")
    typed = source.with_suffix(".pyx")
    return typed if typed.is_file() else source


def build(
    root: Path,
    modules: Sequence[str],
    manifest: Path,
    build_dir: Path,
    jobs: int = 2,
    mirrors: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """Compile those of *modules* (packages under *root*) whose copy *manifest* does not list as
    current, next to their sources, and list them in *manifest*; the modules compiled, in order.
    *mirrors*: what a module's ``.pyx`` mirrors (``compiled.MIRRORS``), its copy current only while
    they are unchanged too.  One build at a time in *build_dir* (a second waits).  Raises
    CompileError, leaving *manifest* listing only copies still current."""
    try:
        build_dir.mkdir(parents=True, exist_ok=True)
        with open(build_dir / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two `make`s at once: one after the other
            return _build(root, modules, manifest, build_dir, jobs, dict(mirrors or {}))
    except OSError as error:  # a read-only tree, a full disk: one line, not a traceback
        raise CompileError(f"{error.strerror or error}: {error.filename or build_dir}") from None


def _build(
    root: Path, modules: Sequence[str], manifest: Path, build_dir: Path, jobs: int, mirrors: dict[str, Sequence[str]]
) -> list[str]:
    finder = compiled.CompiledFinder(modules, manifest, mirrors)
    made_with = _made_with()
    entries = {
        module: entry
        for module, entry in finder.entries().items()
        if module in modules
        and finder.current_copy(module, str(source_of(root, module)))
        and entry.get("sha256") == _digest(source_of(root, module))
        and entry.get("mirrors_sha256") == _mirrored_digests(root, module, mirrors)
        and entry.get("made_with") == made_with
    }
    wanted = [module for module in modules if module not in entries]
    if not wanted:
        return []
    _write_manifest(manifest, entries)  # the copies about to be replaced are no longer listed
    # Each source as it was before it was read: one changed while compiling is not listed as current.
    before = {module: _source_state(root, module, mirrors) for module in wanted}
    built = _compiled_files(root, wanted, build_dir, jobs)
    for module in wanted:
        target = source_of(root, module).with_name(built[module].name)
        _write_whole(target, built[module].read_bytes(), 0o755)  # a process that loaded the copy before keeps its own
        if _source_state(root, module, mirrors) == before[module]:
            size, mtime_ns, digest, mirrored, mirrored_digests = before[module]
            entries[module] = {
                "file": target.name,
                "size": size,
                "mtime_ns": mtime_ns,
                "sha256": digest,
                "made_with": made_with,
                **({"mirrors": mirrored, "mirrors_sha256": mirrored_digests} if mirrored else {}),
            }
    _write_manifest(manifest, entries)
    return wanted


def _source_state(root: Path, module: str, mirrors: dict[str, Sequence[str]]) -> tuple[int, int, str, dict, dict]:
    """A source's size, modification time and digest (not its whole status: reading it changes its access
    time), and those of what it mirrors (``compiled.mirrored_states``, then their digests)."""
    source = source_of(root, module)
    status = os.stat(source)
    mirrored = compiled.mirrored_states(str(source.parent), mirrors.get(module, ()))
    return status.st_size, status.st_mtime_ns, _digest(source), mirrored, _mirrored_digests(root, module, mirrors)


def _mirrored_digests(root: Path, module: str, mirrors: dict[str, Sequence[str]]) -> dict[str, str] | None:
    """The digest of each file *module*'s source mirrors (None for none: the entry lists none)."""
    folder = source_of(root, module).parent
    return {name: _digest(folder / name) for name in mirrors.get(module, ())} or None


def _digest(source: Path) -> str:
    try:
        return hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError:
        return ""


def _made_with() -> str:
    """What else a copy depends on: the compiler's version and its directives."""
    try:
        from Cython import __version__
    except ImportError:
        __version__ = "none"
    return f"Cython {__version__} {json.dumps(DIRECTIVES, sort_keys=True)}"


def _compiled_files(root: Path, modules: list[str], build_dir: Path, jobs: int) -> dict[str, Path]:
    """Each of *modules* compiled into *build_dir*: where its extension module was written."""
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
    except ImportError as error:
        raise CompileError(f"{error.name} is not installed") from None
    log = build_dir / "compile.log"
    try:
        with _output_to(log):
            extensions = cythonize(
                [Extension(module, [str(source_of(root, module))]) for module in modules],
                build_dir=str(build_dir / "c"),
                compiler_directives={"language_level": 3, **DIRECTIVES},
                nthreads=jobs,
                quiet=True,
                force=True,  # not by the files' times: a source put back with an older time is compiled too
            )
            distribution = Distribution({"ext_modules": extensions, "script_name": "compile"})
            command = distribution.get_command_obj("build_ext")
            command.build_lib = str(build_dir / "lib")
            command.build_temp = str(build_dir / "temp")
            command.parallel = jobs
            command.force = True
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
    _write_whole(manifest, json.dumps(dict(sorted(entries.items())), indent=1).encode(), 0o644)


def _write_whole(path: Path, data: bytes, mode: int) -> None:
    """*data* put at *path* whole, through a file of a name of its own (two builds never share one)."""
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.chmod(partial, mode)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def main() -> int:
    try:
        done = build(
            ROOT, compiled.MODULES, compiled.MANIFEST, BUILD, jobs=os.cpu_count() or 1, mirrors=compiled.MIRRORS
        )
    except CompileError as error:
        print(f"compile: {error}; the search runs from the Python sources", file=sys.stderr)
        return 0
    if done:
        print(f"compile: {len(done)} of a search's modules compiled with Cython")
    return 0


if __name__ == "__main__":
    sys.exit(main())
