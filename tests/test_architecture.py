"""The package's architecture, checked: subsystems depend one way, no import
cycle, pure rules, and what a real run imports (``-X importtime``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, crawl_site, run_tse
from tests.support.pages import write_pages
from tests.support.sitegen import write_site

PACKAGE = ROOT / "tse_scrapy"

# Each subsystem may import its own modules and those of lower layers only.
LAYERS = {
    "base": 0,  # tse_scrapy/__init__, exitcodes, atomicfile, terminal, compiled, processes
    "rules": 1,
    "resume": 2,
    "fulltext": 2,
    "index": 3,
    "report": 2,
    "webarchive": 2,
    "update": 3,
    "crawl": 4,
    "search": 4,
    "distributed": 5,
    "devtools": 5,
    "app": 6,  # cli, crawlstart, settings, spiders/, commands/
}
BASE = {
    "tse_scrapy",
    "tse_scrapy.exitcodes",
    "tse_scrapy.atomicfile",
    "tse_scrapy.terminal",
    "tse_scrapy.compiled",
    "tse_scrapy.processes",
}
NOT_PURE = ("scrapy", "twisted", "redis", "scrapy_redis", "sqlite3", "socket")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def subsystem(module: str) -> str:
    if module in BASE:
        return "base"
    part = module.split(".")[1]
    return part if part in LAYERS else "app"


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py")) if "demo_site" not in path.parts}


def imports(module: str) -> list[tuple[str, int]]:
    """Every module *module* imports (at any depth in its code), with the line."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((candidate if candidate in MODULES else base, node.lineno))
    return found


def own_imports(module: str) -> set[str]:
    return {name for name, _ in imports(module) if name in MODULES and name != module}


def test_the_module_table_sees_every_subsystem():
    assert {subsystem(module) for module in MODULES} == set(LAYERS)
    assert own_imports("tse_scrapy.crawl.scheduling.scheduler") >= {
        "tse_scrapy.crawl.scheduling.frontier",
        "tse_scrapy.rules.files.pagedir",
    }


@pytest.mark.parametrize("module", sorted(MODULES))
def test_dependencies_point_down(module):
    mine = subsystem(module)
    for imported in own_imports(module):
        theirs = subsystem(imported)
        assert theirs == mine or LAYERS[theirs] < LAYERS[mine], f"{module} ({mine}) imports {imported} ({theirs})"


def test_no_import_cycle():
    graph = {module: own_imports(module) for module in MODULES}
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                cycle = [*path[path.index(imported) :], imported]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if imported not in state:
                visit(imported)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)


# The rules' packages, each importing only its own modules and those of the packages before it.
RULES_ORDER = {"web": 0, "text": 1, "queries": 2, "files": 2, "crawling": 3}
MAX_MODULES = 12  # a package past a dozen modules is split by role


def test_the_rules_packages_depend_one_way():
    rules = [module for module in MODULES if subsystem(module) == "rules" and module != "tse_scrapy.rules"]
    assert {module.split(".")[2] for module in rules} == set(RULES_ORDER)
    for module in rules:
        mine = module.split(".")[2]
        for imported in own_imports(module):
            if subsystem(imported) == "rules":
                theirs = [*imported.split("."), ""][2]  # "" for the rules package itself: not one way
                assert theirs == mine or RULES_ORDER.get(theirs, 99) < RULES_ORDER[mine], f"{module} imports {imported}"


def test_no_package_holds_more_than_a_dozen_modules():
    packages: dict[str, int] = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            packages[str(path.parent.relative_to(ROOT))] = packages.get(str(path.parent.relative_to(ROOT)), 0) + 1
    assert {package: count for package, count in packages.items() if count > MAX_MODULES} == {}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if subsystem(m) in ("rules", "base")))
def test_rules_are_pure(module):
    for name, line in imports(module):
        assert name.split(".")[0] not in NOT_PURE, f"{module}:{line} imports {name}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if subsystem(m) != "distributed"))
def test_only_the_distributed_package_imports_redis_at_module_level(module):
    tree = ast.parse(MODULES[module].read_text())
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        for name in names:
            assert name.split(".")[0] not in ("redis", "scrapy_redis"), f"{module}:{node.lineno} imports {name}"
            assert not name.startswith("tse_scrapy.distributed"), f"{module}:{node.lineno} imports {name}"


def imported_modules(stderr: bytes) -> set[str]:
    """The modules a run imported, from its ``-X importtime`` report.

    The report leaves out a module loaded by ``importlib.import_module`` (as
    Scrapy loads its components), not the modules that one imports."""
    names = set()
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_a_single_process_crawl_imports_no_redis_and_no_devtools(tmp_path, serve):
    server = serve(write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []}).root)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 1, env=clean_env(PYTHONPROFILEIMPORTTIME="1"))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    loaded = imported_modules(result.stderr)
    assert {
        "scrapy",
        "tse_scrapy.crawl.scheduling.frontier",
        "tse_scrapy.crawl.scheduling.dupefilter",
        "tse_scrapy.spiders.tse",
    } <= loaded
    unwanted = sorted(name for name in loaded if name.split(".")[0] in ("redis", "scrapy_redis", "hiredis"))
    assert unwanted == []
    assert sorted(name for name in loaded if name.startswith(("tse_scrapy.distributed", "tse_scrapy.devtools"))) == []


def test_the_querier_starts_without_scrapy(tmp_path):
    pages = write_pages(tmp_path / "pages", {1: ("http://h/", 0, b"hello world")})
    assert run_tse("index", pages, tmp_path / "index").returncode == 0
    result = run_tse("query", pages, tmp_path / "index", input=b"hello\n", env=clean_env(PYTHONPROFILEIMPORTTIME="1"))
    assert result.returncode == 0 and b"Matches 1 documents" in result.stdout
    loaded = imported_modules(result.stderr)
    assert "tse_scrapy.index.querier" in loaded
    assert sorted(name for name in loaded if name.split(".")[0] in ("scrapy", "twisted", "redis")) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if subsystem(m) in ("index", "search")))
def test_the_indexer_querier_and_search_never_import_scrapy(module):
    for name, line in imports(module):
        assert name.split(".")[0] not in ("scrapy", "twisted", "redis", "scrapy_redis"), (
            f"{module}:{line} imports {name}"
        )


@pytest.mark.parametrize(("options", "imported"), [((), False), (("-s", "COOKIES_ENABLED=True"), True)])
def test_cookie_handling_is_imported_only_when_cookies_are_on(tmp_path, serve, options, imported):
    # Scrapy's cookies middleware imports tldextract, requests and urllib3: 0.05 s of start-up.
    server = serve(write_site(tmp_path / "site", {"index.html": []}).root)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 0, *options, env=clean_env(PYTHONPROFILEIMPORTTIME="1"))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    heavy = {"tldextract", "requests", "urllib3"}
    loaded = {name.split(".")[0] for name in imported_modules(result.stderr)}
    assert heavy & loaded == (heavy if imported else set())
