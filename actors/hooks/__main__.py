"""``python -m actors.hooks``: the agent-status table and hook endpoint process."""

from __future__ import annotations

from actors.hooks.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("hooks", setup)


if __name__ == "__main__":
    main()
