"""``python -m actors.vault``: the transcript index process."""

from __future__ import annotations

from actors.vault.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("vault", setup)


if __name__ == "__main__":
    main()
