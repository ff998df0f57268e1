"""The crawl report (tse_scrapy/report): hand-written record files in, one self-contained HTML page out.

The expected numbers are worked out by hand from the lines below, not by the code under test.
"""

import itertools
import json
import os
import re
import shutil

import lxml.html
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_tse
from tests.support.browser import CHROMIUM, FIGURES, NO_CHROMIUM, render_report
from tests.support.inprocess import tse_here
from tse_scrapy.report import figures
from tse_scrapy.report import records as records_module
from tse_scrapy.report.page import ReportSummary, write_report
from tse_scrapy.report.records import ReportError, covered_seconds, read_records
from tse_scrapy.rules.files.crawlrecord import IGNORED_KINDS, MAX_LINE, OUTCOMES, RequestRecord, format_record

# A small crawl of a.test, one link off to b.test, as a crawl writes it.  Times
# are seconds after 1764522000 (2025-11-30 17:00:00 UTC).  The links:
#   /  -> b, c, b (twice on the page: one in-link)     b -> c, /
#   c  -> /, missing                                   d -> c
CRAWL = """\
{"url":"http://a.test/","doc":1,"depth":0,"host":"a.test","outcome":"saved","status":200,"bytes":1000,"start":1764522000.0,"end":1764522000.2,"links":["http://a.test/b","http://a.test/c","http://a.test/b"],"ignored":{"external":2}}
{"url":"http://a.test/robots.txt","depth":0,"host":"a.test","outcome":"robots","status":200,"bytes":50,"start":1764522000.1,"end":1764522000.15}
{"url":"http://a.test/b","doc":2,"depth":1,"host":"a.test","outcome":"saved","status":200,"bytes":3000,"start":1764522001.0,"end":1764522001.5,"links":["http://a.test/c","http://a.test/"],"ignored":{"duplicate":1}}
{"url":"http://a.test/c","doc":3,"depth":1,"host":"a.test","outcome":"saved","status":200,"bytes":2000,"start":1764522002.0,"end":1764522002.1,"links":["http://a.test/","http://a.test/missing"],"ignored":{"duplicate":1,"denied":1}}
{"url":"http://a.test/missing","depth":2,"host":"a.test","outcome":"failed","status":404,"bytes":120,"start":1764522003.0,"end":1764522003.06}
{"url":"http://b.test/x","depth":2,"host":"b.test","outcome":"failed","failure":"timeout","bytes":0,"start":1764522003.2,"end":1764522013.2}
{"url":"http://a.test/old","depth":1,"host":"a.test","outcome":"redirect","status":301,"bytes":0,"start":1764522004.0,"end":1764522004.01}
{"url":"http://a.test/d","doc":4,"depth":2,"host":"a.test","outcome":"saved","status":200,"bytes":500,"start":1764522005.0,"end":1764522005.3,"links":["http://a.test/c"]}
{"url":"http://a.test/private","depth":2,"host":"a.test","outcome":"failed","failure":"robots.txt","start":null,"end":null}
"""

CRAWL_TOTALS = {
    "requests": "8",  # sent: the page robots.txt refused was not
    "not_sent": "1",
    "pages_saved": "4",
    "pages_failed": "3",
    "ignored_external": "2",
    "ignored_duplicate": "2",
    "ignored_denied": "1",
    "bytes": "6670",  # 1000 + 50 + 3000 + 2000 + 120 + 500
    "wall_seconds": "13.2",  # the first start (+0) to the last end (+13.2)
    "pages_per_minute": "18.182",  # 4 pages in 13.2 s
    "hosts": "2",
    "workers": "1",  # no line names a worker
    "max_depth": "2",
}


def write(path, text):
    path.write_text(text)
    return path


def report(tmp_path, *texts, name="report.html"):
    """Write each text as a record file, report them all; the summary and the parsed page."""
    paths = [write(tmp_path / f"record{number}.jsonl", text) for number, text in enumerate(texts)]
    summary = write_report(paths, tmp_path / name)
    return summary, lxml.html.parse(str(tmp_path / name)).getroot()


def total_values(page):
    """{name: the plain number} of the totals table."""
    return {cell.get("data-total"): cell.text for cell in page.xpath('//table[@id="totals"]//td[@data-total]')}


def table_rows(page, table_id):
    return [
        [cell.text_content().strip() for cell in row.xpath("td")]
        for row in page.xpath(f'//table[@id="{table_id}"]/tbody/tr')
    ]


@pytest.fixture(scope="module")
def crawl_report(tmp_path_factory):
    """CRAWL's report, written once for the tests that only read it: (its directory, the summary, the
    parsed page)."""
    directory = tmp_path_factory.mktemp("crawl-report")
    return directory, *report(directory, CRAWL)


def test_totals_and_pages_per_depth(crawl_report):
    tmp_path, summary, page = crawl_report
    assert total_values(page) == CRAWL_TOTALS
    assert {cell.get("data-depth"): cell.text for cell in page.xpath('//table[@id="per-depth"]//td')} == {
        "0": "1",
        "1": "2",
        "2": "1",
    }
    assert summary == ReportSummary(
        requests=8,
        not_sent=1,
        pages_saved=4,
        pages_failed=3,
        ignored_external=2,
        ignored_duplicate=2,
        ignored_denied=1,
        bytes=6670,
        wall_seconds=pytest.approx(13.2),
        pages_per_minute=pytest.approx(4 / 13.2 * 60),
        hosts=2,
        workers=1,
        max_depth=2,
        out_path=tmp_path / "report.html",
        files=1,
        bad_lines=0,
    )
    assert summary.describe() == (
        f"wrote {tmp_path / 'report.html'}: 8 requests, 1 page refused before sending, 4 pages saved, 3 failed, "
        "from 1 record file"
    )
    lead = page.xpath('//p[@class="lead"]')[0].text_content()
    assert " ".join(lead.split()) == (
        "4 pages saved from 2 hosts in 13.2 s (18.2 pages a minute), 3 failed, deepest at depth 2."
    )
    assert "Crawled 2025-11-30 17:00:00 to 17:00:13 UTC, by 1 worker." in page.text_content()
    assert not os.path.exists(tmp_path / ".report.html.partial")


