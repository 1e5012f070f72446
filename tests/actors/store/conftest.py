"""The store actor tests share helper modules in this directory."""

from __future__ import annotations

import sys
from pathlib import Path

# Test directories are not packages: make the helpers importable by their own names,
# and the repository root importable ahead of ``tests/`` (where ``tests/actors`` would
# otherwise be found as a namespace package named ``actors``).
sys.path.insert(0, str(Path(__file__).parent))
_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
