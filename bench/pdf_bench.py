"""PDF text (index/pdfs.py): pages a second through PdfExtractor's child process, against
the same PDFs read in this process, and the time a hostile PDF costs.

The corpus is real manuals from Debian packages (bench/install-docs.sh installs the
missing ones, as root): the Debian Reference, the Valgrind manual, the installation
guide, Nettle's, the New Maintainers' Guide in Russian, libtasn1's, bzip2's and the
shared MIME-info spec; ``.pdf.gz`` ones gunzipped in memory.  In each round, in
an order that alternates from round to round:

* ``pypdfium2``: in this process, each page's text as PDFium gives it (open, for
  each page get_textpage().get_text_range(), close): the baseline;
* ``read_pdf``: in this process, the extractor's own work (the same, with the
  text cleaned and the title chosen);
* ``PdfExtractor``: through the child process, started once and kept warm (its
  start measured apart), the PDF sent over its socket and the text sent back;
* ``one-shot``: extract_pdf_text, a new child for each PDF.

Pages a second: all pages over the wall time of the round, median of the rounds.
The child's peak RSS is its VmHWM, read before it is stopped.  Hostile PDFs, made
here, with the default bounds (30 s, 1 GiB, 2,000 pages, 2,000,000 characters)
unless said: a content stream that inflates to 1 GiB, and 2,000 pages sharing one
content stream of 10,000 characters (slow to read, little memory); after each, the
time of the next (tiny) PDF, which pays for a new child when the last one died.  Run by bench/run.py, or alone:
``.venv/bin/python bench/pdf_bench.py`` (BENCH_REPEAT rounds, default 3).
"""

from __future__ import annotations

import gzip
import statistics
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPEAT, ROOT
from tests.support.pdfs import pages_pdf, stream
from tse_scrapy.index.pdfs import PdfExtractor, extract_pdf_text, read_pdf