def test_each_figure_is_an_inline_svg_with_a_caption(crawl_report):
    tmp_path, _, page = crawl_report
    for figure_id in FIGURES:
        (figure,) = page.xpath(f'//figure[@id="{figure_id}"]')
        assert len(figure.xpath("./svg")) == 1, figure_id
        assert figure.xpath("./svg/@viewbox"), figure_id  # sized by the page, shaped by its viewBox
        assert figure.xpath("./figcaption")[0].text_content().strip(), figure_id
    html = (tmp_path / "report.html").read_text()
    # One document, five figures: no two elements share an id.
    ids = page.xpath("//@id")
    assert len(ids) == len(set(ids)) and len(ids) > 50
    # Nothing from the network: no script, no external style, image or font.
    assert not page.xpath("//script | //link | //img | //iframe | //object | //embed")
    assert "http://www.w3.org" in html and not any(
        url.startswith(("http", "//")) for url in page.xpath("//@src | //@href[not(starts-with(., '#'))]")
    )
    assert "@import" not in html and "url(http" not in html
    # The tick labels, as matplotlib comments the text it draws as paths.
    outcomes = page.xpath('//figure[@id="fig-outcomes"]/svg')[0]
    labels = [comment.text.strip() for comment in outcomes.iter(lxml.etree.Comment)]
    assert "failed: timeout" in labels and "failed: http 404" in labels and "failed: robots.txt" in labels
    assert "link ignored: external" in labels and "link ignored: denied" in labels
    assert "retried" not in labels  # no request was retried: no empty bar
    timeline = page.xpath('//figure[@id="fig-timeline"]/svg')[0]
    labels = [comment.text.strip() for comment in timeline.iter(lxml.etree.Comment)]
    assert "a.test (7)" in labels and "b.test (1)" in labels  # the refused request was never sent


def test_most_linked_counts_each_linking_page_once(crawl_report):
    _, _, page = crawl_report
    # c is linked from /, b and d; / from b and c; b from / (twice on one page: once);
    # missing from c.  b.test/x is linked from nowhere, and the links never requested do not count.
    assert table_rows(page, "most-linked") == [
        ["http://a.test/c", "3"],
        ["http://a.test/", "2"],
        ["http://a.test/b", "1"],
        ["http://a.test/missing", "1"],
    ]
    # URLs are text, not links.
    assert not page.xpath('//table[@id="most-linked"]//a')


def test_a_page_scanned_twice_counts_once(tmp_path):
    again = CRAWL.splitlines()[0] + "\n"  # the seed again: a crawl run a second time into the same record
    _, page = report(tmp_path, CRAWL, again)
    assert table_rows(page, "most-linked")[2] == ["http://a.test/b", "1"]


def test_slowest_requests(crawl_report):
    _, _, page = crawl_report
    assert table_rows(page, "slowest") == [
        ["http://b.test/x", "10.000", "\N{EN DASH}", "failed: timeout"],
        ["http://a.test/b", "0.500", "200", "saved"],
        ["http://a.test/d", "0.300", "200", "saved"],
        ["http://a.test/", "0.200", "200", "saved"],
        ["http://a.test/c", "0.100", "200", "saved"],
        ["http://a.test/missing", "0.060", "404", "failed"],
        ["http://a.test/robots.txt", "0.050", "200", "robots"],
        ["http://a.test/old", "0.010", "301", "redirect"],
    ]  # the refused request, never sent, has no time


def test_only_the_20_slowest_and_20_most_linked(tmp_path):
    # 30 pages p0..p29: page i takes i seconds and is linked from the i pages before it.
    lines = []
    for i in range(30):
        links = ",".join(f'"http://h/p{j}"' for j in range(i + 1, 30))
        lines.append(
            f'{{"url":"http://h/p{i}","host":"h","outcome":"saved","start":{1000 + 100 * i},'
            f'"end":{1000 + 100 * i + i},"links":[{links}]}}\n'
        )
    _, page = report(tmp_path, "".join(lines))
    slowest = table_rows(page, "slowest")
    assert [row[:2] for row in slowest] == [[f"http://h/p{i}", f"{i}.000"] for i in range(29, 9, -1)]
    linked = table_rows(page, "most-linked")
    assert linked == [[f"http://h/p{i}", str(i)] for i in range(29, 9, -1)]


@pytest.mark.parametrize("batch", [1, 3, records_module.LINK_BATCH])
def test_the_most_linked_are_the_same_whatever_the_links_counted_at_once(tmp_path, monkeypatch, batch):
    # (Links are counted a batch at a time, into sorted arrays.)  p10..p14 are linked from two pages each,
    # p15..p39 from one (a tie at the 20th row, broken by URL), x from many but never requested.
    monkeypatch.setattr(records_module, "LINK_BATCH", batch)
    lines = [
        {"url": "http://h/a", "outcome": "saved", "links": [f"http://h/p{i}" for i in range(10, 40)] + ["http://h/x"]},
        {"url": "http://h/b", "outcome": "saved", "links": [f"http://h/p{i}" for i in range(10, 15)] + ["http://h/x"]},
        *({"url": f"http://h/p{i}", "outcome": "saved", "links": ["http://h/x"]} for i in range(10, 40)),
    ]
    found = read_records([write(tmp_path / "r.jsonl", "".join(json.dumps(line) + "\n" for line in lines))])
    expected = [(f"http://h/p{i}", 2) for i in range(10, 15)]
    expected += sorted((f"http://h/p{i}", 1) for i in range(15, 40))[:15]  # p15, p16 ... p28, p29 by URL
    assert [(page.url, page.in_links) for page in found.most_linked()] == expected
    assert not found.link_targets_capped


