"""``python -m actors.gateway``: serve remote clients over CURVE, mirror remote hosts."""

from __future__ import annotations

from actors.gateway.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("gateway", setup)


if __name__ == "__main__":
    main()
