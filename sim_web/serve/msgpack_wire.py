"""MessagePack for ``POST /retrieve``: the subset GEM's ``SearchTool`` sends and reads.

GEM (gem-llm 0.1.0, ``gem/tools/search_tool.py``) posts its request encoded with ``msgspec.msgpack`` and decodes the
reply the same way. The request is small and untrusted. The server reads it with :func:`unpack_retrieve`:
msgspec's C decoder typed to the request's four fields, so an unknown field is skipped without building it, a field
of the wrong shape is refused at its first wrong item, ``queries`` is refused past
:data:`~sim_web.serve.retrieve.MAX_QUERIES` items from its header, and deep nesting ends in a ``RecursionError``
rather than a deep stack: a 1 MiB body costs milliseconds, not the seconds a pure-Python reader took on the event
loop (issue 59). :func:`unpackb` is the pure-Python reader of any value (nil, booleans, integers, floats, strings,
binary, arrays and maps; no extension types; nesting up to :data:`MAX_DEPTH`; never more items allocated than the
bytes left could hold), for clients and tests. :func:`packb` writes the reply (dicts, lists, strings, integers,
floats, booleans, ``None``) in the shortest form, as msgpack libraries do. The specification:
github.com/msgpack/msgpack/blob/master/spec.md.
"""

from __future__ import annotations

import struct
from typing import Annotated, Any

import msgspec

MAX_DEPTH = 32  #: arrays and maps nested deeper than this are refused
#: Media types that mean MessagePack (there is no registered one; these are what clients send).
MEDIA_TYPES = ("application/msgpack", "application/x-msgpack", "application/vnd.msgpack")


class MsgpackError(ValueError):
    """The bytes are not MessagePack this reader accepts (the message says where and what)."""


def looks_packed(content_type: str, body: bytes) -> bool:
    """Whether a request body is MessagePack: by its media type, or, without one, a body that starts with a map.

    GEM's client sets no ``Content-Type`` (``requests.post(url, data=...)``); a JSON object starts with ``{`` or
    white space, never with a byte in 0x80-0x8f, 0xde or 0xdf (MessagePack's map headers).

    Args:
        content_type: The ``Content-Type`` header (``""`` when absent).
        body: The request body.
    """
    media = content_type.split(";", 1)[0].strip().lower()
    if media in MEDIA_TYPES:
        return True
    return not media and bool(body) and (0x80 <= body[0] <= 0x8F or body[0] in (0xDE, 0xDF))


_Scalar = str | int | float | bool | None  # what the request model then checks (pydantic's lax rules, as for JSON)
_FIELDS = ("queries", "query", "topk", "return_scores")


def _retrieve_decoder(max_queries: int) -> msgspec.msgpack.Decoder[Any]:
    """A decoder of the four fields (built with real types: this module's annotations are strings)."""
    unset = msgspec.UnsetType
    queries = Annotated[list[_Scalar], msgspec.Meta(max_length=max_queries)] | None | unset  # type: ignore[valid-type]
    fields = [("queries", queries, msgspec.UNSET)] + [(k, _Scalar | unset, msgspec.UNSET) for k in _FIELDS[1:]]
    return msgspec.msgpack.Decoder(msgspec.defstruct("RetrieveWire", fields))


_DECODERS: dict[int, msgspec.msgpack.Decoder[Any]] = {}


def unpack_retrieve(data: bytes, max_queries: int) -> dict[str, Any]:
    """A ``/retrieve`` request body: a map whose ``queries``, ``query``, ``topk`` and ``return_scores`` are read
    (scalars, and a list of at most ``max_queries`` scalars), every other key skipped unread.

    Returns:
        The fields that were present.

    Raises:
        MsgpackError: Not MessagePack, not a map, a field of another shape, too many queries, or nested too deep.
    """
    decoder = _DECODERS.get(max_queries) or _DECODERS.setdefault(max_queries, _retrieve_decoder(max_queries))
    try:
        wire = decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise MsgpackError(f"expected a MessagePack map of the request's fields: {_reason(e)}") from None
    except RecursionError:
        raise MsgpackError("expected a MessagePack map of the request's fields: nested too deeply") from None
    return {k: getattr(wire, k) for k in _FIELDS if getattr(wire, k) is not msgspec.UNSET}


def _reason(error: Exception) -> str:
    """msgspec's reason (it names the type found and where; it never quotes the input), or the codec's."""
    if isinstance(error, UnicodeDecodeError):
        return "a string that is not UTF-8"
    return str(error)[:200]


def unpackb(data: bytes) -> Any:
    """Decode one MessagePack value that fills ``data``.

    Raises:
        MsgpackError: Truncated or trailing bytes, an extension type, a reserved byte, invalid UTF-8, or nesting
            deeper than :data:`MAX_DEPTH`.
    """
    reader = _Reader(data)
    value = reader.value(0)
    if reader.pos != len(data):
        raise MsgpackError(f"expected one MessagePack value, found {len(data) - reader.pos} bytes after it")
    return value


def packb(value: Any) -> bytes:
    """Encode dicts (string keys), lists, tuples, strings, integers, floats, booleans and ``None``.

    Raises:
        TypeError: Another type.
    """
    out = bytearray()
    _pack(value, out)
    return bytes(out)