TWO_WORKERS = (
    # Worker w1 and worker w2 of one crawl, each with its own record file.
    '{"url":"http://a.test/","doc":1,"depth":0,"host":"a.test","outcome":"saved","bytes":100,"start":1764522020.0,'
    '"end":1764522020.5,"worker":"w1","links":["http://b.test/","http://a.test/2"]}\n'
    '{"url":"http://a.test/2","doc":3,"depth":1,"host":"a.test","outcome":"saved","bytes":300,"start":1764522022.0,'
    '"end":1764522022.5,"worker":"w1","links":["http://b.test/"]}\n',
    '{"url":"http://b.test/","doc":2,"depth":1,"host":"b.test","outcome":"saved","bytes":200,"start":1764522021.0,'
    '"end":1764522021.25,"worker":"w2","links":["http://a.test/2"],"ignored":{"external":5}}\n'
    '{"url":"http://b.test/gone","depth":2,"host":"b.test","outcome":"failed","status":410,"start":1764522023.0,'
    '"end":1764522081.0,"worker":"w2"}\n',
)


def test_the_files_of_two_workers_make_one_report(tmp_path):
    summary, page = report(tmp_path, *TWO_WORKERS)
    assert total_values(page) | {"pages_per_minute": None} == {
        "requests": "4",
        "not_sent": "0",
        "pages_saved": "3",
        "pages_failed": "1",
        "ignored_external": "5",
        "ignored_duplicate": "0",
        "ignored_denied": "0",
        "bytes": "600",
        "wall_seconds": "61.0",  # w1's first start to w2's last end
        "pages_per_minute": None,
        "hosts": "2",
        "workers": "2",
        "max_depth": "1",
    }
    assert float(total_values(page)["pages_per_minute"]) == pytest.approx(3 / (61 / 60), abs=0.001)
    assert summary.files == 2 and summary.workers == 2
    # The links cross the files: b.test/ is linked from two pages of w1, a.test/2 from one page of each worker.
    assert table_rows(page, "most-linked") == [["http://a.test/2", "2"], ["http://b.test/", "2"]]
    files = [" ".join(item.text_content().split()) for item in page.xpath('//ul[@id="record-files"]/li')]
    assert files == [f"{tmp_path}/record0.jsonl: 2 requests", f"{tmp_path}/record1.jsonl: 2 requests"]
    assert page.xpath('//td[@data-total="wall_seconds"]/following-sibling::td')[0].text == "1 min 1 s"


def test_bad_lines_and_a_torn_last_line_are_skipped_and_reported(tmp_path):
    text = (
        '{"url":"http://h/1","host":"h","outcome":"saved","depth":1}\n'
        "garbage\n"
        "\n"  # a blank line holds nothing: not counted
        '{"url":"http://h/2","outcome":"finished"}\n'
        '{"url":"http://h/3","host":"h","outcome":"saved","depth":2}\n'
        "[]\n"
        '{"url":"http://h/4","outcome":"saved","bytes":-5}\n'
        '{"url":"http://h/5","host":"h","outcome":"sav'  # the crawl was killed mid-line
    )
    summary, page = report(tmp_path, text)
    assert summary.requests == 2 and summary.bad_lines == 5 and summary.pages_saved == 2
    assert total_values(page)["requests"] == "2"
    assert summary.describe().endswith("from 1 record file, 5 bad lines skipped")
    (item,) = page.xpath('//ul[@id="record-files"]/li')
    text = " ".join(item.text_content().split())
    assert text.startswith(f"{tmp_path}/record0.jsonl: 2 requests, 4 bad lines skipped, a torn last line skipped")
    reasons = [reason.text_content() for reason in item.xpath('.//ul[@class="reasons"]/li')]
    assert reasons[0].startswith("line 2: not JSON")
    assert reasons[1].startswith("line 4: outcome must be one of")
    assert reasons[2] == "line 6: not a JSON object"
    assert reasons[3] == "and 1 more"  # the first three reasons are kept
    warning = page.xpath('//p[@class="warning"]')[0].text_content()
    assert " ".join(warning.split()).startswith("5 lines of the record could not be read and were skipped")


def test_a_last_line_without_its_newline_but_whole_is_kept(tmp_path):
    summary, page = report(tmp_path, '{"url":"http://h/1","outcome":"saved"}\n{"url":"http://h/2","outcome":"saved"}')
    assert summary.requests == 2 and summary.bad_lines == 0
    assert not page.xpath('//p[@class="warning"]')


def test_an_over_long_line_is_skipped_and_the_next_one_read(tmp_path):
    long_line = '{"url":"http://h/long","outcome":"saved","pad":"' + "x" * MAX_LINE + '"}\n'
    text = (
        '{"url":"http://h/1","outcome":"saved"}\n' + long_line + '{"url":"http://h/3","outcome":"failed","start":1}\n'
    )
    summary, page = report(tmp_path, text)
    assert (summary.requests, summary.pages_saved, summary.pages_failed, summary.bad_lines) == (2, 1, 1, 1)
    reasons = [reason.text_content() for reason in page.xpath('//ul[@class="reasons"]/li')]
    assert reasons == [f"line 2: a line longer than {MAX_LINE} bytes"]


def test_a_line_of_max_line_bytes_is_read(tmp_path):
    head = '{"url":"http://h/1","outcome":"saved","pad":"'
    line = head + "x" * (MAX_LINE - len(head) - 2) + '"}'
    assert len(line) == MAX_LINE
    summary, _ = report(tmp_path, line + "\n" + '{"url":"http://h/2","outcome":"saved"}\n')
    assert summary.requests == 2 and summary.bad_lines == 0


HOSTILE = "<script>alert(1)</script>"
HOSTILE_TEXTS = (
    HOSTILE,
    '"><img src=x onerror=alert(1)>',
    "--><script>alert(2)</script><!--",
    "$\\frac{1}{$ \\x",  # mathtext, were it on
    "]]><script>alert(3)</script>",
    "\u0000\u0007\u202e\ud800 tab\t",
)


