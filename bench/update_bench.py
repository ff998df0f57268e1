"""Keeping a crawl fresh (issue 13): `tse crawl --update` against a first crawl,
an update after changes, `tse index --update` against a full index, the cost
of `--warc`, and the change-rate revisit order.

On the mirrored wikipedia site at depth 2, behind the site server as a proxy
(in this process, so that its request log can be read) on a copy of the
mirror's wikipedia part that the benchmark modifies.  Run by bench/run.py, or
alone: ``.venv/bin/python bench/update_bench.py [noop] [changes] [warc] [rate]``
(default: all four parts, printed as one RESULTS.md section).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, REPEAT, ROOT, WORK
from tse_scrapy.devtools.siteserver import Hit, SiteServer
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.web.links import extract_links_html
from tse_scrapy.rules.web.urls import is_internal, normalize_url

HOST = "cs50tse.cs.dartmouth.edu"
SITE = f"{HOST}/tse/wikipedia"  # the part of the mirror copied and served
SEED = f"http://{SITE}/index.html"
DEPTH = "2"
FAST = ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
RATE_ORDER = ["--order", "priority", "-s", "TSE_PRIORITIZER=tse_scrapy.update.prioritizer.ChangeRatePrioritizer"]
ROUNDS = max(REPEAT, 5)
UPDATED = re.compile(r"tse crawl: updated .*: (\d+) new, (\d+) changed, (\d+) unchanged, (\d+) gone")
KINDS = ("new", "changed", "unchanged", "gone")
PARTS = ("noop", "changes", "warc", "rate")


@dataclass
class Run:
    """One finished command: wall and CPU seconds, its stderr, the requests the server received meanwhile."""

    wall: float
    cpu: float
    stderr: str
    hits: list[Hit]
    body: int  # body bytes the server sent (files served with 200), counted when the command ended

    def counts(self) -> dict[str, int] | None:
        """The update's line on stderr, as numbers (None without one)."""
        found = UPDATED.search(self.stderr)
        return dict(zip(KINDS, map(int, found.groups()), strict=True)) if found else None


