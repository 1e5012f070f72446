"""``orca ui`` answers a held permission request without typing into the PTY (issue 27)."""

from __future__ import annotations

import json
from typing import Any

from support.ui_pilot import ready
from support.web import PERMISSION_AGENT

from actors.ui.app import OrcaApp
from actors.ui.dialogs import ChoiceScreen
from orca.client.sync import invoke
from orca.contracts import ptyd
from orca.paths import resolve_paths


def _output(session_id: str) -> bytes:
    return bytes(invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=0)).data)


def test_the_status_bar_names_the_ask_and_the_palette_answers_it(tree: Any, drive: Any) -> None:
    """An agent asks for a permission: the status bar says so, the palette's command asks
    approve/deny, and "a" releases the agent (which runs the tool)."""
    hook = tree.user.hook_script
    session = json.loads(
        tree.user.ok("term", "new", "alpha", "--json", "--", "sh", str(PERMISSION_AGENT), str(hook))
    )["session"]
    sid = session["sessionId"]

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        await app.wait_for(lambda: b"agent: working" in _output(sid), 20)
        invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=sid, data=b"ask\n"))
        await app.wait_for(lambda: app.approvals is not None and bool(app.approvals.pending), 20)
        await app.wait_for(
            lambda: "asks: alpha Bash make deploy" in str(app.query_one("#status").render()), 10
        )
        (answer,) = [
            c.callback
            for c in app.get_system_commands(app.screen)
            if c.title.startswith("Answer: ")
        ]
        answer()
        await app.wait_for(lambda: isinstance(app.screen, ChoiceScreen), 10)
        await pilot.press("a")
        await app.wait_for(lambda: b"agent: ran make deploy" in _output(sid), 20)
        await app.wait_for(lambda: app.approvals is not None and not app.approvals.pending, 10)

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
