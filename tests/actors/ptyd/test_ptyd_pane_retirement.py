"""Pane retirement between ptyd and the real store and hooks (ARCHITECTURE §3.2; seed 02 §9)."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
from support.actors import RunningActor, event_tap, running_actor, running_actors

from orca.contracts import ptyd as contract
from orca.contracts import store

WT = "repo1::/w/panes"
CALL_TIMEOUT_S = 15.0


async def spawn_in_pane(ptyd: RunningActor, pane_key: str) -> str:
    args = {"argv": ["/bin/sleep", "60"], "cwd": "/", "worktreeId": WT, "paneKey": pane_key}
    return str((await ptyd.call("term.spawn", args, timeout=CALL_TIMEOUT_S))["sessionId"])


def pane() -> tuple[str, str, str]:
    tab, leaf = f"tab-{uuid.uuid4().hex[:6]}", str(uuid.uuid4())
    return tab, leaf, f"{tab}:{leaf}"


async def test_store_retired_pane_ends_its_pty_and_only_on_its_host(tmp_path: Path) -> None:
    """session.paneRetired ends that pane's PTY (term.exit); other panes and hosts live on."""
    home = tmp_path / "home"
    with trio.fail_after(30):
        async with (
            running_actor("store", home) as st,
            # Started after the store binds its PUB socket: ptyd's subscription is live
            # by the time it answers its first call.
            running_actor("ptyd", home) as pt,
            event_tap(home, contract.CONTRACT, topics=[contract.EXIT.type]) as tap,
        ):
            (tab_a, leaf_a, key_a), (tab_b, leaf_b, key_b) = pane(), pane()
            (tab_c, leaf_c, key_c) = pane()
            sid_a = await spawn_in_pane(pt, key_a)
            sid_b = await spawn_in_pane(pt, key_b)
            sid_c = await spawn_in_pane(pt, key_c)
            await st.call("session.retire_pane", {"tabId": tab_a, "leafId": leaf_a})
            assert (await tap.next_of(contract.EXIT)).session_id == sid_a
            # Pane b retired on another host: our pane b is a different pane.
            await st.call(
                "session.retire_pane",
                {"hostId": "ssh:elsewhere", "tabId": tab_b, "leafId": leaf_b},
            )
            await st.call("session.retire_pane", {"tabId": tab_c, "leafId": leaf_c})
            # The store publishes in order: c's exit means b's event was handled.
            assert (await tap.next_of(contract.EXIT)).session_id == sid_c
            with trio.move_on_after(0.5):
                extra = await tap.next_of(contract.EXIT)
                raise AssertionError(f"unexpected exit {extra}")
            rows = (await pt.call("term.list", {}, timeout=CALL_TIMEOUT_S))["sessions"]
            running = {r["sessionId"]: r["running"] for r in rows}
            assert running == {sid_a: False, sid_b: True, sid_c: False}
            await pt.call("term.close", {"sessionId": sid_b}, timeout=CALL_TIMEOUT_S)


async def test_term_close_retires_the_pane_in_store_and_fences_it_in_hooks(
    tmp_path: Path,
) -> None:
    """After term.close replies, hooks rejects the pane's status and the store dropped the leaf."""
    home = tmp_path / "home"
    with trio.fail_after(30):
        async with running_actors(home, "store", "hooks", "ptyd") as running:
            st, hk, pt = running["store"], running["hooks"], running["ptyd"]
            tab, leaf, key = pane()
            kept_leaf = str(uuid.uuid4())
            layout = {
                tab: {
                    "root": {
                        "type": "split",
                        "direction": "horizontal",
                        "first": {"type": "leaf", "leafId": leaf},
                        "second": {"type": "leaf", "leafId": kept_leaf},
                    }
                }
            }
            await st.call(
                "session.flush",
                {"session": {"terminalLayoutsByTabId": layout}},
                timeout=CALL_TIMEOUT_S,
            )
            before = (await st.call("session.get", {}, timeout=CALL_TIMEOUT_S))["revision"]
            sid = await spawn_in_pane(pt, key)
            status = {"paneKey": key, "worktreeId": WT, "payload": '{"state":"working"}'}
            await hk.call("agentStatus.snapshot", {}, timeout=CALL_TIMEOUT_S)

            closed = await pt.call("term.close", {"sessionId": sid}, timeout=CALL_TIMEOUT_S)

            assert closed["fenced"] is True
            late = await hk.call("agentStatus.ingest_osc", status, timeout=CALL_TIMEOUT_S)
            assert late == {"outcome": "rejected", "reason": "retired_pane"}
            after = await st.call("session.get", {}, timeout=CALL_TIMEOUT_S)
            assert closed["storeRevision"] == after["revision"] > before
            assert leaf not in repr(after["session"]["terminalLayoutsByTabId"])
            assert kept_leaf in repr(after["session"]["terminalLayoutsByTabId"])
            rows = (await pt.call("term.list", {}, timeout=CALL_TIMEOUT_S))["sessions"]
            assert rows == []


