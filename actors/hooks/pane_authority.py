"""Pane authority: who may write status for a pane key (seed 03 "该存储已经存在").

Only the ``hooks`` actor holds these facts, and they gate every write:

* **launch-token commitments** - the SHA-256 of the token an agent was launched with
  (``ORCA_AGENT_LAUNCH_TOKEN``). The raw token never reaches this module: the
  boundary hashes it. The first hook write for a pane commits its hash unless a live
  restart registered one first; later hook writes must present the same token.
* **ended launches** - the hash of a launch whose PTY exited: nothing it left running
  may report for the pane any more (Codex's shared app server outlives the Codex that
  started it and runs later sessions' hooks with that first pane's variables: the
  ended pane's row came back). A new launch in the pane has a new token.
* **retired-pane fences** - a closed pane's key stays fenced so late evidence (a hook
  still in flight, a relay replay) cannot resurrect its row. Lifted only by a live
  restart event. Bounded LRU: seed 02 §9 prefers a bounded fence to permanent
  tombstones; an evicted fence belongs to a pane closed thousands of closes ago.
  Fences are persisted with the rows (seed 02 §9, §13), so a restart keeps them.
* **pane-key aliases** - legacy numeric leaves mapped to their stable owner
  (seed 02 §8); HTTP writes need a stable key or a registered alias.
* **per-connection watermarks** - a producer connection numbers its events; a number
  at or below the watermark is a replay and is dropped.

Pane keys are ``${tabId}:${leafUUID}`` (architecture §4), parsed by the shared rules
in :mod:`orca.model.panes`; the legacy ``${tabId}:${n}`` form is recognised so it can
be aliased (seed 02 §8).
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from orca.model.panes import parse_legacy_numeric_pane_key
from orca.model.panes import parse_pane_key as parse_stable_pane_key

# Fences outlive any realistic burst of closes (a user closing a 50-pane session
# several times) while bounding memory; seed 02 §9 "更有界".
RETIRED_FENCE_CAPACITY = 4096
# Aliases exist only for legacy layouts migrated at load; a few per pane at most.
ALIAS_CAPACITY = 4096
# One watermark per producer connection (ptyd, relays); reconnects mint new ids, so
# old ones age out of the LRU.
WATERMARK_CAPACITY = 1024
# Panes whose last launch ended, remembered with its hash (one entry per pane).
ENDED_LAUNCH_CAPACITY = 4096
# Panes whose worktree we remember without a row: every pane of a large session.
KNOWN_WORKTREE_CAPACITY = 4096
MAX_PANE_KEY_LEN = 256
# A retirement id is a uuid hex or ``store:<hostId>``; bound what one fence costs on disk.
MAX_RETIRE_ID_CHARS = 256
# Every write parses its key two or three times (gate, persistability); the same few
# hundred live panes repeat, so a small cache of the pure parse pays for itself.
PARSED_KEY_CACHE = 4096

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Fence:
    """One retired pane: the retirement's id and when it happened (table clock, ms)."""

    pane_key: str
    retire_id: str
    retired_at_ms: int


@dataclass(frozen=True)
class PaneKey:
    tab_id: str
    leaf: str
    # A pre-migration numeric leaf: unstable across reorders (seed 02 §8).
    is_legacy_numeric: bool


@functools.lru_cache(maxsize=PARSED_KEY_CACHE)
def parse_pane_key(text: str) -> PaneKey | None:
    """A stable (UUID leaf) or legacy numeric pane key; ``None`` otherwise (caller's fault)."""
    if len(text) > MAX_PANE_KEY_LEN:
        return None
    stable = parse_stable_pane_key(text)
    if stable is not None:
        return PaneKey(stable.tab_id, stable.leaf_id, is_legacy_numeric=False)
    legacy = parse_legacy_numeric_pane_key(text)
    if legacy is not None:
        return PaneKey(legacy.tab_id, str(legacy.pane_number), is_legacy_numeric=True)
    return None


def is_sha256_hex(text: str) -> bool:
    return _SHA256_HEX.fullmatch(text) is not None


