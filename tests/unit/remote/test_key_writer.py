"""The remote attach's keys: one write in flight, the rest coalesced behind it, a
refused or unanswered write sent again with its idempotency key, nothing reordered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from orca.cli.remote import terminal
from orca.cli.remote.terminal import KeyWriter
from orca.wire.envelope import Reply
from orca.wire.errors import NotFound, Unavailable


@dataclass
class Sent:
    rid: str
    data: bytes
    idem: str | None


@dataclass
class FakeLink:
    """The link's send side: what was sent, and whether a connection takes it."""

    up: bool = True
    sent: list[Sent] = field(default_factory=list)
    callbacks: dict[str, Any] = field(default_factory=dict)
    n: int = 0

    def send_nowait(self, _op: Any, args: Any, *, idem: str | None, on_reply: Any) -> str | None:
        if not self.up:
            return None
        self.n += 1
        rid = f"r{self.n}"
        self.sent.append(Sent(rid, args.data, idem))
        self.callbacks[rid] = on_reply
        return rid

    def forget(self, rid: str) -> None:
        self.callbacks.pop(rid, None)

    def answer(self, rid: str, error: Exception | None = None) -> None:
        from orca.wire.errors import OrcaError

        if error is None:
            reply = Reply(v=1, id=rid, ok=True, result=b"")
        else:
            assert isinstance(error, OrcaError)
            reply = Reply(v=1, id=rid, ok=False, error=error.to_wire())
        self.callbacks.pop(rid)(reply)


class Clock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        monkeypatch.setattr(terminal.time, "monotonic", lambda: self.now)

    def run_due(self, keys: KeyWriter) -> None:
        """Move on to when the writer is due (a retry, a timeout), and let it act."""
        due = keys.due()
        assert due is not None and due > self.now, "nothing due later"
        self.now = due
        keys.pump()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


def writer(link: FakeLink) -> KeyWriter:
    return KeyWriter(link, "s1")  # type: ignore[arg-type]


def test_keys_typed_while_a_write_is_in_flight_go_together_after_it() -> None:
    link = FakeLink()
    keys = writer(link)
    keys.type(b"a")
    keys.type(b"b")
    keys.type(b"c")
    assert [s.data for s in link.sent] == [b"a"]
    link.answer("r1")
    assert [s.data for s in link.sent] == [b"a", b"bc"]
    link.answer("r2")
    assert not keys.busy and keys.errors == []
    assert link.sent[0].idem != link.sent[1].idem


def test_a_refused_write_is_sent_again_with_its_key_before_anything_typed_after(
    clock: Clock,
) -> None:
    link = FakeLink()
    keys = writer(link)
    keys.type(b"ab")
    keys.type(b"cd")
    link.answer("r1", Unavailable("rate limit (100 requests/s)"))
    assert len(link.sent) == 1  # not at once: after a short backoff
    clock.run_due(keys)
    assert [(s.data, s.idem) for s in link.sent] == [(b"ab", link.sent[0].idem)] * 2
    link.answer("r2")
    assert [s.data for s in link.sent][2:] == [b"cd"]
    link.answer("r3")
    assert not keys.busy and keys.errors == [] and keys.retries == 1


def test_an_unanswered_write_is_sent_again_and_its_late_reply_is_ignored(clock: Clock) -> None:
    link = FakeLink()
    keys = writer(link)
    keys.type(b"x")
    clock.run_due(keys)  # no reply in time: given up on, to be sent again
    clock.run_due(keys)
    assert [s.data for s in link.sent] == [b"x", b"x"]
    assert link.sent[0].idem == link.sent[1].idem  # the remote side runs it once
    assert "r1" not in link.callbacks  # a late reply to the first attempt changes nothing
    link.answer("r2")
    assert not keys.busy


def test_a_link_without_a_connection_keeps_the_keys_until_it_has_one(clock: Clock) -> None:
    link = FakeLink(up=False)
    keys = writer(link)
    keys.type(b"hello")
    keys.type(b" there")
    assert link.sent == [] and keys.busy
    link.up = True
    clock.run_due(keys)
    assert [s.data for s in link.sent] == [b"hello"]
    link.answer("r1")
    assert [s.data for s in link.sent] == [b"hello", b" there"]


def test_keys_refused_for_good_are_reported_and_the_next_ones_still_go() -> None:
    link = FakeLink()
    keys = writer(link)
    keys.type(b"a")
    keys.type(b"b")
    link.answer("r1", NotFound("no session s1"))
    assert keys.errors and "refused" in keys.errors[0]
    assert [s.data for s in link.sent] == [b"a", b"b"]


def test_nothing_delivered_for_a_minute_is_given_up_and_said(clock: Clock) -> None:
    link = FakeLink(up=False)
    keys = writer(link)
    keys.type(b"lost")
    while keys.busy:
        clock.run_due(keys)
    assert link.sent == []
    assert keys.errors == [f"4 bytes not delivered in {terminal.GIVE_UP_S:g}s (link down)"]


def test_a_paste_goes_in_pieces_in_order() -> None:
    link = FakeLink()
    keys = writer(link)
    paste = bytes(range(256)) * 1024  # 256 KiB
    keys.type(paste)
    while keys.busy:
        link.answer(link.sent[-1].rid)
    assert b"".join(s.data for s in link.sent) == paste
    assert max(len(s.data) for s in link.sent) <= terminal.MAX_WRITE_BYTES
