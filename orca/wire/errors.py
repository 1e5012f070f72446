"""Errors that cross the wire, named by who is at fault.

Exception tree::

    OrcaError                      base; ``code`` is stable on the wire
    ├── BadRequest   bad_request   the caller sent something invalid
    │   ├── BadFrame     bad_frame     undecodable bytes / not a map
    │   │   └── WrongShape (bad_frame)  decodable, but not the expected type
    │   ├── TooLarge     too_large     frame above the size limit
    │   ├── UnknownOp    unknown_op    no such op on this actor
    │   └── BadVersion   bad_version   protocol version we do not speak
    ├── NotFound     not_found     the thing named does not exist
    ├── Conflict     conflict      the request contradicts current state
    ├── Unavailable  unavailable   a peer is down or overloaded (retry may help)
    │   └── Timeout      timeout       no reply before the deadline
    └── Internal     internal      a bug on the replying side

Foreign errors (zmq, msgpack, msgspec, OS) are mapped to these once, at the boundary
where they are caught, with ``raise Ours(...) from exc``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

# Every error class by its wire code, filled by ``OrcaError.__init_subclass__``.
_BY_CODE: dict[str, type[OrcaError]] = {}


class OrcaError(Exception):
    """Base of every error Orca sends or raises across an actor boundary.

    Each subclass that declares a ``code`` registers it on definition, so a reply
    naming it decodes back to that class (``error_from_wire``); two classes may not
    declare the same code. A subclass without its own ``code`` travels as its parent.
    """

    code: ClassVar[str] = "internal"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return  # a finer class on our side that travels as its parent's code
        known = _BY_CODE.get(cls.code)
        if known is not None and known is not cls:
            raise TypeError(f"error code {cls.code!r} is already {known.__name__}'s")
        _BY_CODE[cls.code] = cls

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_wire(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class BadRequest(OrcaError):
    code = "bad_request"


class BadFrame(BadRequest):
    code = "bad_frame"


class WrongShape(BadFrame):
    """A frame that decodes, but not into the expected type (``orca.wire.codec``);
    travels as ``bad_frame``, kept apart for callers that answer it otherwise."""


class TooLarge(BadRequest):
    code = "too_large"


class UnknownOp(BadRequest):
    code = "unknown_op"


class BadVersion(BadRequest):
    code = "bad_version"


class NotFound(OrcaError):
    code = "not_found"


class Conflict(OrcaError):
    code = "conflict"


class Unavailable(OrcaError):
    code = "unavailable"


class Timeout(Unavailable):
    code = "timeout"


class Internal(OrcaError):
    code = "internal"


def error_from_wire(error: object) -> OrcaError:
    """Rebuild the exception a reply's ``error`` map describes (unknown codes → Internal)."""
    if not isinstance(error, dict):
        return Internal(f"malformed error reply: {error!r}")
    code = error.get("code")
    message = error.get("message")
    cls = _BY_CODE.get(code, Internal) if isinstance(code, str) else Internal
    text = message if isinstance(message, str) else repr(message)
    if cls is Internal and code != "internal":
        text = f"[{code}] {text}"
    return cls(text)


# Foreign errors to ours, in order: the first row whose class the error is wins.
ErrorTable = Sequence[tuple[type[Exception] | tuple[type[Exception], ...], type[OrcaError]]]


def mapped_error(exc: Exception, table: ErrorTable, default: type[OrcaError]) -> OrcaError:
    """The wire error for ``exc``, with its message: the first row of ``table`` it is an
    instance of, else ``default``. The caller raises it ``from exc``."""
    for ours, theirs in table:
        if isinstance(exc, ours):
            return theirs(str(exc))
    return default(str(exc))