def test_hostile_strings_are_escaped(tmp_path):
    lines = []
    for number, text in enumerate(HOSTILE_TEXTS):
        lines += [
            {"url": f"javascript:alert({number})//{text}", "host": text, "outcome": "failed", "failure": text,
             "worker": text, "start": 1000.0 + number, "end": 1060.0 + number, "links": [f"http://h/{text}"]},
            {"url": f"http://h/{text}", "host": text, "outcome": "saved", "depth": 1, "start": 1000.5 + number,
             "end": 1001.0 + number, "links": [f"javascript:alert({number})//{text}"]},
        ]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    summary, page = report(tmp_path, text)
    assert summary.requests == len(lines) and summary.bad_lines == 0
    html = (tmp_path / "report.html").read_text()
    assert "<script" not in html and "<img" not in html and "<!--<" not in html
    assert not page.xpath("//script | //img | //a | //@onerror")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    slowest = [row[0] for row in table_rows(page, "slowest")]
    assert f"javascript:alert(0)//{HOSTILE}" in slowest  # shown as text
    assert f"http://h/{HOSTILE}" in [row[0] for row in table_rows(page, "most-linked")]
    # Control characters and a lone surrogate are shown as replacement characters.
    assert "\ufffd" in html and "\x00" not in html and "\x07" not in html


def test_a_long_url_is_cut_in_the_tables(tmp_path):
    url = "http://h/" + "a" * 5000
    _, page = report(tmp_path, json.dumps({"url": url, "outcome": "saved", "start": 1.0, "end": 2.0}) + "\n")
    (shown,) = [row[0] for row in table_rows(page, "slowest")]
    assert len(shown) == 300 and shown.endswith("…") and url.startswith(shown[:-1])


def test_secrets_in_urls_and_reasons_are_masked(tmp_path):
    # A report is made to be shared: the passwords of URLs and their query's secrets (by their usual
    # names) are masked as the terminal and the search page mask them (a reviewer's find: shown whole).
    lines = [
        {"url": "http://h/p?token=SECRET123&x=1", "outcome": "saved", "start": 1.0, "end": 3.0, "links": []},
        {"url": "http://u:PASSWORD9@h/q?api_key=KEY456", "outcome": "saved", "start": 1.0, "end": 2.0,
         "links": ["http://h/p?token=SECRET123&x=1"]},
        {"url": "http://h/r", "outcome": "failed", "failure": "redirected to http://v:PW777@g/", "start": 2.0,
         "end": 2.5},
    ]  # fmt: skip
    _, page = report(tmp_path, "".join(json.dumps(line) + "\n" for line in lines))
    html = (tmp_path / "report.html").read_text()
    for secret in ("SECRET123", "KEY456", "PASSWORD9", "PW777"):
        assert secret not in html, secret
    slowest = [row[0] for row in table_rows(page, "slowest")]
    assert slowest[:2] == ["http://h/p?token=***&x=1", "http://u:***@h/q?api_key=***"]
    assert [row[0] for row in table_rows(page, "most-linked")] == ["http://h/p?token=***&x=1"]


def test_a_record_of_thousands_of_depths_draws_a_bounded_figure(tmp_path):
    # Each depth drew a bar and its label (10,000 depths: 94 s); the deepest are one bar, the table
    # still lists them all.
    lines = [
        {"url": f"http://h/{depth}", "outcome": "saved", "depth": depth, "start": 1.0, "end": 2.0}
        for depth in range(500)
    ]
    summary, page = report(tmp_path, "".join(json.dumps(line) + "\n" for line in lines))
    assert len(page.xpath('//table[@id="per-depth"]//td[@data-depth]')) == 500
    (figure,) = page.xpath('//figure[@id="fig-depths"]/svg')
    labels = [comment.text.strip() for comment in figure.iter(lxml.etree.Comment)]  # (matplotlib's, of its text)
    # A bar labelled with its count for each depth to 58, and one for the 441 pages deeper.
    assert labels.count("1") == 59 and labels.count("441") == 1
    assert f"{summary.requests:,}" == "500"


def test_times_no_crawl_took_are_shown_in_few_digits(tmp_path):
    # A record's end at 1e300 s (the format bounds no time): the period and the wall-clock time were
    # written in 301 digits.
    lines = [
        {"url": "http://h/a", "outcome": "saved", "depth": 0, "start": 1.0, "end": 1e300},
        {"url": "http://h/b", "outcome": "saved", "depth": 0, "start": 2.0, "end": 2.0},
        {"url": "http://h/c", "outcome": "saved", "depth": 0, "start": 3.0, "end": -1e300},  # an end before
    ]
    _, page = report(tmp_path, "".join(json.dumps(line) + "\n" for line in lines))
    text = page.text_content()
    assert "1970-01-01 00:00:01 to 1e+300 s after 1970 UTC" in text
    assert "in 1e+300 s" in text and total_values(page)["wall_seconds"] == "1e+300"
    assert max(map(len, re.findall(r"\d+", text))) < 20


def test_the_summary_line_writes_every_count_alike(tmp_path):
    lines = [
        {"url": f"http://h/{n}", "outcome": "failed", "status": 404, "start": 1.0, "end": 2.0} for n in range(1500)
    ]
    summary, _ = report(tmp_path, "".join(json.dumps(line) + "\n" for line in lines))
    assert "1,500 requests, 0 pages saved, 1,500 failed" in summary.describe()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read {path}: No such file or directory"),
        ("garbage\n[]\n", "{path} holds no crawl record line (2 bad lines)"),
        ('{"url":"http://h/","outcome":"sav', "{path} holds no crawl record line (1 bad line)"),
    ],
)
def test_a_file_without_records_is_a_one_line_error(tmp_path, content, message):
    good = write(tmp_path / "good.jsonl", CRAWL)
    path = tmp_path / "record.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ReportError) as refused:
        write_report([good, path], tmp_path / "report.html")
    assert str(refused.value) == message.format(path=path)
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_an_empty_file_merges_as_nothing_but_alone_is_an_error(tmp_path, crawl_report, content):
    # A distributed worker that never got a page leaves an empty record.
    good = write(tmp_path / "good.jsonl", CRAWL)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(content)
    _, alone, _ = crawl_report  # CRAWL's report alone (written once for the module)
    merged = write_report([good, empty], tmp_path / "merged.html")
    assert (merged.requests, merged.pages_saved, merged.files) == (alone.requests, alone.pages_saved, 2)
    with pytest.raises(ReportError) as refused:
        write_report([empty], tmp_path / "report.html")
    assert str(refused.value) == f"{empty}: no crawl record line"


