"""``orca ui`` (issue 17): first paint, idle CPU, and 20 agents printing, in one run.

Against a real tree (``orca up`` in a fresh ORCA_HOME) holding one repo with 100
worktrees, each with one terminal tab of 3 panes in the store's workspace session and
3 agent rows (structured rows: no PTY needed for the sidebar's lights); the selected
worktree's 3 panes have live terminals. The UI runs headless (Textual's ``run_test``,
the same app object ``orca ui`` runs), in this process, so its CPU is this process's.

1. First paint: from constructing the app to a view with every worktree in the
   sidebar and the 3 panes attached and drawn. Baseline: `orca worktree ps --json`
   (the CLI reading the same rows), same run.
2. Idle CPU with the 100 worktrees: the UI's CPU over ``IDLE_S`` with nothing
   happening (goal ~0 %: no polling loop). Baseline: an empty Textual app idle as long.
3. 20 agents printing continuously (4 of them in visible panes, a split tab): the UI's
   CPU, frames rendered, and input-to-echo latency in a 5th visible pane running
   ``cat`` (type a token, time until the pane's screen shows it), p50/p99. Baseline:
   the same echo through ``orca term attach``'s client (``TerminalStream``, ptyd's
   attach stream); for reference also the RPC-per-key client (``Attachment``).

    python bench/ui.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.ui import layout  # noqa: E402
from actors.ui.app import OrcaApp  # noqa: E402
from orca.client.sync import invoke  # noqa: E402
from orca.client.terminal import Attachment, TerminalStream  # noqa: E402
from orca.contracts import hooks, ptyd, store  # noqa: E402
from orca.model.panes import make_pane_key  # noqa: E402
from orca.paths import OrcaPaths, resolve_paths  # noqa: E402

WORKTREES, PANES = 100, 3
PRINTERS = 20
IDLE_S = 5.0
LOAD_S = 5.0
ECHOES = 100  # p99 of 100 samples (of 30 it would be the maximum)
SIZE = (160, 48)
# A printer that forks nothing (a shell loop calling date and sleep forks 200 times a
# second each: the fork storm, not the UI, would be measured). Run with sys.executable.
PRINTER = (
    "import sys, time\n"
    "i = 0\n"
    "while True:\n"
    "    i += 1\n"
    "    sys.stdout.write(f'line {i} {time.time():.6f}\\n')\n"
    "    sys.stdout.flush()\n"
    "    time.sleep(0.01)\n"
)


def orca(env: dict[str, str], *args: str) -> str:
    argv = [sys.executable, "-m", "orca.cli.main", *args]
    return subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", "-C", str(path), *args],
        check=True,
        capture_output=True,
    )


def make_repo(path: Path) -> None:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("bench\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    for w in range(WORKTREES):  # git itself: gitwatch lists them when the repo is added
        git(path, "worktree", "add", "-q", "-b", f"wt-{w:03d}", str(path.parent / f"wt-{w:03d}"))


def cpu() -> float:
    return time.process_time()


def spawn(paths: OrcaPaths, worktree_id: str, cwd: str, pane: str, argv: list[str]) -> str:
    args = ptyd.SpawnArgs(
        argv=argv, cwd=cwd, worktree_id=worktree_id, pane_key=pane, cols=70, rows=20
    )
    return invoke(ptyd.SPAWN, args, paths=paths).session_id


def populate(paths: OrcaPaths, root: Path) -> tuple[str, list[str]]:
    """Layout + rows for every worktree; live terminals for the first one's panes."""
    from orca.contracts import gitwatch

    for _ in range(300):  # gitwatch lists the repo's worktrees once it has scanned it
        listing = invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs(), paths=paths, timeout=30)
        rows = [r for r in listing.worktrees if not r.is_main_worktree]
        if len(rows) >= WORKTREES:
            break
        time.sleep(0.1)
    assert len(rows) == WORKTREES, len(rows)
    session = invoke(store.SESSION_GET, store.SessionGetArgs(), paths=paths).session
    panes: dict[str, list[str]] = {}
    for row in rows:
        session, tab, leaf = layout.add_terminal_tab(session, row.id, "agent", 0)
        session, second = layout.split_pane(session, tab, leaf, "vertical")
        session, third = layout.split_pane(session, tab, second, "horizontal")
        panes[row.id] = [make_pane_key(tab, x) for x in (leaf, second, third)]
        for p, pane in enumerate(panes[row.id]):
            state = ("working", "attention", "idle")[p]
            invoke(
                hooks.INGEST_STRUCTURED,
                hooks.IngestStructuredArgs(
                    pane_key=pane,
                    worktree_id=row.id,
                    state=state,  # type: ignore[arg-type]
                    structured_host="bench",
                    agent="claude",
                ),
                paths=paths,
            )
    first = rows[0]
    session = layout.select_worktree(session, first.id)
    invoke(
        store.SESSION_PATCH, store.SessionPatchArgs(patch=layout.layout_patch(session)), paths=paths
    )
    for pane in panes[first.id]:
        spawn(paths, first.id, first.path, pane, ["/bin/sh"])
    return first.id, [r.id for r in rows]


