"""The ``store`` contract's object, and the ops a reader bound by start-up time needs.

``orca.contracts.store`` declares the store's ops and events on :data:`CONTRACT`, made
here; this module holds only what ``orca worktree ps`` asks the store on every run
(``session.bindings``, its stale-binding footer). It imports no model record: the full
contract pulls in every ``orca.model`` record type, ~4 ms of every start (bench/cli.py),
for a reply of three strings per binding. Importing ``orca.contracts.store`` imports
this module, so every op is declared whichever a program imports first; only a program
that iterates ``CONTRACT.ops`` (the store actor, the gateway, tests) must import
``orca.contracts.store``.

Ops (args → result)
-------------------
session.bindings    {hostId?} → {bindings: [{pane, ptyId, verdict?}], shutdownWorktreesWithoutPty}
                    each saved pane binding (``<tabId>:<leafId>``, or ``tab <id>`` for a
                    legacy tab) with ptyd's verdict from its last start (``exited N``,
                    ``exited (code unknown)``, ``gone``; none: it ran then or was bound
                    after); a reader joins them with what ptyd lists running now
"""

from __future__ import annotations

from orca.contracts.base import Args, Contract, Payload
from orca.wire.errors import BadRequest

CONTRACT = Contract("store")


class SessionBindingsArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None  # None or "" → "local"


class SavedBinding(Payload, frozen=True, kw_only=True):
    """A pane's saved binding to a PTY id: ``pane`` is ``<tabId>:<leafId>`` (or ``tab
    <id>`` for a legacy tab binding); ``verdict`` is ptyd's, recorded at its last start
    for an id that did not run then (``exited N``, ``exited (code unknown)``, ``gone``),
    None for an id that ran then or was bound after."""

    pane: str
    pty_id: str
    verdict: str | None = None


class SessionBindings(Payload, frozen=True, kw_only=True):
    bindings: list[SavedBinding]
    # activeWorktreeIdsOnShutdown entries ptyd found no PTY for at its last start.
    shutdown_worktrees_without_pty: list[str]


# The saved bindings with ptyd's verdicts, for readers that judge them (issue 13): a
# reader that fetched the whole session for them paid ~7 ms decoding it (bench/cli.py).
SESSION_BINDINGS = CONTRACT.op("session.bindings", SessionBindingsArgs, SessionBindings, BadRequest)
