"""Op and event names are written only in ``orca/contracts/``: everyone else uses descriptors."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import orca.contracts
from orca.contracts.base import Contract

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("orca", "actors", "bench")
CONTRACTS_DIR = ROOT / "orca" / "contracts"


def declared_contracts() -> list[Contract]:
    found: list[Contract] = []
    for info in pkgutil.iter_modules(orca.contracts.__path__):
        module = importlib.import_module(f"orca.contracts.{info.name}")
        found.extend(v for v in vars(module).values() if isinstance(v, Contract))
    return found


def declared_names() -> set[str]:
    names: set[str] = set()
    for contract in declared_contracts():
        names.update(contract.ops)
        names.update(contract.events)
    return names


def literal_uses(names: set[str], roots: list[Path]) -> list[tuple[str, int, str]]:
    """(file, line, text) of every string constant that is (or prefixes a topic with) a name."""
    hits: list[tuple[str, int, str]] = []
    for top in roots:
        for path in sorted(top.rglob("*.py")):
            if CONTRACTS_DIR in path.parents:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                    continue
                text = node.value
                if text in names or (text.split(":", 1)[0] in names and ":" in text):
                    hits.append((str(path), node.lineno, text))
    return hits


def test_every_actor_has_a_contract() -> None:
    """store, ptyd, hooks, gitwatch, the supervisor and the built-ins each declare one."""
    actors = {c.actor for c in declared_contracts()}
    assert {"store", "ptyd", "hooks", "gitwatch", "supervisor", "sys"} <= actors


def test_no_op_or_event_name_is_written_outside_the_contracts() -> None:
    """A quoted op or event name anywhere in orca/, actors/ or bench/ is a second copy."""
    names = declared_names()
    assert len(names) > 50  # the scan has something to look for
    assert literal_uses(names, [ROOT / top for top in SCANNED]) == []


def test_the_scan_finds_a_literal(tmp_path: Path) -> None:
    """The scanner itself sees a quoted name (so the test above can fail)."""
    names = declared_names()
    sample = sorted(names)[0]
    (tmp_path / "probe.py").write_text(
        f'"""Docstrings may name ``{sample}``."""\nX = {sample!r}\nY = "{sample}:topic"\n',
        encoding="utf-8",
    )
    hits = literal_uses(names, [tmp_path])
    assert [line for _, line, _ in hits] == [2, 3]
