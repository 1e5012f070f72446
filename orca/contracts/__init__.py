"""Every actor's wire contract, typed, shared by the server and all of its clients.

One module per actor (``store``, ``ptyd``, ``hooks``, ``gitwatch``, ``supervisor``,
``gateway``, ``vault``, ``orch``, ``web``; ``store_core`` and ``gitwatch_core`` hold
rules their clients share), plus ``sys`` (the ops every actor serves) and the non-RPC
protocols (``fd_keeper``: the SCM_RIGHTS hand-over of PTY masters to the keeper; the
supervisor's lock file). Each module's
docstring is the spec; its ``Op`` descriptors and event Structs are the code form of
it (see ``orca.contracts.base``). No op or event name is written as a string literal
anywhere else (``tests/unit/contracts/test_no_literals.py``).
"""

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
