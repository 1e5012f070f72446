"""msgpack (the reference implementation) and our codec agree on every value we send."""

from __future__ import annotations

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from orca.wire.codec import decode_any, encode

# What crosses the wire: JSON-like values plus raw bytes, with string map keys.
wire_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)


def reference_pack(value: object) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def reference_unpack(data: bytes) -> object:
    return msgpack.unpackb(data, raw=False, strict_map_key=True)


@given(wire_values)
def test_reference_decoder_reads_what_we_encode(value: object) -> None:
    """Every frame we encode decodes identically with msgpack (raw=False, strict_map_key)."""
    assert reference_unpack(encode(value)) == value


@given(wire_values)
def test_we_read_what_the_reference_encodes(value: object) -> None:
    """Every frame msgpack encodes (use_bin_type=True) decodes identically with our codec."""
    assert decode_any(reference_pack(value)) == value


@given(wire_values)
def test_encodings_are_byte_identical(value: object) -> None:
    """Both encoders pick the same (smallest) representation, so frames are byte-identical."""
    assert encode(value) == reference_pack(value)
