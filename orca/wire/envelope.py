"""Request, reply and event envelopes (docs/architecture.md §2).

Request ``{v, id, op, args, idem?}`` → reply ``{v, id, ok: true, result}`` or
``{v, id, ok: false, error: {code, message}}``. Event: a topic frame, then
``{v, src, epoch, seq, type, data}``. Unknown extra fields are ignored (new optional
fields are safe, upstream compatibility rule 1); a ``v`` we do not speak is refused.

Requests are decoded in two passes: the envelope with ``args`` left as raw bytes, then
``args`` by the op's own typed decoder, so an unknown op never pays for its arguments
and each op validates exactly its own schema.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from orca import PROTOCOL_VERSION
from orca.wire.codec import MAX_FRAME_BYTES, FrameDecoder, decode_any, encode
from orca.wire.errors import BadFrame, BadRequest, BadVersion, OrcaError, WrongShape

_EMPTY_MAP = msgspec.Raw(b"\x80")
_S = TypeVar("_S", bound=msgspec.Struct)


class Request(msgspec.Struct, frozen=True):
    v: int
    id: str
    op: str
    args: msgspec.Raw = _EMPTY_MAP
    idem: str | None = None


class Reply(msgspec.Struct, frozen=True, omit_defaults=True):
    v: int
    id: str | None
    ok: bool
    result: Any = None
    error: dict[str, str] | None = None


class RawReply(msgspec.Struct, frozen=True):
    """A reply with ``result`` left as bytes, for the caller to decode with the op's type."""

    v: int
    id: str | None
    ok: bool
    result: msgspec.Raw = msgspec.Raw(b"\xc0")
    error: dict[str, str] | None = None


class Event(msgspec.Struct, frozen=True):
    v: int
    src: str
    epoch: str
    seq: int
    type: str
    data: Any = None


_decoders: dict[type, FrameDecoder[Any]] = {}


def _decoder(cls: type[_S]) -> FrameDecoder[_S]:
    """The decoder of ``cls``, built on first use: building one resolves the Struct's
    annotations, and a CLI process only ever decodes replies (bench/cli.py).

    A request is bounded by MAX_FRAME_BYTES (answered ``too_large``); a reply or an
    event by the socket it came on (a reply may carry a snapshot above that limit)."""
    found = _decoders.get(cls)
    if found is None:
        what = "request" if cls is Request else f"{cls.__name__.lower()} frame"
        limit = MAX_FRAME_BYTES if cls is Request else None
        found = _decoders[cls] = FrameDecoder(cls, what=what, max_bytes=limit)
    return found


def _refusal(frame: bytes, exc: WrongShape) -> RequestError:
    """Explain why a decodable frame is not a valid request, with its id when it has one."""
    try:
        value = decode_any(frame)
    except BadFrame as bad:
        return RequestError(bad, None)
    if not isinstance(value, dict):
        return RequestError(
            BadFrame(f"request body must be a map, got {type(value).__name__}"), None
        )
    rid = value.get("id")
    return RequestError(
        BadRequest(f"invalid request envelope: {exc.__cause__ or exc}"),
        rid if isinstance(rid, str) else None,
    )


class RequestError(Exception):
    """A request frame was refused; ``error`` is what to reply with, ``request_id`` where."""

    def __init__(self, error: OrcaError, request_id: str | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id


def decode_request(frame: bytes) -> Request:
    """Decode and validate a request envelope, or raise ``RequestError``."""
    try:
        req = _decoder(Request).decode(frame)
    except WrongShape as exc:
        raise _refusal(frame, exc) from exc
    except BadRequest as exc:  # BadFrame, TooLarge
        raise RequestError(exc, None) from exc
    if req.v != PROTOCOL_VERSION:
        raise RequestError(
            BadVersion(
                f"protocol version {req.v} is not supported (this actor speaks {PROTOCOL_VERSION})"
            ),
            req.id,
        )
    return req


def encode_request(request_id: str, op: str, args: Any, idem: str | None = None) -> bytes:
    body: dict[str, Any] = {
        "v": PROTOCOL_VERSION,
        "id": request_id,
        "op": op,
        "args": {} if args is None else args,
    }
    if idem is not None:
        body["idem"] = idem
    try:
        return encode(body)
    except UnicodeEncodeError as exc:
        # A str with lone surrogates: a non-UTF-8 path or argument decoded with
        # surrogateescape (os.fsdecode). The wire carries UTF-8 text only; say so.
        raise BadRequest(
            f"cannot send {op}: {exc.object[max(0, exc.start - 20) : exc.end + 20]!r}"
            " is not valid UTF-8 text (a path with non-UTF-8 bytes cannot be named on the wire)"
        ) from exc


def encode_ok(request_id: str | None, result: Any) -> bytes:
    return encode(Reply(PROTOCOL_VERSION, request_id, True, result))


def encode_error(request_id: str | None, error: OrcaError) -> bytes:
    return encode(Reply(PROTOCOL_VERSION, request_id, False, None, error.to_wire()))


def decode_reply(frame: bytes) -> Reply:
    """A reply envelope; ``BadFrame`` if it is not one."""
    return _decoder(Reply).decode(frame)


def decode_reply_raw(frame: bytes) -> RawReply:
    """A reply envelope with ``result`` left raw; ``BadFrame`` if it is not one."""
    return _decoder(RawReply).decode(frame)


def encode_event(event: Event) -> bytes:
    return encode(event)


def decode_event(frame: bytes) -> Event:
    """An event envelope; ``BadFrame`` if it is not one."""
    return _decoder(Event).decode(frame)
