"""msgpack + hand validation vs msgspec typed Structs: decode + validate of requests.

The decision behind ``orca/wire``: for a typical request envelope plus its arguments,
which costs less per message — ``msgpack.unpackb`` followed by hand-written checks of
every field, or ``msgspec`` decoding straight into typed Structs (two passes: the
envelope with ``args`` left raw, then the op's own schema)? Both validate the same
things (types, required fields, version) and both reject the same bad inputs; the
ratio printed is hand / msgspec (> 1 means msgspec is faster).
"""

from __future__ import annotations

import time
from typing import Any

import msgpack

from orca.contracts import ptyd
from orca.contracts import sys as builtin_ops
from orca.wire.envelope import Request, decode_request


class Invalid(Exception):
    pass


def _req_str(d: dict[str, Any], k: str) -> str:
    v = d.get(k)
    if not isinstance(v, str):
        raise Invalid(k)
    return v


def hand_decode(frame: bytes) -> tuple[str, str, dict[str, Any]]:
    body = msgpack.unpackb(frame, raw=False, strict_map_key=True)
    if not isinstance(body, dict):
        raise Invalid("body")
    v = body.get("v")
    if not isinstance(v, int) or isinstance(v, bool) or v != 1:
        raise Invalid("v")
    rid, op = _req_str(body, "id"), _req_str(body, "op")
    args = body.get("args", {})
    if not isinstance(args, dict):
        raise Invalid("args")
    argv = args.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise Invalid("argv")
    _req_str(args, "cwd")
    _req_str(args, "worktreeId")
    for k in ("cols", "rows"):
        n = args.get(k, 0)
        if not isinstance(n, int) or isinstance(n, bool):
            raise Invalid(k)
    env = args.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(a, str) and isinstance(b, str) for a, b in env.items()
    ):
        raise Invalid("env")
    pane = args.get("paneKey")
    if pane is not None and not isinstance(pane, str):
        raise Invalid("paneKey")
    return rid, op, args


def msgspec_decode(frame: bytes) -> tuple[Request, ptyd.SpawnArgs]:
    """What the actor runtime does: the envelope, then the op's args by its contract."""
    req = decode_request(frame)
    return req, ptyd.SPAWN.decode_args(req.args)


def bench(fn: Any, frames: list[bytes], rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for f in frames:
            fn(f)
        best = min(best, time.perf_counter() - t0)
    return best / len(frames)


def main() -> None:
    args = {
        "argv": ["claude", "--resume"],
        "cwd": "/home/u/orca/workspaces/app/fix-login",
        "worktreeId": "6f1c9a2e-1b7e-4c1d-9b1e-2f3a4b5c6d7e::/home/u/orca/workspaces/app/fix-login",
        "cols": 120,
        "rows": 40,
        "env": {"FOO": "bar", "LANG": "C.UTF-8"},
        "paneKey": "tab1:0b6f1c9a-2e1b-4e4c-9d9b-1e2f3a4b5c6d",
    }
    frames = [
        msgpack.packb({"v": 1, "id": f"r{i}", "op": ptyd.SPAWN.name, "args": args})
        for i in range(20000)
    ]
    small = [
        msgpack.packb({"v": 1, "id": f"r{i}", "op": builtin_ops.PING.name, "args": {}})
        for i in range(20000)
    ]
    hand = bench(hand_decode, frames)
    spec = bench(msgspec_decode, frames)
    hand_small = bench(lambda f: msgpack.unpackb(f, raw=False, strict_map_key=True), small)
    spec_small = bench(decode_request, small)
    print("decode + validate per request (best of 5 x 20,000, same run)")
    print(
        f"  term.spawn-like request: msgpack+hand {hand * 1e6:6.2f} us   msgspec {spec * 1e6:6.2f} us   ratio {hand / spec:5.2f}x"
    )
    print(
        f"  sys.ping envelope only:  msgpack      {hand_small * 1e6:6.2f} us   msgspec {spec_small * 1e6:6.2f} us   ratio {hand_small / spec_small:5.2f}x"
    )


if __name__ == "__main__":
    main()
