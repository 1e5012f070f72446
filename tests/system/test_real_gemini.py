"""The real Gemini CLI (from npm) in an Orca terminal, against a fake of Google's Gemini
API on 127.0.0.1 (issue 40 items 7-8).

Gemini CLI 0.61 is driven offline through ``GOOGLE_GEMINI_BASE_URL`` (plain HTTP is
allowed to 127.0.0.1), any ``GEMINI_API_KEY``, ``security.auth.selectedType =
"gemini-api-key"`` in ``$HOME/.gemini/settings.json`` (where ``orca hooks install
gemini`` adds its hooks) and the project in ``$HOME/.gemini/trustedFolders.json``. It
is driven interactively, as a user runs it: its permission dialog exists only there.

Gemini's hooks hold nothing: its Notification hook (``ToolPermission``) says it asks,
and it asks in its own dialog. So the row goes blocked, ``orca approve`` and ``orca
deny`` say the agent is answered in its terminal, and the answer typed there settles it:
Enter ("Allow once") runs the command and the turn ends done; Esc ("No") leaves Gemini
idle at its prompt with no hook, and its "Request cancelled." line makes the row
waiting, never left working. ``/quit`` ends the session (SessionEnd clears the row);
``kill -9`` of a second Gemini (its process group) ends its terminal, and the row goes
with its exit code. The vault's token totals equal the usage the fake API returned.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.agent_clis import node_bin_dir, node_major, require_agent_cli
from support.fake_gemini import FakeGemini, fake_gemini
from support.journey import User, make_git_repo
from support.watch import Watch, state_is, until_screen, vault_total

from actors.hooks.agent_events import ANSWER_IN_TERMINAL
from actors.hooks.answer_watch import INTERRUPTED_DETAIL

READY = "Type your message"  # Gemini's empty input box
DIALOG = "Allow execution of"  # Gemini's permission dialog


# Gemini CLI 0.61 runs on Node 20 and later (its package's engines field, and its
# bundle uses Node 20 APIs); Debian 12's own nodejs is 18, so on such a machine the test
# puts Node's own npm-shipped binary (support.agent_clis.node_bin_dir) first on PATH.
GEMINI_NODE_MAJOR = 20

CI_VARIABLES = ("CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS")


@pytest.fixture(scope="module")
def gemini() -> list[Path]:
    """The folders to put first on the user's PATH: Gemini's bin/, and a Node >= 20's
    when the machine's is older."""
    node_dir = node_bin_dir(GEMINI_NODE_MAJOR)
    if node_dir is None and (node_major(shutil.which("node")) or 0) < GEMINI_NODE_MAJOR:
        message = f"Gemini CLI needs Node >= {GEMINI_NODE_MAJOR}, and npm could not install one"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI: .ci/run installs npm)")
        pytest.skip(message)
    binary = require_agent_cli("gemini")
    return [binary.parent] + ([node_dir] if node_dir is not None else [])


