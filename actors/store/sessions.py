"""Pure ops on workspace sessions, one partition per execution host (seed 01 §7.5 ③, seed 02 §6-§9).

The host id is optional on the wire and defaults to ``local``, so a client that
predates partitions behaves exactly as before; ``local`` lives in the bare
``workspaceSession`` field (``orca.model.state.session_for_host`` routes it).

A write (``session.set`` / ``session.patch``) carries the topology revision the writer
last saw. When it is older than the host's current revision, the write is *stale*: it
may update metadata of terminal tabs and panes that still exist, but membership comes
from the stored session (``session_topology.restrict_to_current_membership``). A write
without a revision is treated as stale once the host has retired anything: a client
that does not know revisions cannot prove it saw the retirement. Every write is then
normalized (``session_normalize``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.store.change import Change, decode_record
from actors.store.retired_log import append_retirement, host_log
from actors.store.session_normalize import Mint, normalize_session_for_write
from actors.store.session_topology import restrict_to_current_membership, retire_pane
from orca.contracts import store as contract
from orca.model.codec import to_builtins
from orca.model.hosts import LOCAL_HOST_ID, is_execution_host_id
from orca.model.layout import iter_terminal_leaf_ids
from orca.model.session import WorkspaceSessionState
from orca.model.state import (
    PersistedState,
    bump_topology_revision,
    session_for_host,
    topology_revision,
    with_session_for_host,
)
from orca.wire.errors import BadRequest


def resolve_host_id(host_id: str | None) -> str:
    """``None``/empty → ``local``; anything else must be a valid ExecutionHostId."""
    if not host_id:
        return LOCAL_HOST_ID
    if not is_execution_host_id(host_id):
        raise BadRequest(f"not an execution host id ('local', 'ssh:…', 'runtime:…'): {host_id!r}")
    return host_id


_FIELDS = WorkspaceSessionState.__struct_fields__
_WIRE_NAMES = dict(zip(_FIELDS, WorkspaceSessionState.__struct_encode_fields__, strict=True))
_ATTR_BY_WIRE = {wire: attr for attr, wire in _WIRE_NAMES.items() if attr != "extra"}


def session_view(state: PersistedState, host_id: str) -> contract.SessionView:
    """What ``session.get`` returns: the whole session and the host's revision."""
    return contract.SessionView(
        host_id=host_id,
        revision=topology_revision(state, host_id),
        session=session_for_host(state, host_id),
    )


def session_delta(
    old: WorkspaceSessionState, new: WorkspaceSessionState
) -> tuple[dict[str, Any], list[str]]:
    """Top-level fields that differ: ``(fields set, wire names back to their default)``.

    A mirror applies it as ``{k: v for k, v in session.items() if k not in removed} |
    fields``; the event stays small when a UI changes one pointer in a large session.
    """
    changed = [f for f in _FIELDS if f != "extra" and getattr(old, f) != getattr(new, f)]
    partial = WorkspaceSessionState(
        **{f: getattr(new, f) for f in changed}, extra=(new.extra if new.extra != old.extra else {})
    )
    fields = to_builtins(partial)
    removed = [_WIRE_NAMES[f] for f in changed if _WIRE_NAMES[f] not in fields]
    removed += [k for k in old.extra if k not in new.extra]
    return fields, removed


def session_changed_event(
    state: PersistedState, host_id: str, old: WorkspaceSessionState
) -> contract.SessionChanged:
    fields, removed = session_delta(old, session_for_host(state, host_id))
    return contract.SessionChanged(
        host_id=host_id,
        revision=topology_revision(state, host_id),
        fields=fields,
        removed=removed,
    )


