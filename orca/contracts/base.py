"""The pieces every contract module is made of: ``Args``, ``Payload``, ``Op``, ``EventSpec``.

A contract (``orca/contracts/<actor>.py``) is the one place where an actor's wire names
and shapes are written. Both sides import it: the server registers its handlers from
the ``Op`` descriptors and publishes the event Structs; clients ``invoke`` the same
descriptors and decode events with the same specs. So there is exactly one decoder per
message, and two consumers of one event can no longer disagree about its fields.

- ``Op[A, R]``: name, args Struct ``A``, result type ``R`` (a Struct, or an open map
  for results whose shape is the model's), the errors it may raise, its prose. The
  owning actor's name is on the descriptor, so a blocking client finds the endpoint.
- ``EventSpec[E]``: the event ``type`` string, its data Struct ``E`` (one frozen Struct
  per type) and its topic (the type itself unless the event says otherwise, e.g. a
  per-session output topic). ``EventPublisher.emit(struct)`` finds the spec by class.
- ``Contract``: the set of one actor's ops and events, built by the module that
  declares them; a test checks that what an actor registers equals its contract.

Decoding an event is the consumer's boundary: an event of a type the consumer does
not follow is none of its business (``None``); a malformed one (wrong type, missing
field) is the publisher's fault: ``decode_event_data`` logs it once and returns
``None``, so no consumer ever raises out of its loop on a peer's event.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import msgspec

from orca.model.codec import ModelDecodeError, carries_records, from_builtins
from orca.wire.codec import DECODE_ERRORS
from orca.wire.envelope import Event
from orca.wire.errors import BadFrame, OrcaError

_any_decoder = msgspec.msgpack.Decoder()

A = TypeVar("A", bound=msgspec.Struct)
R = TypeVar("R")
E = TypeVar("E", bound=msgspec.Struct)


class Args(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base of every op's args: camelCase on the wire, frozen; unknown fields are ignored
    (msgspec's default), so a newer caller's optional field reaches an older actor safely."""


class NoArgs(Args, frozen=True, kw_only=True):
    """The args of an op that takes none."""


