"""``python -m actors.gitwatch``: run the gitwatch actor (standalone or under the supervisor)."""

from actors.gitwatch.actor import setup
from orca.actor import run_actor


def main() -> None:
    run_actor("gitwatch", setup)


if __name__ == "__main__":
    main()
