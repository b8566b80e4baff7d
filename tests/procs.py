"""Run a child in its own process group, and kill the whole group if it outlives its timeout (a
command that hangs must not leave its worker processes behind for the rest of the suite)."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def run_group(
    argv: list[str], timeout: float = 120, reap: float | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a process group of its own; a child still running after `timeout` s fails the
    test (its whole group is killed first). With `reap`, wait up to that many seconds for the
    child's workers to exit too: any still alive are killed and fail the test."""
    p = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"{argv[:3]}... still running after {timeout} s (its process group was killed)")
    if reap is not None:
        deadline = time.monotonic() + reap
        while group_alive(p.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = group_alive(p.pid)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert left == [], f"workers outlived the command: {left}"
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def group_alive(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group `pgid`, from /proc."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(p.name))
    return pids


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="needs /proc to find left-over workers"
)


# Python for a child script: a thread that SIGKILLs the script's first worker process as soon as it
# exists, from outside, as a user or the OOM killer would (works with fork, forkserver and spawn alike)
KILL_FIRST_WORKER = """
import multiprocessing as _mp, os as _os, signal as _signal, threading as _threading, time as _time
def _kill_first_worker():
    while True:
        kids = _mp.active_children()
        if kids:
            _os.kill(kids[0].pid, _signal.SIGKILL)
            return
        _time.sleep(0.001)
_threading.Thread(target=_kill_first_worker, daemon=True).start()
"""