class Payload(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base of every result and event data Struct: camelCase, frozen."""


class _Frozen:
    """Read-only once built, as ``@dataclass(frozen=True)`` would make it: the classes
    here are written out by hand because importing ``dataclasses`` (it loads ``inspect``)
    costs every CLI process ~6 ms, a quarter of a bare interpreter start (bench/cli.py).
    Equality is identity (what ``eq=False`` gave)."""

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")


class Op(_Frozen, Generic[A, R]):
    """One op: what it is called, what it takes, what it returns, what it may raise."""

    actor: str
    name: str
    args: type[A]
    result: type[R]
    errors: tuple[type[OrcaError], ...]
    doc: str
    # Built on first use, not at declaration: building a decoder resolves the
    # annotations of every Struct it reaches (about 0.7 ms per op), and a CLI process
    # imports a whole contract to call one or two of its ops (bench/cli.py); a client
    # needs only the result's, a server only the args'.
    _args_decoder: msgspec.msgpack.Decoder[A] | None
    _result_decoder: tuple[msgspec.msgpack.Decoder[R] | None] | None

    def __init__(
        self,
        actor: str,
        name: str,
        args: type[A],
        result: type[R],
        errors: tuple[type[OrcaError], ...] = (),
        doc: str = "",
    ) -> None:
        for key, value in (
            ("actor", actor),
            ("name", name),
            ("args", args),
            ("result", result),
            ("errors", errors),
            ("doc", doc),
            ("_args_decoder", None),
            ("_result_decoder", None),
        ):
            object.__setattr__(self, key, value)

    def __repr__(self) -> str:
        return f"Op({self.actor!r}, {self.name!r}, {self.args.__name__}, {self.result!r})"

    def compile(self) -> None:
        """Build both decoders now (a test checks every op's types this way)."""
        self._args()
        self._result()

    def _args(self) -> msgspec.msgpack.Decoder[A]:
        if self._args_decoder is None:
            object.__setattr__(self, "_args_decoder", msgspec.msgpack.Decoder(self.args))
        assert self._args_decoder is not None
        return self._args_decoder

    def _result(self) -> msgspec.msgpack.Decoder[R] | None:
        """The result's decoder; None for a result holding model records, which keeps
        the fields this build does not know (orca.model.codec), so a client can pass a
        record on unchanged: it is decoded through ``from_builtins``."""
        if self._result_decoder is None:
            plain = None if carries_records(self.result) else msgspec.msgpack.Decoder(self.result)
            object.__setattr__(self, "_result_decoder", (plain,))
        assert self._result_decoder is not None
        return self._result_decoder[0]

    def decode_args(self, raw: bytes | memoryview) -> A:
        """Validate a request's args (raises msgspec's ValidationError/DecodeError)."""
        return self._args().decode(raw)

    def decode_result(self, raw: bytes | memoryview) -> R:
        """Validate a reply's result (raises msgspec's DecodeError, or ModelDecodeError
        for a result holding records); every client decodes a reply through this."""
        decoder = self._result()
        if decoder is None:
            return from_builtins(self.result, _any_decoder.decode(raw))  # type: ignore[type-var]
        return decoder.decode(raw)


def decode_result(op: Op[Any, R], raw: bytes, endpoint: str) -> R:
    """The typed result of ``op`` from a reply's raw bytes; a mismatch is ``BadFrame``
    (the peer's fault), raised here, at the one boundary, never deeper in the caller."""
    try:
        return op.decode_result(raw)
    except (*DECODE_ERRORS, ModelDecodeError) as exc:
        raise BadFrame(f"malformed reply to {op.name} from {endpoint}: {exc}") from exc


class EventSpec(_Frozen, Generic[E]):
    """One event type: its ``type`` string, its data Struct, how its topic is formed."""

    src: str
    type: str
    data: builtins.type[E]
    doc: str
    topic_of: Callable[[E], str] | None

    def __init__(
        self,
        src: str,
        type: str,
        data: builtins.type[E],
        doc: str = "",
        topic_of: Callable[[E], str] | None = None,
    ) -> None:
        for key, value in (
            ("src", src),
            ("type", type),
            ("data", data),
            ("doc", doc),
            ("topic_of", topic_of),
        ):
            object.__setattr__(self, key, value)

    def __repr__(self) -> str:
        return f"EventSpec({self.src!r}, {self.type!r}, {self.data.__name__})"

    def topic(self, event: E) -> str:
        return self.type if self.topic_of is None else self.topic_of(event)

    def decode(self, data: Any) -> E:
        """Validate an envelope's ``data`` (raises ``msgspec.ValidationError``)."""
        return msgspec.convert(data, self.data)


# Every declared event Struct class → its spec, so a publisher needs only the Struct.
_SPEC_BY_CLASS: dict[type[Any], EventSpec[Any]] = {}


def spec_of(event: msgspec.Struct) -> EventSpec[Any]:
    """The spec an event Struct was declared with (``KeyError`` if it is not an event)."""
    return _SPEC_BY_CLASS[type(event)]


class Contract:
    """One actor's ops and events, in declaration order."""

    def __init__(self, actor: str) -> None:
        self.actor = actor
        self.ops: dict[str, Op[Any, Any]] = {}
        self.events: dict[str, EventSpec[Any]] = {}

    def op(
        self,
        name: str,
        args: type[A],
        result: type[R],
        *errors: type[OrcaError],
        doc: str = "",
    ) -> Op[A, R]:
        if name in self.ops:
            raise ValueError(f"{self.actor} declares op {name!r} twice")
        declared = Op(self.actor, name, args, result, errors, doc)
        self.ops[name] = declared
        return declared

    def event(
        self,
        type: str,
        data: type[E],
        *,
        doc: str = "",
        topic_of: Callable[[E], str] | None = None,
    ) -> EventSpec[E]:
        if type in self.events:
            raise ValueError(f"{self.actor} declares event {type!r} twice")
        if data in _SPEC_BY_CLASS:
            raise ValueError(f"{data.__name__} is already the data of another event")
        spec = EventSpec(self.actor, type, data, doc, topic_of)
        self.events[type] = spec
        _SPEC_BY_CLASS[data] = spec
        return spec


def specs_by_type(specs: Iterable[EventSpec[Any]]) -> dict[str, EventSpec[Any]]:
    return {spec.type: spec for spec in specs}


class DecodeStats:
    """What one consumer's decoder has seen: malformed events are counted, not raised."""

    __slots__ = ("decoded", "handler_errors", "malformed")

    def __init__(self, decoded: int = 0, malformed: int = 0, handler_errors: int = 0) -> None:
        self.decoded = decoded
        self.malformed = malformed
        self.handler_errors = handler_errors  # valid events the consumer's own code failed on

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DecodeStats):
            return NotImplemented
        return (self.decoded, self.malformed, self.handler_errors) == (
            other.decoded,
            other.malformed,
            other.handler_errors,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        return (
            f"DecodeStats(decoded={self.decoded}, malformed={self.malformed},"
            f" handler_errors={self.handler_errors})"
        )


def decode_event_data(
    event: Event,
    specs: Mapping[str, EventSpec[Any]],
    *,
    consumer: str,
    stats: DecodeStats | None = None,
) -> Any | None:
    """The typed data of ``event`` if it is one of ``specs``; ``None`` otherwise.

    A malformed event (its data does not match the declared Struct) is logged (one line
    per event, not a traceback),
    as a warning naming the consumer and the field msgspec reports, and dropped.
    """
    spec = specs.get(event.type)
    if spec is None:
        return None
    try:
        typed = spec.decode(event.data)
    except (msgspec.ValidationError, RecursionError) as exc:
        if stats is not None:
            stats.malformed += 1
        import logging  # only on this path: the CLI never loads logging to decode

        logging.getLogger(__name__).warning(
            "%s: ignoring a malformed %s event from %s (seq %d): %s",
            consumer,
            event.type,
            event.src,
            event.seq,
            exc,
        )
        return None
    if stats is not None:
        stats.decoded += 1
    return typed
