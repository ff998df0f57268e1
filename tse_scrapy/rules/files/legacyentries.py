"""Frontier entries of the old format (pickles), read without ever running code: for ``--migrate``.

Before ``frontierentries`` a distributed crawl stored each request as its
16-byte fingerprint then ``pickle.dumps(request_dict, protocol=-1)``
(scrapy-redis's ``picklecompat``).  Anyone who could write to the crawl's
Redis could have planted a pickle that runs code when loaded, so
``read_legacy_request`` loads only pickles that cannot:

1. an entry over ``max_bytes`` is refused unread;
2. ``pickletools.genops`` parses it (parsing executes nothing) and every
   opcode must be in ``ALLOWED_OPCODES``: those that push a str, bytes, int,
   float, bool or None, build a list, tuple, dict, set or frozenset of what
   is on the stack, or use the memo.  A pickle reaches code only through an
   opcode that fetches a global (GLOBAL, STACK_GLOBAL, INST, OBJ, EXT1/2/4),
   calls or builds an object (REDUCE, BUILD, NEWOBJ, NEWOBJ_EX) or asks the
   loader for one (PERSID, BINPERSID, NEXT_BUFFER, READONLY_BUFFER): all are
   refused, with everything else a request does not need (Python 2 strings,
   BYTEARRAY8, DUP, POP, POP_MARK).  The walk also simulates the stack: one
   STOP, as the last byte, leaving one value; memo slots written in order;
   bounded opcodes, stack and nesting (a tuple nested deep enough crashes
   the interpreter when hashed as a dict key, with plain opcodes only).
3. Only then ``pickle.Unpickler`` loads it, its ``find_class`` and
   ``persistent_load`` refusing too (should step 2 ever let one through).
   No opcode the walk allows fetches or calls anything: building built-in
   scalars and containers is all that runs.
4. The value must be a request dict as Scrapy's ``Request.to_dict`` made it
   for a plain ``Request``: known keys only, each of its type and within
   bounds (those of ``frontierentries``, which the entry is converted to).
   The URL may also be the spider's placeholder ``data:,``; strings keep
   their lone surrogates (links decoded with surrogateescape).

Protocols 0 to 2 can hold bytes (and 0 to 3 sets) only as a call
(``_codecs.encode``, ``set``): such entries are refused, since scrapy-redis
wrote the highest protocol (4 or 5), which holds them as data.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import re
from typing import Any

# A real entry is under 2 KiB, but tse_judged_before may list thousands of external links found before its link.
LEGACY_ENTRY_MAX_BYTES = 1 << 20
MAX_OPCODES = 1 << 18
MAX_STACK = 4096  # the pickler appends and sets items 1000 at a time: 2000 on the stack, and a few levels
MAX_NESTING = 32  # containers in containers (a request dict is 4 deep); open marks
MAX_URL_CHARACTERS = 8192
MAX_BODY_BYTES = 32 * 1024
MAX_HEADER_VALUES = 64  # (name, value) pairs: a name with two values counts twice
MAX_HEADER_BYTES = 8192  # a name or a value
MAX_FLAGS = 64
MAX_FLAG_CHARACTERS = 256
MAX_DEPTH = 1_000_000
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
REQUEST_CLASSES = frozenset({"scrapy.http.request.Request", "scrapy.Request"})
REQUEST_KEYS = frozenset(
    {"url", "callback", "errback", "method", "headers", "body", "cookies", "meta", "encoding", "priority"}
    | {"dont_filter", "flags", "cb_kwargs", "_class"}
)

_SCALARS = frozenset(
    {"NONE", "NEWTRUE", "NEWFALSE", "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT"}
    | {"BINFLOAT", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
    | {"BINBYTES", "SHORT_BINBYTES", "BINBYTES8"}
)
_EMPTY = frozenset({"EMPTY_LIST", "EMPTY_TUPLE", "EMPTY_DICT", "EMPTY_SET"})
_FROM_MARK = frozenset({"LIST", "TUPLE", "DICT", "FROZENSET"})  # a new container of the items above the mark
_INTO_FROM_MARK = frozenset({"APPENDS", "SETITEMS", "ADDITEMS"})  # the items above the mark into the one below
_SMALL_TUPLES = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_INTO = {"APPEND": 1, "SETITEM": 2}
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
ALLOWED_OPCODES = frozenset(
    _SCALARS | _EMPTY | _FROM_MARK | _INTO_FROM_MARK | _SMALL_TUPLES.keys() | _INTO.keys() | _PUTS | _GETS
) | {"PROTO", "FRAME", "MARK", "STOP"}

_DECIMAL_LINE = re.compile(rb"[0-9]{1,9}\n\Z")  # PUT and GET (protocol 0): read alike by genops and _pickle
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\Z")
_ENCODING = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,39}\Z")
_HTTP = re.compile(r"https?://", re.IGNORECASE)
_PLACEHOLDER_URL = "data:,"  # the spider's stand-in for a link Scrapy cannot represent (spiders/tse.py)
_SCALAR_TYPES = (str, bytes, int, float, bool, type(None))
# How protocols 0 to 3 pickle bytes and sets: calls, refused like any other.
_DATA_CALLS = frozenset(f"{module} {name}" for module in ("builtins", "__builtin__") for name in ("bytes", "set"))
_DATA_CALLS |= {"_codecs encode"}
_CALLED_DATA = ": bytes or a set pickled with protocol < 4, as a call"


class LegacyEntryError(ValueError):
    """Why a legacy entry cannot be converted (one line)."""


def read_legacy_request(pickled: bytes, max_bytes: int = LEGACY_ENTRY_MAX_BYTES) -> dict[str, Any]:
    """The request dict pickled in *pickled* (an entry without its fingerprint), checked; LegacyEntryError if
    it is not one, or could do anything but build plain values when loaded (see the module's docstring)."""
    try:
        if not isinstance(pickled, (bytes, bytearray, memoryview)):
            raise LegacyEntryError(f"an entry is bytes, not {type(pickled).__name__}")
        data = bytes(pickled)
        if len(data) > max_bytes:
            raise LegacyEntryError(f"entry of {len(data)} bytes, over the bound of {max_bytes}")
        _check_opcodes(data)
        return _request(_load(data), _Budget(2 * max_bytes + 4096))
    except LegacyEntryError:
        raise
    except Exception as error:  # a check that failed in a way not foreseen: still a refusal
        raise LegacyEntryError(f"not a request ({type(error).__name__})") from None


def _check_opcodes(data: bytes) -> None:
    """Refuse *data* unless it is one pickle of allowed opcodes, within bounds (step 2)."""
    ops: list[tuple[str, Any, int]] = []
    try:
        for opcode, arg, pos in pickletools.genops(data):
            if opcode.name not in ALLOWED_OPCODES:
                hint = _CALLED_DATA if type(arg) is str and arg in _DATA_CALLS else ""
                raise LegacyEntryError(f"refused opcode {opcode.name} at byte {pos}{_argument(arg)}{hint}")
            if len(ops) == MAX_OPCODES:
                raise LegacyEntryError(f"over {MAX_OPCODES} opcodes")
            ops.append((opcode.name, arg, pos))
    except LegacyEntryError:
        raise
    except Exception as error:  # genops raises ValueError mostly, and others on some malformed arguments
        raise LegacyEntryError(f"not a pickle ({type(error).__name__}: {_one_line(str(error))})") from None
    if ops[-1][2] != len(data) - 1:
        raise LegacyEntryError(f"{len(data) - 1 - ops[-1][2]} bytes after the pickle's STOP")
    stack: list[int] = []  # the nesting depth of each value on the stack (0 for a scalar)
    marks: list[int] = []  # the stack's height at each open MARK
    memo: list[int] = []
    for index, (name, arg, pos) in enumerate(ops):
        floor = marks[-1] if marks else 0  # _pickle pops nothing below the last mark
        if name == "PROTO":
            if index or not 0 <= arg <= pickle.HIGHEST_PROTOCOL:
                raise LegacyEntryError(f"PROTO {arg} at byte {pos}")
        elif name == "MARK":
            marks.append(len(stack))
        elif name in _SCALARS:
            stack.append(0)
        elif name in _EMPTY:
            stack.append(1)
        elif name in _SMALL_TUPLES:
            stack.append(1 + max(_pop(stack, floor, _SMALL_TUPLES[name], name, pos)))
        elif name in _INTO:
            items = _pop(stack, floor, _INTO[name], name, pos)
            _into(stack, floor, items, name, pos)
        elif name in _FROM_MARK or name in _INTO_FROM_MARK:
            if not marks:
                raise LegacyEntryError(f"{name} at byte {pos} without a MARK")
            items = _pop(stack, marks.pop(), len(stack) - floor, name, pos)
            if name in ("DICT", "SETITEMS") and len(items) % 2:
                raise LegacyEntryError(f"{name} at byte {pos} of an odd number of items")
            if name in _FROM_MARK:
                stack.append(1 + max(items, default=0))
            else:
                _into(stack, marks[-1] if marks else 0, items, name, pos)
        elif name in _PUTS:
            slot = len(memo) if name == "MEMOIZE" else arg
            if name == "PUT" and not _DECIMAL_LINE.match(data, pos + 1, ops[index + 1][2]):
                raise LegacyEntryError(f"PUT at byte {pos} of a memo slot not written plainly")
            if slot != len(memo) or len(stack) <= floor:
                raise LegacyEntryError(f"{name} at byte {pos} out of order")
            memo.append(stack[-1])
        elif name in _GETS:
            if name == "GET" and not _DECIMAL_LINE.match(data, pos + 1, ops[index + 1][2]):
                raise LegacyEntryError(f"GET at byte {pos} of a memo slot not written plainly")
            if not 0 <= arg < len(memo):
                raise LegacyEntryError(f"{name} at byte {pos} of an empty memo slot")
            stack.append(memo[arg])
        elif name == "STOP" and (marks or len(stack) != 1):
            raise LegacyEntryError(f"STOP with {len(stack)} values and {len(marks)} marks on the stack")
        if len(stack) > MAX_STACK or len(marks) > MAX_NESTING:
            raise LegacyEntryError(f"over {MAX_STACK} values or {MAX_NESTING} marks on the stack at byte {pos}")
        if stack and stack[-1] > MAX_NESTING:
            raise LegacyEntryError(f"values nested over {MAX_NESTING} deep at byte {pos}")


def _pop(stack: list[int], floor: int, count: int, name: str, pos: int) -> list[int]:
    if len(stack) - count < floor:
        raise LegacyEntryError(f"{name} at byte {pos} pops more than the stack holds")
    items = stack[len(stack) - count :]
    del stack[len(stack) - count :]
    return items


def _into(stack: list[int], floor: int, items: list[int], name: str, pos: int) -> None:
    """Items go into the container below them: it is as deep as its deepest item, and one more."""
    if len(stack) <= floor:
        raise LegacyEntryError(f"{name} at byte {pos} without a container")
    stack[-1] = max(stack[-1], 1 + max(items, default=0))


class PlainValues(pickle.Unpickler):
    """An unpickler that refuses every global and persistent object (step 3; a crawl state's requests,
    ``resume.statedb.load_request``, are loaded by it alone)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names {module}.{name}, which could run code: globals are refused")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent objects are refused")


def _load(data: bytes) -> Any:
    try:
        return PlainValues(io.BytesIO(data), buffers=None).load()
    except Exception as error:
        raise LegacyEntryError(f"cannot be loaded ({type(error).__name__}: {_one_line(str(error))})") from None


class _Budget:
    """What a value spells out (one per value, one per character or byte; shared parts counted at each use)."""

    def __init__(self, units: int) -> None:
        self.units = units

    def spend(self, value: Any) -> None:
        self.units -= 1 + (len(value) if isinstance(value, (str, bytes)) else 0)
        if self.units < 0:
            raise LegacyEntryError("the request spells out more than twice the bound on an entry")


def _request(value: Any, budget: _Budget) -> dict[str, Any]:
    """A new request dict of *value*'s fields, checked and of normalized types (step 4)."""
    if type(value) is not dict:
        raise LegacyEntryError(f"a pickled {type(value).__name__}, not a request dict")
    for key in value:
        if key not in REQUEST_KEYS or type(key) is not str:
            raise LegacyEntryError(f"unknown request key {_describe(key)}")
    if "url" not in value:
        raise LegacyEntryError("a request without a URL")
    if "_class" in value and (type(value["_class"]) is not str or value["_class"] not in REQUEST_CLASSES):
        raise LegacyEntryError(f"a request of class {_describe(value['_class'])}, not scrapy.Request")
    request: dict[str, Any] = {}
    for key, check in _FIELDS.items():
        if key in value:
            request[key] = check(value[key], budget)
    return request


def _url(value: Any, budget: _Budget) -> str:
    if type(value) is not str:
        raise LegacyEntryError(f"the URL is a {type(value).__name__}, not a string")
    if len(value) > MAX_URL_CHARACTERS:
        raise LegacyEntryError(f"a URL of {len(value)} characters, over {MAX_URL_CHARACTERS}")
    if not (_HTTP.match(value) or value == _PLACEHOLDER_URL):
        raise LegacyEntryError(f"the URL {_describe(value)} is not an http(s) URL")
    return value


def _method(value: Any, budget: _Budget) -> str:
    if type(value) is not str or value not in METHODS:
        raise LegacyEntryError(f"method {_describe(value)} is not one of {', '.join(sorted(METHODS))}")
    return value


def _name(field: str) -> Any:
    def check(value: Any, budget: _Budget) -> str | None:
        if value is not None and not (type(value) is str and _NAME.match(value)):
            raise LegacyEntryError(f"{field} {_describe(value)} is not a method name")
        return value

    return check


def _headers(value: Any, budget: _Budget) -> dict[bytes, list[bytes]]:
    if type(value) is not dict:
        raise LegacyEntryError(f"headers are a {type(value).__name__}, not a dict")
    headers: dict[bytes, list[bytes]] = {}
    pairs = 0
    for name, values in value.items():
        _bytes("a header name", name, MAX_HEADER_BYTES)
        if not name:
            raise LegacyEntryError("an empty header name")
        if type(values) is bytes:
            values = [values]
        elif type(values) not in (list, tuple):
            raise LegacyEntryError(f"header {_describe(name)} has a {type(values).__name__}, not values")
        pairs += len(values)
        if pairs > MAX_HEADER_VALUES or len(headers) >= MAX_HEADER_VALUES:
            raise LegacyEntryError(f"over {MAX_HEADER_VALUES} header names and values")
        headers[name] = [_bytes("a header value", item, MAX_HEADER_BYTES) for item in values]
    return headers


def _body(value: Any, budget: _Budget) -> bytes:
    return _bytes("the body", value, MAX_BODY_BYTES)


def _bytes(field: str, value: Any, bound: int) -> bytes:
    if type(value) is not bytes:
        raise LegacyEntryError(f"{field} is a {type(value).__name__}, not bytes")
    if len(value) > bound:
        raise LegacyEntryError(f"{field} of {len(value)} bytes, over {bound}")
    return value


def _empty(field: str) -> Any:
    def check(value: Any, budget: _Budget) -> dict[str, Any]:
        if type(value) not in (dict, list) or value:
            raise LegacyEntryError(f"{field} are not empty: requests of tse carry none")
        return {}

    return check


def _meta(value: Any, budget: _Budget) -> dict[str, Any]:
    if type(value) is not dict:
        raise LegacyEntryError(f"meta is a {type(value).__name__}, not a dict")
    meta: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            raise LegacyEntryError(f"a meta key of type {type(key).__name__}, not a string")
        budget.spend(key)
        if key in ("depth", "tse_found_at"):
            meta[key] = _int(f"meta {key}", item, 0, MAX_DEPTH)
        elif key in ("tse_link", "tse_found_on"):
            meta[key] = _string(f"meta {key}", item, MAX_URL_CHARACTERS)
        elif key == "tse_judged_before":
            meta[key] = _judged(item, budget)
        else:
            meta[key] = _plain(item, 1, budget)
    budget.spend(meta)
    return meta


def _judged(value: Any, budget: _Budget) -> list[tuple[str, str]]:
    """``tse_judged_before``: (url, verdict) pairs, as the spider makes them (tuples)."""
    if type(value) not in (list, tuple):
        raise LegacyEntryError(f"meta tse_judged_before is a {type(value).__name__}, not a list")
    pairs = []
    for pair in value:
        if type(pair) not in (list, tuple) or len(pair) != 2:
            raise LegacyEntryError("meta tse_judged_before holds something else than (url, verdict) pairs")
        url, verdict = (_string("a judged URL", part, MAX_URL_CHARACTERS) for part in pair)
        for part in (pair, url, verdict):
            budget.spend(part)
        pairs.append((url, verdict))
    return pairs


def _plain(value: Any, depth: int, budget: _Budget) -> Any:
    """*value*, checked to be plain values only, nested at most ``MAX_NESTING`` deep, within *budget*."""
    budget.spend(value)
    kind = type(value)
    if kind is int and not -(2**63) <= value < 2**64:
        raise LegacyEntryError("a meta integer beyond 64 bits")
    if kind in _SCALAR_TYPES:
        return value
    if depth >= MAX_NESTING:
        raise LegacyEntryError(f"meta values nested over {MAX_NESTING} deep")
    if kind in (list, tuple, set, frozenset):
        for item in value:
            _plain(item, depth + 1, budget)
    elif kind is dict:
        for key, item in value.items():
            _plain(key, depth + 1, budget)
            _plain(item, depth + 1, budget)
    else:
        raise LegacyEntryError(f"a meta value of type {kind.__name__}")
    return value


def _priority(value: Any, budget: _Budget) -> int:
    return _int("priority", value, -(2**31), 2**31 - 1)


def _int(field: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise LegacyEntryError(f"{field} is not a whole number from {low} to {high}")
    return value


def _dont_filter(value: Any, budget: _Budget) -> bool:
    if type(value) is not bool:
        raise LegacyEntryError(f"dont_filter is a {type(value).__name__}, not true or false")
    return value


def _encoding(value: Any, budget: _Budget) -> str:
    if type(value) is not str or not _ENCODING.match(value):
        raise LegacyEntryError(f"encoding {_describe(value)} is not the name of one")
    return value


def _flags(value: Any, budget: _Budget) -> list[str]:
    if type(value) not in (list, tuple) or len(value) > MAX_FLAGS:
        raise LegacyEntryError(f"flags are not a list of at most {MAX_FLAGS} strings")
    return [_string("a flag", flag, MAX_FLAG_CHARACTERS) for flag in value]


def _string(field: str, value: Any, bound: int) -> str:
    if type(value) is not str or len(value) > bound:
        raise LegacyEntryError(f"{field} is not a string of at most {bound} characters")
    return value


_FIELDS = {
    "url": _url,
    "callback": _name("callback"),
    "errback": _name("errback"),
    "method": _method,
    "headers": _headers,
    "body": _body,
    "cookies": _empty("cookies"),
    "meta": _meta,
    "encoding": _encoding,
    "priority": _priority,
    "dont_filter": _dont_filter,
    "flags": _flags,
    "cb_kwargs": _empty("cb_kwargs"),
}


def _describe(value: Any) -> str:
    """*value* for a message: a short repr of a string or small number, else its type."""
    if type(value) in (str, bytes):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    if type(value) in (bool, type(None)) or (type(value) is int and -(10**12) < value < 10**12):
        return repr(value)
    return f"of type {type(value).__name__}"


def _argument(arg: Any) -> str:
    return f" ({_describe(arg)})" if type(arg) is str else ""


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text[:100] + ("..." if len(text) > 100 else "")
