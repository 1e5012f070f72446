"""The session-binding table at work in the hooks actor: observe, publish, save.

Thin on purpose (the decisions are :mod:`actors.hooks.session_bindings`): every hook
request the HTTP endpoint accepted is shown to :meth:`SessionBinder.observe` after
the status path ran (so a first launch token is already committed), a new or moved
binding is published as ``agentSession.bound`` and the file is saved debounced.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from actors.hooks.http_request import HookSubmission
from actors.hooks.pane_authority import PaneAuthority
from actors.hooks.persistence import DebouncedSaver
from actors.hooks.session_bindings import (
    BINDINGS_FILE_NAME,
    SessionBindingTable,
    binding_from,
    may_bind,
)
from orca.contracts import hooks


class SessionBinder:
    def __init__(
        self,
        hooks_dir: Path,
        emit: Callable[[hooks.SessionBound], object],
        authority: PaneAuthority,
        clock_ms: Callable[[], int],
    ) -> None:
        self.path = hooks_dir / BINDINGS_FILE_NAME
        self.table = SessionBindingTable()
        self.saver = DebouncedSaver(self.path, self.table.encode)
        self._emit = emit
        self._authority = authority
        self._clock_ms = clock_ms

    def hydrate(self) -> int:
        count = self.table.load(self.path, self._clock_ms())
        self.saver.prime(self.table.encode())
        return count

    def observe(self, submission: HookSubmission) -> hooks.SessionBinding | None:
        binding = binding_from(submission, self._clock_ms())
        if binding is None:
            return None
        if not may_bind(self._authority, submission.pane_key, submission.launch_token_sha256):
            return None
        published = self.table.observe(binding)
        if published is not None:
            self._emit(hooks.SessionBound(binding=published))
            self.saver.schedule()
        return published

    def snapshot(self, epoch: str, seq: int) -> hooks.SessionBindings:
        return hooks.SessionBindings(epoch=epoch, seq=seq, bindings=self.table.bindings())
