"""A remote attach ends with the program's exit code, not before it is known."""

from __future__ import annotations

from typing import Any

from orca.cli.remote.terminal import RemoteStream
from orca.contracts import ptyd


class ScriptedLink:
    """The gateway's answers in order (``termWait``/``term.read`` replies)."""

    def __init__(self, replies: list[ptyd.ReadResult]) -> None:
        self.replies = replies

    def invoke(self, _op: Any, _args: Any, **_kw: Any) -> ptyd.ReadResult:
        return self.replies.pop(0)


def reply(offset: int, data: bytes, *, running: bool, ended: bool, code: int | None) -> Any:
    return ptyd.ReadResult(
        session_id="s",
        offset=offset,
        data=data,
        end=offset + len(data),
        gap=False,
        running=running,
        exit_code=code,
        output_ended=ended,
    )


def test_the_attach_waits_for_the_exit_code_after_the_output_ended() -> None:
    """The PTY's output ends a moment before ptyd reaps the program: the stream keeps
    asking until the exit is known (it stopped at "exited None")."""
    link = ScriptedLink(
        [
            reply(0, b"screen", running=True, ended=False, code=None),
            reply(6, b"last", running=True, ended=True, code=None),
            reply(10, b"", running=True, ended=True, code=None),
            reply(10, b"", running=False, ended=True, code=3),
        ]
    )
    stream = RemoteStream(link, "s")  # type: ignore[arg-type]
    shown: list[bytes] = []
    stream.follow(lambda data, _repaint: shown.append(data), until=lambda: False)
    assert shown == [b"screen", b"last"]
    assert stream.ended and stream.exit_code == 3 and link.replies == []
