"""`orca up` → every actor ready, measured as a user runs it (issue 2: goal under 1.5 s).

Runs `orca up` / `orca down` several times in a fresh ORCA_HOME with the shipped tree
and prints the wall time of each `orca up` (interpreter start included), against the
time to start one bare `python -c "import orca.actor"` in the same run as a baseline
(the floor any actor process pays before it can bind).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("ORCA_BENCH_ROUNDS", "5"))


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    home = tempfile.mkdtemp(prefix="orca-up-")
    env = dict(os.environ, ORCA_HOME=home)
    env.pop("PYTHONPATH", None)
    orca = [sys.executable, "-m", "orca.cli.main"]
    ups, downs, imports = [], [], []
    for _ in range(ROUNDS):
        imports.append(timed([sys.executable, "-c", "import orca.actor"], env))
        ups.append(timed([*orca, "up"], env))
        downs.append(timed([*orca, "down"], env))
    print(
        f"orca up (all actors ready), {ROUNDS} runs: median {statistics.median(ups):.2f}s "
        f"min {min(ups):.2f}s max {max(ups):.2f}s  (goal < 1.5 s)"
    )
    print(f"orca down: median {statistics.median(downs):.2f}s")
    print(
        f"baseline, one bare `import orca.actor` process: median {statistics.median(imports):.2f}s "
        f"(up / baseline = {statistics.median(ups) / statistics.median(imports):.1f}x)"
    )


if __name__ == "__main__":
    main()
