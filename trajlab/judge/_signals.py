"""Step signals of the offline rules judge: error families, modality needs, attempts and recoveries."""

from __future__ import annotations

import re
from typing import Any

from ..normalize import AUDIO_EXT, IMAGE_EXT, VIDEO_EXT
from ._view import TrajectoryView

# Environment error families, in precedence order (the first that matches names the error).
FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    (
        "network_error",
        re.compile(
            r"could not resolve host|temporary failure in name resolution|name or service not known|"
            r"connection (?:refused|reset|timed out)|network is unreachable|no route to host|"
            r"newconnectionerror|failed to establish a new connection|ssl: ?certificate_verify_failed|"
            r"(?:http(?: error)?|status(?: code)?)[ :]*(?:429|502|503|504)\b|429 too many requests|"
            r"rate limit(?:ed| exceeded)|service unavailable|bad gateway|getaddrinfo failed",
            re.I,
        ),
    ),
    (
        "permission_denied",
        re.compile(
            r"permission denied|operation not permitted|read-only file system|\beacces\b|access is denied",
            re.I,
        ),
    ),
    (
        "resource_exhausted",
        re.compile(
            r"no space left on device|disk quota exceeded|out of memory|cannot allocate memory|memoryerror|"
            r"\boom\b|killed\s*$|resource exhausted",
            re.I | re.M,
        ),
    ),
    (
        "timeout",
        re.compile(
            r"timed out|time ?out(?:error| expired| exceeded)?\b|deadline exceeded|took too long", re.I
        ),
    ),
    (
        "missing_dependency",
        re.compile(
            r"modulenotfounderror|no module named|importerror|error while loading shared libraries|"
            r"could not find a version that satisfies|no matching distribution found|unable to locate package|"
            r"cannot find module|library not loaded",
            re.I,
        ),
    ),
    (
        "command_not_found",
        re.compile(
            r"command not found|: not found\s*$|executable file not found|is not recognized as an internal or "
            r"external command|no such file or directory: '?[\w./-]*(?:bin/)",
            re.I | re.M,
        ),
    ),
]
STRONG_FAMILIES = frozenset({"network_error", "permission_denied", "resource_exhausted", "timeout"})
"""Errors caused by the environment itself; the others may be an agent abandoning a fixable problem."""

METADATA_TOOLS = frozenset(
    {"ffprobe", "mediainfo", "exiftool", "soxi", "identify", "file", "stat", "ls", "du"}
)
INSTALLERS = frozenset(
    {"pip", "pip3", "apt", "apt-get", "conda", "mamba", "npm", "brew", "uv", "cargo", "gem", "yum", "apk"}
)
INTERPRETERS = frozenset(
    {"python", "python3", "node", "bash", "sh", "zsh", "ruby", "perl", "Rscript", "julia"}
)
MEDIA = ("audio", "video", "image")

_SPEECH = re.compile(
    r"\b(?:says?|said|saying|spoken|speaks?|speaker|narrat\w*|hear[ds]?|heard|listen\w*|transcri\w*|"
    r"voice|podcast|interview|audio|sound|lyrics?|pronounc\w*|mentions?)\b",
    re.I,
)
_VISUAL = re.compile(
    r"\b(?:shows?|shown|appears?|visible|on[- ]screen|frames?|slide|scene|sign|displayed|color|colour|"
    r"video|clip|watch\w*|see|seen)\b",
    re.I,
)
_IMAGE = re.compile(r"\b(?:image|photo|picture|screenshot|figure|chart|diagram|receipt|scan)\b", re.I)
_EXT = re.compile(r"\.([A-Za-z0-9]{2,5})\b")
_SINGLE_FRAME = re.compile(r"-frames:v\s+1\b|-vframes\s+1\b|-frames\s+1\b")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w*(?:Error|Exception): ", re.M)


_SCAN = 16_000


def scan_text(step: dict[str, Any], keys: tuple[str, ...] = ("output", "stderr")) -> str:
    """Head and tail of the step's outputs: error messages live there, and scanning megabytes of
    output with a dozen regexes would dominate the rules judge's time."""
    parts = []
    for k in keys:
        v = str(step.get(k) or "")
        parts.append(v if len(v) <= 2 * _SCAN else v[:_SCAN] + "\n" + v[-_SCAN:])
    return "\n".join(parts)


