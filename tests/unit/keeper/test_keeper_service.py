"""The fd keeper (actors/keeper/service.py) serving the contract's protocol."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import pytest
import trio

from actors.keeper.service import FdKeeper
from orca.contracts.fd_keeper import (
    ANCILLARY_SPACE,
    MAX_PACKET,
    REPLIES,
    Deposit,
    End,
    Reclaim,
    Sessions,
    decode_packet,
    encode_packet,
)


async def test_malformed_packets_are_logged_once_each_and_the_keeper_keeps_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A garbage packet, a deposit nested 10,000 deep (issue 23: RecursionError ended
    the keeper) and a deposit without fds are refused (one warning each, fds closed);
    the same connection then deposits and reclaims normally."""
    path = str(tmp_path / "k.sock")
    keeper = FdKeeper(path)
    caplog.set_level(logging.WARNING, logger="actors.keeper.service")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(keeper.serve)
            conn = trio.socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            await conn.connect(path)
            with conn:
                r, w = os.pipe()
                _, anc = encode_packet(Reclaim(), [os.dup(r)])
                await conn.sendmsg([b'{"op": "format_disk"}'], anc)
                deep = b'{"op":"deposit","key":"deep","info":{"a":' + b"[" * 10_000
                await conn.sendmsg([deep + b"]" * 10_000 + b"}}"], anc)
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
                for fd in (r, w, *fds):
                    os.close(fd)
            assert len(keeper.state) == 1
            nursery.cancel_scope.cancel()
    keeper.close_all()
    refusals = [r.getMessage() for r in caplog.records if "refused a packet" in r.getMessage()]
    assert len(refusals) == 3, refusals
    assert "format_disk" in refusals[0] and "too deep" in refusals[1] and "fds" in refusals[2]
