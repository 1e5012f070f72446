"""Codec for model records: builtins, JSON and msgpack, preserving unknown fields.

Why unknown fields must survive: ``orca-data.json`` is read and rewritten by
older and newer builds of Orca (seed 01 §7.2, seed 02 §5). A field written by a
newer build that this build does not know must come back out unchanged when this
build saves, or a downgrade followed by an upgrade silently loses user data.

How it works
------------
Every record derives from :class:`Record`, a frozen ``msgspec.Struct`` with
camelCase wire names and one extra field, ``extra``, whose wire name is
:data:`EXTRA_WIRE_KEY`. msgspec itself ignores unknown keys when it decodes, so
the codec adds one cheap pass on each side:

* decode (:func:`from_builtins`): walk the raw builtins along the paths where
  records live (never into free-form ``Any`` values), and for each record dict
  copy its unknown keys into ``EXTRA_WIRE_KEY``; then ``msgspec.convert`` builds
  and validates the whole tree in C, filling each record's ``extra``.
* encode (:func:`to_builtins`): ``msgspec.to_builtins`` (C) produces fresh dicts;
  walk the same paths and merge each record's ``extra`` back as top-level keys.

The walk plan for a type is compiled once from ``msgspec.inspect`` and cached;
types that contain no records get no walker at all, so ``tabsByWorktree`` of
plain strings costs nothing. Invariant: a known field always wins over an extra
of the same name (extras are only ever keys the decoding build did not know).

Notes for callers: ``to_builtins`` leaves tuple-typed fields as tuples (msgpack
and JSON encode them as arrays); fields equal to their default are omitted
(``omit_defaults``) so files stay small and an older reader fills them back in.

Cost (measured on the 2-core dev box, tests/unit/model/test_codec.py::_big_state):
1,500 worktreeMeta entries + 300 tabs, about 0.5 MB of JSON, encode in ~4 ms
and decode in ~11 ms (msgpack: ~4 ms / ~13 ms).

Errors: :class:`ModelDecodeError` (the data is at fault) wraps msgspec's
``DecodeError``/``ValidationError`` with the path msgspec reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgspec
import msgspec.inspect as mi

__all__ = [
    "EXTRA_WIRE_KEY",
    "ModelDecodeError",
    "Record",
    "decode_json",
    "decode_msgpack",
    "encode_json",
    "encode_msgpack",
    "for_wire",
    "from_builtins",
    "to_builtins",
]

# Reserved wire key used only inside the codec between the raw-dict pass and
# msgspec; it never reaches a file because encoding merges it back out.
EXTRA_WIRE_KEY: Final = "__orcaExtra__"

T = TypeVar("T", bound=msgspec.Struct)
_Walker = Callable[[Any], Any]


class ModelDecodeError(ValueError):
    """The bytes or builtins do not describe a valid record (the data is at fault)."""


class Record(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of every persisted or wire-visible model record.

    ``extra`` holds fields this build does not know, keyed by their wire name,
    exactly as they were read; the codec writes them back on encode.
    """

    extra: dict[str, Any] = msgspec.field(default_factory=dict, name=EXTRA_WIRE_KEY)


# ---------------------------------------------------------------------------
# Walk-plan compilation (cached per type)

_decode_plans: dict[type, _Walker | None] = {}
_encode_plans: dict[type, _Walker | None] = {}


def _compile(t: mi.Type, for_decode: bool, cache: dict[type, _Walker | None]) -> _Walker | None:
    """Return a walker for values of type ``t``, or None if no record lives inside it."""
    if isinstance(t, mi.StructType):
        return _compile_struct(t, for_decode, cache)
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        item = _compile(t.item_type, for_decode, cache)
        return None if item is None else _seq_walker(item, for_decode)
    if isinstance(t, mi.DictType):
        value = _compile(t.value_type, for_decode, cache)
        return None if value is None else _map_walker(value, for_decode)
    if isinstance(t, mi.UnionType):
        return _compile_union(t, for_decode, cache)
    return None


