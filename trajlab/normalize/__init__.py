"""Tool normalization: which real program a call ran, and which modality it touched."""

from ._lexicon import AUDIO_EXT, IMAGE_EXT, RUNNER_TOOLS, SHELL_TOOLS, VIDEO_EXT
from ._resolve import program_name
from ._shell import ParsedShell, SimpleCommand, parse_shell
from ._tools import ToolInfo, analyze_command, normalize_call

__all__ = [
    "AUDIO_EXT",
    "IMAGE_EXT",
    "RUNNER_TOOLS",
    "SHELL_TOOLS",
    "VIDEO_EXT",
    "ParsedShell",
    "SimpleCommand",
    "ToolInfo",
    "analyze_command",
    "normalize_call",
    "parse_shell",
    "program_name",
]
