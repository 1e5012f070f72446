"""``python -m actors.ptyd``: the PTY daemon (started by the supervisor)."""

from __future__ import annotations

from actors.ptyd.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("ptyd", setup)


if __name__ == "__main__":
    main()
