"""``make run``: serve the demo site on 127.0.0.1, crawl it one page a second,
index the pages and answer two example queries; ``make serve``: search that
crawl in a browser, with its site served again so that the results' links open.

    python -m tse_scrapy.devtools.demo PAGEDIR
    python -m tse_scrapy.devtools.demo --serve PAGEDIR [TSE-SERVE-OPTION...]

PAGEDIR is created, or emptied when it holds an earlier demo crawl; any
other directory that is not empty is refused.  The site is served on
http://127.0.0.1:8001/ (SITE_PORT), or on a free port when that one is taken;
``--serve`` serves it on the port the crawl's URLs name, beside ``tse serve
PAGEDIR PAGEDIR.index`` (on 8000), and stops it when ``tse serve`` ends.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from ..exitcodes import FAILED, USAGE
from ..index.indexlock import IndexLocked
from ..resume.statedb import STATE_NAME
from ..rules.files.pagedir import MARKER, is_page_name, read_page, read_page_url
from .siteserver import SiteServer

SITE = Path(__file__).resolve().parent / "demo_site"
DEPTH = "3"
QUERIES = "crawler and polite\nindexer or querier\n"
# The site's own port, known in advance so that make serve can serve it again under the URLs the crawl
# saved (a random one was closed with the crawl: every result's link was dead); beside tse serve's 8000.
SITE_PORT = 8001
_DEMO_URL = re.compile(r"http://127\.0\.0\.1:(\d{1,5})/(.*)")


def is_demo_crawl(pagedir: Path) -> bool:
    """Whether *pagedir* holds only a crawl of the demo site (what this demo may remove)."""
    names = os.listdir(pagedir)
    for name in names:
        if is_page_name(name):
            try:
                found = _DEMO_URL.fullmatch(read_page_url(pagedir, int(name)))
            except OSError:
                return False
            if found is None or int(found.group(1)) > 65535 or not (SITE / found.group(2)).exists():
                return False
        elif name not in (MARKER, STATE_NAME, STATE_NAME + "-wal", STATE_NAME + "-shm"):
            return False
    return MARKER in names


def remove_index(index: Path) -> None:
    """Remove the index *index* and every file ``tse index`` writes beside it (its sidecar, stamp, lock,
    document store and search store, the temporary copies of each a killed run left, its leftover runs'
    directories), and nothing else: no file of an earlier demo's index is left beside this crawl's (its
    ``.search``, ``.stamp`` and ``.lock`` were).  Under the index's lock (IndexLocked, changing nothing,
    while a ``tse index`` of it runs: its runs and lock went from under it), the lock file last."""
    from ..atomicfile import partial_path
    from ..fulltext.store import search_path
    from ..index.docstore import docs_path
    from ..index.indexer import remove_leftover_runs
    from ..index.indexlock import index_lock, lock_path
    from ..index.storage import sidecar_path, stamp_path

    with index_lock(index, "make run"):
        for path in (index, sidecar_path(index), stamp_path(index), docs_path(index), search_path(index)):
            path.unlink(missing_ok=True)
            partial_path(path).unlink(missing_ok=True)
        remove_leftover_runs(index)
        lock_path(index).unlink(missing_ok=True)


def site_server(port: int) -> SiteServer:
    """The demo site served on *port*; on a free port, said on stderr, when *port* is taken."""
    try:
        return SiteServer(SITE, port=port)
    except OSError as error:
        server = SiteServer(SITE)
        sys.stderr.write(
            f"demo: port {port} is taken ({error.strerror}): the demo site is on {server.port} instead"
            " (make serve serves it there again)\n"
        )
        return server


def crawled_port(pagedir: Path) -> int:
    """The port of the site the demo crawl in *pagedir* was made from (its page 1's URL)."""
    return int(_DEMO_URL.fullmatch(read_page_url(pagedir, 1)).group(1))


# Runs COMMAND (sys.argv[2:]) in place of itself, set to be sent SIGTERM when its parent, PARENT
# (sys.argv[1]), dies (Linux's PR_SET_PDEATHSIG, which an exec keeps): killed with SIGKILL, no handler of
# the wrapper's runs, and tse serve, in a process group of its own, went on holding its port.  (Set in
# the child before its exec, not by a preexec_fn: the demo site's thread is running, which makes
# preexec_fn unsafe.)  A parent already dead sends no signal: then the command does not start.
_DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit(128 + signal.SIGTERM)
os.execv(sys.argv[2], sys.argv[2:])
"""


def dying_with_this_process(command: list[str]) -> list[str]:
    """*command*, on Linux made to end (SIGTERM: as ``kill`` ends it) when this process ends, however
    it ends (SIGKILL included); elsewhere as it is."""
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *command]


def serve(pagedir: Path, options: list[str]) -> int:
    """``tse serve PAGEDIR PAGEDIR.index OPTIONS`` with the demo site served beside it, on the port the
    crawl was made from, until ``tse serve`` ends; its exit status."""
    index = pagedir.with_name(pagedir.name + ".index")
    if not (index.is_file() and pagedir.is_dir() and is_demo_crawl(pagedir) and (pagedir / "1").is_file()):
        sys.stderr.write(f"demo: no demo crawl in {pagedir} with its index {index}: run make run first\n")
        return USAGE
    port = crawled_port(pagedir)
    try:
        site = SiteServer(SITE, port=port)
    except OSError as error:
        sys.stderr.write(f"demo: port {port} is taken ({error.strerror}): the results' links will not open\n")
        site = None
    else:
        site.start()
        sys.stderr.write(f"demo: the demo site on {site.url}/, where it was crawled\n")
    started: list[subprocess.Popen] = []
    caught: list[int] = []

    def hand_on(number: int, _frame: object) -> None:
        # (a signal before tse serve has started is kept for it: the wrapper must not exit without it)
        if started:
            started[0].send_signal(number)
        else:
            caught.append(number)

    # Installed before tse serve starts: a Ctrl-C in between made this wrapper exit, and tse serve, in
    # a process group of its own, went on holding its port.
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, hand_on)
    try:
        # In its own process group: Ctrl-C reaches this process alone, which hands it on once (twice,
        # tse serve's uvicorn would stop without waiting for the connections open).
        command = [str(Path(sys.executable).parent / "tse"), "serve", str(pagedir), str(index), *options]
        child = subprocess.Popen(dying_with_this_process(command), process_group=0)
        started.append(child)
        for number in caught[:1]:
            child.send_signal(number)
        status = child.wait()
        return 128 - status if status < 0 else status  # killed by a signal: the shell's 128 + its number
    finally:
        if site is not None:
            site.stop()


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--serve":
        if len(argv) < 3:
            sys.stderr.write("demo: --serve needs the demo crawl's PAGEDIR\n")
            return USAGE
        return serve(Path(argv[2]), argv[3:])
    pagedir = Path(argv[1] if len(argv) > 1 else "data/demo")
    if pagedir.exists() and not (pagedir.is_dir() and (not os.listdir(pagedir) or is_demo_crawl(pagedir))):
        sys.stderr.write(f"demo: {pagedir} is not an earlier demo crawl: give a new or empty directory\n")
        return USAGE
    index = pagedir.with_name(pagedir.name + ".index")
    try:
        remove_index(index)  # the earlier demo's: make serve must not show it over this crawl
    except IndexLocked as refusal:  # (the crawl left as it is too)
        sys.stderr.write(f"demo: {refusal}\n")
        return FAILED
    shutil.rmtree(pagedir, ignore_errors=True)
    pagedir.mkdir(parents=True)
    tse = str(Path(sys.executable).parent / "tse")
    with site_server(SITE_PORT) as server:
        seed = f"{server.url}/index.html"
        command = ["tse", "crawl", seed, str(pagedir), DEPTH, "--prefix", f"{server.url}/", "-s", "LOG_LEVEL=WARNING"]
        print(f"Serving the demo site ({SITE}) on {server.url}/ (loopback only)")
        print("$ " + " ".join(command), flush=True)
        status = subprocess.call([tse, *command[1:]])
    doc_ids = sorted(int(name) for name in os.listdir(pagedir) if is_page_name(name))
    print(f"\nThe crawl exited {status}; {len(doc_ids)} pages went to {pagedir}/ (1 to {len(doc_ids)}):")
    for doc_id in doc_ids:
        page = read_page(pagedir, doc_id)
        print(f"  {pagedir}/{doc_id:<3} depth {page.depth}  {page.url}")
    if status != 0:
        return status
    print(f"\n$ tse index {pagedir} {index}", flush=True)
    status = subprocess.call([tse, "index", str(pagedir), str(index)])
    print(f"$ printf {QUERIES!r} | tse query {pagedir} {index}", flush=True)
    return status or subprocess.run([tse, "query", str(pagedir), str(index)], input=QUERIES.encode()).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
