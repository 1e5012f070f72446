"""Issue 40 item 5: ``orca watch`` without ``--json`` says what an agent asks, how to
answer it, and how it was answered (the ``--json`` lines are the system tests')."""

from __future__ import annotations

from types import SimpleNamespace

from orca.cli.watch import _human
from orca.cli.watch_lines import answered_line, ask_line


def test_an_ask_and_its_answer_read_as_lines_a_person_acts_on() -> None:
    request = SimpleNamespace(
        pane_key="tab-1:pane-1", worktree_id="wt-1", agent="claude", request_id="r1",
        tool_name="Bash", summary="make deploy", expires_at_ms=0,
    )  # fmt: skip
    ask = {**ask_line(request), "handle": "fix-auth:8d35"}
    text = _human(ask)
    assert text.endswith(
        "  fix-auth:8d35  claude  asks Bash: make deploy"
        "  (orca approve fix-auth:8d35 | orca deny fix-auth:8d35)"
    ), text
    settlement = SimpleNamespace(
        pane_key="tab-1:pane-1", worktree_id="wt-1", request_id="r1", outcome="deny", by="cli"
    )
    answered = {**answered_line(settlement), "handle": "fix-auth:8d35"}
    assert _human(answered).endswith("  fix-auth:8d35  answered: deny by cli")
    request.summary = ""
    assert _human({**ask_line(request), "handle": "h:1"}).endswith(
        "  h:1  claude  asks Bash  (orca approve h:1 | orca deny h:1)"
    )
