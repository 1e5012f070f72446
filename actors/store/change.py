"""What a pure store operation returns: the new state, its result, events, durability.

Every op in ``entities``, ``worktrees`` and ``sessions`` is a function
``(state, args...) -> Change`` with no I/O; randomness (new ids) and time come in as
arguments. The result and the events are the contract's own Structs and records
(``orca.contracts.store``): the pure functions speak the wire types directly.
``StoreCore.commit`` applies a Change; the actor shell publishes the events and
schedules the save (debounced, or a synchronous flush for retirements and renames).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec

from orca.model.codec import ModelDecodeError, Record, from_builtins, to_builtins
from orca.model.state import PersistedState
from orca.wire.errors import BadRequest

R = TypeVar("R", bound=Record)

# "debounced": the normal trailing-debounce save; "flush": save before replying
# (a retired pane or a renamed worktree must not be resurrected by a crash).
Durability = Literal["debounced", "flush"]


@dataclass(frozen=True)
class Change:
    """``result``: the op's result (a contract Struct, a model record or None);
    ``events``: contract event Structs (``orca.contracts.store``), in publish order."""

    state: PersistedState
    result: Any = None
    events: tuple[msgspec.Struct, ...] = ()
    durability: Durability = "debounced"


def decode_record(cls: type[R], data: Any, what: str) -> R:
    """Builtins from a request into a record; the caller is at fault if it does not fit."""
    try:
        return from_builtins(cls, data)
    except ModelDecodeError as exc:
        raise BadRequest(f"invalid {what}: {exc}") from exc


def patch_record(
    record: R, patch: dict[str, Any], what: str, *, fixed: tuple[str, ...] = ("id",)
) -> R:
    """``record`` with the wire-named fields of ``patch`` replaced (shallow merge)."""
    merged = to_builtins(record)
    for name in fixed:
        if name in patch and patch[name] != merged.get(name):
            raise BadRequest(f"{what}: field {name!r} cannot be changed by a patch")
    merged.update(patch)
    return decode_record(type(record), merged, what)