def test_other_unusable_files_are_one_line_errors(tmp_path):
    good = write(tmp_path / "good.jsonl", CRAWL)
    with pytest.raises(ReportError, match=f"^cannot read {tmp_path}: Is a directory$"):
        write_report([tmp_path], tmp_path / "report.html")
    with pytest.raises(ReportError, match=r"^no record file given$"):
        write_report([], tmp_path / "report.html")
    with pytest.raises(ReportError, match=f"^cannot write {tmp_path}/no/report.html: No such file or directory$"):
        write_report([good], tmp_path / "no" / "report.html")
    with pytest.raises(ReportError, match=f"^the report would overwrite its record file {good}$"):
        write_report([good], good)
    assert good.read_text() == CRAWL
    if os.geteuid() != 0:  # root reads any file
        locked = write(tmp_path / "locked.jsonl", CRAWL)
        locked.chmod(0)
        with pytest.raises(ReportError, match=f"^cannot read {locked}: Permission denied$"):
            write_report([locked], tmp_path / "report.html")


def test_the_same_records_make_the_same_bytes(tmp_path, crawl_report):
    directory, _, _ = crawl_report  # CRAWL's record and its report, written once (another time, another place)
    write_report([directory / "record0.jsonl"], tmp_path / "two.html")
    assert (directory / "report.html").read_bytes() == (tmp_path / "two.html").read_bytes()


def test_a_record_with_nothing_to_draw_draws_no_data(tmp_path):
    _, page = report(tmp_path, '{"url":"http://h/","outcome":"failed","failure":"robots.txt"}\n')
    assert total_values(page)["wall_seconds"] == "0.0" and total_values(page)["pages_per_minute"] == "0.0"
    assert total_values(page)["hosts"] == "0" and total_values(page)["max_depth"] == "0"
    for figure_id in ("fig-depths", "fig-response-times", "fig-page-sizes", "fig-timeline"):
        svg = page.xpath(f'//figure[@id="{figure_id}"]/svg')[0]
        assert "no data" in [comment.text.strip() for comment in svg.iter(lxml.etree.Comment)], figure_id
    assert table_rows(page, "slowest") == [["no request with both a start and an end time"]]
    assert table_rows(page, "per-depth") == [["no page saved"]]


def test_a_big_crawl_draws_request_rates_not_ticks(tmp_path):
    # 6,000 requests over 12 hosts, one a second each: rates, and the two quietest hosts merged.
    lines = []
    for second in range(500):
        for host in range(12):
            start = 1000 + second + host / 12
            record = {"url": f"http://h{host}/{second}", "host": f"h{host}", "outcome": "saved"}
            lines.append(json.dumps(record | {"start": start, "end": start + 0.01}) + "\n")
    summary, page = report(tmp_path, "".join(lines))
    assert summary.requests == 6000
    svg = lxml.html.tostring(page.xpath('//figure[@id="fig-timeline"]/svg')[0])
    assert len(svg) < 200_000
    labels = [
        comment.text.strip() for comment in page.xpath('//figure[@id="fig-timeline"]/svg')[0].iter(lxml.etree.Comment)
    ]
    assert "other hosts (1000)" in labels and "h0 (500)" in labels
    assert any(label.startswith("requests per second") for label in labels)
    assert "rate" in page.xpath('//figure[@id="fig-timeline"]/figcaption')[0].text


def test_wide_ranges_get_a_log_scale():
    def labels(svg):
        return {comment.text.strip() for comment in lxml.html.fromstring(svg).iter(lxml.etree.Comment)}

    assert {"1 ms", "10 ms", "100 ms", "1 s", "10 s"} <= labels(figures.response_times_figure([0.001, 0.05, 20.0]))
    assert {"100 B", "1 kB", "10 kB", "100 kB"} <= labels(figures.page_sizes_figure([0, 200, 5000, 400_000]))
    assert "1 kB" not in labels(figures.page_sizes_figure([2000, 2500, 3000]))  # narrow: linear


# Any few records; the totals are summed here from the generated records, not by the report.
records = st.lists(
    st.builds(
        RequestRecord,
        url=st.sampled_from([f"http://h{n}/p" for n in range(5)]),
        outcome=st.sampled_from(OUTCOMES),
        depth=st.integers(0, 5),
        host=st.sampled_from(["", "h0", "h1", "h2"]),
        status=st.none() | st.sampled_from([200, 404, 503]),
        bytes=st.integers(0, 10**6),
        start=st.none() | st.integers(0, 10**6).map(lambda n: n / 1000),
        end=st.none() | st.integers(0, 10**6).map(lambda n: n / 1000),
        worker=st.none() | st.sampled_from(["w1", "w2", "w3"]),
        ignored=st.dictionaries(st.sampled_from(IGNORED_KINDS), st.integers(1, 100)),
    ),
    min_size=1,
    max_size=30,
)