async def first_paint_and_idle(paths: OrcaPaths) -> dict[str, float]:
    figures: dict[str, float] = {}
    t0 = time.perf_counter()
    app = OrcaApp(paths, bell=False)
    async with app.run_test(size=SIZE):

        def painted() -> bool:
            views = app.pane_views()
            return (
                sum(1 for _ in app.items()) >= WORKTREES
                and len(views) == PANES
                and all(v.feed is not None and v.feed.attached.is_set() for v in views)
            )

        await asyncio.wait_for(app.wait_for(painted, 60), 60)
        await asyncio.sleep(0)  # the frame with the attached screens
        figures["first_paint_s"] = time.perf_counter() - t0
        await asyncio.sleep(1.0)  # settle (resizes, leases)
        c0, r0 = cpu(), app.renders
        await asyncio.sleep(IDLE_S)
        figures["idle_cpu_pct"] = (cpu() - c0) / IDLE_S * 100
        figures["idle_refreshes"] = app.renders - r0
    return figures


async def empty_app_idle() -> float:
    from textual.app import App

    async with App().run_test(size=SIZE):
        await asyncio.sleep(1.0)
        c0 = cpu()
        await asyncio.sleep(IDLE_S)
        return (cpu() - c0) / IDLE_S * 100


async def under_load(paths: OrcaPaths, worktree_id: str, cwd: str) -> dict[str, Any]:
    """20 printers (4 visible) + a visible ``cat``: UI CPU, frames, echo latency."""
    session = invoke(store.SESSION_GET, store.SessionGetArgs(), paths=paths).session
    session, tab, leaf = layout.add_terminal_tab(session, worktree_id, "load", 0)
    leaves = [leaf]
    for direction in ("vertical", "horizontal", "vertical", "horizontal"):
        session, new = layout.split_pane(session, tab, leaves[-1], direction)  # type: ignore[arg-type]
        leaves.append(new)
    invoke(
        store.SESSION_PATCH, store.SessionPatchArgs(patch=layout.layout_patch(session)), paths=paths
    )
    visible = [make_pane_key(tab, x) for x in leaves]
    for pane in visible[:4]:
        spawn(paths, worktree_id, cwd, pane, [sys.executable, "-c", PRINTER])
    for n in range(PRINTERS - 4):
        hidden = make_pane_key(f"hidden{n}", str(uuid.uuid4()))
        spawn(paths, worktree_id, cwd, hidden, [sys.executable, "-c", PRINTER])
    cat_pane = visible[4]
    cat_session = spawn(paths, worktree_id, cwd, cat_pane, ["/bin/cat"])
    out: dict[str, Any] = {}
    app = OrcaApp(paths, bell=False)
    async with app.run_test(size=SIZE):
        await app.wait_for(
            lambda: (
                len(app.pane_views()) == 5
                and all(v.feed is not None and v.feed.attached.is_set() for v in app.pane_views())
            ),
            60,
        )
        await asyncio.sleep(1.0)
        view = app.pane_view(cat_pane)
        assert view is not None
        c0, r0, t0 = cpu(), app.renders, time.perf_counter()
        frames0 = sum(v.model.version for v in app.pane_views())
        latencies = []
        for i in range(ECHOES):
            token = f"tok{i:03d}x"
            s = time.perf_counter()
            view = app.pane_view(cat_pane) or view
            view.send(token.encode() + b"\r")
            seen = [-1]

            def echoed(t: str = token, seen: list[int] = seen, fallback: Any = view) -> bool:
                # Read the screen only when the cat pane's model changed (a poke comes
                # from every pane's output; the check must not be the load).
                current = app.pane_view(cat_pane) or fallback
                if current.model.version == seen[0]:
                    return False
                seen[0] = current.model.version
                return t in current.screen_text()

            await app.wait_for(echoed, 10)
            latencies.append(time.perf_counter() - s)
            await asyncio.sleep(LOAD_S / ECHOES)
        elapsed = time.perf_counter() - t0
        out["cpu_pct"] = (cpu() - c0) / elapsed * 100
        out["view_refreshes_per_s"] = (app.renders - r0) / elapsed
        out["screen_updates_per_s"] = (
            sum(v.model.version for v in app.pane_views()) - frames0
        ) / elapsed
        out["echo"] = latencies
    out["cat_session"] = cat_session
    return out


