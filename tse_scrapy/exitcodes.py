"""Exit statuses, crawl finish reasons and an error's one line: one small module every layer may import."""

OK = 0
FAILED = 1  # the work failed: a crawl that stopped on an error, a file that cannot be used
USAGE = 2  # bad arguments: nothing was written or fetched
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
TERMINATED = 143  # SIGTERM taken as Ctrl-C is (128 + SIGTERM)
BROKEN_PIPE = 141  # the reader of stdout went away (128 + SIGPIPE)

# Why a crawl ended (Scrapy's finish_reason).  Only the first two are a success.
FINISHED = "finished"
PAGE_LIMIT = "closespider_pagecount"  # Scrapy's own name for the same stop
WRITE_ERROR = "tse_write_error"  # a page file or the crawl state could not be written
STDOUT_CLOSED = "tse_stdout_closed"  # the reader of the progress log went away (exit BROKEN_PIPE)
SUCCESS_REASONS = (FINISHED, PAGE_LIMIT)


def first_line(error: BaseException) -> str:
    """An error told in one line: the first line of its message (at most 200 characters), else its type."""
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else type(error).__name__


class StartFailed(Exception):
    """A crawl component could not start (Redis went away between a worker's join and its start): its
    message is the crawl's one line, said by ``crawl.outcome.say_start_failure``, not a traceback;
    *resumable*: the line then says how the command goes on with the crawl (``how_to_go_on``)."""

    def __init__(self, message: str, resumable: bool = False) -> None:
        super().__init__(message)
        self.resumable = resumable