class Bench:
    def __init__(self, mirror: Path):
        self.mirror = mirror
        self.work = WORK / "update"
        self.root = self.work / "site"  # what the server serves: root/HOST/tse/wikipedia/...
        self.server: SiteServer | None = None

    # -- the site and the server ---------------------------------------------
    def fresh_site(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(self.mirror / SITE, self.root / SITE)

    def file_of(self, url: str) -> Path:
        """The site file a page URL is served from (the mirror's names are percent-decoded)."""
        return self.root / unquote(url.removeprefix("http://"))

    def body_bytes(self, hits: list[Hit]) -> int:
        """The body bytes the server sent for the files it served (200s; a 304 has no body)."""
        total = 0
        for hit in hits:
            if hit.status == 200:
                path = self.root / unquote(hit.key)
                total += (path / "index.html" if path.is_dir() else path).stat().st_size
        return total

    def env(self) -> dict:
        proxies = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")
        env = {k: v for k, v in os.environ.items() if k.lower() not in proxies}
        if self.server is not None:
            env["http_proxy"] = self.server.url
        return env

    # -- commands ------------------------------------------------------------
    def tse(self, *args: str | Path) -> Run:
        """Run ``tse ARGS`` from the repository root; fail the benchmark on a non-zero exit."""
        command = [str(BIN / "tse"), *map(str, args)]
        first_hit = len(self.server.hits) if self.server else 0
        with tempfile.TemporaryFile() as log:
            start = time.perf_counter()
            process = subprocess.Popen(command, cwd=ROOT, env=self.env(), stdout=subprocess.DEVNULL, stderr=log)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
            log.seek(0)
            stderr = log.read().decode(errors="replace")
        code = process.returncode = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise RuntimeError(f"exit {code}: {' '.join(command)}\n{stderr[-1500:]}")
        hits = list(self.server.hits[first_hit:]) if self.server else []
        return Run(wall, usage.ru_utime + usage.ru_stime, stderr, hits, self.body_bytes(hits))

    def crawl(self, out: Path, *options: str | Path, fresh: bool = True) -> Run:
        if fresh:
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
        return self.tse("crawl", SEED, out, DEPTH, *options, *FAST)

    # -- the parts -----------------------------------------------------------
    def noop(self) -> list[str]:
        """1. A first crawl with --validators, then an update with nothing changed, in each round."""
        self.fresh_site()
        out = self.work / "noop"
        firsts, updates, rewritten, counts = [], [], [], []
        with SiteServer(self.root) as self.server:
            for _ in range(ROUNDS):
                firsts.append(self.crawl(out, "--validators"))
                before = file_stamps(out)
                updates.append(self.crawl(out, "--update", fresh=False))
                after = file_stamps(out)
                rewritten.append(sum(1 for name in before.keys() | after.keys() if before.get(name) != after.get(name)))
                counts.append(updates[-1].counts())
        self.server = None
        shutil.rmtree(out, ignore_errors=True)
        first_wall = statistics.median(r.wall for r in firsts)
        ratio = statistics.median(u.wall / f.wall for f, u in zip(firsts, updates, strict=True))
        expected = {"new": 0, "changed": 0, "unchanged": len(before), "gone": 0}
        rows = [
            "| run | requests | of them 200 / 304 / 404 | body bytes received | wall s (median) "
            "| CPU s (median) | vs first crawl | page files rewritten (each round) | counts on stderr |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        verdict = "as expected" if all(c == expected for c in counts) else "NOT as expected"
        asked = {(len(r.hits), fmt_statuses(r.hits), r.body) for r in firsts} | {
            (len(r.hits), fmt_statuses(r.hits), r.body) for r in updates
        }
        same = "the same in every round" if len(asked) == 2 else "NOT the same in every round: the last round's"
        for name, runs in (("first crawl, `--validators`", firsts), ("update, nothing changed", updates)):
            wall = statistics.median(r.wall for r in runs)
            rows.append(
                f"| {name} | {len(runs[-1].hits)} | {fmt_statuses(runs[-1].hits)} "
                f"| {runs[-1].body:,} | {wall:.2f} | {statistics.median(r.cpu for r in runs):.2f} "
                + (
                    "| 1.00x | - | - |"
                    if runs is firsts
                    else f"| {wall / first_wall:.2f}x | {', '.join(map(str, rewritten))} "
                    f"| {format_counts(counts[-1])} ({verdict}) |"
                )
            )
        return [
            "### 1. An update with nothing changed",
            "",
            f"{ROUNDS} rounds; in each, a first crawl into an empty directory, then an update of it; medians.",
            f"Requests and bytes are read from the server's request log ({same}); body bytes: the files",
            "served with 200 (a 304 has no body; the 404 bodies, robots.txt and dead links, are not counted).",
            "Page files rewritten: page files whose inode or mtime differ after the update (or that appeared).",
            "",
            "```sh",
            f"tse crawl {SEED} DIR 2 --validators {' '.join(FAST)}",
            f"tse crawl {SEED} DIR 2 --update {' '.join(FAST)}",
            "```",
            "",
            *rows,
            "",
            f"Update / first crawl, wall time: {ratio:.2f} (median of the per-round ratios).",
            "",
        ]

    def changes(self) -> list[str]:
        """2. An update after changes, deletions and additions; 3. `tse index --update` after it."""
        self.fresh_site()
        out, fresh, indexes = self.work / "changes", self.work / "changes-fresh", self.work / "indexes"
        shutil.rmtree(indexes, ignore_errors=True)
        indexes.mkdir(parents=True)
        changes_file = self.work / "changes.jsonl"
        with SiteServer(self.root) as self.server:
            first = self.crawl(out, "--validators")
            self.tse("index", out, indexes / "old.index")
            before_pages = page_versions(out)
            before_files = file_stamps(out)
            made = self.mutate(out, random.Random(13))
            update = self.crawl(out, "--update", "--changes", changes_file, fresh=False)
            after_files = file_stamps(out)
            self.crawl(fresh)
        self.server = None
        fresh_pages = page_versions(fresh)
        after_pages = page_versions(out)
        shutil.rmtree(fresh, ignore_errors=True)

        expected = {
            "new": len(fresh_pages.keys() - before_pages.keys()),
            "changed": sum(1 for u in fresh_pages.keys() & before_pages.keys() if fresh_pages[u] != before_pages[u]),
            "unchanged": sum(1 for u in fresh_pages.keys() & before_pages.keys() if fresh_pages[u] == before_pages[u]),
            "gone": len(before_pages.keys() - fresh_pages.keys()),
        }
        designed = {
            "new": len(made["added"]),
            "changed": len(made["changed"] | made["linking"]),
            "gone": len(made["deleted"] | made["orphans"]),
        }
        designed["unchanged"] = len(before_pages) - designed["changed"] - designed["gone"]
        counts = update.counts()
        listed = [json.loads(line) for line in changes_file.read_text().splitlines()]
        by_kind = {kind: {e["url"] for e in listed if e["change"] == kind} for kind in KINDS}
        urls_match = (
            by_kind["new"] == fresh_pages.keys() - before_pages.keys()
            and by_kind["gone"] == before_pages.keys() - fresh_pages.keys()
            and by_kind["changed"]
            == {u for u in fresh_pages.keys() & before_pages.keys() if fresh_pages[u] != before_pages[u]}
        )
        rewritten = {name for name in before_files if before_files[name] != after_files.get(name)}
        appeared = after_files.keys() - before_files.keys()
        received = update.body
        fetched_size = sum(self.file_of(u).stat().st_size for u in by_kind["changed"] | by_kind["new"])
        verdict = "matched exactly" if counts == expected == designed else "DID NOT MATCH"
        part2 = [
            "### 2. An update after changes",
            "",
            f"A first crawl (`--validators`, {len(before_pages)} pages), then the copy of the site is changed",
            f"(random.Random(13)): {len(made['changed'])} pages changed (5 %: depth-2 pages, text appended, mtime",
            f"set to now), {len(made['deleted'])} deleted (2 %: {len(made['deleted']) - 1} depth-2 pages and the",
            f"depth-1 page `{made['deleted_top']}`, which leaves {len(made['orphans'])} depth-2 pages linked from",
            f"no other crawled page), {len(made['added'])} pages added (1 %), each linked from one of the",
            f"{len(made['linking'])} pages at depth 0 and 1 that remain, which therefore change too. The expectation",
            "is the comparison, by URL, of the first crawl with a fresh crawl of the changed site into another",
            "directory (depth and body).",
            "",
            "```sh",
            f"tse crawl {SEED} DIR 2 --update --changes changes.jsonl {' '.join(FAST)}",
            "```",
            "",
            "| | new | changed | unchanged | gone |",
            "|---|---|---|---|---|",
            count_row("by construction", designed),
            count_row("expected (fresh crawl of the changed site vs first crawl)", expected),
            count_row("`tse crawl --update` on stderr", counts),
            "",
            f"Counts: {verdict}; the URLs in the changes file by kind "
            f"{'are exactly' if urls_match else 'are NOT'} those of the expectation; the live pages after the update "
            f"{'are' if after_pages == fresh_pages else 'are NOT'} those of the fresh crawl (URL, depth, body).",
            "",
            "| run | requests | of them 200 / 304 / 404 | body bytes received | changed + new pages' files | wall s "
            "| page files rewritten | page files added |",
            "|---|---|---|---|---|---|---|---|",
            f"| first crawl, `--validators` | {len(first.hits)} | {fmt_statuses(first.hits)} "
            f"| {first.body:,} | - | {first.wall:.2f} | - | {len(before_files)} |",
            f"| update after the changes | {len(update.hits)} | {fmt_statuses(update.hits)} | {received:,} "
            f"| {fetched_size:,} | {update.wall:.2f} | {len(rewritten)} | {len(appeared)} |",
            "",
            f"Bytes received {'equal' if received == fetched_size else 'differ from'} the sizes of the changed and new"
            f" pages' files ({received / max(first.body, 1):.1%} of the first crawl's).",
            "",
        ]
        try:
            return part2 + self.index_update(out, indexes)
        except RuntimeError as error:
            return part2 + not_measured("### 3. `tse index --update` after that update", error)
        finally:
            shutil.rmtree(indexes, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)

    def mutate(self, out: Path, rng: random.Random) -> dict:
        """Change 5 %, delete 2 % and add 1 % of the crawl's pages on the site copy."""
        pages = {page.url: page for _, page in pagedir.read_pages(out)}
        total = len(pages)
        top = sorted(url for url, page in pages.items() if page.depth <= 1)
        deleted_top = next(u for u in top if u.endswith("/Linked_list.html"))
        links = {u: internal_links(pages[u]) for u in top}
        others = set().union(*(links[u] for u in top if u != deleted_top))
        orphans = links[deleted_top] - others - set(top)
        deep = sorted(url for url, page in pages.items() if page.depth == 2 and url not in orphans)
        pages.clear()
        changed = set(rng.sample(deep, round(total * 0.05)))
        deleted = set(rng.sample(sorted(set(deep) - changed), round(total * 0.02) - 1)) | {deleted_top}
        linking = [u for u in top if u != deleted_top]
        added = []
        now = time.time()
        for url in sorted(changed):
            path = self.file_of(url)
            with path.open("ab") as file:
                file.write(b"<p>Changed by bench/update_bench.py</p>\n")
            os.utime(path, (now, now))
        for url in deleted:
            self.file_of(url).unlink()
        for i in range(round(total * 0.01)):
            name = f"Bench_added_{i + 1}.html"
            added.append(f"http://{SITE}/{name}")
            (self.root / SITE / name).write_text(
                f"<html><head><title>Added page {i + 1}</title></head><body><p>A page added by the benchmark.</p>"
                f'<p><a href="index.html">Main page</a></p></body></html>\n'
            )
            path = self.file_of(linking[i % len(linking)])
            data = path.read_bytes()
            at = data.rfind(b"</body>")
            link = f'<p><a href="{name}">Added page {i + 1}</a></p>\n'.encode()
            path.write_bytes(data[:at] + link + data[at:] if at >= 0 else data + link)
            os.utime(path, (now, now))
        return {
            "changed": changed,
            "deleted": deleted,
            "deleted_top": deleted_top.rsplit("/", 1)[1],
            "orphans": orphans,
            "added": set(added),
            "linking": set(linking),
        }

    def index_update(self, out: Path, indexes: Path) -> list[str]:
        """3. `tse index --update` of the index of the first crawl vs a full `tse index`, side by side."""
        updates, fulls, fallbacks, identical = [], [], 0, {}
        suffixes = ("", ".bin", ".docs")
        for _ in range(max(ROUNDS, 5)):
            for suffix in suffixes:
                shutil.copy2(indexes / f"old.index{suffix}", indexes / f"updated.index{suffix}")
                (indexes / f"full.index{suffix}").unlink(missing_ok=True)
            updates.append(self.tse("index", out, indexes / "updated.index", "--update"))
            fallbacks += "cannot update" in updates[-1].stderr
            fulls.append(self.tse("index", out, indexes / "full.index"))
            for suffix in suffixes:
                same = (indexes / f"updated.index{suffix}").read_bytes() == (
                    indexes / f"full.index{suffix}"
                ).read_bytes()
                identical[suffix] = identical.get(suffix, True) and same
            same_rows = store_rows(indexes / "updated.index.docs") == store_rows(indexes / "full.index.docs")
            identical["rows"] = identical.get("rows", True) and same_rows
        again = [self.tse("index", out, indexes / "full.index", "--update") for _ in range(max(ROUNDS, 5))]
        full = statistics.median(r.wall for r in fulls)
        rows = [
            "| run | wall s (median) | CPU s (median) | vs full index |",
            "|---|---|---|---|",
            f"| `tse index DIR INDEX` (full) | {full:.2f} | {statistics.median(r.cpu for r in fulls):.2f} | 1.00x |",
        ]
        for name, runs in (
            ("`tse index DIR INDEX --update` (the first crawl's index)", updates),
            ("`tse index DIR INDEX --update` again (nothing changed)", again),
        ):
            wall = statistics.median(r.wall for r in runs)
            rows.append(f"| {name} | {wall:.2f} | {statistics.median(r.cpu for r in runs):.2f} | {wall / full:.2f}x |")
        same = ", ".join(
            f"`INDEX{suffix}` {'byte-identical' if identical[suffix] else 'not byte-identical'}" for suffix in suffixes
        )
        same += f"; the rows of every table of `INDEX.docs` {'identical' if identical['rows'] else 'DIFFERENT'}"
        return [
            "### 3. `tse index --update` after that update",
            "",
            f"{len(fulls)} rounds, side by side: the index of the first crawl (copied back before each round)",
            "updated, then a full index of the updated directory; medians. Last row: `--update` of an index",
            "already up to date.",
            "",
            *rows,
            "",
            f"Outputs of `--update` against the full index, every round: {same}"
            + (
                f"; {fallbacks} round(s) fell back to a full index"
                if fallbacks
                else "; no round fell back to a full index"
            )
            + ".",
            "",
        ]

    def warc(self) -> list[str]:
        """4. The cost of --warc: fast crawls with and without it, alternating."""
        self.fresh_site()
        out, archive = self.work / "warc", self.work / "warc-archive" / "crawl.warc.gz"
        contenders = {
            "no options": [],
            "`--validators`": ["--validators"],
            "`--warc FILE.warc.gz`": ["--warc", archive],
        }
        walls: dict[str, list[float]] = {name: [] for name in contenders}
        sizes = None
        try:
            with SiteServer(self.root) as self.server:
                for round_number in range(ROUNDS):
                    names = list(contenders)
                    names = names[round_number % len(names) :] + names[: round_number % len(names)]
                    for name in names:
                        shutil.rmtree(archive.parent, ignore_errors=True)
                        archive.parent.mkdir(parents=True)
                        run = self.crawl(out, *contenders[name])
                        walls[name].append(run.wall)
                        if "--warc" in contenders[name]:
                            cdxj = archive.with_name("crawl.cdxj")
                            lines = len(cdxj.read_bytes().splitlines()) if cdxj.is_file() else None
                            sizes = (
                                archive.stat().st_size,
                                cdxj.stat().st_size if cdxj.is_file() else None,
                                lines,
                                run,
                            )
        except RuntimeError as error:
            return not_measured("### 4. The cost of `--warc`", error)
        finally:
            self.server = None
            shutil.rmtree(out, ignore_errors=True)
        plain = statistics.median(walls["no options"])
        rows = [
            "| crawl | wall s (median) | min | max | vs no options |",
            "|---|---|---|---|---|",
        ]
        for name, runs in walls.items():
            rows.append(
                f"| {name} | {statistics.median(runs):.2f} | {min(runs):.2f} | {max(runs):.2f} "
                f"| {statistics.median(runs) / plain:.2f}x |"
            )
        overhead = statistics.median(walls["`--warc FILE.warc.gz`"]) / plain - 1
        # --warc implies --validators (the catalog a later update's revisits refer to).
        over_validators = (
            statistics.median(walls["`--warc FILE.warc.gz`"]) / statistics.median(walls["`--validators`"]) - 1
        )
        # The three crawls of a round ran side by side: their ratios are steadier than the medians
        # when other processes load the machine for a while.
        ratios = {
            name: statistics.median(w / p for w, p in zip(walls["`--warc FILE.warc.gz`"], walls[name], strict=True))
            for name in ("no options", "`--validators`")
        }
        warc_bytes, cdxj_bytes, cdxj_lines, run = sizes
        body = run.body
        shutil.rmtree(archive.parent, ignore_errors=True)
        return [
            "### 4. The cost of `--warc`",
            "",
            f"Fast crawls into an empty directory, {ROUNDS} rounds, the three side by side in each round",
            "(their order rotated); medians.",
            "",
            "```sh",
            f"tse crawl {SEED} DIR 2 --warc crawl.warc.gz {' '.join(FAST)}",
            "```",
            "",
            *rows,
            "",
            f"Write overhead of `--warc`: {overhead:+.1%} wall time over a crawl without options "
            f"(goal <= 10 %: {'met' if overhead <= 0.10 else 'missed'}); "
            f"{over_validators:+.1%} over `--validators`, which `--warc` implies. Median of the per-round ratios: "
            f"{ratios['no options']:.2f} over no options, {ratios['`--validators`']:.2f} over `--validators`.",
            f"Archive: `crawl.warc.gz` {warc_bytes / 1e6:.1f} MB for {len(run.hits)} exchanges "
            f"({body / 1e6:.1f} MB of bodies served); `crawl.cdxj` "
            + (f"{cdxj_bytes / 1e3:.0f} kB, {cdxj_lines} lines." if cdxj_bytes is not None else "not written."),
            "",
        ]

    def rate(self) -> list[str]:
        """5. The change-rate order against breadth-first, for an update limited to the changed share."""
        self.fresh_site()
        out = self.work / "rate"
        rng = random.Random(5)
        rounds = []
        with SiteServer(self.root) as self.server:
            self.crawl(out, "--order", "bfs", "--validators")
            urls = sorted(page.url for _, page in pagedir.read_pages(out))
            volatile = set(rng.sample(urls, round(len(urls) * 0.10)))
            for round_number in range(4):
                now = time.time()
                for url in sorted(volatile):
                    path = self.file_of(url)
                    with path.open("ab") as file:
                        file.write(f"<p>Changed by bench/update_bench.py, round {round_number + 1}</p>\n".encode())
                    os.utime(path, (now, now))
                if round_number < 3:
                    rounds.append(self.crawl(out, "--order", "bfs", "--update", fresh=False).counts())
            limit = len(volatile)
            results, stray = {}, 0
            for name, order in (
                ("`--order priority`, ChangeRatePrioritizer", RATE_ORDER),
                ("`--order bfs`", ["--order", "bfs"]),
            ):
                copy = self.work / "rate-copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(out, copy)
                listed = self.work / "rate-changes.jsonl"
                run = self.crawl(copy, "--update", "--max-pages", str(limit), "--changes", listed, *order, fresh=False)
                entries = [json.loads(line) for line in listed.read_text().splitlines()]
                fetched = [e for e in entries if e["status"] is not None]
                changed = {e["url"] for e in entries if e["change"] == "changed"}
                requested = {"http://" + hit.key for hit in run.hits if not hit.key.endswith("/robots.txt")}
                stray += len(changed - volatile)
                results[name] = (run, len(fetched), len(changed), len(requested), len(requested & volatile))
        self.server = None
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(self.work / "rate-copy", ignore_errors=True)
        expected = {"new": 0, "changed": limit, "unchanged": len(urls) - limit, "gone": 0}
        rows = [
            f"| update, `--max-pages {limit}` | pages fetched (changes file) | of them changed | share changed "
            "| requests sent (robots.txt aside) | of them to changed pages | wall s |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, (run, fetched, changed, requested, to_changed) in results.items():
            share = f"{changed / limit:.0%}"
            rows.append(f"| {name} | {fetched} | {changed} | {share} | {requested} | {to_changed} | {run.wall:.2f} |")
        verdict = "as expected" if all(c == expected for c in rounds) else "NOT as expected: " + format_counts(expected)
        return [
            "### 5. The change-rate order",
            "",
            f"A first crawl (`--order bfs --validators`, {len(urls)} pages), then three updates",
            f"(`--order bfs --update`), before each of which the same {limit} pages (10 %, random.Random(5)) change",
            "(text appended); the updates reported " + "; ".join(format_counts(c) for c in rounds) + f" ({verdict}).",
            f"Then the {limit} pages change a fourth time and two identical copies of the directory are updated",
            f"with `--max-pages {limit}`:",
            "",
            "```sh",
            f"tse crawl {SEED} DIR 2 --update --max-pages {limit} --changes changes.jsonl \\",
            f"    {' '.join(RATE_ORDER)} {' '.join(FAST)}",
            f"tse crawl {SEED} DIR 2 --update --max-pages {limit} --changes changes.jsonl --order bfs {' '.join(FAST)}",
            "```",
            "",
            *rows,
            "",
            "Share changed: the changes file's entries with change `changed`, over the page limit"
            + (f" ({stray} of them NOT among the pages changed)." if stray else " (all among the pages changed)."),
            "",
        ]


def not_measured(title: str, error: RuntimeError) -> list[str]:
    """A section whose command failed: the command and the end of its stderr."""
    command, *stderr = str(error).splitlines()
    return [title, "", f"Not measured: a command failed: `{command}`", "", "```", *stderr[-12:], "```", ""]


def file_stamps(directory: Path) -> dict[str, tuple[int, int]]:
    """Inode and mtime of every page file."""
    stamps = {}
    for entry in os.scandir(directory):
        if entry.name.isdigit():
            status = entry.stat()
            stamps[entry.name] = (status.st_ino, status.st_mtime_ns)
    return stamps


def page_versions(directory: Path) -> dict[str, tuple[int, str]]:
    """URL -> (depth, body digest) of the live pages."""
    return {page.url: (page.depth, hashlib.blake2b(page.body).hexdigest()) for _, page in pagedir.read_pages(directory)}


def store_rows(path: Path) -> dict[str, list[tuple]]:
    """Every table of an SQLite file, its rows sorted."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: sorted(connection.execute(f'SELECT * FROM "{table}"').fetchall()) for table in tables}
    finally:
        connection.close()


def internal_links(page: pagedir.Page) -> set[str]:
    return {u for u in map(normalize_url, extract_links_html(page.body, page.url)) if u and is_internal(u)}


def fmt_statuses(hits: list[Hit]) -> str:
    statuses = Counter(hit.status for hit in hits)
    return f"{statuses[200]} / {statuses[304]} / {statuses[404]}"


def count_row(name: str, counts: dict[str, int] | None) -> str:
    if counts is None:
        return f"| {name} | no counts line | | | |"
    return f"| {name} | " + " | ".join(str(counts[kind]) for kind in KINDS) + " |"


def format_counts(counts: dict[str, int] | None) -> str:
    if counts is None:
        return "no counts line"
    return ", ".join(f"{counts[kind]} {kind}" for kind in KINDS)


def run(mirror: Path, parts: tuple[str, ...] = PARTS) -> list[str]:
    bench = Bench(mirror)
    sections = []
    for part in parts:
        sections += getattr(bench, part)()
    shutil.rmtree(bench.work, ignore_errors=True)
    return [
        "## Keeping a crawl fresh (issue 13)",
        "",
        f"Mirrored wikipedia, depth 2, seed `{SEED}`, through the site server",
        "as a proxy on 127.0.0.1 (`tse_scrapy/devtools/siteserver.py`, in the benchmark's process: ETag and",
        "Last-Modified, 304s) serving a copy of the mirror's wikipedia part that the benchmark changes. Every crawl is",
        "fast (`-s DOWNLOAD_DELAY=0 -s LOG_LEVEL=WARNING`), from the repository root, with `http_proxy` and no other",
        "proxy variable; `tse` is `.venv/bin/tse`. `bench/update_bench.py`.",
        "",
        *sections,
    ]


if __name__ == "__main__":
    from bench.common import unpack_mirror

    chosen = tuple(sys.argv[1:]) or PARTS
    if not set(chosen) <= set(PARTS):
        raise SystemExit(f"usage: update_bench.py [{'] ['.join(PARTS)}]")
    print("\n".join(run(unpack_mirror(), chosen)))
