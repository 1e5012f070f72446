"""The whole tree under kill -9: agents keep working and nothing acknowledged is lost.

While terminals print numbered output, agents report through the installed hook script
and OSC 9999, a UI writes its session (each acknowledged write flushed) and retires
panes, and a worktree is removed, a seeded RNG kills a random Orca process every few
seconds: an actor (orcad restarts it), orcad itself (the keeper starts it again, nobody
runs `orca up`, and its ptyd re-adopts every terminal from the keeper) or the fd
keeper (orcad starts a new one, ptyd re-seeds it; the next kill waits for that).
Set ORCA_CHAOS_SEED to replay a run (the seed is printed and in every failure).
"""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from support.chaos import (
    COUNTING_AGENT,
    RETRY_S,
    Killer,
    StreamFollower,
    apply_layouts,
    apply_sessions,
    call_until_ok,
    expected_stream,
    keeper_pid,
    load_layouts,
    load_sessions,
    touch,
)
from support.journey import (
    User,
    actor_mirror,
    hooks_mirror,
    hooks_rows,
    make_git_repo,
    rows_by_pane,
)
from support.lifecycle import lifecycle
from support.procs import alive, descendants, write_config

from orca.actor import open_rpc_client
from orca.actor.client import RpcClient
from orca.contracts import ptyd as P
from orca.contracts import store as S
from orca.wire.errors import Unavailable

# Restart fast and never give up: the test kills far more often than `intensity`
# allows in production; a `failed` actor at the end is still an invariant violation.
CHAOS_TREE = """
[supervisor]
intensity = 100000
period_s = 60
backoff_initial_s = 0.05
backoff_max_s = 0.5
stable_after_s = 5
heartbeat_interval_s = 0.5
heartbeat_timeout_s = 5
ready_timeout_s = 20
shutdown_grace_s = 3
"""
AGENTS = 3


@dataclass
class UiLog:
    """What the UI writer was told: acknowledged (flushed) tabs and retirements."""

    acked: dict[str, str] = field(default_factory=dict)
    retired: dict[str, str] = field(default_factory=dict)
    maybe_retired: set[str] = field(default_factory=set)
    stale_rejected: int = 0
    violations: list[str] = field(default_factory=list)


def layout_of(tabs: dict[str, str]) -> dict[str, Any]:
    return {tab: {"root": {"type": "leaf", "leafId": leaf}} for tab, leaf in tabs.items()}


async def ui_writer(store: RpcClient, log: UiLog) -> None:
    """Read the session, add a tab, flush with the revision read; note what was acked."""
    k = 0
    while True:
        k += 1
        try:
            got = await store.call("session.get", {}, timeout=3)
            layouts = dict(got["session"].get("terminalLayoutsByTabId") or {})
            tab, leaf = f"chaos{k}", str(uuid.uuid4())
            layouts[tab] = {"root": {"type": "leaf", "leafId": leaf}}
            reply = await store.call(
                "session.flush",
                {"session": {"terminalLayoutsByTabId": layouts}, "revision": got["revision"]},
                timeout=3,
            )
        except Unavailable:
            await trio.sleep(RETRY_S)
            continue
        if reply.get("applied") == "full" and reply["flushed"]:
            log.acked[tab] = leaf
        await trio.sleep(0.2)


async def ui_retirer(store: RpcClient, log: UiLog, rng: random.Random) -> None:
    """Retire a random acked pane; then a stale writer sends the pre-retirement layout."""
    while True:
        await trio.sleep(rng.uniform(1.0, 2.0))
        live = sorted(set(log.acked) - set(log.retired) - log.maybe_retired)
        if not live:
            continue
        tab = rng.choice(live)
        try:
            before = await store.call("session.get", {}, timeout=3)
        except Unavailable:
            continue
        log.maybe_retired.add(tab)
        try:
            reply = await store.call(
                "session.retire_pane", {"tabId": tab, "leafId": log.acked[tab]}, timeout=3
            )
        except Unavailable:
            continue
        log.maybe_retired.discard(tab)
        if not reply["durable"]:
            log.violations.append(f"retirement of {tab} not durable")
        log.retired[tab] = log.acked[tab]
        try:
            stale = await store.call(
                "session.flush",
                {"session": before["session"], "revision": before["revision"]},
                timeout=3,
            )
        except Unavailable:
            continue
        if stale.get("applied") == "full":
            log.violations.append(f"a stale snapshot was applied in full after retiring {tab}")
        log.stale_rejected += 1


