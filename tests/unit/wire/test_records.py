"""``orca.wire.records``: the keeper's packets and the lock files without msgspec.

The promise is that a ``JsonRecord`` reads and writes exactly what the msgspec Struct it
replaced did, so a keeper of one build and a ptyd of another still understand each
other. Checked against msgspec itself: the same declarations as Structs decode the same
random JSON to the same values, or both refuse it.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orca.contracts import fd_keeper, orcad_lock
from orca.wire.errors import BadFrame, TooLarge, WrongShape
from orca.wire.records import JsonRecord, RecordDecoder, encode


# -- the msgspec Structs these records were, as they were declared ---------------------
class _Msg(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", rename="camel"):
    pass


class _Deposit(_Msg, frozen=True, kw_only=True, tag="deposit"):
    key: str
    info: dict[str, Any]


class _Exited(_Msg, frozen=True, kw_only=True, tag="exited"):
    pid: int
    status: int


class _HandOver(_Msg, frozen=True, kw_only=True, tag="hand_over"):
    keys: list[str]


class _Stop(_Msg, frozen=True, kw_only=True, tag="stop"):
    pass


class _KeptSession(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    key: str
    info: dict[str, Any]
    exit_status: int | None = None
    fds: int


class _Sessions(_Msg, frozen=True, kw_only=True, tag="sessions"):
    sessions: list[_KeptSession]


class _HandedOver(_Msg, frozen=True, kw_only=True, tag="handed_over"):
    ok: bool
    missing: list[str] = msgspec.field(default_factory=list)


class _LockInfo(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    pid: int | None = None
    endpoint: str | None = None
    home: str | None = None
    started_at: float | None = None
    manager: str | None = None


REQUESTS: RecordDecoder[Any] = RecordDecoder(
    [fd_keeper.Deposit, fd_keeper.Exited, fd_keeper.HandOver, fd_keeper.Stop],
    what="request",
    max_bytes=None,
)
REPLIES: RecordDecoder[Any] = RecordDecoder(
    [fd_keeper.Sessions, fd_keeper.HandedOver], what="reply", max_bytes=None
)
LOCK: RecordDecoder[Any] = RecordDecoder([orcad_lock.LockInfo], what="lock", max_bytes=None)
PAIRS: list[tuple[RecordDecoder[Any], Any]] = [
    (REQUESTS, _Deposit | _Exited | _HandOver | _Stop),
    (REPLIES, _Sessions | _HandedOver),
    (LOCK, _LockInfo),
]

# JSON values and what Python's json writes that JSON does not have (NaN, Infinity).
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats()  # NaN and the infinities too: json.dumps writes them, JSON has none
    | st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_INT = st.integers(-(2**31), 2**31)
_TEXTS = st.lists(st.text(max_size=3), max_size=2)
# What a record holds: JSON values (NaN and the infinities are not JSON).
_FINITE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_MAPS = st.dictionaries(st.text(max_size=3), _SCALARS, max_size=2)
_SESSION = st.fixed_dictionaries(
    {"key": st.text(max_size=3), "info": _MAPS, "fds": st.integers(0, 3)},
    optional={"exitStatus": st.none() | _INT | st.booleans() | st.text(max_size=1)},
)
# Each message's fields and a value of its own type (a field is also given any value).
_TEMPLATES: dict[str | None, dict[str, st.SearchStrategy[Any]]] = {
    "deposit": {"key": st.text(max_size=3), "info": _MAPS},
    "exited": {"pid": _INT, "status": _INT},
    "hand_over": {"keys": _TEXTS},
    "stop": {},
    "sessions": {"sessions": st.lists(_SESSION, max_size=2)},
    "handed_over": {"ok": st.booleans(), "missing": _TEXTS},
    None: {
        "pid": st.none() | _INT,
        "endpoint": st.none() | st.text(max_size=3),
        "home": st.none() | st.text(max_size=3),
        "startedAt": st.none() | st.floats(allow_nan=False, allow_infinity=False) | _INT,
        "manager": st.none() | st.text(max_size=3),
    },
    "x": {"other": _VALUES},
}


@st.composite
def _objects(draw: st.DrawFn) -> object:
    """Mostly objects near a valid message: its op, most of its fields, each of its own
    type or of any other; now and then any JSON value at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(_VALUES)
    op = draw(st.sampled_from(list(_TEMPLATES)))
    obj: dict[str, Any] = {} if op is None else {"op": op}
    for name, own in _TEMPLATES[op].items():
        if draw(st.integers(0, 9)) > 0:
            obj[name] = draw(own if draw(st.booleans()) else _VALUES)
    if draw(st.booleans()):
        obj[draw(st.sampled_from(["op", "other", "exitStatus"]))] = draw(_VALUES)
    return obj


def _msgspec_json(data: bytes, kind: Any) -> object:
    try:
        return json.loads(msgspec.json.encode(msgspec.json.decode(data, type=kind)))
    except (msgspec.ValidationError, msgspec.DecodeError):
        return "refused"


