"""A PDF's text and title, read with PDFium (pypdfium2) in a child process bounded in time and memory.

A hostile or broken PDF can make PDFium hang, crash (a segmentation fault) or
allocate without end: in a child process, that costs the child only.  The caller
gets a PdfText with no text and a warning saying why, and the next PDF goes to
a new child.

The child is a plain ``python -I -c ...`` started by subprocess (fork and exec):
safe from a process that has threads, and from a daemonic multiprocessing worker
(the indexer's), which may not start multiprocessing children of its own.  It is
started on the first PDF and kept for the next ones, so that its start (about
0.1 s: Python and PDFium) is paid once, not per PDF.  It runs with the caller's
sys.path (as multiprocessing's spawn does), in isolated mode (no PYTHON*
variable of the caller's changes it), in a session of its own (a Ctrl-C at the
terminal is the caller's to handle), with RLIMIT_AS set to *memory* before it
loads PDFium.

Its stdin and stdout are one Unix socket.  A request: a header (the PDF's
length, max_pages, max_chars, the alarm seconds) and the PDF's bytes, no file.
A reply: a length and a JSON object, no longer than max_chars allows (JSON, not
pickle: the child has read hostile data, and the caller unpickles nothing from
it).  The caller waits for the reply with poll() to a deadline; past it, the
child is killed (SIGKILL) and the PDF "timed out".  A child that ends without a reply
crashed; one killed by SIGABRT ran out of memory (PDFium aborts when an
allocation fails; Python's MemoryError is sent back as such).  Any other exception
in the child (a PDF no reader foresaw) is sent back as "crashed": nothing of it
reaches stderr.

``PdfReads`` is what ``tse serve`` reads PDFs with for their views: a few
extractors, each PDF read once at a time and what was read kept.
"""

from __future__ import annotations

import json
import math
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from tse_scrapy.rules.text.pdftext import clean_pdf_text, looks_like_pdf, pdf_title

ENCRYPTED = "encrypted"
NOT_A_PDF = "not a PDF"
DAMAGED = "damaged"
NO_TEXT = "no text (scanned?)"
TIMED_OUT = "timed out"
OUT_OF_MEMORY = "out of memory"
CRASHED = "crashed"
TOO_LARGE = "too large"

_REQUEST = struct.Struct("<QIII")  # the PDF's length, max_pages, max_chars, alarm seconds
_REPLY = struct.Struct("<I")  # the JSON's length
_READY = b"R"  # the child's first byte: PDFium is loaded, RLIMIT_AS set
START_TIMEOUT = 30.0  # seconds a child may take to start (a busy machine), apart from any PDF's timeout
_PDFS_PER_CHILD = 500  # then a new child: a leak in PDFium cannot add up to a false "out of memory"
_EXIT_OUT_OF_MEMORY = 3  # the child's exit status when even its "out of memory" reply failed
_CHUNK = 1 << 20  # bytes sent or received at a time
_BOOT = "import json, sys; sys.path[:] = json.loads(sys.argv[1]); import tse_scrapy.index.pdfs as m; m._serve()"


@dataclass(frozen=True)
class PdfText:
    """What was read of a PDF."""

    title: str  # pdf_title(...) of the document
    text: str  # clean_pdf_text of every page's text, cut at max_chars
    pages: int  # pages read
    warning: str | None  # None, or why there is no text or only part of it (one of the constants above)


def _failed(warning: str) -> PdfText:
    return PdfText("", "", 0, warning)