# (No deadline: an example took 317 ms of a loaded machine's wall time, over the default 200 ms.)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records, st.integers(1, 3))
def test_the_totals_are_the_sums_of_the_records(tmp_path, generated, files):
    paths = [tmp_path / f"part{n}.jsonl" for n in range(files)]
    for n, path in enumerate(paths):
        path.write_text("".join(format_record(record) for record in generated[n::files]) or "garbage\n")
    if files > len(generated):
        with pytest.raises(ReportError, match="holds no crawl record line"):
            read_records(paths)
        return
    in_file = [generated[n::files] for n in range(files)]
    updates = [any(record.outcome == "unchanged" for record in part) for part in in_file]
    if any(updates) and not all(updates):  # a crawl's record beside an update's: one report would describe neither
        with pytest.raises(ReportError, match="an update's: report each alone"):
            read_records(paths)
        return
    totals = read_records(paths).totals()
    generated = [record for record in generated if record.outcome != "moved"]  # not requests
    refused = [record for record in generated if record.outcome == "failed" and record.start is None]  # never sent
    saved = [record for record in generated if record.outcome == "saved"]
    # The time of the runs: each record file's worker runs from its first time to its last, anew after a
    # robots.txt answered (not a 5xx, not unanswered: retried) asked for again after other lines (a
    # resumed crawl); the seconds any run covers count.
    spans = []
    for part in in_file:
        for worker in {record.worker for record in part}:
            run: list[float] = []
            robots: set[str] = set()
            after_robots = False
            for record in (record for record in part if record.worker == worker and record.outcome != "moved"):
                if record.outcome == "robots":
                    if record.url in robots and after_robots:
                        spans.append(run)
                        run, robots = [], set()
                    if record.status in (200, 404):
                        robots.add(record.url)
                after_robots = record.outcome != "robots"
                run += [time for time in (record.start, record.end) if time is not None]
            spans.append(run)
    bounds = sorted({time for run in spans for time in run})
    # Each stretch between two of the times is in a run or not (its middle tells).
    wall = sum(
        high - low
        for low, high in itertools.pairwise(bounds)
        if any(run and min(run) < (low + high) / 2 < max(run) for run in spans)
    )
    assert totals.requests == len(generated) - len(refused)
    assert totals.not_sent == len(refused)
    assert totals.pages_saved == len(saved)
    assert totals.pages_failed == sum(record.outcome == "failed" for record in generated)
    for kind in IGNORED_KINDS:
        assert getattr(totals, f"ignored_{kind}") == sum(record.ignored.get(kind, 0) for record in generated)
    assert totals.bytes == sum(record.bytes for record in generated)
    assert totals.wall_seconds == pytest.approx(wall)
    assert totals.pages_per_minute == (pytest.approx(len(saved) / wall * 60) if wall > 0 else 0)
    assert totals.hosts == len({record.host for record in generated if record not in refused} - {""})
    assert totals.workers == max(len({record.worker for record in generated} - {None}), 1)
    assert totals.max_depth == max((record.depth for record in saved), default=0)


# Records with any text and extreme numbers: the report is still written, and its totals are the summary's.
wild_records = st.lists(
    st.builds(
        RequestRecord,
        url=st.text(st.characters(exclude_categories=()), min_size=1, max_size=20),
        outcome=st.sampled_from(OUTCOMES),
        depth=st.integers(0, 2**62),
        host=st.text(st.characters(exclude_categories=()), max_size=20),
        status=st.none() | st.integers(0, 999),
        failure=st.none() | st.text(st.characters(exclude_categories=()), max_size=20),
        bytes=st.integers(0, 2**62),
        start=st.none() | st.floats(0, 1e12),
        end=st.none() | st.floats(0, 1e12),
        links=st.lists(st.text(max_size=5), max_size=3).map(tuple),
    ),
    min_size=1,
    max_size=12,
)


# (Each example draws a whole report's figures, ~0.5 s of CPU: 6 a run, new ones each run.)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wild_records)
def test_any_records_make_a_report(tmp_path, generated):
    (tmp_path / "wild.jsonl").write_text("".join(format_record(record) for record in generated))
    summary = write_report([tmp_path / "wild.jsonl"], tmp_path / "wild.html")
    page = lxml.html.parse(str(tmp_path / "wild.html")).getroot()
    lines = [record for record in generated if record.outcome != "moved"]
    requests = [record for record in lines if not (record.outcome == "failed" and record.start is None)]
    assert summary.requests == len(requests) and total_values(page)["requests"] == str(len(requests))
    assert total_values(page)["bytes"] == str(sum(record.bytes for record in lines))
    assert all(page.xpath(f'//figure[@id="{figure_id}"]/svg') for figure_id in FIGURES)
    assert not page.xpath("//script")


