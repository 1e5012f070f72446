"""The hooks actor's behaviour without its sockets: store + effects routing.

Every producer path (HTTP, RPC from ``ptyd``, structured hosts) calls one of these
methods; each runs the pure store and then carries out its effects in one place:
publish each event through ``publish`` and reschedule the debounced save when the
persisted subset may have changed. The actor shell (:mod:`actors.hooks.actor`) wires
``publish`` to the PUB socket; tests and benchmarks can wire it to a list.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from actors.hooks.http import HookReply
from actors.hooks.http_request import HookSubmission
from actors.hooks.ingest import event_from_hook
from actors.hooks.store_core import AgentStatusStore, StatusEvent, StoreEffects, row_to_wire

PublishFn = Callable[[str, dict[str, object]], object]

# Rejections the hook caller caused by naming a pane it has no authority over.
_HTTP_STATUS_BY_REASON = {
    "bad_pane_key": 400,
    "legacy_numeric_pane_key": 400,
    "bad_launch_token_hash": 400,
    "unknown_worktree": 400,
    "launch_token_missing": 403,
    "launch_token_mismatch": 403,
}


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class HooksService:
    def __init__(
        self,
        store: AgentStatusStore,
        publish: PublishFn,
        schedule_save: Callable[[], None],
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.store = store
        self._publish = publish
        self._schedule_save = schedule_save
        self._clock_ms = clock_ms

    def carry_out(self, effects: StoreEffects) -> StoreEffects:
        for item in effects.publish:
            self._publish(item.type, item.data)
        if effects.persist:
            self._schedule_save()
        return effects

    def apply(self, event: StatusEvent) -> StoreEffects:
        return self.carry_out(self.store.apply_normalized_status(event, self._clock_ms()))

    def ingest_hook(self, submission: HookSubmission) -> HookReply:
        event = event_from_hook(submission)
        if event is None:
            return HookReply(200, {"outcome": "ignored"})
        effects = self.apply(event)
        if effects.outcome == "rejected":
            status = _HTTP_STATUS_BY_REASON.get(effects.reason, 409)
            return HookReply(status, {"outcome": "rejected", "reason": effects.reason})
        return HookReply(200, {"outcome": effects.outcome})

    def retire_pane(self, pane_key: str, retire_id: str | None) -> StoreEffects:
        return self.carry_out(self.store.retire_pane(pane_key, retire_id, self._clock_ms()))

    def retire_from_store(self, host_id: str, tab_id: str, leaf_id: str) -> StoreEffects:
        return self.carry_out(
            self.store.retire_from_store(host_id, tab_id, leaf_id, self._clock_ms())
        )

    def restart_pane(
        self, pane_key: str, launch_token_sha256: str | None, worktree_id: str
    ) -> bool:
        lifted = self.store.restart_pane(pane_key, launch_token_sha256, worktree_id)
        if lifted:
            self._schedule_save()  # the fence list on disk shrank
        return lifted

    def rekey_worktree(self, old: str, new: str) -> StoreEffects:
        return self.carry_out(self.store.rekey_worktree(old, new))

    def clear_pane(self, pane_key: str, reason: str) -> StoreEffects:
        return self.carry_out(self.store.clear_pane(pane_key, reason))

    def alias_pane(self, alias: str, canonical: str) -> StoreEffects:
        return self.carry_out(self.store.alias_pane(alias, canonical))

    def snapshot_rows(self) -> list[dict[str, object]]:
        return [row_to_wire(row) for row in self.store.rows()]
