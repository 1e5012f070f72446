"""The one MessagePack codec every Orca socket uses.

Encoding is ``msgspec.msgpack`` (bin type for bytes, str type for text: the same bytes
``msgpack.packb(obj, use_bin_type=True)`` produces); decoding is typed where a schema
exists and generic otherwise. ``msgpack`` (the reference implementation) is kept as the
reference decoder in ``tests/unit/wire/test_conformance.py``. The choice of msgspec over
``msgpack`` + hand validation comes from ``bench/wire_codec.py`` (decode + validate of
a typical request is several times faster and the schema *is* the validator).

Map keys must be strings (the architecture's ``strict_map_key=True``): a map with any
other key type is rejected as a bad frame.

Every byte a peer sends is decoded by a :class:`FrameDecoder` (``decode_map`` and
``decode_any`` are two of them), bounded three ways:

- size: a frame above its ``max_bytes`` is ``TooLarge`` before one byte is parsed
  (``None``: what the socket let through, ``ZMQ_MAXMSGSIZE`` or a stream's frame
  limit, is the bound: replies and events, whose sender is the one we asked);
- depth: msgspec enters the interpreter's recursion guard at every nesting level
  (skipped unknown fields included), so a frame nested deeper than the recursion limit
  (about 1,000 levels, minus the caller's own stack) stops with ``RecursionError``
  after a few KB of C stack and no Python frames; no frame we send nests beyond ~10.
  An explicit pre-scan for a smaller limit was measured and left out: a Python walk
  of the frame costs ~10x the decode of a keystroke's message (3.9 us against 0.36
  us) and ~4x a 324 KB snapshot's (28 ms against 6.6 ms), on every message;
- allocation: a declared length is checked against the bytes left before anything is
  allocated (a header announcing 4 G items in a 5-byte frame is "truncated").

Every way a frame can fail (undecodable, too deep, not the expected type) is mapped
to ``BadFrame`` here, once, so a socket's receive path has one ``except`` and nothing
a peer sends can raise past it. ``WrongShape`` (a ``BadFrame``) marks decodable
MessagePack of the wrong type, for the callers that answer it differently (a request
envelope with a readable id is answered at that id).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

from orca.wire.errors import BadFrame, TooLarge, WrongShape

T = TypeVar("T")

# Hard ceiling set as ZMQ_MAXMSGSIZE on every socket: libzmq drops a connection that
# sends more, so this only protects memory. Below it, MAX_FRAME_BYTES is checked by the
# runtime so an oversized request gets a ``too_large`` reply instead of a disconnect.
ZMQ_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Largest frame an actor accepts as a request: far above any real op (PTY chunks are
# 64 KiB, a full orca-data.json snapshot a few MB) and small enough to bound decoding.
MAX_FRAME_BYTES = 16 * 1024 * 1024

# What a decoder raises on bytes from a peer. RecursionError included: msgspec recurses
# once per nesting level, so a 2 KB frame nested ~1,000 deep (b"\x91" * 2000) would
# otherwise escape as an exception no handler expects and end the actor.
DECODE_ERRORS = (msgspec.DecodeError, RecursionError)


class FrameDecoder(Generic[T]):
    """Decodes a peer's frame into ``T``, bounded (module docstring), or raises
    ``TooLarge`` / ``BadFrame`` (``WrongShape`` for the wrong type), never anything else.

    ``what`` names the frame in the error ("attach-stream message"); ``fmt`` is
    ``msgpack`` for every ZeroMQ and stream socket, ``json`` for the fd keeper's packets.
    """

    __slots__ = ("_decoder", "max_bytes", "what")

    def __init__(
        self,
        cls: Any,
        *,
        what: str = "frame",
        max_bytes: int | None = MAX_FRAME_BYTES,
        fmt: Literal["msgpack", "json"] = "msgpack",
    ) -> None:
        self._decoder: msgspec.msgpack.Decoder[T] | msgspec.json.Decoder[T] = (
            msgspec.msgpack.Decoder(cls) if fmt == "msgpack" else msgspec.json.Decoder(cls)
        )
        self.what = what
        self.max_bytes = max_bytes

    def decode(self, data: bytes | memoryview) -> T:
        if self.max_bytes is not None and len(data) > self.max_bytes:
            raise TooLarge(
                f"{self.what} of {len(data)} bytes exceeds the {self.max_bytes}-byte limit"
            )
        try:
            return self._decoder.decode(data)
        except msgspec.ValidationError as exc:  # (a DecodeError: caught first)
            raise WrongShape(f"invalid {self.what}: {exc}") from exc
        except RecursionError as exc:
            raise BadFrame(f"{self.what} nested too deep") from exc
        except msgspec.DecodeError as exc:
            raise BadFrame(f"undecodable {self.what}: {exc}") from exc


_encoder = msgspec.msgpack.Encoder()
_generic: FrameDecoder[dict[str, Any]] = FrameDecoder(dict[str, Any], what="map frame")
# Replies and their results: bounded by the socket (a store snapshot may pass 16 MiB).
_any: FrameDecoder[Any] = FrameDecoder(Any, max_bytes=None)


def encode(obj: Any) -> bytes:
    """Encode ``obj`` (builtins or msgspec Structs) to MessagePack bytes."""
    return _encoder.encode(obj)


def decode_map(data: bytes | memoryview) -> dict[str, Any]:
    """Decode a frame that must be a map with string keys."""
    return _generic.decode(data)


def decode_any(data: bytes | memoryview) -> Any:
    """Decode any MessagePack value (string keys not enforced below the top level)."""
    return _any.decode(data)
