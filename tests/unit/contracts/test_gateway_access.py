"""Every op of the actors the gateway relays to is classified: read-only, mutating, or
never relayed (so a new op cannot reach another machine by default)."""

from __future__ import annotations

from orca.contracts import gateway as gw

# Ops that never cross a machine: agents report status to their own host; store writes
# that only the local actors make.
NEVER_RELAYED = {
    "agentStatus.ingest_osc",
    "agentStatus.ingest_structured",
    "agentStatus.retire_pane",
    "agentStatus.restart_pane",
    "agentStatus.alias_pane",
    "agentStatus.clear",
    "agentStatus.pty_exited",
    "agentStatus.reconcile_ptys",
    "agentStatus.pane_input",
    "hooks.endpoint",
    # which pane each agent session runs in, with transcript paths: this host's own
    "agentSession.bindings",
    # rebuilding the transcript index is this host's business
    "vault.rebuild",
    # a worker's report comes from its own pane, on its own host
    "run.report",
    # this host's hooks settle an answered prompt by it (a pane's screen as text)
    "term.activity",
    # issue 38: a host's automations are defined and fired on that host; others read them
    "auto.add",
    "auto.remove",
    "auto.pause",
    "auto.resume",
    "auto.runNow",
}


def test_every_relayed_contract_op_is_classified() -> None:
    classified = {op.name for op in gw.FULL_OPS}
    for contract in gw.RELAYED_CONTRACTS:
        for name in contract.ops:
            if contract.actor == "store" and name not in classified:
                continue  # store's writes are local-only unless listed as mutating
            assert name in classified or name in NEVER_RELAYED, f"{name}: classify it in gateway.py"


def test_read_only_and_mutating_do_not_overlap_and_read_only_keys_get_no_writes() -> None:
    assert not (gw.READ_ONLY_OPS & gw.MUTATING_OPS)
    assert gw.allowed_ops("read-only") == gw.READ_ONLY_OPS
    assert all(gw.is_mutating(op) for op in gw.MUTATING_OPS)
    assert gw.STATUS not in gw.FULL_OPS and gw.INJECT_ZAP_FAULT not in gw.FULL_OPS


def test_answering_a_permission_request_needs_a_full_key() -> None:
    """Issue 27: a read-only key sees pending requests but cannot approve one."""
    from orca.contracts import hooks

    assert hooks.PERMISSION_SNAPSHOT in gw.allowed_ops("read-only")
    assert hooks.ANSWER_PERMISSION not in gw.allowed_ops("read-only")
    assert gw.is_mutating(hooks.ANSWER_PERMISSION)


def test_runs_are_read_with_any_key_and_started_or_merged_with_a_full_one() -> None:
    """Issue 26: `orca run ls/show --host H` with a read-only key; new/merge/rm/send need
    a full key; a worker's report never crosses a machine."""
    from orca.contracts import orch

    assert {orch.LIST, orch.SHOW} <= gw.allowed_ops("read-only")
    assert not {orch.CREATE, orch.MERGE, orch.REMOVE, orch.SEND} & gw.allowed_ops("read-only")
    assert {orch.CREATE, orch.MERGE, orch.REMOVE, orch.SEND} <= gw.allowed_ops("full")
    assert orch.REPORT not in gw.FULL_OPS


def test_a_read_only_key_gets_projections_not_the_state_or_inboxes() -> None:
    """Seed 02-56: the whole persisted state and every run's inbox went to read-only
    keys; the state crosses no machine, an inbox needs a full key."""
    from orca.contracts import orch, store

    assert store.STATE_SNAPSHOT not in gw.FULL_OPS
    assert orch.INBOX not in gw.allowed_ops("read-only")
    assert orch.INBOX in gw.allowed_ops("full")


def test_the_web_actors_ops_never_cross_a_machine() -> None:
    """Issue 27: pairing a device and revoking one are for this machine's CLI only."""
    from orca.contracts import web

    assert web.CONTRACT not in gw.RELAYED_CONTRACTS
    assert not {op.name for op in gw.FULL_OPS} & set(web.CONTRACT.ops)


def test_vault_ops_are_read_only_and_gated_separately() -> None:
    """The transcript index's ops are read-only ones (any authorized key), gated again
    by the host's share_vault setting; rebuilding is never relayed."""
    from orca.contracts import vault

    assert {vault.SEARCH, vault.USAGE, vault.STATUS} == gw.VAULT_OPS
    assert gw.VAULT_OPS <= gw.READ_ONLY_OPS
    assert vault.REBUILD not in gw.FULL_OPS
