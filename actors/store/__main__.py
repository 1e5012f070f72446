"""``python -m actors.store``: run the store actor (standalone or under the supervisor)."""

from actors.store.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("store", setup)


if __name__ == "__main__":
    main()
