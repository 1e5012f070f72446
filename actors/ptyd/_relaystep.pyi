# The native relay step (_relaystep.c); what relay.py calls.
class Step:
    def __init__(
        self, master: int, pipe_r: int, pipe_w: int, read_size: int, small_read: int
    ) -> None: ...
    def watch(
        self,
        polled: list[tuple[int, int]],
        live: list[int],
        keys: list[tuple[int, bytes]],
    ) -> None: ...
    def step(
        self, timeout_ms: int, journal_fd: int, journal_off: int, plain: bool, input_empty: bool
    ) -> tuple[
        list[tuple[int, int]],
        bytes,
        tuple[int, ...] | None,
        list[int],
        bool,
        int,
        list[tuple[int, bytes, bool]],
        int,
    ]: ...
