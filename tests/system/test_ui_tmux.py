"""``orca ui`` in a real terminal (a tmux pane): it shows two agents, one is entered
(zoom: a raw ``orca term attach``), typed into and left with the detach key; ``kill -9``
of the UI leaves both agents running, and a new ``orca ui`` shows the same layout and
screens (issue 17).

The tmux server is private (``-S`` socket in the test's temp dir) and killed after.
Waiting is event-driven: the pane's output is piped to a FIFO (``pipe-pane``) and the
screen is captured (``capture-pane``) only after the pane printed something new.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio
from support.actors import kill_9_and_wait
from support.journey import FAKE_AGENT, User, make_git_repo

from orca.client.sync import invoke
from orca.contracts import ptyd, store
from orca.model import tab_groups as layout
from orca.model.panes import make_pane_key

COLS, ROWS = 150, 40
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """A private tmux server with one window running ``argv``; its output piped to us."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.socket = str(tmp / "tmux.sock")
        self.env = env
        self.fifo = tmp / "pane.fifo"
        os.mkfifo(self.fifo, 0o600)
        # O_RDWR: the open does not wait for a writer and never sees EOF.
        self.fd = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK)
        self.server_pid: int | None = None

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        return done.stdout.strip()

    def start(self, argv: list[str]) -> int:
        """A new window running ``argv``: the pid of its process."""
        if self.server_pid is None:
            # A first, idle window keeps the server when the UI's window dies (kill -9).
            self.run("new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "/bin/sh")
            self.server_pid = int(self.run("display", "-p", "#{pid}"))
        self.run("new-window", *argv)
        self.run("pipe-pane", "-O", f"cat > {self.fifo}")
        return int(self.run("display", "-p", "#{pane_pid}"))

    def capture(self) -> str:
        return self.run("capture-pane", "-p")

    async def wait_screen(self, predicate: object, what: str, timeout: float = 30) -> str:
        """Until ``predicate(screen)`` holds, re-captured after each burst of output."""
        assert callable(predicate)
        with trio.move_on_after(timeout):
            while True:
                screen = self.capture()
                if predicate(screen):
                    return screen
                await trio.lowlevel.wait_readable(self.fd)
                while True:  # drain the burst, then capture once
                    try:
                        if not os.read(self.fd, 65536):
                            break
                    except BlockingIOError:
                        break
        raise AssertionError(f"{what} never showed; screen:\n{self.capture()}")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", *keys)

    def close(self) -> None:
        try:
            self.run("kill-server")
        except subprocess.SubprocessError:
            pass
        if self.server_pid is not None:
            try:
                os.kill(self.server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.close(self.fd)


@pytest.fixture
def world(orca_home: Path, tmp_path: Path) -> Iterator[tuple[User, Tmux]]:
    user = User(orca_home, tmp_path / "user")
    assert "every actor ready" in user.ok("up")
    env = {**user.env, "TERM": "xterm-256color"}
    tmux = Tmux(tmp_path, env)
    try:
        yield user, tmux
    finally:
        tmux.close()
        log = user.paths.log_dir / "ui.log"
        if log.exists():  # shown by pytest when the test failed
            print(f"--- {log}:\n{log.read_text(errors='replace')[-4000:]}")
        user.run("down", "--kill-terminals")


def _layout_two_agents(user: User, tmp_path: Path) -> tuple[dict[str, str], dict[str, int]]:
    """A repo, worktrees alpha and beta, one fake agent in a tab of each (the layout in
    the store, the agents in ptyd): what a user had left from an earlier `orca ui`."""
    project = make_git_repo(tmp_path / "project")
    user.ok("repo", "add", str(project))
    user.ok("hooks", "install", "claude")
    (repo,) = user.json("repo", "ls")["repos"]
    ids, pids = {}, {}
    session = invoke(store.SESSION_GET, store.SessionGetArgs(), paths=user.paths).session
    spawns = []
    for name in ("alpha", "beta"):
        row = user.json("worktree", "create", repo["id"], name, "--setup", "skip")["worktree"]
        ids[name] = row["worktreeId"]
        session, tab, leaf = layout.add_terminal_tab(
            session, ids[name], "claude", int(time.time() * 1000)
        )
        spawns.append((name, row["path"], make_pane_key(tab, leaf)))
    session = layout.select_worktree(session, ids["alpha"])
    written = invoke(
        store.SESSION_PATCH,
        store.SessionPatchArgs(patch=layout.layout_patch(session)),
        paths=user.paths,
    )
    assert written.applied == "full"
    for name, path, pane in spawns:
        args = ptyd.SpawnArgs(
            argv=[str(FAKE_AGENT), str(user.hook_script)],
            cwd=path,
            worktree_id=ids[name],
            pane_key=pane,
            cols=100,
            rows=30,
        )
        pids[name] = invoke(ptyd.SPAWN, args, paths=user.paths).pid
    return ids, pids


async def test_ui_in_tmux_zoom_detach_kill_9_and_restore(
    world: tuple[User, Tmux], tmp_path: Path
) -> None:
    user, tmux = world
    with trio.fail_after(150):
        _ids, pids = _layout_two_agents(user, tmp_path)
        ui = [sys.executable, "-m", "orca.cli.main", "ui", "--no-bell"]
        ui_pid = tmux.start(ui)
        screen = await tmux.wait_screen(
            lambda s: "alpha" in s and "beta" in s and s.count("●") >= 2 and "agent: working" in s,
            "two working agents and alpha's screen",
        )
        assert "orcad:up" in screen
        # Enter alpha's agent: the sidebar's Enter focuses its pane, the leader + z zooms.
        tmux.keys("Enter")
        tmux.keys("C-g", "z")
        # The attach clears the screen and redraws the agent's (the UI's header is gone):
        # only then is the tty raw (typed earlier, tty.setraw's flush would drop it).
        await tmux.wait_screen(
            lambda s: "agent: working" in s and "orcad:up" not in s and "zoomed" not in s,
            "the raw attach",
        )
        tmux.keys("-l", "hello-ui")
        tmux.keys("Enter")
        await tmux.wait_screen(lambda s: "agent: prompt hello-ui" in s, "the agent's answer")
        tmux.keys("C-]")
        await tmux.wait_screen(
            lambda s: "beta" in s and "orcad:up" in s and "agent: prompt hello-ui" in s,
            "back in the UI, the pane showing the exchange",
        )
        # Typed into the embedded pane (not zoomed): the keys go in as the UI reads
        # them, and the pane writes its echo and the answer out itself.
        tmux.keys("-l", "typed-in-ui")
        tmux.keys("Enter")
        await tmux.wait_screen(
            lambda s: "agent: echo typed-in-ui" in s and "orcad:up" in s,  # (done: echoes)
            "the answer to a line typed in the UI's pane",
        )

        # Not our child (tmux's, which may reap it at once): killed and awaited through
        # one pidfd, never looked up by its pid after the kill.
        with trio.fail_after(10):
            await kill_9_and_wait(ui_pid)
        alive = {name: psutil.pid_exists(pid) for name, pid in pids.items()}
        assert alive == {"alpha": True, "beta": True}, "kill -9 of the UI ends no agent"
        sessions = {
            s.pane_key: s for s in invoke(ptyd.LIST, ptyd.ListArgs(), paths=user.paths).sessions
        }
        assert all(s.running for s in sessions.values())

        tmux.start(ui)
        screen = await tmux.wait_screen(
            lambda s: (
                "alpha" in s and "beta" in s and "agent: prompt hello-ui" in s and "1:claude" in s
            ),
            "the same layout and screen in a new UI",
        )
        assert screen.count("●") + screen.count("✓") >= 2


async def test_a_terminal_started_from_the_cli_is_typed_into_from_the_ui(
    world: tuple[User, Tmux], tmp_path: Path
) -> None:
    """One truth in both faces (issue 23): a user starts a shell with `orca term new`,
    opens `orca ui` in a real terminal, finds the shell in the worktree's pane (adopted
    into a tab), types into it, and reads the answer there and with `orca term read`;
    a smaller window (`tmux resize-window`) still shows it all."""
    user, tmux = world
    with trio.fail_after(120):
        project = make_git_repo(tmp_path / "project")
        user.ok("repo", "add", str(project))
        (repo,) = user.json("repo", "ls")["repos"]
        user.json("worktree", "create", repo["id"], "alpha", "--setup", "skip")
        user.ok("term", "new", "alpha", "--", "sh", "-c", "echo started-by-cli; exec sh")
        tmux.start([sys.executable, "-m", "orca.cli.main", "ui", "--no-bell"])
        await tmux.wait_screen(lambda s: "alpha" in s and "orcad:up" in s, "the sidebar")
        tmux.keys("Down")  # from the repo's main worktree (open first) to alpha
        await tmux.wait_screen(lambda s: "› · alpha" in s, "the cursor on alpha")
        tmux.keys("Enter")
        await tmux.wait_screen(
            lambda s: "started-by-cli" in s and "1:sh" in s, "the CLI's terminal in a tab"
        )
        tmux.keys("-l", "echo typed-in-ui-$((6*7))")
        tmux.keys("Enter")
        await tmux.wait_screen(lambda s: "typed-in-ui-42" in s, "the shell's answer in the UI")
        read = user.ok("term", "read", "alpha")
        assert "typed-in-ui-42" in read
        tmux.run("resize-window", "-x", "100", "-y", "30")
        await tmux.wait_screen(
            lambda s: (
                "started-by-cli" in s and "typed-in-ui-42" in s and len(s.split("\n")[0]) <= 100
            ),
            "the pane's screen after a smaller window",
        )
