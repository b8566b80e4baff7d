"""Typed exceptions. The library raises these; only the CLI turns them into friendly messages."""

from __future__ import annotations


class TrajlabError(Exception):
    """Base class of every error trajlab raises on purpose."""


class LabError(TrajlabError):
    """The lab directory is missing, locked, corrupt or of an unsupported version."""


class LabLockedError(LabError):
    """Another process is writing to the lab."""


class WorkerDiedError(TrajlabError):
    """A worker process died (killed by a signal, e.g. by the out-of-memory killer) in the middle of a job."""


class SchemaError(TrajlabError):
    """Rows do not match a table's schema."""


class FormatError(TrajlabError):
    """A file could not be read as any known trajectory format."""

    def __init__(self, path: str, message: str, tried: list[str] | None = None):
        self.path = path
        self.tried = tried or []
        detail = f"{path}: {message}"
        if self.tried:
            detail += " (tried: " + "; ".join(self.tried) + ")"
        super().__init__(detail)


class QueryError(TrajlabError):
    """A user SQL query failed or is not allowed."""


class ConfigError(TrajlabError):
    """Bad configuration or command-line input."""


class InputFileError(TrajlabError):
    """A user-edited file (taxonomy, annotations, dashboard, skill) is invalid; names the file and line."""

    def __init__(self, path: str, message: str, line: int | None = None):
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


__all__ = [
    "ConfigError",
    "FormatError",
    "InputFileError",
    "LabError",
    "LabLockedError",
    "QueryError",
    "SchemaError",
    "TrajlabError",
    "WorkerDiedError",
]