async def test_term_close_with_store_and_hooks_down_still_closes(tmp_path: Path) -> None:
    """Both retirement calls are best effort: the close succeeds, reporting nothing fenced."""
    home = tmp_path / "home"
    topics = [contract.EXIT.type, contract.CLOSED.type]
    with trio.fail_after(30):
        async with (
            running_actor("ptyd", home) as pt,
            event_tap(home, contract.CONTRACT, topics=topics) as tap,
        ):
            sid = await spawn_in_pane(pt, pane()[2])
            closing = trio.current_time()
            closed = await pt.call("term.close", {"sessionId": sid}, timeout=CALL_TIMEOUT_S)
            assert trio.current_time() - closing < 5.0
            assert closed == {"fenced": False, "storeRevision": None}
            assert (await tap.next_of(contract.CLOSED)).session_id == sid
            assert (await tap.next_of(contract.EXIT)).session_id == sid


async def test_a_pty_that_exits_on_its_own_loses_its_binding_but_keeps_its_pane(
    tmp_path: Path,
) -> None:
    """A shell's own ``exit 3``: the store no longer binds its PTY (revision bumped), the
    leaf stays for the ended pane, and ptyd still lists it with its exit code (seed 02 §9)."""
    home = tmp_path / "home"
    with trio.fail_after(30):
        async with (
            running_actor("store", home) as st,
            running_actor("ptyd", home) as pt,
            event_tap(home, store.CONTRACT, topics=[store.SESSION_CHANGED.type]) as changes,
        ):
            tab, leaf, key = pane()
            args = {
                "argv": ["/bin/sh", "-c", "read line; exit 3"],
                "cwd": "/",
                "worktreeId": WT,
                "paneKey": key,
            }
            sid = (await pt.call("term.spawn", args, timeout=CALL_TIMEOUT_S))["sessionId"]
            layout = {tab: {"root": {"type": "leaf", "leafId": leaf}, "ptyIdsByLeafId": {leaf: sid}}}
            await st.call(
                "session.flush", {"session": {"terminalLayoutsByTabId": layout}}, timeout=CALL_TIMEOUT_S
            )
            assert (await changes.next_of(store.SESSION_CHANGED)).revision == 0  # the flush

            await pt.call("term.write", {"sessionId": sid, "text": "\n"}, timeout=CALL_TIMEOUT_S)

            # (A change of the same revision may come first: ptyd's start-up word of its
            # live sessions to the store, late under load, re-announces the flush.)
            unbound = await changes.next_of(store.SESSION_CHANGED, lambda c: c.revision > 0)
            assert unbound.revision == 1
            view = await st.invoke(store.SESSION_GET, store.SessionGetArgs())
            kept = view.session.terminal_layouts_by_tab_id[tab]
            assert list(kept.pty_ids_by_leaf_id) == [] and view.revision == 1
            assert leaf in repr(kept.root)  # the ended pane stays, to show it and run it again
            (row,) = (await pt.call("term.list", {}, timeout=CALL_TIMEOUT_S))["sessions"]
            assert (row["sessionId"], row["running"], row["exitCode"]) == (sid, False, 3)