def _compile_union(
    t: mi.UnionType, for_decode: bool, cache: dict[type, _Walker | None]
) -> _Walker | None:
    """Walk the one member a runtime value can belong to (records/dicts are JSON objects, sequences arrays)."""
    structs = [s for s in t.types if isinstance(s, mi.StructType)]
    dicts = [s for s in t.types if isinstance(s, mi.DictType)]
    seqs = [
        s
        for s in t.types
        if isinstance(s, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType))
    ]
    if (structs and dicts) or len(dicts) > 1 or len(seqs) > 1:
        raise TypeError(f"ambiguous union for the codec: {t}")
    object_walker: _Walker | None = None
    if len(structs) > 1:
        object_walker = _tagged_union_walker(structs, for_decode, cache)
    elif structs:
        object_walker = _compile_struct(structs[0], for_decode, cache)
    elif dicts:
        object_walker = _compile(dicts[0], for_decode, cache)
    seq_walker = _compile(seqs[0], for_decode, cache) if seqs else None
    if object_walker is None and seq_walker is None:
        return None

    def walk(v: Any) -> Any:
        if type(v) is dict:
            return v if object_walker is None else object_walker(v)
        if isinstance(v, (list, tuple)):
            return v if seq_walker is None else seq_walker(v)
        return v

    return walk


def _compile_struct(
    t: mi.StructType, for_decode: bool, cache: dict[type, _Walker | None]
) -> _Walker | None:
    cls = t.cls
    if cls in cache:
        plan = cache[cls]
        # A recursive type refers back to itself while compiling: defer the lookup.
        return plan if plan is not None else (lambda v: _deferred(cache, cls, v))
    cache[cls] = None  # placeholder for recursion
    extensible = issubclass(cls, Record)
    known = frozenset(f.encode_name for f in t.fields if f.encode_name != EXTRA_WIRE_KEY)
    if t.tag_field is not None:
        known = known | {t.tag_field}
    nested: list[tuple[str, _Walker]] = []
    for f in t.fields:
        if f.encode_name == EXTRA_WIRE_KEY:
            continue
        sub = _compile(f.type, for_decode, cache)
        if sub is not None:
            nested.append((f.encode_name, sub))
    walker: _Walker | None
    if not extensible and not nested:
        walker = None
    elif for_decode:
        walker = _struct_decode_walker(known, tuple(nested), extensible)
    else:
        walker = _struct_encode_walker(tuple(nested), extensible)
    cache[cls] = walker
    return walker


def _deferred(cache: dict[type, _Walker | None], cls: type, value: Any) -> Any:
    walker = cache[cls]
    return value if walker is None else walker(value)


def _struct_decode_walker(
    known: frozenset[str], nested: tuple[tuple[str, _Walker], ...], extensible: bool
) -> _Walker:
    def walk(d: Any) -> Any:
        if type(d) is not dict:
            return d  # msgspec reports the type error with its path
        out: dict[str, Any] | None = None
        if extensible and not known.issuperset(d.keys()):
            out = dict(d)
            out[EXTRA_WIRE_KEY] = {k: v for k, v in d.items() if k not in known}
        for name, sub in nested:
            v = d.get(name)
            if v is None:
                continue
            nv = sub(v)
            if nv is not v:
                if out is None:
                    out = dict(d)
                out[name] = nv
        return d if out is None else out

    return walk


def _struct_encode_walker(nested: tuple[tuple[str, _Walker], ...], extensible: bool) -> _Walker:
    def walk(d: Any) -> Any:
        # ``d`` is a fresh dict from msgspec.to_builtins: mutate in place.
        for name, sub in nested:
            v = d.get(name)
            if v is not None:
                d[name] = sub(v)
        if extensible:
            extra = d.pop(EXTRA_WIRE_KEY, None)
            if extra:
                for k, v in extra.items():
                    d.setdefault(k, v)  # Invariant: a known field wins over an extra
        return d

    return walk


def _seq_walker(item: _Walker, for_decode: bool) -> _Walker:
    def walk(seq: Any) -> Any:
        if not isinstance(seq, (list, tuple)):
            return seq
        new = [item(x) for x in seq]
        if for_decode and all(a is b for a, b in zip(new, seq, strict=True)):
            return seq
        return new

    return walk


