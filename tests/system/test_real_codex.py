"""The real Codex CLI (from npm) in an Orca terminal, against a fake of OpenAI's Responses
API on 127.0.0.1 (issue 40 items 7-8).

Codex 0.171 is driven offline through a ``[model_providers.NAME]`` table in
``$CODEX_HOME/config.toml`` (``base_url``, ``wire_api = "responses"``, ``env_key``) and
the project marked ``trust_level = "trusted"``; ``orca hooks install codex`` writes its
hooks and their trust entries into that same ``CODEX_HOME``. ``codex exec`` lights the
row and fills the vault; interactive Codex (``-a on-request``) asks on a session's first
turn, approved with ``orca approve``: the row goes blocked and stays so until the answer
(the legacy notify of Codex's title thread no longer ends it), then done; an ask denied
with ``orca deny`` runs nothing; ``y`` typed in Codex's terminal while Orca holds its
hook is lost (Codex draws its own dialog only after the hook returns): the row is
blocked again, saying it asks in its terminal, until Enter there runs the command; an
ask refused with Esc in Codex's terminal ends ``waiting``, never ``working``; ``/exit``
clears the row, ``kill -9`` of a second Codex ends its row ``pty_exited`` 137, and the
vault's tokens equal the usage the fake API returned for the sessions' turns.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.agent_clis import require_agent_cli
from support.dirwatch import until_exists
from support.fake_openai import FakeOpenAI, fake_openai
from support.journey import User, make_git_repo
from support.watch import Watch, state_is, until_screen, vault_total

from actors.hooks.agent_events import ANSWER_IN_TERMINAL
from actors.hooks.answer_watch import INTERRUPTED_DETAIL

READY = "Ask Codex"  # the placeholder of Codex's empty input box
DIALOG = "Press enter to confirm or esc to cancel"  # Codex's own permission dialog


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_agent_cli("codex")


@pytest.fixture
def world(orca_home: Path, tmp_path: Path, codex: Path) -> Iterator[tuple[User, FakeOpenAI, Path]]:
    user = User(orca_home, tmp_path / "user")
    codex_home = user.user_home / "codex-home"
    codex_home.mkdir()
    project = make_git_repo(tmp_path / "project")
    with fake_openai() as (fake, url):
        (codex_home / "config.toml").write_text(
            'model = "gpt-5-codex"\nmodel_provider = "fake"\n\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{url}"\n'
            'wire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n\n'
            f'[projects."{project}"]\ntrust_level = "trusted"\n'
        )
        user.env.update(
            {
                "CODEX_HOME": str(codex_home),
                "FAKE_OPENAI_KEY": "fake-key",
                "PATH": f"{codex.parent}:{user.env['PATH']}",
                "ORCA_VAULT_CODEX_DIRS": str(codex_home),
            }
        )
        user.ok("up")
        try:
            user.ok("hooks", "install", "codex")
            user.ok("repo", "add", str(project))
            yield user, fake, project
        finally:
            user.run("down", "--kill-terminals")


async def test_real_codex_turn_lights_and_vault(world: tuple[User, FakeOpenAI, Path]) -> None:
    """``codex exec`` in an Orca terminal: its hooks light the row working, then done;
    the vault indexes its rollout (the conversation, which Codex 0.171 writes only as
    response_item messages) and its tokens equal the usage the fake API returned."""
    user, fake, _project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(120):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal(
                "project", "codex", "exec", "orca-run: echo hello-from-codex ## zebrafish"
            )
            pane, handle = session["paneKey"], session["handle"]
            await watch.until(state_is(pane, "working"))
            await watch.until(state_is(pane, "done"))
            with fake.lock:
                sent = list(fake.usage)
            total = await trio.to_thread.run_sync(vault_total, user, len(sent))
            assert total["requests"] == len(sent)
            assert total["inputTokens"] + total["cacheReadTokens"] == sum(
                u["input_tokens"] for u in sent
            )
            assert total["outputTokens"] == sum(u["output_tokens"] for u in sent)
            # A word only the person typed: found in the conversation itself.
            found = user.json("vault", "search", "zebrafish")
            assert found["hits"], found
    except BaseException:
        screen = user.run("term", "read", handle).stdout if handle else ""
        compact = [(e["event"], e.get("state") or e.get("outcome"), e.get("detail")) for e in watch.lines]
        print("SCREEN", screen[-1500:], "\nWATCH", compact, "\nREQS", len(fake.requests))
        raise
    finally:
        watch.close()


async def test_real_codex_interactive_approved_denied_answered_refused_exit_and_kill(
    world: tuple[User, FakeOpenAI, Path],
) -> None:
    """Interactive Codex (``-a on-request``, the fake model asking to run a command
    outside the sandbox), one session:

    1. the session's first turn, approved with ``orca approve``: blocked until the answer
       (the legacy notify of Codex's title thread does not end it), then done;
    2. denied with ``orca deny``: nothing runs, the turn ends;
    3. answered in Codex's own terminal (``y``) while Orca holds: the hold is released at
       once, but Codex shows only a spinner while its hook runs (the key goes to its
       input box) and draws its own dialog after the hook returns: the row is ``blocked``, saying Codex
       asks in its terminal, never ``working`` while Codex waits on its dialog; Enter
       there runs the command and the turn ends done;
    4. Esc in Codex's terminal while Orca holds: the hold is released at once, Codex
       interrupts the turn with no hook, and the row is ``waiting``, never ``working``;

    then ``/exit`` clears the row, ``kill -9`` of a second Codex's process group ends its
    row ``pty_exited`` 137, and the vault's tokens equal the usage the fake API returned."""
    user, fake, project = world
    watch = Watch(user)
    handle = ""
    try:
        with trio.fail_after(240):
            await watch.live()
            session = user.new_terminal("project", "codex", "-a", "on-request")
            pane, handle, sid = session["paneKey"], session["handle"], session["sessionId"]

            async def screen_shows(needle: str) -> None:
                await trio.to_thread.run_sync(
                    until_screen, user, sid, pane, needle, abandon_on_cancel=True
                )

            await screen_shows(READY)

            async def prompt(text: str) -> dict[str, Any]:
                user.ok("term", "send", handle, text)
                await screen_shows(f"› {text}")
                user.ok("term", "send", handle, "\r")
                await watch.until(state_is(pane, "blocked"))
                return await watch.until(lambda e: e["event"] == "ask" and e["paneKey"] == pane)

            def answered(e: dict[str, Any]) -> bool:
                return e["event"] == "answered" and e["paneKey"] == pane

            def moved_on(e: dict[str, Any]) -> bool:
                return e["event"] == "set" and e["paneKey"] == pane and e["state"] != "working"

            # 1. The session's first turn, approved from Orca: blocked until the answer
            # (the legacy notify of Codex's title thread does not end it), then done.
            ask = await prompt("orca-ask: touch approved-one")
            assert (ask["toolName"], ask["summary"]) == ("Bash", "touch approved-one")
            assert user.ok("approve", handle).strip() == "allowed: Bash: touch approved-one"
            await watch.until(state_is(pane, "done"))
            # Codex runs the command in a terminal of its own and may end its turn (Stop)
            # before that terminal's touch has run (CI, 1 run in 5).
            await until_exists(project / "approved-one")
            first = watch.states(pane)
            assert first[first.index("blocked") + 1] == "working", first  # answered, not done

            # 2. Denied from Orca: nothing runs; Codex is told, and its turn ends.
            await prompt("orca-ask: touch denied-two")
            denied = user.json("deny", handle, "--reason", "not this one")["answer"]
            assert denied["settlement"]["outcome"] == "deny"
            ended = await watch.until(moved_on)
            assert ended["state"] in ("done", "waiting"), ended
            await screen_shows(READY)
            assert not (project / "denied-two").exists()

            # 3. Answered in Codex's own terminal while Orca holds (``y``): the hold is
            # released at once (answered there); Codex, which showed only a spinner while
            # its hook ran, then draws its own dialog and waits on it: the row is blocked
            # and says where to answer, never left working.
            await prompt("orca-ask: touch answered-three")
            user.ok("term", "send", handle, "y")
            assert (await watch.until(answered))["outcome"] == "answered_elsewhere"
            asks = await watch.until(moved_on)
            assert asks["state"] == "blocked", asks
            assert asks["detail"].startswith(ANSWER_IN_TERMINAL), asks
            await screen_shows(DIALOG)
            # Enter in Codex's dialog (its first choice: run it): the command runs and
            # the turn ends done.
            user.ok("term", "send", handle, "\r")
            await watch.until(state_is(pane, "done"))
            await until_exists(project / "answered-three")
            # The lost ``y`` went to Codex's input box: the user deletes it.
            await screen_shows("› y")
            user.ok("term", "send", handle, "\x7f")
            await screen_shows(READY)

            # 4. Esc in Codex's terminal while Orca holds: the hold is released at once
            # (answered there), Codex interrupts its turn, prints its line and sends no
            # hook: the row is waiting, never left working; nothing ran.
            await prompt("orca-ask: touch refused-four")
            user.ok("term", "send", handle, "\x1b")
            assert (await watch.until(answered))["outcome"] == "answered_elsewhere"
            idle = await watch.until(moved_on)
            assert (idle["state"], idle["detail"]) == ("waiting", INTERRUPTED_DETAIL), idle
            assert not (project / "refused-four").exists()
            states = watch.states(pane)
            assert states[0] == "waiting" and states[-1] == "waiting"

            # /exit: the terminal ends, its row goes.
            user.ok("term", "send", handle, "/exit")
            await screen_shows("› /exit")
            user.ok("term", "send", handle, "\r")
            await watch.until(lambda e: e["event"] == "clear" and e["paneKey"] == pane)

            # kill -9 of a second Codex (its whole process group, as the OOM killer or a
            # crash would leave it): no hook comes, its terminal ends, and the row goes
            # with the code the kill gave.
            # Codex 0.171 runs its SessionStart hook with the session's first turn: one
            # turn gives the second Codex its row. ``--no-daemon``: Codex 0.171's TUI is
            # a client of a shared background app server, started by the first Codex with
            # that terminal's environment and outliving it, which runs every later
            # session's hooks with the first terminal's pane (not fixed here: issue 40).
            second = user.new_terminal("project", "codex", "--no-daemon", "-a", "on-request")
            two = (user, second["sessionId"], second["paneKey"])
            await trio.to_thread.run_sync(until_screen, *two, READY, abandon_on_cancel=True)
            user.ok("term", "send", second["handle"], "hello")
            await trio.to_thread.run_sync(until_screen, *two, "› hello", abandon_on_cancel=True)
            user.ok("term", "send", second["handle"], "\r")
            await watch.until(state_is(second["paneKey"], "done"))
            os.killpg(second["pid"], signal.SIGKILL)  # the terminal's session leader
            gone = await watch.until(
                lambda e: e["event"] == "clear" and e["paneKey"] == second["paneKey"]
            )
            assert (gone["reason"], gone.get("exitCode")) == ("pty_exited", 137), gone

            # The vault's tokens are the usage the fake API returned for the sessions'
            # turns, exactly. Codex 0.171 also asks the model to name each interactive
            # session (a side thread offered no tools) and writes that usage to no
            # rollout: there is nothing on disk for the vault to count.
            with fake.lock:
                sent = [usage for body, usage in fake.exchanges if body.get("tools")]
            total = await trio.to_thread.run_sync(vault_total, user, len(sent))
            assert total["requests"] == len(sent)
            assert total["inputTokens"] + total["cacheReadTokens"] == sum(
                u["input_tokens"] for u in sent
            )
            assert total["outputTokens"] == sum(u["output_tokens"] for u in sent)
    except BaseException:
        screen = user.run("term", "read", handle).stdout if handle else ""
        compact = [(e["event"], e.get("state") or e.get("outcome"), e.get("detail"), e.get("paneKey", "")[-4:]) for e in watch.lines]
        print("SCREEN", screen[-2500:], "\nWATCH", compact, "\nREQS", len(fake.requests))
        for name in ("hooks", "ptyd"):
            log = user.paths.log_file(name)
            print(name.upper(), "LOG", log.read_text()[-3000:] if log.exists() else "none")
        raise
    finally:
        watch.close()
