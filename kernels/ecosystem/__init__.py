"""Other libraries' attention, adapted to SDPA's signature, and the survey that judges them."""
import os
import sys


def exit_without_teardown(code: int) -> None:
    """End a peer's process once its verdict is written: XLA's thread pool can abort the interpreter's
    teardown ("terminate called without an active exception", exit -6; seen once in CI under load,
    after keras-jax's faithfulness check had finished), which would turn a finished run into a
    crash. The output is flushed first; nothing after the verdict needs teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
