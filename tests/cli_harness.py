"""Running `trajlab` commands in-process the way the bad-input tests need: a traceback the user would see
fails the test, and lab or output folders are snapshotted to show nothing was written."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from trajlab.cli import cli


class Result:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def run(*args: str) -> Result:
    """Invoke the CLI in-process; an exception other than SystemExit is a traceback the user would see."""
    r = CliRunner().invoke(cli, list(args))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"trajlab {' '.join(args)} raised {r.exception!r}") from r.exception
    assert "Traceback" not in r.stdout + r.stderr
    return Result(r.exit_code, r.stdout, r.stderr)


def fails(*args: str, code: int = 1) -> str:
    """Run a command that must fail with `code` and an `Error:` message; returns stdout + stderr."""
    r = run(*args)
    assert r.code == code, (r.code, r.text)
    assert "Error:" in r.stderr
    return r.text


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under `root` (not following symlinks): file bytes, link targets, folders."""
    if not root.exists() and not root.is_symlink():
        return {}
    if not root.is_dir():
        return {"": root.read_bytes()}
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def example_lab(root: Path, tasks: int = 3) -> Path:
    """`trajlab examples` + `ingest` + `dag` through the CLI into ROOT/ex and ROOT/lab; returns the lab."""
    assert run("examples", str(root / "ex"), "--tasks", str(tasks)).code == 0
    assert run("ingest", str(root / "ex" / "runs"), "--out", str(root / "lab"), "-q", "-j", "1").code == 0
    assert run("dag", str(root / "lab"), "-q").code == 0
    return root / "lab"