@pytest.fixture
def world(orca_home: Path, tmp_path: Path, gemini: list[Path]) -> Iterator[tuple[User, FakeGemini, Path]]:
    user = User(orca_home, tmp_path / "user")
    config = user.user_home / ".gemini"
    config.mkdir()
    project = make_git_repo(tmp_path / "project")
    (config / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},
            },
            indent=2,
        )
    )
    (config / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    # A CI machine's variables are not the user's shell's: Gemini takes CI=true (or
    # GITHUB_ACTIONS=true) for headless and exits "No input provided via stdin", and
    # its renderer (ink's is-in-ci) also looks at CONTINUOUS_INTEGRATION and CI_*.
    for name in [n for n in user.env if n in CI_VARIABLES or n.startswith("CI_")]:
        del user.env[name]
    with fake_gemini() as (fake, url):
        user.env.update(
            {
                "GOOGLE_GEMINI_BASE_URL": url,
                "GEMINI_API_KEY": "fake-gemini-key",
                "PATH": os.pathsep.join([*map(str, gemini), user.env["PATH"]]),
                # The vault reads the chats where the real CLI writes them.
                "ORCA_VAULT_GEMINI_DIRS": str(config),
            }
        )
        user.ok("up")
        try:
            user.ok("hooks", "install", "gemini")
            user.ok("repo", "add", str(project))
            yield user, fake, project
        finally:
            user.run("down", "--kill-terminals")


async def test_real_gemini_answered_and_cancelled_in_its_terminal(
    world: tuple[User, FakeGemini, Path],
) -> None:
    user, fake, project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(240):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal("project", "gemini")
            pane, handle, sid = session["paneKey"], session["handle"], session["sessionId"]

            async def screen_shows(needle: str) -> None:
                await trio.to_thread.run_sync(
                    until_screen, user, sid, pane, needle, abandon_on_cancel=True
                )

            await watch.until(state_is(pane, "waiting"))  # SessionStart
            await screen_shows(READY)

            async def prompt(text: str) -> None:
                """Type a prompt (Enter once it is in the box: Gemini takes a fast
                newline for part of a paste); until Gemini's dialog asks for the tool."""
                user.ok("term", "send", handle, text)
                await screen_shows(text.split(" ## ")[0])
                user.ok("term", "send", handle, "\r")
                await watch.until(state_is(pane, "working"))
                blocked = await watch.until(state_is(pane, "blocked"))
                # Every face shows the row's detail: it says where to answer.
                assert blocked["detail"].startswith(ANSWER_IN_TERMINAL), blocked
                await screen_shows(DIALOG)

            # 1. Asked in Gemini's own dialog: Orca holds nothing it could answer, and
            # says where to answer; Enter there ("Allow once") runs the command.
            await prompt("orca-run: touch answered-one ## zebrafish")
            for answer in (("approve", handle), ("deny", handle, "--reason", "no")):
                refused = user.run(*answer)
                assert refused.returncode == 2, refused
                assert "gemini asks in its own terminal" in refused.stderr
                assert f"orca term attach {handle}" in refused.stderr
            user.ok("term", "send", handle, "\r")
            await watch.until(state_is(pane, "done"))  # AfterAgent
            assert (project / "answered-one").exists()

            # 2. Refused in Gemini's own dialog (Esc): nothing runs, Gemini is idle at
            # its prompt: the row ends waiting or done, never left working.
            await prompt("orca-run: touch cancelled-two")
            user.ok("term", "send", handle, "\x1b")
            idle = await watch.until(
                lambda e: e["event"] == "set" and e["paneKey"] == pane and e["state"] != "working"
            )
            # Gemini sends no hook then (no AfterAgent): its "Request cancelled." line
            # on the screen settles the answered row.
            assert (idle["state"], idle["detail"]) == ("waiting", INTERRUPTED_DETAIL)
            assert not (project / "cancelled-two").exists()
            await screen_shows(READY)

            # /quit: the session ends (SessionEnd), its row goes.
            user.ok("term", "send", handle, "/quit")
            await screen_shows("/quit")
            user.ok("term", "send", handle, "\r")
            await watch.until(lambda e: e["event"] == "clear" and e["paneKey"] == pane)

            # kill -9 of a second Gemini: its terminal ends, the row goes with its code.
            # The whole process group at once: Gemini 0.61 relaunches itself in a child
            # process, which, sent SIGHUP when only its parent is killed, ends cleanly
            # (its SessionEnd hook runs) - that is /quit again, not a crash.
            second = user.new_terminal("project", "gemini")
            await watch.until(state_is(second["paneKey"], "waiting"))  # SessionStart
            os.killpg(second["pid"], signal.SIGKILL)  # the terminal's session leader
            gone = await watch.until(
                lambda e: e["event"] == "clear" and e["paneKey"] == second["paneKey"]
            )
            assert (gone["reason"], gone.get("exitCode")) == ("pty_exited", 137), gone

            states = watch.states(pane)
            assert states[0] == "waiting" and "blocked" in states and states[-1] != "working"

            # The vault's tokens are the usage the fake API returned, exactly.
            with fake.lock:
                sent = list(fake.usage)
            total = await trio.to_thread.run_sync(vault_total, user, len(sent))
            assert total["requests"] == len(sent)
            assert total["inputTokens"] + total["cacheReadTokens"] == sum(
                u["promptTokenCount"] for u in sent
            )
            assert total["outputTokens"] == sum(u["candidatesTokenCount"] for u in sent)
            # A word only the person typed: found in the conversation itself.
            found = user.json("vault", "search", "zebrafish")
            assert found["hits"], found
    except BaseException:
        screen = user.run("term", "read", handle).stdout if handle else ""
        compact = [
            (e["event"], e.get("state") or e.get("outcome"), e.get("detail")) for e in watch.lines
        ]
        print("SCREEN", screen[-2500:], "\nWATCH", compact, "\nREQS", [p for p, _ in fake.requests])
        raise
    finally:
        watch.close()