def error_family(step: dict[str, Any]) -> str | None:
    text = scan_text(step)
    if step.get("timed_out") or step.get("exit_code") == 124:
        return "timeout"
    for name, rx in FAMILIES:
        if rx.search(text):
            return name
    if step.get("exit_code") == 127:
        return "command_not_found"
    if step.get("exit_code") == 137:
        return "resource_exhausted"
    return None


def is_action(step: dict[str, Any]) -> bool:
    return step.get("kind") in ("tool_call", "tool_result")


def tool_of(step: dict[str, Any]) -> str:
    return str(step.get("tool") or step.get("tool_name") or "")


def modality_of(view: TrajectoryView, step: dict[str, Any]) -> str | None:
    node = view.nodes.get(int(step["step_index"]))
    m = (node or {}).get("modality") or step.get("modality")
    return str(m) if m else None


AUDIO_CONVERTERS = frozenset({"ffmpeg", "sox", "lame", "flac", "mpg123", "arecord", "aplay", "avconv"})
"""Audio tools that only convert or cut audio: they do not perceive its content (no transcript)."""


def is_extraction(view: TrajectoryView, step: dict[str, Any], modality: str) -> bool:
    """An action that works on the content of `modality`: not its metadata, not an installer, and for
    audio not a mere format conversion (the content is perceived by ASR or audio analysis)."""
    if not is_action(step) or modality_of(view, step) != modality:
        return False
    tool = tool_of(step)
    if tool in METADATA_TOOLS or tool in INSTALLERS:
        return False
    return not (modality == "audio" and tool in AUDIO_CONVERTERS)


def needed_modalities(view: TrajectoryView) -> dict[str, str]:
    """modality -> why the task needs it (from the domain, media file names and wording of the task)."""
    t = view.trajectory
    task = str(t.get("task") or "")
    domain = str(t.get("domain") or "").lower()
    exts = {e.lower() for e in _EXT.findall(task)}
    need: dict[str, str] = {}
    has_video_file = bool(exts & VIDEO_EXT)
    if domain == "audio" or exts & AUDIO_EXT:
        need["audio"] = f"domain={domain}" if domain == "audio" else "the task names an audio file"
    if domain in ("video", "mixed") or has_video_file:
        if _VISUAL.search(task) or domain == "video":
            need["video"] = f"domain={domain}" if domain else "the task names a video file"
        if (domain == "mixed" or has_video_file) and _SPEECH.search(task):
            need.setdefault("audio", "the task asks what is said in the video")
    if domain == "image" or exts & IMAGE_EXT or (not need and _IMAGE.search(task) and domain == "image"):
        need["image"] = f"domain={domain}" if domain == "image" else "the task names an image file"
    return need


def recovered(view: TrajectoryView, idx: int) -> bool:
    """A failed step is recovered when a later step succeeded with the same tool or the same media."""
    steps = view.steps
    pos = next(k for k, s in enumerate(steps) if int(s["step_index"]) == idx)
    s = steps[pos]
    tool, mod = tool_of(s), modality_of(view, s)
    for later in steps[pos + 1 :]:
        if not is_action(later) or view.is_failed(later):
            continue
        if tool and tool_of(later) == tool and tool not in INSTALLERS:
            return True
        if mod in MEDIA and is_extraction(view, later, mod):
            return True
        if tool in INSTALLERS and tool_of(later) in INSTALLERS:
            return True
    return False


def single_frame(step: dict[str, Any]) -> bool:
    return bool(_SINGLE_FRAME.search(str(step.get("command") or step.get("arguments") or "")))


def has_traceback(step: dict[str, Any]) -> bool:
    return bool(_TRACEBACK.search(scan_text(step)))


def quote(step: dict[str, Any], rx: re.Pattern[str] | None = None, n: int = 160) -> str:
    """A short quote from the step: the line matching `rx`, else the first non-empty output line."""
    text = scan_text(step, ("output", "stderr", "text"))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if rx is not None:
        for ln in lines:
            if rx.search(ln):
                return ln[:n]
    if not lines:
        return str(step.get("command") or "")[:n]
    return lines[0][:n]