async def remove_worktree(user: User, worktree_id: str) -> None:
    """`orca worktree rm` until acknowledged (a kill may eat a reply; retry is safe)."""
    while True:
        result = await trio.to_thread.run_sync(lambda: user.run("worktree", "rm", worktree_id))
        if result.returncode == 0:
            return
        gone = not await trio.Path(worktree_id.split("::", 1)[1]).exists()
        if gone and "no worktree matches" in result.stderr:
            return  # an earlier attempt removed it but its reply was lost to a kill
        await trio.sleep(RETRY_S)


async def run_chaos(orca_home: Path, tmp_path: Path, duration_s: float) -> None:
    seed = int(os.environ.get("ORCA_CHAOS_SEED") or random.randrange(2**32))
    print(f"chaos seed {seed} duration {duration_s}s")
    rng = random.Random(seed)
    write_config(orca_home, CHAOS_TREE)
    user = User(orca_home, tmp_path / "user")
    project = make_git_repo(tmp_path / "project")
    user.ok("up")
    user.ok("repo", "add", str(project))
    (repo,) = user.json("repo", "ls")["repos"]
    user.ok("hooks", "install", "claude")
    worktrees = [
        user.json("worktree", "create", repo["id"], f"w{i}", "--setup", "skip")["worktree"]
        for i in range(AGENTS + 1)
    ]
    doomed_worktree = worktrees.pop()["worktreeId"]
    stop = {w["worktreeId"]: tmp_path / f"stop-{i}" for i, w in enumerate(worktrees)}
    ui = UiLog()
    killer = Killer(rng, user.paths, user.env)
    paths = user.paths
    async with (
        open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as ptyd,
        open_rpc_client(paths.ipc_endpoint("store", "rpc")) as store,
        open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as sup,
        lifecycle(orca_home) as (life, life_rec),
        hooks_mirror(orca_home) as (rows, hooks),
        actor_mirror(orca_home, P.CONTRACT, P.SNAPSHOT, load_sessions, apply_sessions) as (
            sessions_mirror,
            _,
        ),
        actor_mirror(orca_home, S.CONTRACT, S.STATE_SNAPSHOT, load_layouts, apply_layouts) as (
            layout_mirror,
            _,
        ),
        trio.open_nursery() as outer,
    ):
        follower = StreamFollower(paths.ipc_endpoint("ptyd", "pub"), ptyd)
        await outer.start(follower.run)
        agents: dict[str, dict[str, Any]] = {}
        for w in worktrees:
            spawned = await ptyd.call(
                "term.spawn",
                {
                    "argv": [
                        "/bin/sh",
                        "-c",
                        COUNTING_AGENT,
                        "agent",
                        str(user.hook_script),
                        str(stop[w["worktreeId"]]),
                    ],
                    "cwd": w["path"],
                    "worktreeId": w["worktreeId"],
                },
            )
            agents[spawned["sessionId"]] = {**spawned, "proc": psutil.Process(spawned["pid"])}
            follower.track(spawned["sessionId"])

        with trio.move_on_after(duration_s):
            async with trio.open_nursery() as chaos:
                chaos.start_soon(killer.run, sup, life, life_rec)
                chaos.start_soon(ui_writer, store, ui)
                chaos.start_soon(ui_retirer, store, ui, rng)
                await trio.sleep(duration_s / 3)
                await remove_worktree(user, doomed_worktree)
        print(f"kills: {len(killer.kills)} {killer.kills}")
        print(
            f"ui: {len(ui.acked)} acked, {len(ui.retired)} retired, "
            f"{len(ui.maybe_retired)} unknown, {ui.stale_rejected} stale rejected"
        )

        where = f"(seed {seed})"
        violations: list[str] = []

        def check(ok: object, message: str) -> None:
            if not ok:
                violations.append(message)

        await call_until_ok(sup, "sup.wait_ready", {"timeout": 30})
        status = await call_until_ok(sup, "sup.status", {})
        check(
            all(a["state"] in ("running", "dormant") for a in status["actors"]),
            f"an actor was left failed {where}",
        )
        check(killer.kills, f"the run killed nothing {where}")
        killed = {name for name, _, _ in killer.kills}
        if len(killer.kills) >= len(killer.victims):  # a whole round: each kind once
            check(killed == set(killer.victims), f"not every kind was killed {where}")
        violations.extend(f"{v} {where}" for v in ui.violations)

        # Every terminal's received stream is complete and in order.
        for path in stop.values():
            touch(path)
        for sid in agents:
            await follower.wait_for(sid, b"end ")
        for sid in agents:
            received = bytes(follower.bufs[sid])
            last = int(received.rsplit(b"end ", 1)[1].split(b"\r\n", 1)[0])
            check(last > 0, f"{sid}: no output {where}")
            check(
                received.startswith(expected_stream(last)),
                (f"{sid}: stream incomplete or out of order {where}"),
            )
        print(
            f"streams: {[len(b) for b in follower.bufs.values()]} bytes, {follower.catch_ups} reads"
        )
        check(follower.trimmed == [], f"scrollback trimmed under the follower {where}")

        # Every agent started is still the same live process.
        listed = {s["sessionId"]: s for s in (await ptyd.call("term.list", {}))["sessions"]}
        for sid, agent in agents.items():
            check(agent["proc"].is_running(), f"agent {agent['pid']} died {where}")
            check(
                listed.get(sid, {}).get("pid") == agent["pid"] and listed[sid]["running"],
                f"{sid}: session lost its agent {where}",
            )

        # Every acknowledged-and-flushed mutation is present; no retired pane came back.
        session = (await store.call("session.get", {}))["session"]
        layouts = session.get("terminalLayoutsByTabId") or {}
        for tab, leaf in ui.acked.items():
            if tab in ui.retired or tab in ui.maybe_retired:
                continue
            check(layouts.get(tab) == layout_of({tab: leaf})[tab], f"lost acked {tab} {where}")
        text = json.dumps(layouts)
        for tab, leaf in ui.retired.items():
            check(leaf not in text, f"retired pane {tab} came back {where}")
        check(ui.acked and ui.retired, f"the UI workload did not run {where}")

        # The removed worktree stayed removed.
        listed_wts = [w["id"] for w in user.json("worktree", "ls")["worktrees"]]
        check(doomed_worktree not in listed_wts, f"removed worktree came back {where}")
        metas = (await store.invoke(S.WORKTREE_META_LIST)).worktree_meta
        check(doomed_worktree not in metas, f"removed worktree's meta came back {where}")

        # Every mirror equals its source.
        truth = rows_by_pane(await hooks_rows(hooks))
        term_truth = load_sessions(await ptyd.invoke(P.SNAPSHOT))
        layout_truth = session.get("terminalLayoutsByTabId")
        with trio.move_on_after(15):
            await rows.wait_until(lambda m: rows_by_pane(m.state) == truth)
            await sessions_mirror.wait_until(lambda m: m.state == term_truth)
            await layout_mirror.wait_until(
                lambda m: m.state.get("terminalLayoutsByTabId") == layout_truth
            )
        check(rows_by_pane(rows.state) == truth, f"hooks mirror differs {where}")
        check(sessions_mirror.state == term_truth, f"ptyd mirror differs {where}")
        check(
            layout_mirror.state.get("terminalLayoutsByTabId") == layout_truth,
            f"store session mirror differs {where}",
        )
        outer.cancel_scope.cancel()
        follower.zs.close()

    tree = int(json.loads(paths.lock_file.read_text())["pid"])
    keeper = keeper_pid(paths)
    everything = [tree, *descendants(tree), *(a["pid"] for a in agents.values())]
    everything += [] if keeper is None else [keeper]
    user.ok("down", "--kill-terminals")
    check(alive(everything) == [], f"orphans after down {where}")
    on_disk = json.loads(paths.state_file.read_text())
    disk_layouts = json.dumps(on_disk["workspaceSession"].get("terminalLayoutsByTabId") or {})
    for tab, leaf in ui.acked.items():
        if tab not in ui.retired and tab not in ui.maybe_retired:
            check(leaf in disk_layouts, f"acked {tab} missing on disk {where}")
    for leaf in ui.retired.values():
        check(leaf not in disk_layouts, f"retired leaf on disk {where}")


async def test_kill_9_chaos_keeps_agents_streams_and_acked_state(
    orca_home: Path, tmp_path: Path
) -> None:
    """Random kill -9 of store/ptyd/hooks/gitwatch/orcad/keeper for ORCA_CHAOS_S (60):
    every invariant holds."""
    duration = float(os.environ.get("ORCA_CHAOS_S", "60"))
    with trio.fail_after(duration + 150):
        await run_chaos(orca_home, tmp_path, duration)


@pytest.mark.soak
@pytest.mark.timeout(0)  # runs for ORCA_SOAK_S, longer than the suite's per-test safety net
async def test_kill_9_soak(orca_home: Path, tmp_path: Path) -> None:
    """The chaos run for ORCA_SOAK_S (600) seconds."""
    duration = float(os.environ.get("ORCA_SOAK_S", "600"))
    with trio.fail_after(duration + 300):
        await run_chaos(orca_home, tmp_path, duration)