class PdfExtractor:
    """Reads PDFs in child processes, each bounded: wall time (timeout seconds), address space (memory
    bytes, RLIMIT_AS in the child), pages (max_pages), characters (max_chars), input size (max_bytes).

    One PDF at a time (a lock: threads may share it); usable in a forked process, which starts a child
    of its own rather than talk to its parent's."""

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        memory: int = 1024 * 1024 * 1024,
        max_pages: int = 2000,
        max_chars: int = 2_000_000,
        max_bytes: int = 100 * 1024 * 1024,
    ):
        self.timeout = timeout
        self.memory = memory
        self.max_pages = max_pages
        self.max_chars = max_chars
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None  # the child's stdin and stdout
        self._owner = 0  # the process that started the child: only it may talk to it
        self._served = 0  # PDFs the child has read
        _EXTRACTORS.add(self)

    def extract(self, data: bytes) -> PdfText:
        """The text and title of the PDF *data*; never raises for anything *data* holds."""
        if not looks_like_pdf(data):
            return _failed(NOT_A_PDF)
        if len(data) > self.max_bytes:
            return _failed(TOO_LARGE)
        with self._lock:
            started = self._start()
            if started is not None:
                return _failed(started)
            result = self._exchange(data)
            self._served += 1
            if result.warning == OUT_OF_MEMORY or self._served >= _PDFS_PER_CHILD:
                self._stop()  # Python's MemoryError leaves the child's heap in no known state
            return result

    def close(self) -> None:
        """Stop the child, if there is one (a new one starts on the next PDF)."""
        with self._lock:
            self._stop()

    def __enter__(self) -> PdfExtractor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _start(self) -> str | None:
        """Start the child unless it runs; the warning to give when it cannot start, else None."""
        if self._child is not None and self._owner != os.getpid():
            self._forget_inherited_child()  # a fork that ran no at-fork hook (see _after_fork)
        if self._child is not None and self._child.poll() is not None:
            self._stop()  # it died between two PDFs (its alarm, a kill): not the next PDF's fault
        if self._child is not None:
            return None
        paths = [os.path.abspath(path) for path in sys.path]  # "" is the caller's current directory
        # A socket rather than pipes: send(MSG_NOSIGNAL) to a dead child cannot raise SIGPIPE, which
        # would end a caller that restored its default action.
        ours, theirs = socket.socketpair()
        with theirs:
            self._child = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, json.dumps(paths), str(self.memory)],
                stdin=theirs,
                stdout=theirs,
                start_new_session=True,
            )
        ours.setblocking(False)  # the caller sends what the socket takes, until its deadline
        self._channel, self._owner, self._served = ours, os.getpid(), 0
        ready = _received(ours, 1, time.monotonic() + START_TIMEOUT)
        if ready != _READY:
            return self._ended(CRASHED if ready is not None else TIMED_OUT).warning
        return None

    def _exchange(self, data: bytes) -> PdfText:
        """Send *data* to the child and wait for its reply until the deadline."""
        assert self._channel is not None
        deadline = time.monotonic() + self.timeout
        alarm = math.ceil(self.timeout) + 5  # the child's own bound, should the caller die meanwhile
        header = _REQUEST.pack(len(data), self.max_pages, self.max_chars, alarm)
        if not _sent(self._channel, [memoryview(header), memoryview(data)], deadline):
            return self._ended(TIMED_OUT if time.monotonic() >= deadline else CRASHED)
        length = _received(self._channel, _REPLY.size, deadline)
        if length is None or len(length) < _REPLY.size:
            return self._ended(TIMED_OUT if length is None else CRASHED)
        (size,) = _REPLY.unpack(length)
        if size > 4 * (self.max_chars + 200) + 1024:  # UTF-8 text and title, JSON's quotes and keys
            return self._ended(CRASHED)
        payload = _received(self._channel, size, deadline)
        if payload is None or len(payload) < size:
            return self._ended(TIMED_OUT if payload is None else CRASHED)
        try:
            return _parsed(payload)
        except (ValueError, TypeError, KeyError):
            return self._ended(CRASHED)

    def _ended(self, warning: str) -> PdfText:
        """Kill the child (after a timeout, a garbled reply) or reap it (after it died), and say how it ended."""
        child = self._child
        assert child is not None
        if warning != TIMED_OUT:
            try:
                child.wait(1)  # it closed its end: its own end is near
            except subprocess.TimeoutExpired:
                pass
        self._stop(kill=True)
        return _failed(_how_it_ended(child.returncode) if warning == CRASHED else warning)

    def _stop(self, kill: bool = False) -> None:
        child, channel, self._child, self._channel = self._child, self._channel, None, None
        if child is None or channel is None:
            return
        channel.close()  # the child ends at the end of its input
        try:
            child.wait(0 if kill else 2)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def _forget_inherited_child(self) -> None:
        """Drop the child that this process inherited (forked) with the extractor: it is its parent's.
        Only this copy of its socket is closed."""
        child, channel, self._child, self._channel = self._child, self._channel, None, None
        assert child is not None and channel is not None
        channel.close()
        child.returncode = 0  # not this process's to wait for (subprocess would try, and warn)


