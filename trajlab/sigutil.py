"""Ctrl-C and worker processes: the parent that owns the transaction handles it, the workers never do.

CPython runs the `os.register_at_fork` callbacks (logging's lock release, among others) in the parent
right after a fork, and a KeyboardInterrupt raised inside one is printed as "Exception ignored" and
dropped. A Ctrl-C that lands while a pool forks its workers was lost that way: `trajlab ingest -j 2`
went on to the end and exited 0. `deferred_sigint` only notes a Ctrl-C while the workers are forked
and raises it when the block ends, in ordinary code. (Blocking the signal with pthread_sigmask is not
enough: the kernel hands it to another thread, a writer or the pool's own, and Python then runs the
handler in the main thread at its next bytecode, which may be inside the at-fork callback.) Workers
call `ignore_sigint` first: Ctrl-C reaches the whole process group, and only the parent, which owns
the transaction, acts on it; a worker prints no KeyboardInterrupt traceback of its own.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def deferred_sigint() -> Iterator[None]:
    """Note SIGINT for the duration instead of raising it; then act on it as the old handler would."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers are the main thread's
        yield
        return
    noted: list[int] = []

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)

    old = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if noted:
            if callable(old):
                old(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
            elif old == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)


def ignore_sigint() -> None:
    """For worker initializers: Ctrl-C reaches the whole process group; only the parent acts on it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
