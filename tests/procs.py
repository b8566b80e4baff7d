"""Run a child in its own process group, and kill the whole group if it outlives its timeout (a
command that hangs must not leave its worker processes behind for the rest of the suite)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest


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
