"""Make the repository root importable ahead of ``tests/``."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest puts ``tests/`` on sys.path, where ``tests/actors`` would be picked up as a
# namespace package named ``actors`` unless the real package's root comes first.
_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
