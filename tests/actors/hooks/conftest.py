"""The hooks actor tests share one helper module in this directory."""

from __future__ import annotations

import sys
from pathlib import Path

# Test directories are not packages; make the helper importable by its own name.
sys.path.insert(0, str(Path(__file__).parent))
