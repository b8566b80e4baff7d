"""Run a child in its own process group, and kill the whole group if it outlives its timeout (a
command that hangs must not leave its worker processes behind for the rest of the suite)."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys

import pytest

# Whether this process forks the ingest and dag workers itself (Python < 3.12; a forkserver after)
FORKED = "fork" in mp.get_all_start_methods() and sys.version_info < (3, 12)
needs_fork = pytest.mark.skipif(
    not FORKED, reason="the workers must be forked to inherit the patch that makes one of them fail"
)
# On Python 3.12+ the workers start from a forkserver: this process forks none of them, so an at-fork
# callback never runs in it and there is no moment "while the workers are forked" to press Ctrl-C in
forks_here = pytest.mark.skipif(
    not FORKED, reason="this process forks no workers to press Ctrl-C during (Python 3.12+ uses a forkserver)"
)


def run_group(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    p = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"{argv[:3]}... still running after {timeout} s (its process group was killed)")
    return subprocess.CompletedProcess(argv, p.returncode, out, err)
