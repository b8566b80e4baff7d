"""Tool normalization: which real program a call ran, and which modality it touched."""

from ._lexicon import (
    AUDIO_EXT,
    IMAGE_EXT,
    PYTHON_LANGS,
    RUNNER_TOOLS,
    SHELL_LANGS,
    SHELL_TOOLS,
    SUBMIT_SENTINELS,
    VIDEO_EXT,
)
from ._missing import NOT_FOUND_EXIT, program_not_found
from ._parallel import PARALLEL_MAX_JOBS, ParallelJobs, parallel_jobs
from ._resolve import CONTAINER_RUNNERS, LOOKED_THROUGH, program_name, resolve
from ._shell import ParsedShell, SimpleCommand, parse_shell
from ._tools import ToolInfo, analyze_command, normalize_call

__all__ = [
    "AUDIO_EXT",
    "CONTAINER_RUNNERS",
    "IMAGE_EXT",
    "LOOKED_THROUGH",
    "NOT_FOUND_EXIT",
    "PARALLEL_MAX_JOBS",
    "PYTHON_LANGS",
    "RUNNER_TOOLS",
    "SHELL_LANGS",
    "SHELL_TOOLS",
    "SUBMIT_SENTINELS",
    "VIDEO_EXT",
    "ParallelJobs",
    "ParsedShell",
    "SimpleCommand",
    "ToolInfo",
    "analyze_command",
    "normalize_call",
    "parallel_jobs",
    "parse_shell",
    "program_name",
    "program_not_found",
    "resolve",
]
