"""The fd keeper (``python -P -m actors.keeper``): duplicates of every PTY master, nothing else."""
