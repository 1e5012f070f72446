"""The store actor tests share helper modules in this directory."""

from __future__ import annotations

import sys
from pathlib import Path

# Test directories are not packages; make the helpers importable by their own names.
sys.path.insert(0, str(Path(__file__).parent))
