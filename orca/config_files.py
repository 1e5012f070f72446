"""The TOML settings files: the one shipped in ``config/`` and the user's over it.

Every reader of a layered setting (supervisor, ptyd, vault, its prices, the web server)
reads the same two files in the same order, ``config/<name>`` then
``<config dir>/<name>``, a later file's keys over an earlier one's; what each makes of
the keys stays with it. What differs is what an unreadable file means, and each caller
says which it wants:

- ``"log"``: logged (``<path>: not read (<why>); using the defaults``) and read as
  empty, for an actor that must start whatever the user wrote (ptyd, the vault);
- ``"raise"``: :class:`ConfigFileError` naming the file, for a reader that refuses
  (the supervisor, the web server), which turns it into its own error.

A file that does not exist is empty under both (``missing_ok=False`` makes it an error).
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "config"

OnError = Literal["log", "raise"]


class ConfigFileError(ValueError):
    """A settings file that exists but cannot be read as TOML; ``str`` names the file
    and says why, ``cause`` is what reading it raised."""

    def __init__(self, path: Path, cause: Exception) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"{path}: {describe(cause)}")


def describe(exc: Exception) -> str:
    """Why a file could not be read, in a user's words."""
    if isinstance(exc, tomllib.TOMLDecodeError):
        return f"invalid TOML: {exc}"
    if isinstance(exc, UnicodeDecodeError):
        return (
            f"not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r}"
            f" at offset {exc.start}); TOML files must be UTF-8"
        )
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return str(exc)


def shipped_path(name: str) -> Path:
    """The shipped file ``name`` (``config/<name>`` in the source tree)."""
    return SHIPPED_DIR / name


def read_toml(
    path: Path,
    *,
    on_error: OnError,
    log: logging.Logger | None = None,
    missing_ok: bool = True,
) -> dict[str, Any]:
    """The TOML document at ``path``; ``{}`` if it does not exist (when ``missing_ok``)
    or, under ``"log"``, cannot be read (logged on ``log``)."""
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError as exc:
        if missing_ok:
            return {}
        if on_error == "raise":
            raise ConfigFileError(path, exc) from None
        (log or logging.getLogger(__name__)).error(
            "%s: not read (%s); using the defaults", path, exc
        )
        return {}
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        if on_error == "raise":
            raise ConfigFileError(path, exc) from None
        (log or logging.getLogger(__name__)).error(
            "%s: not read (%s); using the defaults", path, exc
        )
        return {}


def layered(
    name: str,
    config_dir: Path,
    *,
    on_error: OnError,
    shipped_file: Path | None = None,
    log: logging.Logger | None = None,
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The shipped ``name`` then the user's, each with its document, in that order (the
    later one's keys win). Lazy: the user's file is read once the caller has taken the
    shipped one. ``shipped_file`` stands in for the shipped one (tests)."""
    for path in (shipped_file or shipped_path(name), config_dir / name):
        yield path, read_toml(path, on_error=on_error, log=log)
