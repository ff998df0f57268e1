"""Run ``tse`` and SIGKILL it just before, or just after, it writes the page file of a given URL.

    python -m tests.support.s_crashpoint before|after URL -- crawl SEED PAGEDIR DEPTH ...

``after``: the process kills itself as soon as ``pagedir.write_page`` has put the page file of URL in
place (renamed, whole); ``before``: as the crawl calls it for that page, nothing of the file written.
Nothing else differs from the ``tse`` command: the same ``tse_scrapy.cli.main`` runs, on real files
and a real server, the page file is written by the real ``write_page``, and the kill is the real
signal: nothing is cleaned up, nothing the crawl keeps in memory is written.  (``tests.support.killat``
kills just before a file event; "just after the page file is written" is no event of its own.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

WHEN = ("before", "after")


def install(when: str, url: str) -> None:
    """Kill this process with SIGKILL *when* (``before``, ``after``) the page file of *url* is written."""
    from tse_scrapy.rules.files import pagedir

    write_page = pagedir.write_page

    def killing_write_page(directory, doc_id, page, **options):
        if page.url == url and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        write_page(directory, doc_id, page, **options)
        if page.url == url and when == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    pagedir.write_page = killing_write_page


def run_tse_killed(when: str, url: str, arguments: list) -> subprocess.CompletedProcess:
    """``tse ARGUMENTS`` under this module, killed *when* the page file of *url* is written."""
    from tests.conftest import ROOT, clean_env

    command = [sys.executable, "-m", "tests.support.s_crashpoint", when, url, "--", *map(str, arguments)]
    return subprocess.run(command, capture_output=True, env=clean_env(), cwd=ROOT, timeout=120)


def main(argv: list[str]) -> int:
    separator = argv.index("--")
    (when, url), tse_arguments = argv[:separator], argv[separator + 1 :]
    if when not in WHEN:
        raise SystemExit(f"s_crashpoint: {when!r}: say one of {', '.join(WHEN)}")
    install(when, url)
    from tse_scrapy.cli import main as tse_main

    return tse_main(tse_arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
