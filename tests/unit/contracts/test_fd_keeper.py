"""The fd-keeper protocol (orca/contracts/fd_keeper.py): packets and the keeper's table."""

from __future__ import annotations

import json
import os
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.keeper.table import KeeperState
from orca.contracts.fd_keeper import (
    FDS_PER_PACKET,
    FDS_PER_SESSION,
    REPLIES,
    REQUESTS,
    AskExitStatus,
    Deposit,
    End,
    ExitStatus,
    KeeperProtocolError,
    Reclaim,
    Sessions,
    Withdraw,
    decode_packet,
    encode_packet,
    recv_packet,
    send_packet,
)


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_reclaim_returns_every_deposit_with_working_fds() -> None:
    """Deposited fds come back (in batches) and still reach the same pipe."""
    state = KeeperState()
    pipes = []
    sessions = FDS_PER_PACKET // FDS_PER_SESSION + 1  # more than fit one packet
    for n in range(sessions):
        r, w = os.pipe()
        pipes.append((r, w))
        fds = [os.dup(r)] + [os.dup(w) for _ in range(FDS_PER_SESSION - 1)]
        state.handle(Deposit(key=f"k{n}", info={"pid": n}), fds)
    replies = state.handle(Reclaim(), [])
    assert replies[-1].message == End()
    batches = [reply.message for reply in replies[:-1]]
    assert all(isinstance(b, Sessions) for b in batches)
    rows = [row for b in batches if isinstance(b, Sessions) for row in b.sessions]
    fds = [fd for reply in replies[:-1] for fd in reply.fds]
    assert len(batches) == 2
    assert all(len(reply.fds) <= FDS_PER_PACKET for reply in replies)
    assert [row.key for row in rows] == [f"k{n}" for n in range(sessions)]
    os.write(pipes[7][1], b"still here")
    assert os.read(fds[7 * FDS_PER_SESSION], 100) == b"still here"
    for fd in fds:
        os.close(fd)
    state.close_all()
    for r, w in pipes:
        os.close(r)
        os.close(w)


def test_withdraw_closes_the_kept_fd() -> None:
    """After withdraw the keeper no longer holds the pipe open (the reader sees EOF)."""
    state = KeeperState()
    r, w = os.pipe()
    state.handle(Deposit(key="k", info={}), [w])
    state.handle(Withdraw(key="k"), [])
    assert os.read(r, 10) == b""  # no writer left
    os.close(r)
    assert len(state) == 0


def test_orphan_exit_recorded_for_its_session_only() -> None:
    """A reaped orphan's status is kept for the session with that pid; others ignored."""
    state = KeeperState()
    r, w = os.pipe()
    state.handle(Deposit(key="k", info={"pid": 99}), [r])
    assert not state.record_exit(100, 0)
    assert state.record_exit(99, 7 << 8)
    (reply,) = state.handle(AskExitStatus(key="k"), [])
    assert reply.message == ExitStatus(key="k", status=7 << 8)
    state.close_all()
    os.close(w)


def test_a_deposit_without_fds_or_with_too_many_is_refused_and_closes_them() -> None:
    """A deposit carries 1..FDS_PER_SESSION fds; otherwise it is refused and leaks nothing."""
    state = KeeperState()
    with pytest.raises(KeeperProtocolError, match="fds"):
        state.handle(Deposit(key="k", info={}), [])
    before = open_fds()
    extra = [os.dup(0) for _ in range(FDS_PER_SESSION + 1)]
    with pytest.raises(KeeperProtocolError, match="fds"):
        state.handle(Deposit(key="k", info={}), extra)
    assert open_fds() == before and len(state) == 0


def test_fds_sent_with_a_message_other_than_deposit_are_closed() -> None:
    """fds only travel with a deposit: any others are closed on receipt."""
    state = KeeperState()
    before = open_fds()
    state.handle(Withdraw(key="nope"), [os.dup(0)])
    assert open_fds() == before


def test_packets_carry_json_and_fds() -> None:
    """send_packet/recv_packet round-trip a message and its fds over SEQPACKET."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    send_packet(a, Deposit(key="k", info={"pid": 1}), [r])
    message, fds = recv_packet(b, REQUESTS)
    assert message == Deposit(key="k", info={"pid": 1}) and len(fds) == 1
    os.write(w, b"z")
    assert os.read(fds[0], 1) == b"z"
    for fd in (r, w, *fds):
        os.close(fd)
    a.close()
    b.close()


def test_the_wire_is_the_documented_json() -> None:
    """An op-tagged JSON object per packet, camelCase fields (what older builds send)."""
    (data,), _ = encode_packet(Sessions(sessions=[]))
    assert json.loads(data) == {"op": "sessions", "sessions": []}
    replies = KeeperState().handle(AskExitStatus(key="k"), [])
    (data,), anc = encode_packet(replies[0].message)
    assert json.loads(data) == {"op": "exit_status", "key": "k", "status": None} and anc == []
    state = KeeperState()
    state.handle(Deposit(key="k", info={"pid": 5}), [os.dup(0)])
    state.record_exit(5, 0)
    batch = state.handle(Reclaim(), [])[0]
    (data,), anc = encode_packet(batch.message, batch.fds)
    assert json.loads(data)["sessions"] == [
        {"key": "k", "info": {"pid": 5}, "exitStatus": 0, "fds": 1}
    ]
    assert len(anc) == 1
    state.close_all()


def test_peer_close_is_none() -> None:
    """An empty packet (the peer closed) decodes to (None, [])."""
    assert decode_packet(b"", [], REQUESTS) == (None, [])


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'{"key": "k"}',
        b'{"op": "format_disk"}',
        b'{"op": "deposit", "info": {}}',
        b'{"op": "withdraw", "key": 5}',
    ],
)
def test_a_malformed_packet_is_refused_and_its_fds_closed(raw: bytes) -> None:
    """Whatever is wrong with a packet, it raises KeeperProtocolError and leaks no fd."""
    r, w = os.pipe()
    before = open_fds()
    _, anc = encode_packet(Reclaim(), [os.dup(r)])
    with pytest.raises(KeeperProtocolError):
        decode_packet(raw, anc, REQUESTS)
    assert open_fds() == before
    os.close(r)
    os.close(w)


@given(st.binary(max_size=300))
def test_decoding_never_raises_anything_but_a_protocol_error(raw: bytes) -> None:
    """Fuzz: any bytes are a message or a KeeperProtocolError, on both sides' decoders."""
    for decode in (
        lambda: decode_packet(raw, [], REQUESTS),
        lambda: decode_packet(raw, [], REPLIES),
    ):
        try:
            decode()
        except KeeperProtocolError:
            pass
