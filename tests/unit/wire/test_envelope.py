"""Envelope validation: every malformed request gets a stable error code (ARCHITECTURE §2)."""

from __future__ import annotations

import msgpack
import pytest

from orca import PROTOCOL_VERSION
from orca.wire.codec import MAX_FRAME_BYTES, decode_map, encode
from orca.wire.envelope import (
    RequestError,
    decode_event,
    decode_reply,
    decode_request,
    encode_error,
    encode_ok,
    encode_request,
)
from orca.wire.errors import Conflict, NotFound, Timeout, error_from_wire


def refusal(frame: bytes) -> RequestError:
    with pytest.raises(RequestError) as info:
        decode_request(frame)
    return info.value


def test_valid_request_round_trips() -> None:
    """A request built by encode_request decodes to the same op, id, args and idem key."""
    req = decode_request(encode_request("r1", "repo.add", {"path": "/x"}, idem="k"))
    assert (req.v, req.id, req.op, req.idem) == (PROTOCOL_VERSION, "r1", "repo.add", "k")
    assert msgpack.unpackb(bytes(req.args)) == {"path": "/x"}


def test_missing_field_is_bad_request_and_keeps_the_id() -> None:
    """A request without ``op`` is refused as bad_request, routed back by its id."""
    exc = refusal(encode({"v": 1, "id": "abc", "args": {}}))
    assert exc.error.code == "bad_request"
    assert "op" in exc.error.message
    assert exc.request_id == "abc"


def test_ill_typed_field_is_bad_request() -> None:
    """An ``op`` that is not a string is refused with a message naming the field."""
    exc = refusal(encode({"v": 1, "id": "abc", "op": 5, "args": {}}))
    assert exc.error.code == "bad_request"
    assert "$.op" in exc.error.message


def test_non_map_body_is_bad_frame() -> None:
    """A frame that decodes to a list is a bad frame, not a crash."""
    assert refusal(encode([1, 2, 3])).error.code == "bad_frame"


def test_undecodable_bytes_are_bad_frame() -> None:
    """Truncated MessagePack is a bad frame."""
    frame = encode_request("r", "sys.ping", {})[:-3]
    assert refusal(frame).error.code == "bad_frame"


def test_wrong_version_is_bad_version() -> None:
    """A protocol version we do not speak is refused as bad_version, with the id."""
    exc = refusal(encode({"v": PROTOCOL_VERSION + 1, "id": "z", "op": "sys.ping", "args": {}}))
    assert (exc.error.code, exc.request_id) == ("bad_version", "z")


def test_oversized_frame_is_too_large() -> None:
    """A frame above MAX_FRAME_BYTES is refused before decoding."""
    assert refusal(b"\x00" * (MAX_FRAME_BYTES + 1)).error.code == "too_large"


def test_non_string_map_keys_are_refused() -> None:
    """Map keys must be strings (strict_map_key)."""
    with pytest.raises(Exception) as info:
        decode_map(msgpack.packb({1: "a"}))
    assert getattr(info.value, "code", None) == "bad_frame"


def test_unknown_extra_fields_are_ignored() -> None:
    """New optional envelope fields are safe: an old reader ignores them (compat rule 1)."""
    req = decode_request(encode({"v": 1, "id": "a", "op": "x", "args": {}, "trace": "t"}))
    assert req.op == "x"


def test_replies_round_trip_errors_by_code() -> None:
    """An error reply rebuilds the same exception class on the caller's side."""
    for exc in (NotFound("gone"), Conflict("busy"), Timeout("slow")):
        reply = decode_reply(encode_error("i", exc))
        assert not reply.ok
        again = error_from_wire(reply.error)
        assert type(again) is type(exc) and again.message == exc.message
    assert decode_reply(encode_ok("i", {"a": [1]})).result == {"a": [1]}


def test_unknown_error_code_becomes_internal() -> None:
    """A code this build does not know is surfaced as internal, keeping the code in the text."""
    err = error_from_wire({"code": "brand_new", "message": "m"})
    assert err.code == "internal" and "brand_new" in err.message


def test_event_envelope_fields() -> None:
    """Events carry v, src, epoch, seq, type and data."""
    ev = decode_event(
        encode({"v": 1, "src": "store", "epoch": "e", "seq": 3, "type": "t", "data": {"k": 1}})
    )
    assert (ev.src, ev.epoch, ev.seq, ev.type, ev.data) == ("store", "e", 3, "t", {"k": 1})