def _write(
    state: PersistedState,
    host_id: str,
    incoming: WorkspaceSessionState,
    revision: int | None,
    mint: Mint,
) -> Change:
    current = session_for_host(state, host_id)
    current_revision = topology_revision(state, host_id)
    if incoming.pty_reconciliation != current.pty_reconciliation:
        # Written only from ptyd's truth (session.reconcile_ptys, pty_bindings.py): a
        # writer's copy of it is a mirror and never replaces the source.
        incoming = msgspec.structs.replace(incoming, pty_reconciliation=current.pty_reconciliation)
    stale = current_revision > 0 and (revision is None or revision < current_revision)
    if stale:
        incoming = restrict_to_current_membership(incoming, current)
    else:
        incoming = _without_retired_panes(state, host_id, incoming, current)
    normalized = normalize_session_for_write(incoming, current, mint).session
    # "metadata_only" tells a stale writer to re-read the session (and its revision).
    applied: contract.Applied = "metadata_only" if stale else "full"
    if normalized == current:
        unchanged = contract.SessionWritten(
            applied=applied, changed=False, revision=current_revision
        )
        return Change(state, unchanged)
    new_state = with_session_for_host(state, host_id, normalized)
    event = session_changed_event(new_state, host_id, current)
    result = contract.SessionWritten(applied=applied, changed=True, revision=current_revision)
    return Change(new_state, result, (event,))


def _without_retired_panes(
    state: PersistedState,
    host_id: str,
    incoming: WorkspaceSessionState,
    current: WorkspaceSessionState,
) -> WorkspaceSessionState:
    """``incoming`` without the panes it adds that the host retired (its bounded log).

    A current write may add panes, but never one that was retired: pane keys are never
    reused, so a retired one coming back is a writer that took a terminal still
    dying for a new one (a UI adopting a terminal with no layout leaf, in the moment
    between the retirement and ptyd ending it)."""
    added = _pane_keys(incoming) - _pane_keys(current)
    if not added:
        return incoming
    for pane in host_log(state, host_id):
        if pane.pane_key in added:
            incoming = retire_pane(incoming, pane.tab_id, pane.leaf_id)
    return incoming


def _pane_keys(session: WorkspaceSessionState) -> set[str]:
    return {
        f"{tab_id}:{leaf}"  # as the log writes them (not validated: normalized later)
        for tab_id, snap in session.terminal_layouts_by_tab_id.items()
        for leaf in iter_terminal_leaf_ids(snap.root)
    }


def set_session(
    state: PersistedState,
    host_id: str | None,
    raw: dict[str, Any],
    revision: int | None,
    mint: Mint,
) -> Change:
    """Replace the host's session with ``raw`` (normalized, fenced by revision)."""
    host = resolve_host_id(host_id)
    incoming = decode_record(WorkspaceSessionState, raw, "workspace session")
    return _write(state, host, incoming, revision, mint)


def patch_session(
    state: PersistedState,
    host_id: str | None,
    patch: dict[str, Any],
    revision: int | None,
    mint: Mint,
) -> Change:
    """Replace the named top-level session fields only; same rules as ``set_session``."""
    host = resolve_host_id(host_id)
    current = session_for_host(state, host)
    # Decode only the patch: re-decoding a large session for one pointer costs ms.
    partial = decode_record(WorkspaceSessionState, patch, "workspace session patch")
    changes: dict[str, Any] = {
        _ATTR_BY_WIRE[k]: getattr(partial, _ATTR_BY_WIRE[k]) for k in patch if k in _ATTR_BY_WIRE
    }
    if partial.extra:
        changes["extra"] = {**current.extra, **partial.extra}
    incoming = msgspec.structs.replace(current, **changes)
    return _write(state, host, incoming, revision, mint)


def retire_session_pane(
    state: PersistedState, host_id: str | None, tab_id: str, leaf_id: str, now_ms: int = 0
) -> Change:
    """The host retired pane ``tab_id:leaf_id``: remove it, bump the revision, flush.

    The revision goes up even when the pane was never saved: a snapshot taken before
    the retirement must not add it later. The retirement is also appended to the
    host's bounded log (``retired_log``) in the same change, so a follower that was
    down when the event went out catches up with ``session.retired_since``.
    """
    host = resolve_host_id(host_id)
    if not tab_id or ":" in tab_id or not leaf_id:
        raise BadRequest("tabId must be non-empty without ':' and leafId non-empty")
    current = session_for_host(state, host)
    session = retire_pane(current, tab_id, leaf_id)
    new_state, revision = bump_topology_revision(with_session_for_host(state, host, session), host)
    new_state = append_retirement(new_state, host, tab_id, leaf_id, revision, now_ms)
    events = (
        contract.PaneRetired(host_id=host, tab_id=tab_id, leaf_id=leaf_id, revision=revision),
        session_changed_event(new_state, host, current),
    )
    result = contract.PaneRetiredResult(revision=revision)
    return Change(new_state, result, events, durability="flush")
