"""No import circle in ``orca/`` (issue 23: ``orca.remote.readers`` imported private
table helpers of ``orca.cli.worktree``, which imports it back - six modules in a ring).

Every ``import`` statement counts, those inside functions too: the CLI imports lazily
for start-up, and a lazy circle is still two modules that cannot be understood, tested
or moved one without the other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ORCA = Path(__file__).resolve().parents[2] / "orca"


def module_name(path: Path) -> str:
    parts = path.relative_to(ORCA.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``orca`` modules it imports anywhere in its text."""
    modules = {module_name(p): p for p in ORCA.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:  # `from orca.cli import handles` names a module
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "orca.cli.tables" in graph["orca.remote.readers"]
    assert "orca.remote.readers" in graph["orca.cli.worktree"]  # lazily: still counted


def test_no_module_of_orca_imports_itself_back_through_others() -> None:
    assert circles(import_graph()) == []


def test_the_remote_reader_loads_no_command_module() -> None:
    """In a fresh interpreter: the reader and its table cells, not `worktree ls`'s code."""
    code = (
        "import sys, orca.remote.readers\n"
        "print(sorted(m for m in sys.modules if m.startswith('orca.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "orca.cli.worktree'" not in out and "orca.cli.worktree_ps" not in out, out