# (package, path): the manuals read, some hundreds of pages each.
MANUALS = [
    ("debian-reference-en", "/usr/share/debian-reference/debian-reference.en.pdf"),
    ("valgrind", "/usr/share/doc/valgrind/valgrind_manual.pdf.gz"),
    ("installation-guide-amd64", "/usr/share/doc/installation-guide-amd64/en/install.en.pdf.gz"),
    ("nettle-dev", "/usr/share/doc/nettle-dev/nettle.pdf.gz"),
    ("maint-guide-ru", "/usr/share/doc/maint-guide-ru/maint-guide.ru.pdf"),
    ("libtasn1-doc", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    ("bzip2-doc", "/usr/share/doc/bzip2/manual.pdf.gz"),
    ("shared-mime-info", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
]
T = TypeVar("T")
LIMIT = 10**9  # no page or character bound for the in-process readers: every page read


def manuals() -> dict[str, bytes]:
    """The manuals' bytes by file name, the missing packages installed first (as root)."""
    subprocess.run(["bash", str(ROOT / "bench" / "install-docs.sh"), *(package for package, _ in MANUALS)])
    found = {}
    for _, name in MANUALS:
        path = Path(name)
        if path.is_file():
            data = path.read_bytes()
            found[path.name.removesuffix(".gz")] = gzip.decompress(data) if path.suffix == ".gz" else data
    if not found:
        raise SystemExit("bench: none of the manuals is installed")
    return found


def pypdfium2_pages(data: bytes) -> tuple[int, int]:
    """Pages and characters of *data* read by pypdfium2 alone, in this process (the baseline)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    characters = 0
    try:
        for index in range(len(pdf)):
            page = pdf.get_page(index)
            textpage = page.get_textpage()
            characters += len(textpage.get_text_range())
            textpage.close()
            page.close()
        return len(pdf), characters
    finally:
        pdf.close()


def child_peak_rss(extractor: PdfExtractor) -> float:
    """The peak resident size (MB) of *extractor*'s child so far."""
    child = extractor._child
    assert child is not None
    for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bomb_pdf(megabytes: int) -> bytes:
    """One page whose content stream inflates to *megabytes* MiB of spaces."""
    compressor = zlib.compressobj(9)
    spaces = b" " * (1 << 20)
    compressed = b"".join(compressor.compress(spaces) for _ in range(megabytes)) + compressor.flush()
    return pages_pdf([4], [stream(b"", compressed)])


def slow_pdf(pages: int, characters: int = 10_000) -> bytes:
    """*pages* pages sharing one content stream of *characters* characters."""
    return pages_pdf([4] * pages, [stream(b"BT /F1 1 Tf " + b"(abcdefghij) Tj " * (characters // 10) + b"ET")])


def timed(read: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = read()
    return time.perf_counter() - start, result


def run() -> list[str]:
    """The section's markdown lines."""
    corpus = manuals()
    pages = {name: pypdfium2_pages(data)[0] for name, data in corpus.items()}  # also warms the page cache
    total = sum(pages.values())
    megabytes = sum(len(data) for data in corpus.values()) / 2**20
    extractor = PdfExtractor()
    start_time, _ = timed(lambda: extractor.extract(slow_pdf(1)))  # the child's start (and one tiny PDF)

    def through_child() -> None:
        texts = [extractor.extract(data) for data in corpus.values()]
        warnings = {text.warning for text in texts}
        if warnings != {None} or sum(text.pages for text in texts) != total:
            raise SystemExit(f"bench: the extractor read {warnings}, not every page")

    readers: dict[str, Callable[[], object]] = {
        "pypdfium2, in process (baseline)": lambda: [pypdfium2_pages(data) for data in corpus.values()],
        "read_pdf, in process": lambda: [read_pdf(data, LIMIT, LIMIT) for data in corpus.values()],
        "PdfExtractor, warm child": through_child,
        "extract_pdf_text, a child per PDF": lambda: [extract_pdf_text(data) for data in corpus.values()],
    }
    seconds: dict[str, list[float]] = {name: [] for name in readers}
    for round_ in range(REPEAT):
        for name in list(readers)[:: 1 if round_ % 2 == 0 else -1]:
            seconds[name].append(timed(readers[name])[0])
    peak = child_peak_rss(extractor)
    extractor.close()

    hostile = []
    for label, data, bounds in (
        ("1 GiB inflation bomb (1 MB file), memory 1 GiB", bomb_pdf(1024), {}),
        ("1 GiB inflation bomb, memory 256 MiB", bomb_pdf(1024), {"memory": 256 * 2**20}),
        ("2,000 pages x 10,000 characters (200 KB file)", slow_pdf(2000), {}),
        ("the same, max_chars 10^9 (10 s of work), timeout 2 s", slow_pdf(2000), {"max_chars": LIMIT, "timeout": 2.0}),
    ):
        with PdfExtractor(**bounds) as bounded:
            bounded.extract(slow_pdf(1))  # started, so that only the PDF is timed
            elapsed, result = timed(lambda bounded=bounded, data=data: bounded.extract(data))
            after, _ = timed(lambda bounded=bounded: bounded.extract(slow_pdf(1)))  # a new child if it died
        hostile.append((label, elapsed, result, after))

    rows = [
        "## PDF text: pages a second, in a child process and in process",
        "",
        f"{len(corpus)} Debian manuals ({total:,} pages, {megabytes:.1f} MB: "
        + ", ".join(f"{name} {count}" for name, count in pages.items())
        + f"), {REPEAT} rounds, medians; the readers alternate their order from round to round. "
        "bench/pdf_bench.py; pypdfium2 (PDFium) in every reader.",
        "",
        "| reader | s per round | pages/s | vs baseline |",
        "|---|---|---|---|",
    ]
    baseline = statistics.median(seconds["pypdfium2, in process (baseline)"])
    for name, measured in seconds.items():
        median = statistics.median(measured)
        rows.append(f"| {name} | {median:.2f} | {total / median:,.0f} | {median / baseline:.2f}x |")
    rows += [
        "",
        f"The warm child: started in {start_time * 1000:.0f} ms (Python, PDFium, one tiny PDF), "
        f"peak RSS {peak:.0f} MB after every round.",
        "",
        "| hostile PDF (default bounds unless said) | s | warning | next PDF after it, s |",
        "|---|---|---|---|",
    ]
    for label, elapsed, result, after in hostile:
        rows.append(f"| {label} | {elapsed:.2f} | {result.warning} | {after:.2f} |")
    rows.append("")
    return rows


if __name__ == "__main__":
    start = time.perf_counter()
    print("\n".join(run()))
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