def _records_json(data: bytes, decoder: RecordDecoder[Any]) -> object:
    try:
        return json.loads(encode(decoder.decode(data)))
    except BadFrame:  # WrongShape included (which of the two may differ: msgspec reads
        return "refused"  # the tag first, json the whole text first)


@settings(max_examples=400)
@given(_objects())
# The edges every run must cross, whatever the draw: a bool for an int, an int for a
# float, a missing required field, a list of not only strings, a nested wrong row.
@example({"op": "exited", "pid": True, "status": 1})
@example({"pid": 7, "startedAt": 3})
@example({"op": "exited", "pid": 7})
@example({"op": "hand_over", "keys": ["a", 1]})
@example({"op": "sessions", "sessions": [{"key": "k", "info": {}, "fds": 1, "exitStatus": False}]})
def test_records_decode_what_msgspec_decoded_and_refuse_what_it_refused(obj: object) -> None:
    """The same JSON, the same verdict and the same message, for every declaration."""
    data = json.dumps(obj).encode()
    for decoder, kind in PAIRS:
        assert _records_json(data, decoder) == _msgspec_json(data, kind), (decoder.what, obj)


@given(
    st.builds(
        fd_keeper.KeptSession,
        key=st.text(),
        info=st.dictionaries(st.text(), _FINITE, max_size=3),
        exit_status=st.none() | st.integers(-(2**31), 2**31),
        fds=st.integers(1, 3),
    ),
    st.builds(
        orcad_lock.LockInfo,
        pid=st.none() | st.integers(1, 2**22),
        endpoint=st.none() | st.text(),
        started_at=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    ),
)
def test_what_is_encoded_decodes_back_equal(row: fd_keeper.KeptSession, lock: Any) -> None:
    """Any text, lone surrogates included (an argv of undecodable bytes), survives."""
    sessions = fd_keeper.Sessions(sessions=[row, row])
    assert fd_keeper.REPLIES.decode(encode(sessions)) == sessions
    assert orcad_lock.decode_lock_info(orcad_lock.encode_lock_info(lock)) == lock
    assert encode(sessions).isascii()


def test_the_wire_names_and_tags_are_the_structs() -> None:
    """camel names, the ``op`` tag, defaults written out: byte for byte msgspec's JSON."""
    row = fd_keeper.KeptSession(key="k", info={"pid": 7}, fds=1)
    ours = encode(fd_keeper.Sessions(sessions=[row]))
    theirs = msgspec.json.encode(
        _Sessions(sessions=[_KeptSession(key="k", info={"pid": 7}, fds=1)])
    )
    assert ours == theirs
    assert encode(fd_keeper.HandedOver(ok=True)) == msgspec.json.encode(_HandedOver(ok=True))


def test_bytes_that_are_not_a_message_are_bad_frames() -> None:
    nan = b'{"op":"deposit","key":"k","info":{"a":NaN}}'
    for data in (b"", b"{", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, nan):
        with pytest.raises(BadFrame):
            fd_keeper.REQUESTS.decode(data)
    with pytest.raises(TooLarge):
        fd_keeper.REQUESTS.decode(b" " * (fd_keeper.MAX_PACKET + 1))
    with pytest.raises(WrongShape, match="out of range"):
        fd_keeper.REQUESTS.decode(b'{"op":"deposit","key":"k","info":{"a":-1e999}}')
    with pytest.raises(WrongShape, match="unknown op 'reclaim'"):
        fd_keeper.REPLIES.decode(b'{"op":"reclaim"}')  # a request is not a reply


def test_a_record_is_frozen_keyword_only_and_compared_by_type() -> None:
    hello = fd_keeper.Hello()
    with pytest.raises(AttributeError):
        hello.x = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="needs key"):
        fd_keeper.Withdraw()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="no field nope"):
        fd_keeper.Withdraw(key="k", nope=1)  # type: ignore[call-arg]
    assert fd_keeper.Hello() == fd_keeper.Hello() and fd_keeper.Hello() != fd_keeper.Stop()
    a, b = fd_keeper.HandedOver(ok=False), fd_keeper.HandedOver(ok=False)
    assert a.missing == [] and a.missing is not b.missing, "a list default is not shared"


def test_a_field_type_it_cannot_check_fails_when_the_class_is_defined() -> None:
    with pytest.raises(TypeError, match="cannot be set"):

        class _Bad(JsonRecord):
            names: set[str]


class _Base(JsonRecord, camel=True):
    pass


class _Child(_Base, tag="child"):
    exit_code: int | None = None


def test_camel_names_are_inherited_as_msgspec_inherits_rename() -> None:
    """A Message subclass's ``exit_code`` is ``exitCode`` on the wire, as it was."""
    assert encode(_Child(exit_code=3)) == b'{"op":"child","exitCode":3}'
    assert RecordDecoder([_Child], what="c", max_bytes=None).decode(
        b'{"op":"child","exitCode":3}'
    ) == _Child(exit_code=3)