def _map_walker(value: _Walker, for_decode: bool) -> _Walker:
    def walk(m: Any) -> Any:
        if type(m) is not dict:
            return m
        new = {k: value(v) for k, v in m.items()}
        if for_decode and all(new[k] is v for k, v in m.items()):
            return m
        return new

    return walk


def _tagged_union_walker(
    structs: list[mi.StructType], for_decode: bool, cache: dict[type, _Walker | None]
) -> _Walker:
    tag_field = structs[0].tag_field
    if tag_field is None or any(s.tag_field != tag_field for s in structs):
        raise TypeError("unions of records must be tagged on one field")
    by_tag: dict[Any, _Walker | None] = {
        s.tag: _compile_struct(s, for_decode, cache) for s in structs
    }

    def walk(d: Any) -> Any:
        if type(d) is not dict:
            return d
        sub = by_tag.get(d.get(tag_field))
        return d if sub is None else sub(d)

    return walk


def _plan(cls: type, for_decode: bool) -> _Walker | None:
    cache = _decode_plans if for_decode else _encode_plans
    if cls not in cache:
        _compile(mi.type_info(cls), for_decode, cache)
    return cache.get(cls)


# ---------------------------------------------------------------------------
# Public API


def to_builtins(obj: msgspec.Struct) -> dict[str, Any]:
    """Encode a record to builtins (dict/list/tuple/str/int/float/bool/None), unknown fields merged back."""
    data = msgspec.to_builtins(obj)
    walker = _plan(type(obj), for_decode=False)
    result: dict[str, Any] = data if walker is None else walker(data)
    return result


def carries_records(cls: Any) -> bool:
    """Whether values of type ``cls`` contain records (so decoding them must keep the
    records' unknown fields: use :func:`from_builtins`, not a plain typed decoder)."""
    return _plan(cls, for_decode=True) is not None


def for_wire(value: Any) -> Any:
    """``value`` ready for the wire encoder: a Struct that contains records is turned into
    builtins with their unknown fields merged back (plain msgspec encoding would nest them
    under ``EXTRA_WIRE_KEY``); anything else is returned as is, for msgspec to encode
    directly (so bytes stay bytes and record-free Structs cost nothing extra)."""
    if not isinstance(value, msgspec.Struct):
        return value
    walker = _plan(type(value), for_decode=False)
    return value if walker is None else walker(msgspec.to_builtins(value))


def from_builtins(cls: type[T], data: Any) -> T:
    """Decode builtins into ``cls``, keeping unknown keys of every record in its ``extra``.

    Raises ModelDecodeError when ``data`` does not fit ``cls``. ``data`` is not mutated.
    """
    walker = _plan(cls, for_decode=True)
    if walker is not None:
        data = walker(data)
    try:
        return msgspec.convert(data, cls, strict=True)
    except msgspec.ValidationError as exc:
        raise ModelDecodeError(f"invalid {cls.__name__}: {exc}") from exc


def encode_json(obj: msgspec.Struct, *, indent: int = 0) -> bytes:
    """Encode a record as UTF-8 JSON; ``indent > 0`` pretty-prints (slower)."""
    raw = msgspec.json.encode(to_builtins(obj))
    return msgspec.json.format(raw, indent=indent) if indent > 0 else raw


def decode_json(cls: type[T], raw: bytes | str) -> T:
    """Decode UTF-8 JSON into ``cls``; raises ModelDecodeError on malformed or invalid input."""
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # nested past the recursion limit
        raise ModelDecodeError(f"malformed JSON for {cls.__name__}: {exc}") from exc
    return from_builtins(cls, data)


def encode_msgpack(obj: msgspec.Struct) -> bytes:
    """Encode a record as msgpack (str keys, bin type for bytes)."""
    return msgspec.msgpack.encode(to_builtins(obj))


def decode_msgpack(cls: type[T], raw: bytes) -> T:
    """Decode msgpack into ``cls``; raises ModelDecodeError on malformed or invalid input."""
    try:
        data = msgspec.msgpack.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # nested past the recursion limit
        raise ModelDecodeError(f"malformed msgpack for {cls.__name__}: {exc}") from exc
    return from_builtins(cls, data)
