"""The load the benchmarks print under: an agent's stream of short lines.

A printer that forks nothing (a shell loop calling date and sleep forks 200 times a
second each: the fork storm, not the multiplexer, would be measured). Run it with
``sys.executable -c PRINTER``: a line every 10 ms, 100 lines a second.
"""

PRINTERS = 20

PRINTER = (
    "import sys, time\n"
    "i = 0\n"
    "while True:\n"
    "    i += 1\n"
    "    sys.stdout.write(f'line {i} {time.time():.6f}\\n')\n"
    "    sys.stdout.flush()\n"
    "    time.sleep(0.01)\n"
)
