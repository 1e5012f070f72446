"""The bounded log of recent pane retirements, per host (docs/protocols.md §2 catch-up).

``session.paneRetired`` is an event: a follower (``hooks``, ``ptyd``) that is down
when it is published never sees it. Each retirement is therefore also appended to a
short persisted log, saved with the retirement itself; a follower that (re)starts asks
``session.retired_since {revision}`` for every entry newer than the last revision it
applied and handles each exactly like the live event.

The log lives beside the known fields of ``orca-data.json`` as the top-level key
``retiredPanesByHostId`` (kept in ``PersistedState.extra``, which every build
preserves), ``{hostId: [entry, ...]}`` oldest first; an entry is
``{tabId, leafId, paneKey, revision, retiredAtMs}``.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from orca.contracts.store import RetiredPane, RetiredSince
from orca.model.state import PersistedState, topology_revision

# Wire key of the log in orca-data.json (an extra field, so older builds keep it).
LOG_KEY: Final = "retiredPanesByHostId"
# Entries kept per host: a follower restarts within seconds, during which at most a
# handful of panes close; 1024 covers a 50-agent fleet closing every pane ~20 times
# over while bounding the file to ~150 KB per host. Older gaps answer truncated=true.
MAX_ENTRIES_PER_HOST: Final = 1024


def _valid_entry(entry: Any) -> RetiredPane | None:
    """The entry as the contract's ``RetiredPane``, or None (a hand edit broke it)."""
    try:
        return msgspec.convert(entry, RetiredPane, strict=True)
    except msgspec.ValidationError:
        return None


def _logged(state: PersistedState, host_id: str) -> list[tuple[Any, RetiredPane]]:
    """``(entry as stored, entry decoded)`` of the host's valid entries, oldest first."""
    logs = state.extra.get(LOG_KEY)
    entries = logs.get(host_id) if isinstance(logs, dict) else None
    if not isinstance(entries, list):
        return []
    decoded = [(entry, _valid_entry(entry)) for entry in entries]
    return [(entry, pane) for entry, pane in decoded if pane is not None]


def host_log(state: PersistedState, host_id: str) -> list[RetiredPane]:
    """The host's retirements, oldest first; malformed entries (hand edits) are skipped."""
    return [pane for _, pane in _logged(state, host_id)]


def append_retirement(
    state: PersistedState,
    host_id: str,
    tab_id: str,
    leaf_id: str,
    revision: int,
    retired_at_ms: int,
) -> PersistedState:
    """``state`` with one retirement appended to the host's log (oldest dropped past the cap)."""
    entry = RetiredPane(
        tab_id=tab_id,
        leaf_id=leaf_id,
        pane_key=f"{tab_id}:{leaf_id}",
        revision=revision,
        retired_at_ms=retired_at_ms,
    )
    # Kept entries stay as stored: a newer build's extra keys survive.
    stored = [raw for raw, _ in _logged(state, host_id)]
    entries = [*stored, msgspec.to_builtins(entry)][-MAX_ENTRIES_PER_HOST:]
    old_logs = state.extra.get(LOG_KEY)
    logs = dict(old_logs) if isinstance(old_logs, dict) else {}
    logs[host_id] = entries
    return msgspec.structs.replace(state, extra={**state.extra, LOG_KEY: logs})


def retired_since(state: PersistedState, host_id: str, revision: int) -> RetiredSince:
    """What ``session.retired_since`` returns: entries with a revision above ``revision``.

    ``truncated`` is true when retirements after ``revision`` may have fallen off the
    log (or were never logged, e.g. by a build before the log existed): the caller
    cannot know every pane retired in that gap.
    """
    current = topology_revision(state, host_id)
    entries = host_log(state, host_id)
    panes = [e for e in entries if e.revision > revision]
    # Every revision in (revision, current] is one retirement; all must be in the log.
    oldest_needed = revision + 1
    covered = current <= revision or bool(panes and panes[0].revision <= oldest_needed)
    return RetiredSince(host_id=host_id, revision=current, panes=panes, truncated=not covered)
