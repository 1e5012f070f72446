"""The store's in-memory authority: the current PersistedState and its revision.

Pure: no sockets, no files, no clock of its own. The op functions in ``entities``,
``worktrees`` and ``sessions`` compute a ``Change``; ``commit`` installs it. The
revision counts committed changes in this process and doubles as the save generation
(``durable_file``), so a save always knows whether it carries newer content than what
is already on disk.

Invariant: ``state`` is only replaced by ``commit``, and a change whose state is the
same object as the current one (a no-op) neither bumps the revision nor publishes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import msgspec

from actors.store.change import Change
from orca.model.codec import encode_json
from orca.model.state import PersistedState


def new_uuid() -> str:
    return str(uuid.uuid4())


class StoreCore:
    def __init__(self, state: PersistedState, *, mint: Callable[[], str] = new_uuid) -> None:
        self.state = state
        self.revision = 0
        self.mint = mint

    def commit(self, change: Change) -> tuple[msgspec.Struct, ...]:
        """Install ``change``; returns the events to publish (none for a no-op)."""
        if change.state is self.state:
            return ()
        self.state = change.state
        self.revision += 1
        return change.events

    def encoder(self) -> tuple[Callable[[], bytes], int]:
        """An encoder of the current state and its generation (``saver.Snapshot``).

        States are immutable, so the encoder may run later, in a worker thread.
        """
        state = self.state
        return (lambda: encode_json(state)), self.revision

    def export_json(self) -> bytes:
        """Pretty JSON of the whole state (``orca state export``)."""
        return encode_json(self.state, indent=2)
