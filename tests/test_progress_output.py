"""A crawl whose progress log cannot be written (stdout: `tse crawl ... | head`, a full disk) stops,
resumable, in one line (crawl/extensions/progressoutput.py): it waited for good, saving nothing, Ctrl-C
and SIGTERM ignored (a reviewer's find)."""

from __future__ import annotations

import subprocess

from tests.conftest import BIN, ROOT, clean_env, crawl_site, popen, site_crawl_args
from tests.support.pages import saved_pages
from tests.support.sitegen import generate_site

GO_ON = "go on with --resume"


def _read_one_line_then_close(command: list[str]) -> subprocess.CompletedProcess:
    """*command* run with its stdout read as ``| head -1`` reads it: one line, then the pipe closed."""
    process = popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
    assert process.stdout.readline()
    process.stdout.close()
    try:
        stderr = process.stderr.read()
        process.wait(timeout=120)
    finally:
        process.kill()
    return subprocess.CompletedProcess(command, process.returncode, b"", stderr)


def test_a_crawl_whose_reader_went_away_stops_in_one_line_and_resumes(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=120, fanout=4)
    server = serve(site.root)
    whole = tmp_path / "whole"
    whole.mkdir()
    assert crawl_site(server, whole, 3).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    for program in ("tse", "scrapy"):
        if program == "tse":
            command = [str(BIN / "tse"), *map(str, site_crawl_args(server, out, 3))]
        else:
            arguments = [f"seed={server.url}/index.html", f"pagedir={out}", "depth=3", f"prefix={server.url}/"]
            command = [str(BIN / "scrapy"), "crawl", "tse", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
            command += [x for argument in arguments for x in ("-a", argument)] + ["-a", "resume=yes"]
        stopped = _read_one_line_then_close(command)
        said = stopped.stderr.decode()
        assert stopped.returncode == 141, said  # (128 + SIGPIPE, as tse query, and a process killed by it)
        assert "Traceback" not in said and "Exception" not in said, said
        go_on = GO_ON if program == "tse" else "go on with -a resume=yes"
        reason = "the progress log cannot be written: stdout was closed (its reader went away)"
        assert said.splitlines()[-1] == f"{program} crawl{' tse' if program == 'scrapy' else ''}: {reason}: {go_on}"
    resumed = crawl_site(server, out, 3, "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert sorted(saved_pages(out)) == sorted(saved_pages(whole))


def test_a_crawl_whose_reader_went_away_before_its_first_line_stops_too(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=5)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    command = [str(BIN / "tse"), *map(str, site_crawl_args(server, out, 2))]
    process = popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
    process.stdout.close()  # (before anything is written)
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr
    assert "Exception" not in stderr and "Traceback" not in stderr, stderr
    assert stderr.endswith(f"(its reader went away): {GO_ON}\n"), stderr


def test_a_crawl_whose_progress_log_fills_the_disk_stops_in_one_line(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=120, fanout=4)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    with open("/dev/full", "wb") as full:
        stopped = subprocess.run(
            [str(BIN / "tse"), *map(str, site_crawl_args(server, out, 3))],
            stdout=full,
            stderr=subprocess.PIPE,
            env=clean_env(),
            cwd=ROOT,
            timeout=120,
        )
    said = stopped.stderr.decode()
    assert stopped.returncode == 1 and "Traceback" not in said, said
    reason = "the progress log cannot be written: stdout failed (No space left on device)"
    assert said.splitlines()[-1] == f"tse crawl: {reason}: {GO_ON}"
