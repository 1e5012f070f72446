"""The codec's bounded decoder: whatever the bytes, ``BadFrame`` or ``TooLarge``, never more.

Issue 23: ptyd's attach stream and the fd keeper built their own msgspec decoders and
caught only msgspec's errors, so a frame nested past the recursion limit escaped as
``RecursionError`` and ended the process. Every socket now decodes through
``FrameDecoder``; the last test keeps it that way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca.contracts import fd_keeper, ptyd
from orca.wire.codec import FrameDecoder, encode
from orca.wire.errors import BadFrame, TooLarge, WrongShape

REPO = Path(__file__).resolve().parents[3]
DEEP = 10_000
STREAM: FrameDecoder[ptyd.ToPtyd] = FrameDecoder(ptyd.ToPtyd, what="attach-stream message")


@pytest.mark.parametrize(
    "frame",
    [
        b"\x82\xa1t\xa4ping\xa1x" + b"\x91" * DEEP + b"\xc0",  # deep in a skipped field
        b"\x81\xa1a" * DEEP + b"\xc0",
        b"\x91" * DEEP + b"\xc0",
    ],
    ids=["in-a-field", "maps", "arrays"],
)
def test_nesting_past_the_recursion_limit_is_a_bad_frame(frame: bytes) -> None:
    """10,000-deep nesting (RecursionError inside msgspec) is BadFrame."""
    with pytest.raises(BadFrame):
        STREAM.decode(frame)


def test_a_json_packet_nested_deep_is_a_bad_frame() -> None:
    """The keeper's JSON packets are bounded the same way."""
    packet = b'{"op":"update","key":"k","info":{"a":' + b"[" * DEEP + b"]" * DEEP + b"}}"
    with pytest.raises(BadFrame):
        fd_keeper.REQUESTS.decode(packet)


def test_the_wrong_type_is_wrong_shape_and_a_valid_message_decodes() -> None:
    """Decodable MessagePack of the wrong type is WrongShape (a BadFrame); a valid one decodes."""
    with pytest.raises(WrongShape):
        STREAM.decode(encode({"t": "input", "data": 5}))
    assert STREAM.decode(encode({"t": "resize", "cols": 90, "rows": 30})) == ptyd.StreamResize(
        cols=90, rows=30
    )


def test_a_frame_over_the_limit_is_too_large_before_decoding() -> None:
    """``max_bytes`` is checked first; ``None`` leaves the bound to the socket."""
    small: FrameDecoder[Any] = FrameDecoder(Any, max_bytes=8)
    with pytest.raises(TooLarge):
        small.decode(b"\xc0" * 9)  # nine valid nils would not even be one value
    assert FrameDecoder(Any, max_bytes=None).decode(encode(b"x" * 100)) == b"x" * 100


@given(st.binary(max_size=64) | st.builds(lambda n: b"\xdd" + n, st.binary(min_size=4, max_size=4)))
def test_any_bytes_decode_or_raise_bad_frame(frame: bytes) -> None:
    """Random bytes and huge declared lengths: a message or BadFrame, nothing else."""
    try:
        STREAM.decode(frame)
    except BadFrame:
        pass


# The places allowed to build a msgspec decoder of their own, and why.
OWN_DECODERS = {
    "orca/wire/codec.py": "the codec itself",
    "orca/contracts/base.py": "an op's args/result validators; every caller maps DECODE_ERRORS",
    "orca/model/codec.py": "records in files; RecursionError mapped to ModelDecodeError",
    "actors/store/bounded_json.py": "the store's files, depth-checked before decoding",
    "actors/vault/step.py": "agents' transcript lines (files); RecursionError: a skipped line",
}
_BUILDS = re.compile(r"msgspec\.(msgpack|json)\.(Decoder|decode)\(|msgpack\.unpackb\(")


def test_no_socket_builds_a_decoder_of_its_own() -> None:
    """Every msgspec decoder outside the codec is one of the few listed with a reason."""
    found = {
        str(path.relative_to(REPO))
        for top in ("orca", "actors")
        for path in (REPO / top).rglob("*.py")
        if _BUILDS.search(path.read_text())
    }
    assert found <= set(OWN_DECODERS), sorted(found - set(OWN_DECODERS))
