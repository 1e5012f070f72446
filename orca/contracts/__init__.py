"""Every actor's wire contract, typed, shared by the server and all of its clients.

One module per actor (``store``, ``ptyd``, ``hooks``, ``gitwatch``, ``supervisor``,
``gateway``, ``vault``, ``orch``, ``web``; ``store_core`` and ``gitwatch_core`` hold
rules their clients share), plus ``sys`` (the ops every actor serves) and the non-RPC
protocols (``fd_keeper``: the SCM_RIGHTS hand-over of PTY masters to the keeper;
``orcad_lock``: the supervisor's lock file). Each module's
docstring is the spec; its ``Op`` descriptors and event Structs are the code form of
it (see ``orca.contracts.base``). No op or event name is written as a string literal
anywhere else (``tests/unit/contracts/test_no_literals.py``).

The names below come from ``orca.contracts.base`` when first asked for, not when the
package is imported: ``fd_keeper`` and ``orcad_lock`` use the standard library alone,
and the keeper, which imports them, must not pay for msgspec (issue 36).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orca.contracts.base import (
        Args,
        Contract,
        DecodeStats,
        EventSpec,
        NoArgs,
        Op,
        Payload,
        decode_event_data,
        spec_of,
        specs_by_type,
    )

__all__ = [
    "Args",
    "Contract",
    "DecodeStats",
    "EventSpec",
    "NoArgs",
    "Op",
    "Payload",
    "decode_event_data",
    "spec_of",
    "specs_by_type",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from orca.contracts import base

        return getattr(base, name)
    raise AttributeError(f"module 'orca.contracts' has no attribute {name!r}")
