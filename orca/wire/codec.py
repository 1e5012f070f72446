"""The one MessagePack codec every Orca socket uses.

Encoding is ``msgspec.msgpack`` (bin type for bytes, str type for text: the same bytes
``msgpack.packb(obj, use_bin_type=True)`` produces); decoding is typed where a schema
exists and generic otherwise. ``msgpack`` (the reference implementation) is kept as the
reference decoder in ``tests/unit/wire/test_conformance.py``. The choice of msgspec over
``msgpack`` + hand validation comes from ``bench/wire_codec.py`` (decode + validate of
a typical request is several times faster and the schema *is* the validator).

Map keys must be strings (the architecture's ``strict_map_key=True``): a map with any
other key type is rejected as a bad frame.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from orca.wire.errors import BadFrame, TooLarge

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

_encoder = msgspec.msgpack.Encoder()
_generic = msgspec.msgpack.Decoder(dict[str, Any])
_any = msgspec.msgpack.Decoder()


def encode(obj: Any) -> bytes:
    """Encode ``obj`` (builtins or msgspec Structs) to MessagePack bytes."""
    return _encoder.encode(obj)


def decode_map(data: bytes | memoryview) -> dict[str, Any]:
    """Decode a frame that must be a map with string keys."""
    if len(data) > MAX_FRAME_BYTES:
        raise TooLarge(f"frame of {len(data)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    try:
        return _generic.decode(data)
    except msgspec.ValidationError as exc:
        raise BadFrame(f"frame is not a map with string keys: {exc}") from exc
    except DECODE_ERRORS as exc:
        raise BadFrame(f"undecodable MessagePack frame: {exc}") from exc


def decode_any(data: bytes | memoryview) -> Any:
    """Decode any MessagePack value (string keys not enforced below the top level)."""
    try:
        return _any.decode(data)
    except DECODE_ERRORS as exc:
        raise BadFrame(f"undecodable MessagePack frame: {exc}") from exc


def typed_decoder(cls: type[T]) -> msgspec.msgpack.Decoder[T]:
    """A reusable decoder that validates into ``cls`` while decoding."""
    return msgspec.msgpack.Decoder(cls)
