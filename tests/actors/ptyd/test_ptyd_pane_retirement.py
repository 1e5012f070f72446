"""Pane retirement between ptyd and the real store and hooks (ARCHITECTURE §3.2; seed 02 §9)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import trio
from ptyd_harness import EventTap, start_actor_process, stop_actor_process

from orca.actor import open_rpc_client
from orca.paths import resolve_paths

WT = "repo1::/w/panes"
CALL_TIMEOUT_S = 15.0


async def spawn_in_pane(ptyd: Any, pane_key: str) -> str:
    args = {"argv": ["/bin/sleep", "60"], "cwd": "/", "worktreeId": WT, "paneKey": pane_key}
    return str((await ptyd.call("term.spawn", args, timeout=CALL_TIMEOUT_S))["sessionId"])


def pane() -> tuple[str, str, str]:
    tab, leaf = f"tab-{uuid.uuid4().hex[:6]}", str(uuid.uuid4())
    return tab, leaf, f"{tab}:{leaf}"


async def test_store_retired_pane_ends_its_pty_and_only_on_its_host(tmp_path: Path) -> None:
    """session.paneRetired ends that pane's PTY (term.exit); other panes and hosts live on."""
    home = tmp_path / "home"
    await trio.Path(home).mkdir()
    paths = resolve_paths({"ORCA_HOME": str(home)})
    store = start_actor_process("store", home)
    ptyd = None
    tap = EventTap(paths.ipc_endpoint("ptyd", "pub"), ["term.exit", "sys.heartbeat"])
    try:
        async with open_rpc_client(paths.ipc_endpoint("store", "rpc")) as st:
            with trio.fail_after(30):
                await st.call("session.get", {}, timeout=CALL_TIMEOUT_S)
                # Started after the store binds its PUB socket: ptyd's subscription is live
                # by the time it answers its first call.
                ptyd = start_actor_process("ptyd", home)
                async with (
                    open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as pt,
                    trio.open_nursery() as nursery,
                ):
                    await nursery.start(tap.run)
                    # The tap connected before ptyd bound: a heartbeat proves it is live
                    # (a SUB reconnects on a timer; an exit before that would be lost).
                    await tap.next_of("sys.heartbeat")
                    (tab_a, leaf_a, key_a), (tab_b, leaf_b, key_b) = pane(), pane()
                    (tab_c, leaf_c, key_c) = pane()
                    sid_a = await spawn_in_pane(pt, key_a)
                    sid_b = await spawn_in_pane(pt, key_b)
                    sid_c = await spawn_in_pane(pt, key_c)
                    await st.call("session.retire_pane", {"tabId": tab_a, "leafId": leaf_a})
                    assert (await tap.next_of("term.exit")).data["sessionId"] == sid_a
                    # Pane b retired on another host: our pane b is a different pane.
                    await st.call(
                        "session.retire_pane",
                        {"hostId": "ssh:elsewhere", "tabId": tab_b, "leafId": leaf_b},
                    )
                    await st.call("session.retire_pane", {"tabId": tab_c, "leafId": leaf_c})
                    # The store publishes in order: c's exit means b's event was handled.
                    assert (await tap.next_of("term.exit")).data["sessionId"] == sid_c
                    with trio.move_on_after(0.5):
                        extra = await tap.next_of("term.exit")
                        raise AssertionError(f"unexpected exit {extra.data}")
                    rows = (await pt.call("term.list", {}, timeout=CALL_TIMEOUT_S))["sessions"]
                    running = {r["sessionId"]: r["running"] for r in rows}
                    assert running == {sid_a: False, sid_b: True, sid_c: False}
                    await pt.call("term.close", {"sessionId": sid_b}, timeout=CALL_TIMEOUT_S)
                    nursery.cancel_scope.cancel()
    finally:
        tap.close()
        if ptyd is not None:
            await stop_actor_process(ptyd)
        await stop_actor_process(store)


async def test_term_close_retires_the_pane_in_store_and_fences_it_in_hooks(
    tmp_path: Path,
) -> None:
    """After term.close replies, hooks rejects the pane's status and the store dropped the leaf."""
    home = tmp_path / "home"
    await trio.Path(home).mkdir()
    paths = resolve_paths({"ORCA_HOME": str(home)})
    procs = [start_actor_process(name, home) for name in ("store", "hooks", "ptyd")]
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("store", "rpc")) as st,
            open_rpc_client(paths.ipc_endpoint("hooks", "rpc")) as hk,
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as pt,
        ):
            with trio.fail_after(30):
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
    finally:
        for proc in reversed(procs):
            await stop_actor_process(proc)


async def test_term_close_with_store_and_hooks_down_still_closes(tmp_path: Path) -> None:
    """Both retirement calls are best effort: the close succeeds, reporting nothing fenced."""
    home = tmp_path / "home"
    await trio.Path(home).mkdir()
    paths = resolve_paths({"ORCA_HOME": str(home)})
    ptyd = start_actor_process("ptyd", home)
    tap = EventTap(paths.ipc_endpoint("ptyd", "pub"), ["term.exit", "term.closed"])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as pt,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(30):
                await nursery.start(tap.run)
                sid = await spawn_in_pane(pt, pane()[2])
                closing = trio.current_time()
                closed = await pt.call("term.close", {"sessionId": sid}, timeout=CALL_TIMEOUT_S)
                assert trio.current_time() - closing < 5.0
                assert closed == {"fenced": False, "storeRevision": None}
                assert (await tap.next_of("term.closed")).data["sessionId"] == sid
                assert (await tap.next_of("term.exit")).data["sessionId"] == sid
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        await stop_actor_process(ptyd)
