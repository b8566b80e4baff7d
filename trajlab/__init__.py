"""trajlab: process-level trajectory analysis for AI coding agents."""

from ._version import __version__

__all__ = ["__version__"]