def polite_crawl():
    """Two workers' record lines of a crawl of three hosts, one request a second to each, as (w1, w2) texts."""
    hosts = ("www.example.test", "docs.example.test", "blog.example.test")
    lines = ([], [])
    for second in range(90):
        for number, host in enumerate(hosts[: 1 + (second < 60) + (second < 25)]):
            page = second * 3 + number
            start = 1764522000 + second + number * 0.31 + (page % 7) * 0.013
            outcome = "failed" if page % 23 == 5 else "redirect" if page % 31 == 7 else "saved"
            record = RequestRecord(
                url=f"http://{host}/page{page}.html",
                outcome=outcome,
                depth=min(second // 12, 5),
                host=host,
                status={"failed": 404, "redirect": 301}.get(outcome, 200),
                bytes=0 if outcome == "redirect" else 400 + (page * 7919) % 60_000,
                start=round(start, 6),
                end=round(start + 0.02 + (page % 11) ** 2 * 0.004, 6),
                worker=f"w{1 + page % 2}",
                links=tuple(f"http://{host}/page{(page * k) % 270}.html" for k in (2, 3, 5)),
                ignored={"duplicate": page % 4, "external": page % 3},
            )
            lines[page % 2].append(format_record(record))
    return "".join(lines[0]), "".join(lines[1])


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_in_a_real_browser(tmp_path):
    worker1, worker2 = polite_crawl()
    saved = (worker1 + worker2).count('"outcome":"saved"')
    write_report([write(tmp_path / "w1.jsonl", worker1), write(tmp_path / "w2.jsonl", worker2)], tmp_path / "r.html")
    seen = render_report(tmp_path / "r.html", tmp_path / "report.png")
    assert seen.problems == []
    assert seen.requests == [(tmp_path / "r.html").as_uri()]  # the page alone: nothing else is fetched
    assert seen.title == "Crawl report"
    for figure_id, box in seen.boxes.items():
        assert box and box["width"] > 200 and box["height"] > 100, (figure_id, box)
    assert seen.totals["pages_saved"] == str(saved) and seen.totals["workers"] == "2"
    width, height = seen.screenshot_size
    assert width == 1280 and height > 1500 and (tmp_path / "report.png").stat().st_size > 50_000
    if os.environ.get("TSE_REPORT_SCREENSHOT"):  # to look at it: TSE_REPORT_SCREENSHOT=/tmp/shot.png
        shutil.copy(tmp_path / "report.png", os.environ["TSE_REPORT_SCREENSHOT"])


def test_a_file_given_twice_is_refused(tmp_path):
    good = write(tmp_path / "good.jsonl", CRAWL)
    with pytest.raises(ReportError) as refused:
        write_report([good, tmp_path / "." / "good.jsonl"], tmp_path / "report.html")
    assert str(refused.value) == f"{tmp_path / '.' / 'good.jsonl'} is given twice"


def test_a_record_that_is_no_regular_file_is_refused_in_one_line(tmp_path):
    # (A tester's find: `tse report /dev/zero` never ended, reading zeros for ever; a FIFO waited for a writer.)
    good = write(tmp_path / "good.jsonl", CRAWL)
    os.mkfifo(tmp_path / "fifo")
    for record, kind in (("/dev/zero", "a character device"), (tmp_path / "fifo", "a FIFO")):
        arguments = ("report", good, record, "--out", tmp_path / "report.html")
        # The command for /dev/zero; its code in this process for the FIFO (the message is the point; were
        # it opened blocking, pytest's timeout would end the wait).
        refused = run_tse(*arguments, timeout=30) if kind != "a FIFO" else tse_here(*arguments)
        said = f"tse report: cannot read {record}: not a regular file ({kind})\n"
        assert (refused.returncode, refused.stdout, refused.stderr.decode()) == (2, b"", said)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fifo", "good.jsonl"]


@pytest.mark.parametrize("batch", [1, 2, records_module.LINK_BATCH])
def test_in_links_are_counted_for_a_bounded_number_of_targets(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(records_module, "MAX_LINK_TARGETS", 3)
    monkeypatch.setattr(records_module, "LINK_BATCH", batch)
    lines = [
        {"url": "http://h/a", "outcome": "saved", "doc": 1, "links": ["http://h/b", "http://h/c"]},
        {"url": "http://h/b", "outcome": "saved", "doc": 2, "links": ["http://h/c", "http://h/x", "http://h/y"]},
        {"url": "http://h/c", "outcome": "saved", "doc": 3, "links": ["http://h/b", "http://h/d"]},
        {"url": "http://h/d", "outcome": "saved", "doc": 4},
    ]
    path = write(tmp_path / "r.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    found = read_records([path])
    # b and c from a; then c counts, x fits, y does not; then b counts, d does not fit (in the record's order).
    assert [(page.url, page.in_links) for page in found.most_linked()] == [("http://h/b", 2), ("http://h/c", 2)]
    assert found.link_targets_capped
    write_report([path], tmp_path / "report.html")
    assert "distinct link targets only" in (tmp_path / "report.html").read_text()


# The record of a `tse crawl --sitemaps` of one host, as the crawl wrote it before `sitemap` was an outcome
# (its sitemap fetches `unsaved`; times are seconds after
# 1764522000): robots.txt names a sitemap index, which names pages.xml, which names b.html; index.html
# links to a.html, to secret.html (robots.txt refuses it) and to away.html (a redirect off the site).
SITEMAPS_CRAWL = """\
{"url":"http://h.test/robots.txt","doc":null,"depth":0,"host":"h.test","outcome":"robots","status":200,"failure":null,"bytes":93,"start":1764522000.0,"end":1764522000.01,"wait":0.0,"worker":null}
{"url":"http://h.test/sitemap-index.xml","doc":null,"depth":0,"host":"h.test","outcome":"unsaved","status":200,"failure":null,"bytes":164,"start":1764522000.1,"end":1764522000.11,"wait":0.07,"worker":null}
{"url":"http://h.test/pages.xml","doc":null,"depth":0,"host":"h.test","outcome":"unsaved","status":200,"failure":null,"bytes":141,"start":1764522000.2,"end":1764522000.21,"wait":0.0,"worker":null}
{"url":"http://h.test/b.html","doc":1,"depth":0,"host":"h.test","outcome":"saved","status":200,"failure":null,"bytes":73,"start":1764522000.3,"end":1764522000.31,"wait":0.0,"worker":null}
{"url":"http://h.test/index.html","doc":2,"depth":0,"host":"h.test","outcome":"saved","status":200,"failure":null,"bytes":166,"start":1764522000.4,"end":1764522000.41,"wait":0.0,"worker":null,"links":["http://h.test/a.html","http://h.test/secret.html","http://h.test/away.html"]}
{"url":"http://h.test/away.html","doc":null,"depth":1,"host":"h.test","outcome":"redirect","status":302,"failure":null,"bytes":0,"start":1764522000.5,"end":1764522000.51,"wait":0.0,"worker":null,"ignored":{"external":1}}
{"url":"http://elsewhere.invalid/page.html","doc":null,"depth":1,"host":"elsewhere.invalid","outcome":"failed","status":null,"failure":"offsite","bytes":0,"start":null,"end":null,"wait":0.0,"worker":null}
{"url":"http://h.test/secret.html","doc":null,"depth":1,"host":"h.test","outcome":"failed","status":null,"failure":"robots.txt","bytes":0,"start":null,"end":null,"wait":0.0,"worker":null}
{"url":"http://h.test/a.html","doc":3,"depth":1,"host":"h.test","outcome":"saved","status":200,"failure":null,"bytes":73,"start":1764522000.6,"end":1764522000.61,"wait":0.0,"worker":null}
"""


def svg_labels(page, figure_id):
    return [
        comment.text.strip() for comment in page.xpath(f'//figure[@id="{figure_id}"]/svg')[0].iter(lxml.etree.Comment)
    ]


@pytest.fixture(scope="module")
def sitemaps_report(tmp_path_factory):
    """SITEMAPS_CRAWL's report, written once for the tests that only read it: (its directory, the summary,
    the parsed page)."""
    directory = tmp_path_factory.mktemp("sitemaps-report")
    return directory, *report(directory, SITEMAPS_CRAWL)


def test_requests_are_those_sent_and_the_pages_refused_before_sending_are_said_apart(tmp_path, sitemaps_report):
    # The crawl's summary line says 7 requests: the two refused pages were never sent.
    directory, summary, page = sitemaps_report
    assert (summary.requests, summary.not_sent, summary.pages_failed, summary.hosts) == (7, 2, 2, 1)
    assert summary.describe() == (
        f"wrote {directory / 'report.html'}: 7 requests, 2 pages refused before sending, 3 pages saved, 2 failed, "
        "from 1 record file"
    )
    totals = {
        cell.get("data-total"): (cell.text, cell.getnext().text_content())
        for cell in page.xpath('//table[@id="totals"]//td[@data-total]')
    }
    assert totals["requests"][0] == "7"
    assert totals["not_sent"] == ("2", "refused by offsite 1, robots.txt 1")
    assert totals["hosts"][0] == "1"  # elsewhere.invalid was never asked
    assert " ".join(page.xpath('//ul[@id="record-files"]/li')[0].text_content().split()).endswith(": 7 requests")
    assert "h.test (7)" in svg_labels(page, "fig-timeline")  # the same count as the totals
    # The refused pages are failed pages all the same, by their reason.
    assert [label for label in svg_labels(page, "fig-outcomes") if label.startswith("failed")] == [
        "failed: offsite",
        "failed: robots.txt",
    ]
    # Without a refused page, the note says what would be counted there.
    _, plain = report(tmp_path, CRAWL.replace('"failure":"robots.txt","start":null', '"start":1764522006.0'))
    assert plain.xpath('//td[@data-total="not_sent"]')[0].text == "0"


def test_sitemap_fetches_are_shown_as_sitemaps_not_unsaved_pages(sitemaps_report):
    _, _, page = sitemaps_report
    labels = svg_labels(page, "fig-outcomes")
    # The axis ticks, the axis label, each bar's label, each bar's count, the title.
    bars = labels[labels.index("requests (links, in the ignored rows)") + 1 : -1]
    rows = dict(zip(bars[: len(bars) // 2], bars[len(bars) // 2 :], strict=True))
    assert rows == {
        "saved": "3",
        "failed: offsite": "1",
        "failed: robots.txt": "1",
        "redirect": "1",
        "robots": "1",
        "sitemap": "2",
        "link ignored: external": "1",
    }
    slowest = {row[0]: row[3] for row in table_rows(page, "slowest")}
    assert slowest["http://h.test/sitemap-index.xml"] == slowest["http://h.test/pages.xml"] == "sitemap"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ('{"url":"http://h/sitemap.xml","outcome":"failed","status":404,"start":1,"end":2}', "sitemap"),
        ('{"url":"http://h/maps/pages.xml.gz","outcome":"unsaved","status":200,"start":1,"end":2}', "sitemap"),
        ('{"url":"http://h/map","outcome":"sitemap","status":200,"start":1,"end":2}', "sitemap"),  # as written now
        # A seed named like a sitemap is a page (a review's find: its 404 was no failed page in the report).
        ('{"url":"http://h/sitemap.html","outcome":"failed","status":404,"start":1,"end":2}', "failed"),
        ('{"url":"http://h/SiteMap_1","outcome":"unsaved","status":200,"start":1,"end":2}', "unsaved"),
        ('{"url":"http://h/robots.txt","outcome":"unsaved","status":200,"start":1,"end":2}', "robots"),
        # A page the crawl stopped before saving, a page at depth 1, one never sent, a saved one.
        ('{"url":"http://h/index.html","outcome":"unsaved","status":200,"start":1,"end":2}', "unsaved"),
        ('{"url":"http://h/feed.xml","depth":1,"outcome":"unsaved","status":200,"start":1,"end":2}', "unsaved"),
        ('{"url":"http://h/sitemap.xml","outcome":"failed","failure":"robots.txt"}', "failed"),
        ('{"url":"http://h/sitemap.xml","outcome":"saved","doc":1,"start":1,"end":2}', "saved"),
        ('{"url":"http://[::1/sitemap.xml","outcome":"unsaved","start":1,"end":2}', "unsaved"),  # not a URL
    ],
)
def test_what_a_request_is_shown_as(tmp_path, line, kind):
    found = read_records([write(tmp_path / "r.jsonl", line + "\n")])
    assert dict(found.outcomes) == {kind: 1}


@pytest.mark.parametrize(
    ("spans", "seconds"),
    [
        ([], 0.0),
        ([(1.0, 3.0)], 2.0),
        ([(1.0, 3.0), (10.0, 11.5)], 3.5),  # a crawl and its resumption an hour later: not the hour between
        ([(1.0, 5.0), (2.0, 3.0)], 4.0),  # a worker's run within another's: each second once
        ([(1.0, 5.0), (4.0, 7.0)], 6.0),  # overlapping workers
        ([(3.0, 3.0), (5.0, 4.0)], 0.0),  # a single instant, an end before its start: no time
        ([(4.0, 7.0), (1.0, 5.0), (7.0, 8.0)], 7.0),  # in any order, touching
    ],
)
def test_the_time_of_the_runs_counts_each_second_once(spans, seconds):
    assert covered_seconds(spans) == pytest.approx(seconds)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), max_size=8))
def test_the_time_of_the_runs_is_the_seconds_any_run_covers(spans):
    covered = {second for start, end in spans for second in range(start, end)}  # whole seconds [start, end)
    assert covered_seconds([(float(start), float(end)) for start, end in spans]) == len(covered)