def attach_echo(paths: OrcaPaths, cat_session: str) -> list[float]:
    """Baseline: the same echo through ``orca term attach``'s client (``TerminalStream``,
    ptyd's attach stream, blocking)."""
    stream, _screen = TerminalStream.open(cat_session, paths, flat=True)
    try:
        base = []
        for i in range(ECHOES):
            token = f"raw{i:03d}y".encode()
            s = time.perf_counter()
            stream.write(token + b"\r")
            seen = b""
            while token not in seen:
                for data, _repaint in stream.poll_output(1000):
                    seen += data
            base.append(time.perf_counter() - s)
            time.sleep(LOAD_S / ECHOES)
            stream.keepalive()
        return base
    finally:
        stream.close()


def rpc_echo(paths: OrcaPaths, cat_session: str) -> list[float]:
    """For reference: the same echo with a ``term.write`` RPC per key and output from
    ptyd's PUB socket (``Attachment``, the path before the attach stream)."""
    attachment = Attachment.open(cat_session, paths)
    try:
        base = []
        for i in range(ECHOES):
            token = f"rpc{i:03d}z".encode()
            s = time.perf_counter()
            attachment.write(token + b"\r")
            seen = b""
            while token not in seen:
                for data, _repaint in attachment.poll_output(1000):
                    seen += data
            base.append(time.perf_counter() - s)
            time.sleep(LOAD_S / ECHOES)
        return base
    finally:
        attachment.close()


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="orca-ui-bench-"))
    env = dict(os.environ, ORCA_HOME=str(root / "home"), HOME=str(root / "user"))
    os.environ["ORCA_HOME"] = env["ORCA_HOME"]
    make_repo(root / "project")
    orca(env, "up")
    try:
        orca(env, "repo", "add", str(root / "project"))
        paths = resolve_paths(env)
        first, _all = populate(paths, root)
        t0 = time.perf_counter()
        orca(env, "worktree", "ps", "--json")
        ps_s = time.perf_counter() - t0
        figures = asyncio.run(first_paint_and_idle(paths))
        empty = asyncio.run(empty_app_idle())
        print(
            f"first paint, {WORKTREES} worktrees x {PANES} panes: {figures['first_paint_s'] * 1000:.0f} ms"
            f" (goal < 1000 ms); `orca worktree ps --json` same rows: {ps_s * 1000:.0f} ms"
            f" (ratio {figures['first_paint_s'] / ps_s:.2f}x)"
        )
        print(
            f"idle UI CPU over {IDLE_S:g} s: {figures['idle_cpu_pct']:.2f} %"
            f" ({figures['idle_refreshes']:.0f} view refreshes); empty Textual app: {empty:.2f} %"
        )
        cwd = next(r.cwd for r in invoke(ptyd.LIST, ptyd.ListArgs(), paths=paths).sessions)
        load = asyncio.run(under_load(paths, first, cwd))
        echo, base = load["echo"], attach_echo(paths, load["cat_session"])
        rpc = rpc_echo(paths, load["cat_session"])
        print(
            f"{PRINTERS} agents printing (4 visible): UI CPU {load['cpu_pct']:.1f} %,"
            f" {load['screen_updates_per_s']:.0f} screen updates/s,"
            f" {load['view_refreshes_per_s']:.1f} view refreshes/s"
        )
        print(
            f"input-to-echo in the UI: p50 {pct(echo, 0.5):.1f} ms p99 {pct(echo, 0.99):.1f} ms;"
            f" orca term attach client: p50 {pct(base, 0.5):.1f} ms p99 {pct(base, 0.99):.1f} ms;"
            f" p99 ratio {pct(echo, 0.99) / max(pct(base, 0.99), 0.001):.2f}x (goal <= 2x)"
            f" (median ratio {statistics.median(echo) / statistics.median(base):.2f}x)"
        )
        print(
            f"(reference: term.write RPC + PUB client: p50 {pct(rpc, 0.5):.1f} ms"
            f" p99 {pct(rpc, 0.99):.1f} ms)"
        )
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    finally:
        orca(env, "down", "--kill-terminals")


if __name__ == "__main__":
    main()