class PdfReads:
    """PDFs read for a search server's views (``/doc/N``), each as a PdfExtractor with the indexer's bounds
    reads it, at most *readers* at a time (each reader a child process of its own): one slow PDF holds one
    reader, not every view of every PDF.  What was read is kept, by key (the caller's: a page file's docID,
    size and mtime), the last *entries* of them up to *chars* characters of text in all; a PDF being read
    when another request asks for it is waited for, not read twice."""

    def __init__(self, *, readers: int = 2, entries: int = 64, chars: int = 16_000_000, **bounds: Any):
        self._bounds = bounds
        self._entries = entries
        self._chars = chars
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, PdfText] = OrderedDict()
        self._kept_chars = 0
        self._reading: dict[Hashable, Future[PdfText]] = {}
        self._free = threading.BoundedSemaphore(readers)
        self._idle: list[PdfExtractor] = []
        self.reads = 0  # PDFs read (neither kept nor waited for)

    def extract(self, key: Hashable, data: bytes) -> PdfText:
        """``PdfExtractor.extract`` of *data*, known by *key*; never raises for anything *data* holds."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
            reading = self._reading.get(key)
            future: Future[PdfText] = Future()
            if reading is None:
                self._reading[key] = future
        if reading is not None:
            return reading.result()  # (read by the request that asked first)
        try:
            result = self._read(data)
            with self._lock:
                self._keep(key, result)
            future.set_result(result)
            return result
        except BaseException as error:
            future.set_exception(error)
            raise
        finally:
            with self._lock:
                del self._reading[key]

    def close(self) -> None:
        """Stop every reader's child (new ones start on the next PDF)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for extractor in idle:
            extractor.close()

    def _read(self, data: bytes) -> PdfText:
        with self._free:
            with self._lock:
                extractor = self._idle.pop() if self._idle else PdfExtractor(**self._bounds)
                self.reads += 1
            try:
                return extractor.extract(data)
            except OSError:  # no child could be started (no process left, no memory): not the PDF's fault
                return _failed(CRASHED)
            finally:
                with self._lock:
                    self._idle.append(extractor)

    def _keep(self, key: Hashable, result: PdfText) -> None:
        size = len(result.text) + len(result.title)
        if size > self._chars:
            return
        self._kept[key] = result
        self._kept_chars += size
        while len(self._kept) > self._entries or self._kept_chars > self._chars:
            _, dropped = self._kept.popitem(last=False)
            self._kept_chars -= len(dropped.text) + len(dropped.title)


_EXTRACTORS: weakref.WeakSet[PdfExtractor] = weakref.WeakSet()


def _after_fork() -> None:
    """In a forked process: a new lock for each extractor, free whatever thread held it at the fork
    (that thread is not in this process, and never releases its copy), and no child: the one it
    inherited is its parent's (and ends when its parent closes it, which this copy would prevent)."""
    for extractor in list(_EXTRACTORS):
        extractor._lock = threading.Lock()
        if extractor._child is not None:
            extractor._forget_inherited_child()


os.register_at_fork(after_in_child=_after_fork)


def _how_it_ended(returncode: int | None) -> str:
    if returncode in (-signal.SIGABRT, _EXIT_OUT_OF_MEMORY):
        return OUT_OF_MEMORY  # PDFium aborts when an allocation fails (RLIMIT_AS)
    if returncode == -signal.SIGALRM:
        return TIMED_OUT
    return CRASHED


def _sent(channel: socket.socket, chunks: list[memoryview], deadline: float) -> bool:
    """Send *chunks* over the non-blocking *channel*; False when the deadline passed or the child is gone."""
    poller = select.poll()
    poller.register(channel, select.POLLOUT)
    for chunk in chunks:
        while chunk:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not poller.poll(math.ceil(left * 1000)):
                continue
            try:
                sent = channel.send(chunk[:_CHUNK], socket.MSG_NOSIGNAL)
            except BlockingIOError:
                continue
            except OSError:  # BrokenPipeError, ConnectionResetError: the child died
                return False
            chunk = chunk[sent:]
    return True


def _received(channel: socket.socket, size: int, deadline: float) -> bytes | None:
    """*size* bytes from the non-blocking *channel*, fewer when it ends first; None when the deadline passes."""
    poller = select.poll()
    poller.register(channel, select.POLLIN)
    received = bytearray()
    while len(received) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if not poller.poll(math.ceil(left * 1000)):
            continue
        try:
            chunk = channel.recv(min(size - len(received), _CHUNK))
        except BlockingIOError:
            continue
        except OSError:  # ConnectionResetError: the child died
            break
        if not chunk:
            break
        received += chunk
    return bytes(received)


def _parsed(payload: bytes) -> PdfText:
    """The PdfText of a child's reply, its fields checked (a garbled reply is a crash)."""
    fields = json.loads(payload)
    title, text, pages, warning = fields["title"], fields["text"], fields["pages"], fields["warning"]
    if not (isinstance(title, str) and isinstance(text, str) and type(pages) is int and pages >= 0):
        raise ValueError("a malformed reply")
    if warning is not None and not isinstance(warning, str):
        raise ValueError("a malformed reply")
    return PdfText(title, text, pages, warning)


def extract_pdf_text(data: bytes, **bounds: Any) -> PdfText:
    """The text and title of the PDF *data*, read by a child process of its own (PdfExtractor's bounds)."""
    with PdfExtractor(**bounds) as extractor:
        return extractor.extract(data)


# The child's side.