K = TypeVar("K")
V = TypeVar("V")


class BoundedLru(Generic[K, V]):
    """An insertion/refresh-ordered map that forgets its oldest entry past capacity."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def replace_values(self, old: V, new: V) -> int:
        """Every entry holding ``old`` now holds ``new`` (order kept); returns how many."""
        keys = [k for k, v in self._items.items() if v == old]
        for k in keys:
            self._items[k] = new
        return len(keys)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[tuple[K, V]]:
        return list(self._items.items())


class PaneAuthority:
    """The four authority facts. Pure: state in memory, decisions returned."""

    def __init__(self) -> None:
        self.commitments: dict[str, str] = {}
        self._ended_launches: BoundedLru[str, str] = BoundedLru(ENDED_LAUNCH_CAPACITY)
        self._fences: BoundedLru[str, Fence] = BoundedLru(RETIRED_FENCE_CAPACITY)
        self._aliases: BoundedLru[str, str] = BoundedLru(ALIAS_CAPACITY)
        self._watermarks: BoundedLru[str, int] = BoundedLru(WATERMARK_CAPACITY)

    # aliases ---------------------------------------------------------------
    def resolve(self, pane_key: str) -> str:
        return self._aliases.get(pane_key) or pane_key

    def is_alias(self, pane_key: str) -> bool:
        return pane_key in self._aliases

    def add_alias(self, alias: str, canonical: str) -> None:
        self._aliases.put(alias, self.resolve(canonical))

    def aliases_of(self, canonical: str) -> list[str]:
        return [a for a, c in self._aliases.items() if c == canonical]

    # fences ----------------------------------------------------------------
    def is_fenced(self, pane_key: str) -> bool:
        return pane_key in self._fences

    def fence(self, pane_key: str, retire_id: str, retired_at_ms: int = 0) -> list[str]:
        """Fence the pane and every alias of it (closing one alias revokes the group)."""
        group = [pane_key, *self.aliases_of(pane_key)]
        for key in group:
            self._fences.put(key, Fence(key, retire_id[:MAX_RETIRE_ID_CHARS], retired_at_ms))
            self.commitments.pop(key, None)
        return group

    def fences(self) -> list[Fence]:
        """Every fence, oldest retirement first (the LRU order, to persist and restore)."""
        return [fence for _, fence in self._fences.items()]

    def restore_fences(self, fences: list[Fence]) -> None:
        """Re-fence from disk in the saved order; capacity still bounds the set."""
        for fence in fences:
            self._fences.put(fence.pane_key, fence)

    def lift_fence(self, pane_key: str) -> bool:
        """Lift on a live restart only; returns whether a fence was there."""
        lifted = False
        for key in [pane_key, *self.aliases_of(pane_key)]:
            lifted = self._fences.pop(key) is not None or lifted
        return lifted

    def fence_count(self) -> int:
        return len(self._fences)

    # launch tokens ---------------------------------------------------------
    def check_launch_token(self, pane_key: str, token_sha256: str | None) -> str | None:
        """``None`` when the write may proceed, else the rejection reason.

        Side effect on success: the first presented hash is committed for the pane.
        """
        committed = self.commitments.get(pane_key)
        if token_sha256 is None:
            return "launch_token_missing" if committed is not None else None
        if self._ended_launches.get(pane_key) == token_sha256:
            return "launch_ended"
        if committed is None:
            self.commitments[pane_key] = token_sha256
            return None
        return None if committed == token_sha256 else "launch_token_mismatch"

    def launch_ended(self, pane_key: str) -> None:
        """The pane's PTY exited: its committed launch may not write again."""
        committed = self.commitments.get(pane_key)
        if committed is not None:
            self._ended_launches.put(pane_key, committed)

    # watermarks ------------------------------------------------------------
    def accept_sequence(self, connection_id: str, seq: int) -> bool:
        """Advance the connection's watermark; ``False`` for a replay or reorder."""
        mark = self._watermarks.get(connection_id)
        if mark is not None and seq <= mark:
            return False
        self._watermarks.put(connection_id, seq)
        return True