def _pack(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xC0)
    elif value is True or value is False:
        out.append(0xC3 if value else 0xC2)
    elif isinstance(value, int):
        _pack_int(value, out)
    elif isinstance(value, float):
        out += b"\xcb" + struct.pack(">d", value)
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        _header(len(raw), out, 0xA0, 31, (0xD9, 0xDA, 0xDB))
        out += raw
    elif isinstance(value, (list, tuple)):
        _header(len(value), out, 0x90, 15, (None, 0xDC, 0xDD))
        for item in value:
            _pack(item, out)
    elif isinstance(value, dict):
        _header(len(value), out, 0x80, 15, (None, 0xDE, 0xDF))
        for key, item in value.items():
            _pack(key, out)
            _pack(item, out)
    else:
        raise TypeError(f"cannot encode a {type(value).__name__} as MessagePack here")


def _header(n: int, out: bytearray, fix: int, fix_max: int, codes: tuple[int | None, int, int]) -> None:
    """A string, array or map header: the fix form, else 8-bit (strings only), 16-bit or 32-bit length."""
    if n <= fix_max:
        out.append(fix | n)
    elif n < 0x100 and codes[0] is not None:
        out += bytes((codes[0], n))
    elif n < 0x10000:
        out += bytes((codes[1],)) + struct.pack(">H", n)
    else:
        out += bytes((codes[2],)) + struct.pack(">I", n)


def _pack_int(n: int, out: bytearray) -> None:
    if 0 <= n < 0x80 or -32 <= n < 0:
        out += struct.pack(">b", n) if n < 0 else bytes((n,))
    elif n >= 0:
        for code, fmt, top in (
            (0xCC, ">B", 1 << 8),
            (0xCD, ">H", 1 << 16),
            (0xCE, ">I", 1 << 32),
            (0xCF, ">Q", 1 << 64),
        ):
            if n < top:
                out += bytes((code,)) + struct.pack(fmt, n)
                return
        raise TypeError("integer too large for MessagePack")
    else:
        for code, fmt, low in ((0xD0, ">b", -(1 << 7)), (0xD1, ">h", -(1 << 15)), (0xD2, ">i", -(1 << 31))):
            if n >= low:
                out += bytes((code,)) + struct.pack(fmt, n)
                return
        if n < -(1 << 63):
            raise TypeError("integer too small for MessagePack")
        out += b"\xd3" + struct.pack(">q", n)


_FIXED = {  # code: (struct format, size) of the fixed-size scalars
    0xCA: (">f", 4),
    0xCB: (">d", 8),
    0xCC: (">B", 1),
    0xCD: (">H", 2),
    0xCE: (">I", 4),
    0xCF: (">Q", 8),
    0xD0: (">b", 1),
    0xD1: (">h", 2),
    0xD2: (">i", 4),
    0xD3: (">q", 8),
}
_LENGTHS = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise MsgpackError(f"expected {n} more bytes at offset {self.pos}, found {len(self.data) - self.pos}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def length(self, code: int) -> int:
        size = _LENGTHS[code]
        return int.from_bytes(self.take(size), "big")

    def value(self, depth: int) -> Any:
        code = self.take(1)[0]
        if code <= 0x7F or code >= 0xE0:
            return code if code <= 0x7F else code - 0x100
        if code in _FIXED:
            fmt, size = _FIXED[code]
            return struct.unpack(fmt, self.take(size))[0]
        if code in (0xC0, 0xC2, 0xC3):
            return {0xC0: None, 0xC2: False, 0xC3: True}[code]
        if 0xA0 <= code <= 0xBF or code in (0xD9, 0xDA, 0xDB):
            raw = self.take(code & 0x1F if code <= 0xBF else self.length(code))
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise MsgpackError(
                    f"expected a UTF-8 string at offset {self.pos - len(raw)}, found {e.reason}"
                ) from None
        if code in (0xC4, 0xC5, 0xC6):
            return self.take(self.length(code))
        is_map = 0x80 <= code <= 0x8F or code in (0xDE, 0xDF)
        if is_map or 0x90 <= code <= 0x9F or code in (0xDC, 0xDD):
            return self.container(code, is_map, depth)
        raise MsgpackError(f"expected a MessagePack value at offset {self.pos - 1}, found type byte {code:#04x}")

    def container(self, code: int, is_map: bool, depth: int) -> Any:
        if depth >= MAX_DEPTH:
            raise MsgpackError(f"expected at most {MAX_DEPTH} nested arrays or maps, found more")
        n = code & 0x0F if code <= 0x9F else self.length(code)
        if n * (2 if is_map else 1) > len(self.data) - self.pos:  # every item takes at least one byte
            raise MsgpackError(f"expected {n} items at offset {self.pos}, found only {len(self.data) - self.pos} bytes")
        if not is_map:
            return [self.value(depth + 1) for _ in range(n)]
        out: dict[Any, Any] = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if isinstance(key, (list, dict)):
                raise MsgpackError("expected a map key that is a string or a number, found an array or a map")
            out[key] = self.value(depth + 1)
        return out