def read_pdf(data: bytes, max_pages: int, max_chars: int) -> PdfText:
    """The text and title of the PDF *data*, read in this process: the child's work (and the
    benchmark's).  Pages are read one at a time, each closed before the next, up to *max_pages*
    pages and *max_chars* characters."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        pdf = pdfium.PdfDocument(data)  # no password: the empty one, which opens owner-password-only PDFs
    except pdfium.PdfiumError as error:
        locked = getattr(error, "err_code", None) in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY)
        return _failed(ENCRYPTED if locked else DAMAGED)
    try:
        metadata_title = _metadata_title(pdf)
        count = len(pdf)
        texts: list[str] = []
        length = read = 0
        damaged = False  # a page PDFium could not read
        index = 0
        while index < min(count, max_pages) and length < max_chars:
            page_text = _page_text(pdf, index)
            index += 1
            if page_text is None:
                damaged = True
                continue
            read += 1
            if page_text:
                texts.append(page_text)
                length += len(page_text) + 2
        text = "\n\n".join(texts)
        cut = len(text) > max_chars or index < count
        text = text[:max_chars].rstrip()
    finally:
        pdf.close()
    if count == 0 or (damaged and not text):
        warning: str | None = DAMAGED
    elif not text:
        warning = NO_TEXT
    elif damaged:
        warning = DAMAGED  # part of the text: some pages could not be read
    else:
        warning = TOO_LARGE if cut else None
    return PdfText(pdf_title(metadata_title, text), text, read, warning)


def _metadata_title(pdf: Any) -> str | None:
    """The document's Info ``/Title``, None for none.  Its UTF-16 is decoded with replacement, a lone
    surrogate as U+FFFD (pypdfium2's ``get_metadata_dict`` decodes strictly, and raised
    UnicodeDecodeError for ``<FEFFD800DC00DFFF0041>``: the PDF's text was lost with it)."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    key = b"Title\x00"
    size = pdfium_c.FPDF_GetMetaText(pdf, key, None, 0)
    if size <= 2:  # (the empty string: its NUL terminator)
        return None
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDF_GetMetaText(pdf, key, buffer, size)
    return buffer.raw[: size - 2].decode("utf-16-le", "replace")


def _page_text(pdf: Any, index: int) -> str | None:
    """The clean text of page *index* of *pdf*, or None when PDFium cannot read it; the page closed."""
    import pypdfium2 as pdfium

    try:
        page = pdf.get_page(index)
    except pdfium.PdfiumError:
        return None
    try:
        textpage = page.get_textpage()
        try:
            # Each page cleaned alone gives what the whole text would (tested): its length is known at once.
            return clean_pdf_text([textpage.get_text_range()])
        finally:
            textpage.close()
    except pdfium.PdfiumError:
        return None
    finally:
        page.close()


def _serve() -> None:
    """The child: RLIMIT_AS, PDFium, then one reply for each request on stdin, until it ends."""
    memory = int(sys.argv[2])
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller's to handle
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # its alarm ends it, even if the caller ignored SIGALRM
    # The replies get a descriptor of their own; whatever else writes to stdout (a library's
    # message) goes to stderr and cannot garble them.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    import pypdfium2  # noqa: F401  (loaded before the first request: its time is not a PDF's)

    replies.write(_READY)
    replies.flush()
    while True:
        header = requests.read(_REQUEST.size)
        if len(header) < _REQUEST.size:
            return  # the caller closed the socket (or died)
        size, max_pages, max_chars, alarm = _REQUEST.unpack(header)
        try:
            data = requests.read(size)
            if len(data) < size:
                return
            signal.alarm(alarm)  # the default action ends the child: PDFium may never return
            result = read_pdf(data, max_pages, max_chars)
            signal.alarm(0)
            del data
            fields = {"title": result.title, "text": result.text, "pages": result.pages, "warning": result.warning}
            payload = json.dumps(fields, ensure_ascii=False).encode()
        except MemoryError:
            signal.alarm(0)
            payload = b""  # the reply says so; the caller stops this child, whose heap is in no known state
        except Exception:  # (a PDF no reader foresaw: "crashed", said by the caller on one line)
            signal.alarm(0)
            payload = json.dumps({"title": "", "text": "", "pages": 0, "warning": CRASHED}).encode()
        try:
            if not payload:
                payload = json.dumps({"title": "", "text": "", "pages": 0, "warning": OUT_OF_MEMORY}).encode()
            replies.write(_REPLY.pack(len(payload)) + payload)
            replies.flush()
        except MemoryError:
            os._exit(_EXIT_OUT_OF_MEMORY)
        except OSError:  # the caller is gone (stopped, killed): nobody to answer, nothing to say
            os._exit(0)
