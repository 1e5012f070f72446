"""The fd keeper (actors/keeper/service.py) serving the contract's protocol."""

from __future__ import annotations

import fcntl
import logging
import os
import socket
from pathlib import Path

import pytest
import trio
from support.keeper import serving

from actors.keeper.service import FdKeeper
from orca.contracts.fd_keeper import (
    ANCILLARY_SPACE,
    MAX_PACKET,
    MAX_RECORD_BYTES,
    REPLIES,
    Deposit,
    End,
    Reclaim,
    Sessions,
    Update,
    decode_packet,
    encode_packet,
)


async def test_malformed_packets_are_logged_once_each_and_the_keeper_keeps_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A garbage packet, a deposit nested 10,000 deep (issue 23: RecursionError ended
    the keeper), deposits whose record holds ``NaN`` or a number out of range (Python's
    json reads them; no reclaim could write them back) and a deposit without fds are
    refused (one warning each, fds closed); the same connection then deposits and
    reclaims normally."""
    path = str(tmp_path / "k.sock")
    keeper = FdKeeper(path)
    caplog.set_level(logging.WARNING, logger="actors.keeper.service")
    with trio.fail_after(10):
        with serving(keeper):
            conn = trio.socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            await conn.connect(path)
            with conn:
                r, w = os.pipe()
                _, anc = encode_packet(Reclaim(), [os.dup(r)])
                await conn.sendmsg([b'{"op": "format_disk"}'], anc)
                deep = b'{"op":"deposit","key":"deep","info":{"a":' + b"[" * 10_000
                await conn.sendmsg([deep + b"]" * 10_000 + b"}}"], anc)
                for number in (b"NaN", b"-Infinity", b"1e999"):
                    nan = b'{"op":"deposit","key":"nan","info":{"pid":9,"t":' + number + b"}}"
                    await conn.sendmsg([nan], anc)
                await conn.sendmsg(*encode_packet(Deposit(key="none", info={})))
                await conn.sendmsg(*encode_packet(Deposit(key="k", info={"pid": 9}), [os.dup(w)]))
                await conn.sendmsg(*encode_packet(Reclaim()))
                data, ancdata, _, _ = await conn.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
                batch, fds = decode_packet(data, ancdata, REPLIES)
                assert isinstance(batch, Sessions) and [s.key for s in batch.sessions] == ["k"]
                os.write(fds[0], b"x")  # the kept write end still reaches our pipe
                assert os.read(r, 1) == b"x"
                data, ancdata, _, _ = await conn.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
                assert decode_packet(data, ancdata, REPLIES) == (End(), [])
                # (the keeper runs in this process) every refused packet's copy was
                # closed: ours and the one we sent with each are left
                assert _open_copies(r) == 2
                for fd in (r, w, *fds):
                    os.close(fd)
            assert len(keeper.state) == 1
    refusals = [r.getMessage() for r in caplog.records if "refused a packet" in r.getMessage()]
    assert len(refusals) == 6, refusals
    assert "format_disk" in refusals[0] and "too deep" in refusals[1]
    assert "NaN is not JSON" in refusals[2] and "-Infinity is not JSON" in refusals[3]
    assert "out of range" in refusals[4] and "fds" in refusals[5]


async def test_a_reclaim_of_large_records_fits_its_packets_and_an_unreclaimable_one_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Three deposits of 80 KB records each fit a packet but not one together (a unix
    SOCK_SEQPACKET message must fit the 212,992-byte default send buffer): the reclaim
    sends them in three packets (in one, EMSGSIZE lost the whole reclaim). A
    record over MAX_RECORD_BYTES is refused at its deposit, its fd closed, and an update
    that large leaves the kept record as it was."""
    path = str(tmp_path / "k.sock")
    keeper = FdKeeper(path)
    caplog.set_level(logging.WARNING, logger="actors.keeper.service")
    big = "x" * 80_000
    with trio.fail_after(10):
        with serving(keeper):
            conn = trio.socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            await conn.connect(path)
            with conn:
                r, w = os.pipe()
                for key in ("a", "b", "c"):
                    packet = encode_packet(Deposit(key=key, info={"pid": 9, "t": big}), [w])
                    await conn.sendmsg(*packet)
                huge = {"pid": 9, "t": "y" * MAX_RECORD_BYTES}
                await conn.sendmsg(*encode_packet(Deposit(key="huge", info=huge), [w]))
                await conn.sendmsg(*encode_packet(Update(key="a", info=huge)))
                await conn.sendmsg(*encode_packet(Reclaim()))
                got: list[tuple[str, str]] = []
                while True:
                    data, ancdata, _, _ = await conn.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
                    batch, fds = decode_packet(data, ancdata, REPLIES)
                    if isinstance(batch, End):
                        break
                    assert isinstance(batch, Sessions) and len(fds) == len(batch.sessions) == 1
                    got += [(s.key, s.info["t"]) for s in batch.sessions]
                    os.close(fds[0])
                assert got == [("a", big), ("b", big), ("c", big)]
                # (the keeper runs in this process) the refused deposit's copy was closed:
                # ours and the three the keeper keeps for a, b and c are left
                assert _open_copies(w) == 4
                for fd in (r, w):
                    os.close(fd)
            assert sorted(keeper.state.keys()) == ["a", "b", "c"]
    refusals = [r.getMessage() for r in caplog.records if "refused a packet" in r.getMessage()]
    assert len(refusals) == 2 and all("MAX_RECORD_BYTES" in m for m in refusals), refusals


def _open_copies(fd: int) -> int:
    """How many of this process's fds are the same pipe end as ``fd``."""
    target = os.readlink(f"/proc/self/fd/{fd}"), fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            other = int(name)
            mode = fcntl.fcntl(other, fcntl.F_GETFL) & os.O_ACCMODE
            count += (os.readlink(f"/proc/self/fd/{name}"), mode) == target
        except OSError:
            pass
    return count
