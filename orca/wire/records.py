"""Typed JSON records with the standard library alone, for the files and packets a
process that must stay small reads and writes: the fd keeper's protocol
(``orca.contracts.fd_keeper``) and the instance lock files (``orca.contracts.orcad_lock``).

Every other wire format is a ``msgspec`` Struct (``orca.contracts.base``; the model's
records in files are ``orca.model.codec.Record``, a Struct too), but importing
msgspec costs a process 3 MiB (it brings ``typing_extensions``, ``datetime``, ``uuid``,
``decimal``), and the keeper, which only holds descriptors, would pay it for a dozen
small messages (issue 36). A ``JsonRecord`` is declared as a Struct is, with the same
rules on the wire, so a packet reads the same whichever side wrote it:

- ``class Exited(JsonRecord, tag="exited"): pid: int`` - keyword-only, frozen, compared by
  type and fields (a ``[]`` or ``{}`` default is copied for each); ``camel=True`` names ``exit_status`` ``exitStatus`` on the wire;
- decoding is strict like msgspec's: an ``int`` field takes an int (not a bool, not a
  float), a ``float`` field an int or a float, ``str | None`` a string or null; a missing
  required field, a wrong type, an unknown ``tag`` are refused (``WrongShape``),
  unknown fields are ignored, absent ones take their default;
- a field's type is one of ``FIELD_TYPES`` (checked when the class is defined, so an
  unsupported one fails at import, not on the first packet) or ``list[R]`` of a record
  ``R`` of the same module;
- ``encode`` writes compact ASCII JSON (a lone surrogate in a string survives it); what
  it cannot write is refused when read: ``NaN``, ``Infinity`` (``BadFrame``) and a
  number out of a double's range (``WrongShape``), as msgspec refuses them.

``RecordDecoder`` is the bounded decoder of one record or a tagged union of them,
as ``orca.wire.codec.FrameDecoder`` is for Structs: too many bytes raise ``TooLarge``,
bytes that are not JSON or nest past the recursion limit ``BadFrame``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, TypeVar, cast, dataclass_transform

from orca.wire.errors import BadFrame, TooLarge, WrongShape

_MISSING: Any = object()


def _exactly(kind: type, name: str) -> Callable[[object], object]:
    """A value of exactly ``kind``: a bool is not an int, as msgspec has it."""

    def check(value: object) -> object:
        if type(value) is not kind:
            raise _Mismatch(name)
        return value

    return check


def _check_float(value: object) -> object:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise _Mismatch("float")


def _check_str_list(value: object) -> object:
    if type(value) is not list or any(type(item) is not str for item in value):
        raise _Mismatch("array of str")
    return value


def _optional(check: Callable[[object], object]) -> Callable[[object], object]:
    def check_optional(value: object) -> object:
        return None if value is None else check(value)

    return check_optional


class _Mismatch(Exception):
    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


# Every field type a record may declare, as written in its annotation.
FIELD_TYPES: dict[str, Callable[[object], object]] = {
    "str": _exactly(str, "str"),
    "int": _exactly(int, "int"),
    "float": _check_float,
    "bool": _exactly(bool, "bool"),
    "dict[str, Any]": _exactly(dict, "object"),
    "list[str]": _check_str_list,
    "str | None": _optional(_exactly(str, "str")),
    "int | None": _optional(_exactly(int, "int")),
    "float | None": _optional(_check_float),
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


# The field a tagged record's tag is written in (every record of ours: the keeper's ``op``).
TAG_FIELD = "op"

R = TypeVar("R", bound="JsonRecord")


@dataclass_transform(kw_only_default=True, frozen_default=True, eq_default=True)
class JsonRecord:
    """A typed JSON object (module docstring); subclass it with field annotations."""

    # (attribute, wire name, annotation, default or _MISSING), every field, inherited first.
    _fields: ClassVar[tuple[tuple[str, str, str, Any], ...]] = ()
    _tag: ClassVar[str | None] = None
    _camel: ClassVar[bool] = False
    # Resolved on first decode: each field's check (a ``list[R]`` needs R defined).
    _checks: ClassVar[tuple[Callable[[object], object], ...] | None] = None

    def __init_subclass__(cls, *, tag: str | None = None, camel: bool | None = None) -> None:
        super().__init_subclass__()
        if camel is not None:  # else as its parent's (msgspec's ``rename`` is inherited too)
            cls._camel = camel
        fields = {name: (name, wire, ann, default) for name, wire, ann, default in cls._fields}
        # The class's own annotations, as written (``from __future__ import annotations``);
        # not inspect.get_annotations: the keeper does not import inspect.
        for name, ann in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
            if not isinstance(ann, str):
                raise TypeError(
                    f"{cls.__name__}: declare records under `from __future__ import annotations`"
                )
            if ann.startswith("ClassVar"):
                continue
            if ann not in FIELD_TYPES and not (ann.startswith("list[") and ann.endswith("]")):
                raise TypeError(f"{cls.__name__}.{name}: a record field cannot be {ann}")
            default = cls.__dict__.get(name, _MISSING)
            fields[name] = (name, _camel(name) if cls._camel else name, ann, default)
        cls._fields = tuple(fields.values())
        cls._checks = None
        if tag is not None:
            cls._tag = tag

    def __init__(self, **values: Any) -> None:
        for name, _wire, _ann, default in self._fields:
            if name in values:
                value = values.pop(name)
            elif default is _MISSING:
                raise TypeError(f"{type(self).__name__}() needs {name}")
            else:  # a list or map default is copied: no two records share one
                value = default.copy() if type(default) in (list, dict) else default
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__}() has no field {', '.join(values)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f[0]) == getattr(other, f[0]) for f in self._fields)

    def __hash__(self) -> int:
        # as a frozen Struct's: a record holding a list or a map is not hashable
        return hash((type(self), *(getattr(self, f[0]) for f in self._fields)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f[0]}={getattr(self, f[0])!r}" for f in self._fields)
        return f"{type(self).__name__}({shown})"

    def to_json(self) -> dict[str, Any]:
        """The JSON object this record is on the wire (nested records included)."""
        out: dict[str, Any] = {} if self._tag is None else {TAG_FIELD: self._tag}
        for name, wire, _ann, _default in self._fields:
            value = getattr(self, name)
            if type(value) is list and value and isinstance(value[0], JsonRecord):
                value = [item.to_json() for item in value]
            out[wire] = value
        return out

    @classmethod
    def from_json(cls: type[R], obj: object) -> R:
        """The record a decoded JSON value is; raises ``WrongShape``."""
        if type(obj) is not dict:
            raise WrongShape(f"expected a {cls.__name__} object, not {_kind(obj)}")
        checks = cls._resolved_checks()
        values: dict[str, Any] = {}
        for (name, wire, _ann, default), check in zip(cls._fields, checks, strict=True):
            if wire in obj:
                try:
                    values[name] = check(obj[wire])
                except _Mismatch as exc:
                    raise WrongShape(
                        f"expected {exc.expected} for {cls.__name__}.{wire}, not {_kind(obj[wire])}"
                    ) from None
            elif default is _MISSING:
                raise WrongShape(f"{cls.__name__} is missing required field {wire!r}")
        return cls(**values)

    @classmethod
    def _resolved_checks(cls) -> tuple[Callable[[object], object], ...]:
        checks = cls.__dict__.get("_checks")
        if checks is None:
            checks = tuple(_check_for(cls, ann) for _n, _w, ann, _d in cls._fields)
            cls._checks = checks
        return checks


def _check_for(cls: type[JsonRecord], ann: str) -> Callable[[object], object]:
    if ann in FIELD_TYPES:
        return FIELD_TYPES[ann]
    item = getattr(sys.modules[cls.__module__], ann[len("list[") : -1], None)
    if not (isinstance(item, type) and issubclass(item, JsonRecord)):
        raise TypeError(f"{cls.__name__}: {ann} is not a list of records")

    def check_records(value: object) -> object:
        if type(value) is not list:
            raise _Mismatch(f"array of {item.__name__}")
        return [item.from_json(row) for row in value]

    return check_records


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


class _OutOfRange(ValueError):
    pass


def _no_constant(name: str) -> object:
    """``NaN``, ``Infinity``, ``-Infinity``: Python's json reads them, JSON (and msgspec)
    does not, and ``encode`` could not write them back (a kept record must be)."""
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _OutOfRange(f"number out of range: {text[:32]}")
    return value


def encode(record: JsonRecord) -> bytes:
    """Compact ASCII JSON of ``record`` (NaN and infinities are refused: not JSON)."""
    return json.dumps(
        record.to_json(), separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


T = TypeVar("T")


class RecordDecoder(Generic[T]):
    """The bounded decoder of one record class or of a union tagged by ``op``."""

    def __init__(
        self, kinds: Iterable[type[JsonRecord]], *, what: str, max_bytes: int | None
    ) -> None:
        self.what = what
        self.max_bytes = max_bytes
        self._kinds = tuple(kinds)
        self._by_tag: dict[str, type[JsonRecord]] = {}
        for kind in self._kinds:
            if kind._tag is not None:
                if kind._tag in self._by_tag:
                    raise TypeError(f"{what}: two records are tagged {kind._tag!r}")
                self._by_tag[kind._tag] = kind
        if len(self._kinds) > 1 and len(self._by_tag) != len(self._kinds):
            raise TypeError(f"{what}: a union needs every record tagged")

    def decode(self, data: bytes | memoryview) -> T:
        if self.max_bytes is not None and len(data) > self.max_bytes:
            raise TooLarge(f"{self.what} of {len(data)} bytes exceeds {self.max_bytes}")
        try:
            obj = json.loads(bytes(data), parse_constant=_no_constant, parse_float=_finite)
        except RecursionError:
            raise BadFrame(f"{self.what} nested too deep") from None
        except _OutOfRange as exc:
            raise WrongShape(f"invalid {self.what}: {exc}") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN
            raise BadFrame(f"undecodable {self.what}: {exc}") from None
        return self.from_json(obj)

    def from_json(self, obj: object) -> T:
        if len(self._kinds) == 1 and self._kinds[0]._tag is None:
            return cast(T, self._kinds[0].from_json(obj))
        if type(obj) is not dict:
            raise WrongShape(f"invalid {self.what}: expected an object, not {_kind(obj)}")
        tag = obj.get(TAG_FIELD)
        kind = self._by_tag.get(tag) if type(tag) is str else None
        if kind is None:
            raise WrongShape(f"invalid {self.what}: unknown {TAG_FIELD} {tag!r}")
        try:
            return cast(T, kind.from_json(obj))
        except WrongShape as exc:
            raise WrongShape(f"invalid {self.what}: {exc.message}") from None
