"""Packaging: the lock matches what pyproject.toml declares, and the built wheel holds the demo site."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def declared() -> list[Requirement]:
    project = PYPROJECT["project"]
    texts = project["dependencies"] + [text for extra in project["optional-dependencies"].values() for text in extra]
    return [requirement for requirement in map(Requirement, texts) if requirement.name != project["name"]]


def test_every_declared_dependency_is_pinned_in_the_lock_within_its_range():
    pins = locked()
    for requirement in declared():
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{requirement} is not in requirements.txt"
        assert requirement.specifier.contains(pins[name]), f"requirements.txt pins {name}=={pins[name]}: {requirement}"


def test_the_build_requirement_is_pinned_too():
    (build,) = map(Requirement, PYPROJECT["build-system"]["requires"])
    assert build.specifier.contains(locked()[build.name])


def test_the_wheel_holds_every_subpackage_and_the_demo_site(tmp_path):
    # Built from a copy, so that the checkout gets no build/ folder.  Not the benchmarks' data (bench/work:
    # gigabytes where the benchmarks have run, copied in 100 s that slowed every test beside this one).
    source = tmp_path / "source"
    untracked = shutil.ignore_patterns(
        ".git", ".venv", ".*_cache", ".hypothesis", "build", "data", "*.egg-info", "__pycache__"
    )

    def ignored(directory: str, names: list[str]) -> set[str]:
        return untracked(directory, names) | ({"work"} if Path(directory) == ROOT / "bench" else set())

    shutil.copytree(ROOT, source, ignore=ignored)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(tmp_path),
         str(source)],
        check=True, capture_output=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("tse_scrapy-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {path.parent.relative_to(ROOT).as_posix() for path in (ROOT / "tse_scrapy").rglob("__init__.py")}
    assert {f"{package}/__init__.py" for package in packages} <= names
    site = ROOT / "tse_scrapy" / "devtools" / "demo_site"
    files = {path.relative_to(ROOT).as_posix() for path in site.rglob("*") if path.is_file()}
    assert len(files) > 10 and "tse_scrapy/devtools/demo_site/.redirects" in files
    assert files <= names
    assert not [name for name in names if name.startswith("tse_scrapy/devtools/demo_site/") and name.endswith(".py")]
    templates = ROOT / "tse_scrapy" / "search" / "templates"
    assert {f"tse_scrapy/search/templates/{path.name}" for path in templates.glob("*.html")} <= names
