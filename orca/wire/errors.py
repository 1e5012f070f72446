"""Errors that cross the wire, named by who is at fault.

Exception tree::

    OrcaError                      base; ``code`` is stable on the wire
    ├── BadRequest   bad_request   the caller sent something invalid
    │   ├── BadFrame     bad_frame     undecodable bytes / not a map
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

from typing import ClassVar


class OrcaError(Exception):
    """Base of every error Orca sends or raises across an actor boundary."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_wire(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class BadRequest(OrcaError):
    code = "bad_request"


class BadFrame(BadRequest):
    code = "bad_frame"


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


_BY_CODE: dict[str, type[OrcaError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        BadFrame,
        TooLarge,
        UnknownOp,
        BadVersion,
        NotFound,
        Conflict,
        Unavailable,
        Timeout,
        Internal,
    )
}


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
