"""The TUI shows a remote host's agents beside the local ones, labelled (issue 18).

Two real trees on loopback (as tests/system/test_remote_readers.py): "buildbox" serves
with its gateway on 127.0.0.1, "laptop" follows it (``orca host add``) and runs the UI.
The link is lost by stopping buildbox's gateway (SIGSTOP: no replies, no heartbeats,
its agent keeps running); the laptop's gateway marks the host unverifiable and the UI
keeps the row, shown unverifiable (never live, never cleared), then live again after
SIGCONT.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.journey import make_git_repo
from support.procs import FIXTURES
from support.remote import Tree, loopback_pair

from actors.ui.app import OrcaApp
from actors.ui.widgets import Sidebar

AGENT = FIXTURES / "support" / "remote_agent.sh"


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Tree, Tree]]:
    with loopback_pair(tmp_path) as (laptop, buildbox):
        monkeypatch.setenv("ORCA_HOME", str(laptop.home))  # the UI runs on the laptop
        yield laptop, buildbox


def sidebar_lines(app: OrcaApp) -> list[str]:
    sidebar = app.query_one(Sidebar)
    return [str(sidebar.get_option_at_index(i).prompt) for i in range(sidebar.option_count)]


def remote_section(app: OrcaApp, host: str) -> list[str]:
    """The lines of ``host``'s group: its title, then its rows (empty if not shown)."""
    lines = sidebar_lines(app)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{host} (remote)")), None)
    if start is None:
        return []
    rest = lines[start + 1 :]
    end = next((i for i, line in enumerate(rest) if not line.startswith("  ")), len(rest))
    return [lines[start], *rest[:end]]


def test_remote_agent_rows_labelled_then_unverifiable(
    pair: tuple[Tree, Tree], tmp_path: Path, drive: Any
) -> None:
    laptop, buildbox = pair
    remote_repo = make_git_repo(tmp_path / "remote-proj")
    buildbox.ok("repo", "add", str(remote_repo))
    buildbox.ok("term", "new", "remote-proj", "--", str(AGENT), str(tmp_path / "stop"))
    local_repo = make_git_repo(tmp_path / "local-proj")
    laptop.ok("repo", "add", str(local_repo))
    laptop.ok("term", "new", "local-proj", "--", str(AGENT), str(tmp_path / "stop-local"))
    gateway = buildbox.restarts()["gateway"][0]
    assert isinstance(gateway, int)

    def remote_working(app: OrcaApp) -> bool:
        section = remote_section(app, "buildbox")
        return any(
            "●" in line and "remote-proj" in line and "@buildbox" in line for line in section[1:]
        )

    def remote_unverifiable(app: OrcaApp) -> bool:
        section = remote_section(app, "buildbox")
        return (
            bool(section)
            and "unverifiable since" in section[0]
            and any(
                "?" in line and "remote-proj" in line and "unverifiable since" in line
                for line in section[1:]
            )
        )

    def local_shown(app: OrcaApp) -> bool:
        return any("local-proj" in line for line in sidebar_lines(app))

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        # Both arrive on their own links, in either order: wait for both.
        await app.wait_for(lambda: remote_working(app) and local_shown(app), timeout=25)
        lines = sidebar_lines(app)
        # The local agent's row is there too, in its own (local) group, unlabelled.
        local = [line for line in lines if "local-proj" in line]
        assert local and all("@" not in line for line in local), lines
        assert lines.index(local[0]) < lines.index(remote_section(app, "buildbox")[0])
        # Read-only: no remote row can be selected (its terminals are not entered here).
        assert all(w.host == "" for w in app.items())
        os.kill(gateway, signal.SIGSTOP)  # the link is lost; buildbox's agent runs on
        try:
            await app.wait_for(lambda: remote_unverifiable(app), timeout=20)
            section = remote_section(app, "buildbox")
            assert not any("●" in line for line in section[1:]), section  # never shown live
            assert len(section) == 2, section  # the row kept, not cleared
        finally:
            os.kill(gateway, signal.SIGCONT)
        await app.wait_for(lambda: remote_working(app) and not remote_unverifiable(app), timeout=25)

    drive(OrcaApp(laptop.paths, bell=False), scenario, timeout=55)


def _mirror(reachable: bool) -> Any:
    from orca.contracts import gateway as gw
    from orca.contracts import ptyd
    from orca.model.agent_status import AgentStatusRow

    link = gw.HostLink(
        name="box",
        host_id="runtime:box",
        endpoint="tcp://127.0.0.1:1",
        reachable=reachable,
        unverifiable_since=None if reachable else 1_700_000_000.0,
        last_contact=None,
        resyncs=0,
        error="",
    )
    row = AgentStatusRow(
        pane_key="t1:l1",
        worktree_id="r1::/srv/proj",
        state="blocked",
        source="hook",
        updated_at_ms=990,
        state_since_ms=990,
        agent="claude",
        host_id="runtime:box",
    )
    return gw.HostMirror(
        link=link,
        rows=[row],
        fates=[],
        sessions=[
            ptyd.SessionRow(
                session_id="r1::/srv/proj@@00000001",
                host_id="runtime:box",
                worktree_id="r1::/srv/proj",
                pane_key="t1:l1",
                tab_id="t1",
                terminal_handle="h1",
                argv=["sh"],
                cwd="/srv/proj",
                pid=1,
                cols=80,
                rows=24,
                created_at=0.0,
                exit_code=None,
                running=True,
                end_offset=0,
                subscribers=0,
            )
        ],
        worktrees=[{"id": "r1::/srv/proj", "path": "/srv/proj"}],
    )


def test_remote_groups_projection_live_and_unverifiable() -> None:
    """Pure: a live host's rows keep the model's state; a lost host's rows are kept,
    each light ``unverifiable`` (never needing the user, never live)."""
    from actors.ui.view import build_remote_groups

    (live,) = build_remote_groups([_mirror(True)], now_ms=1_000)
    assert live.name == "box (remote)"
    (item,) = live.worktrees
    assert item.host == "box" and item.name == "proj" and item.unverifiable is None
    assert [light.state for light in item.lights] == ["blocked"] and item.needs_me
    (lost,) = build_remote_groups([_mirror(False)], now_ms=1_000)
    assert lost.name.startswith("box (remote) - unverifiable since ")
    (stale,) = lost.worktrees
    assert stale.unverifiable is not None and stale.unverifiable.startswith("unverifiable since")
    assert [light.state for light in stale.lights] == ["unverifiable"] and not stale.needs_me
    assert "last seen blocked" in stale.lights[0].detail
    assert (
        build_remote_groups([_mirror(True)], now_ms=1_000, filter_text="nomatch")[0].worktrees == ()
    )
