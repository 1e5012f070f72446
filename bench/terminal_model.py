"""Terminal emulators for ptyd's per-session model, measured on one recorded stream.

Feeds the same realistic byte stream (a coloured scrolling build log, cursor moves, a
full-screen program in the alternate screen with a status line, a colour-heavy
TUI refresh) to each candidate in 4 KiB reads, and prints MB/s, and the RSS one session
costs with its history (``--sessions`` models each fed ``--mb`` MB); then how long a
redraw of ptyd's model takes, and how much of it stays on ptyd's loop. The candidate that
gives cells + attributes + cursor + modes fastest and smallest is ptyd's
(``actors/ptyd/terminal_model.py``); the ratio line compares it with pyte.

    python bench/terminal_model.py [--mb 2] [--sessions 20]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

READ = 4096


def recorded_stream(size: int) -> bytes:
    """A realistic mix, repeated to ``size`` bytes."""
    log = b"".join(
        b"\x1b[3%dm[%05d]\x1b[0m compiling crate_%d \x1b[1mok\x1b[0m in %d ms\r\n"
        % (i % 8, i, i, i % 97)
        for i in range(300)
    )
    vim = (
        b"\x1b[?1049h\x1b[H\x1b[2J"
        + b"".join(
            b"\x1b[%d;1H\x1b[34m~\x1b[0m\x1b[%d;5Hsome text \x1b[1;33mhighlighted\x1b[0m" % (r, r)
            for r in range(1, 24)
        )
        + b"\x1b[24;1H\x1b[7m-- INSERT --\x1b[0m\x1b[?1049l"
    )
    tui = b"".join(
        b"\x1b[H"
        + b"".join(
            b"\x1b[38;2;%d;%d;90m%5d\x1b[48;5;%dm cpu\x1b[0m\x1b[K\r\n" % (t, p, p, p)
            for p in range(20)
        )
        for t in range(0, 250, 25)
    )
    unit = log + vim + tui
    return (unit * (size // len(unit) + 1))[:size]


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def ghostty_factory() -> Callable[[bytes], object]:
    from actors.ptyd.terminal_model import TerminalModel

    def run(data: bytes) -> object:
        model = TerminalModel(80, 24)
        for i in range(0, len(data), READ):
            model.feed(data[i : i + READ])
        model.snapshot()  # it must also be able to redraw
        return model

    run(b"warm")  # cffi parses the binding's signatures on first use: not per session
    return run


def pyte_factory() -> Callable[[bytes], object] | None:
    try:
        import pyte  # type: ignore[import-untyped]
    except ImportError:
        return None

    def run(data: bytes) -> object:
        screen = pyte.HistoryScreen(80, 24, history=2000)
        stream = pyte.ByteStream(screen)
        for i in range(0, len(data), READ):
            stream.feed(data[i : i + READ])
        return screen

    return run


def measure(name: str, run: Callable[[bytes], object], data: bytes, sessions: int) -> float:
    start = time.perf_counter()
    run(data)
    rate = len(data) / (time.perf_counter() - start) / 1e6
    gc.collect()
    base = rss_mib()
    kept = [run(data) for _ in range(sessions)]
    per = (rss_mib() - base) / sessions
    print(
        f"{name:10s} {rate:8.2f} MB/s   {per:7.2f} MiB RSS/session ({len(data) / 1e6:.1f} MB fed)"
    )
    del kept
    return rate


def snapshot_latency(data: bytes) -> None:
    """How long a redraw (``TerminalModel.snapshot``) holds ptyd's loop: formatted on the
    loop (before issue 14's change, every snapshot) vs the checkpoint taken on the loop
    with the formatting of a copy in a worker thread (``actors/ptyd/stream.py``)."""
    from actors.ptyd.terminal_model import TerminalModel

    for cols, rows in ((80, 24), (200, 60)):
        model = TerminalModel(cols, rows)
        model.feed(data)
        for screen in ("primary", "alternate"):
            if screen == "alternate":
                fill = b"\x1b[31mx\x1b[0my" * (cols * rows // 2)
                model.feed(b"\x1b[?1049h\x1b[2J" + fill)
            model.snapshot()  # warm (cffi's first calls)
            runs = 10
            start = time.perf_counter()
            for _ in range(runs):
                model.snapshot()
            whole = (time.perf_counter() - start) / runs
            start = time.perf_counter()
            for _ in range(runs):
                model.checkpoint()
            on_loop = (time.perf_counter() - start) / runs
            print(
                f"snapshot {cols}x{rows} {screen:9s} format {whole * 1e3:7.2f} ms"
                f"   on the loop (checkpoint; format in a thread) {on_loop * 1e3:6.2f} ms"
            )
        model.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--pyte-mb", type=float, default=0.5, help="pyte is slow: feed it less")
    args = parser.parse_args()
    data = recorded_stream(int(args.mb * 1e6))
    ghostty = measure("ghostty", ghostty_factory(), data, args.sessions)
    snapshot_latency(data)
    pyte_run = pyte_factory()
    if pyte_run is None:
        print("pyte       not installed (pip install pyte)")
        return
    small = recorded_stream(int(args.pyte_mb * 1e6))
    pyte = measure("pyte", pyte_run, small, max(1, args.sessions // 4))
    print(f"ratio ghostty/pyte throughput: {ghostty / pyte:.1f}x")


if __name__ == "__main__":
    main()
