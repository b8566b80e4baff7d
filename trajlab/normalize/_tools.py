"""Name the real tool behind a call, and tag its modality.

A call is either one of the runner's own tools (Read, apply_patch, web_search, view_image, ...) or a
shell command. Shell commands are parsed (see `_shell`) rather than substring-matched: wrappers such as
`bash -lc '...'`, `sudo`, `env A=1`, `timeout 30`, `nohup`, `xargs` are looked through, `python -m pip`
is pip, `python -m whisper` is whisper, and every program of a pipeline is listed.

The modality rules, in order:
1. runner tools with a fixed modality (web_search -> web, view_image -> image, Read/Write/Edit -> file,
   or the file's extension when it names media);
2. audio programs (whisper, sox, ...) -> audio; image programs (tesseract, imagemagick, ...) -> image;
   network programs (curl, wget, yt-dlp, pip/apt/npm install) -> web;
3. ffmpeg/ffprobe -> by file extensions: audio output or `-vn` -> audio; video input -> video;
   audio input -> audio; image input -> image;
4. interpreters (python, node, ...) -> the media modality of any media file argument or of the libraries
   an inline script imports (whisper -> audio, cv2 -> video, PIL/pytesseract -> image), else compute;
5. file utilities (cat, ls, grep, sed, ...) -> file; anything else -> compute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ._shell import SimpleCommand, parse_shell

AUDIO_EXT = frozenset(["wav", "mp3", "flac", "m4a", "aac", "ogg", "opus", "wma", "aiff", "aif", "amr"])
VIDEO_EXT = frozenset(["mp4", "mkv", "webm", "mov", "avi", "flv", "wmv", "m4v", "mpeg", "mpg", "ts", "3gp"])
IMAGE_EXT = frozenset(
    ["png", "jpg", "jpeg", "gif", "bmp", "tiff", "tif", "webp", "heic", "svg", "ppm", "pgm"]
)
DOC_EXT = frozenset(["pdf", "docx", "doc", "pptx", "xlsx", "csv", "txt", "md", "json", "srt", "vtt", "html"])

AUDIO_PROGRAMS = frozenset(
    [
        "whisper",
        "sox",
        "soxi",
        "arecord",
        "aplay",
        "lame",
        "flac",
        "mpg123",
        "audiowaveform",
        "praat",
        "vosk",
        "deepspeech",
        "aubio",
        "librosa",
    ]
)
IMAGE_PROGRAMS = frozenset(
    ["tesseract", "imagemagick", "magick", "convert", "identify", "exiftool", "zbarimg", "gm"]
)
WEB_PROGRAMS = frozenset(
    [
        "curl",
        "wget",
        "yt-dlp",
        "youtube-dl",
        "http",
        "httpie",
        "aria2c",
        "lynx",
        "w3m",
        "gh",
        "ssh",
        "scp",
        "rsync",
        "git-clone",
    ]
)
INSTALLERS = frozenset(
    [
        "pip",
        "apt",
        "apt-get",
        "npm",
        "yarn",
        "pnpm",
        "conda",
        "brew",
        "cargo",
        "gem",
        "uv",
        "apk",
        "dnf",
        "yum",
    ]
)
INTERPRETERS = frozenset(
    [
        "python",
        "node",
        "deno",
        "bun",
        "ruby",
        "perl",
        "php",
        "julia",
        "r",
        "rscript",
        "lua",
        "java",
        "go",
        "bc",
        "dc",
        "awk",
        "gawk",
        "jq",
    ]
)
FILE_PROGRAMS = frozenset(
    [
        "cat",
        "ls",
        "head",
        "tail",
        "grep",
        "rg",
        "egrep",
        "fgrep",
        "sed",
        "find",
        "fd",
        "tree",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "diff",
        "cp",
        "mv",
        "rm",
        "mkdir",
        "rmdir",
        "touch",
        "chmod",
        "chown",
        "ln",
        "stat",
        "file",
        "du",
        "df",
        "less",
        "more",
        "nl",
        "tee",
        "xxd",
        "od",
        "strings",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "zip",
        "unzip",
        "tar",
        "gzip",
        "gunzip",
        "xz",
        "bzip2",
        "7z",
        "patch",
        "apply_patch",
        "pwd",
        "cd",
        "echo",
        "printf",
    ]
)
TRIVIAL = frozenset(
    [
        "cd",
        "echo",
        "printf",
        "export",
        "set",
        "unset",
        "true",
        "false",
        "source",
        ".",
        "pwd",
        "sleep",
        "exit",
        "return",
        "read",
        "wait",
        "clear",
    ]
)
WRAPPERS_SIMPLE = frozenset(
    [
        "nohup",
        "exec",
        "command",
        "builtin",
        "time",
        "nice",
        "ionice",
        "stdbuf",
        "caffeinate",
        "unbuffer",
        "chronic",
    ]
)
SHELLS = frozenset(["bash", "sh", "zsh", "dash", "ksh", "fish"])

_ALIASES = {
    "python3": "python",
    "py": "python",
    "ipython": "python",
    "pip3": "pip",
    "nodejs": "node",
    "whisper-ctranslate2": "whisper",
    "faster-whisper": "whisper",
    "whisper-cli": "whisper",
    "whisper.cpp": "whisper",
    "whisperx": "whisper",
    "insanely-fast-whisper": "whisper",
    "openai-whisper": "whisper",
    "youtube-dl": "yt-dlp",
    "yt_dlp": "yt-dlp",
    "rg": "grep",
    "egrep": "grep",
    "fgrep": "grep",
    "gawk": "awk",
    "magick": "imagemagick",
    "convert": "imagemagick",
    "identify": "imagemagick",
    "apt-get": "apt",
    "pytesseract": "tesseract",
}
_PY_MODULES = {
    "pip": "pip",
    "whisper": "whisper",
    "faster_whisper": "whisper",
    "whisperx": "whisper",
    "yt_dlp": "yt-dlp",
    "http.server": "python",
    "pytest": "pytest",
    "venv": "python",
    "json.tool": "python",
}
_PY_IMPORT_MODALITY = [
    (
        re.compile(
            r"\b(whisper|faster_whisper|whisperx|librosa|soundfile|pydub|torchaudio|speech_recognition|vosk)\b"
        ),
        "audio",
    ),
    (re.compile(r"\b(cv2|moviepy|decord|av|imageio_ffmpeg|VideoCapture|ffmpeg)\b"), "video"),
    (re.compile(r"\b(PIL|pytesseract|easyocr|skimage|Image\.open)\b"), "image"),
    (re.compile(r"\b(requests|urllib|httpx|aiohttp|bs4|selenium|playwright)\b"), "web"),
]
_EXT_RE = re.compile(r"\.([A-Za-z0-9]{2,5})(?:$|[\"'\s:?#)\]])")

# Runner tools (lower-cased name) -> (normalized tool, modality or None to derive from a path argument).
RUNNER_TOOLS: dict[str, tuple[str, str | None]] = {
    "read": ("read", None),
    "read_file": ("read", None),
    "view": ("read", None),
    "write": ("write", None),
    "write_file": ("write", None),
    "create_file": ("write", None),
    "edit": ("edit", None),
    "multiedit": ("edit", None),
    "str_replace_editor": ("edit", None),
    "str_replace_based_edit_tool": ("edit", None),
    "edit_file": ("edit", None),
    "notebookedit": ("edit", None),
    "apply_patch": ("apply_patch", "file"),
    "glob": ("glob", "file"),
    "grep": ("grep", "file"),
    "ls": ("ls", "file"),
    "list_dir": ("ls", "file"),
    "find_file": ("find", "file"),
    "search_file": ("grep", "file"),
    "search_dir": ("grep", "file"),
    "open": ("read", None),
    "goto": ("read", "file"),
    "scroll_down": ("read", "file"),
    "scroll_up": ("read", "file"),
    "create": ("write", None),
    "web_search": ("web_search", "web"),
    "websearch": ("web_search", "web"),
    "web_search_call": ("web_search", "web"),
    "search": ("web_search", "web"),
    "google_search": ("web_search", "web"),
    "webfetch": ("web_fetch", "web"),
    "web_fetch": ("web_fetch", "web"),
    "fetch": ("web_fetch", "web"),
    "browse": ("browser", "web"),
    "browser": ("browser", "web"),
    "web_browser": ("browser", "web"),
    "view_image": ("image_read", "image"),
    "image_read": ("image_read", "image"),
    "read_image": ("image_read", "image"),
    "look_at_image": ("image_read", "image"),
    "task": ("subagent", "compute"),
    "agent": ("subagent", "compute"),
    "spawn_agent": ("subagent", "compute"),
    "todowrite": ("todo", "compute"),
    "update_plan": ("todo", "compute"),
    "think": ("think", "compute"),
    "finish": ("submit", "compute"),
    "submit": ("submit", "compute"),
    "python": ("python", "compute"),
    "execute_python": ("python", "compute"),
    "run_ipython": ("python", "compute"),
    "ipython": ("python", "compute"),
    "calculator": ("calculator", "compute"),
}
# Runner tools whose argument is a shell command line, and the argument keys that may hold it.
SHELL_TOOLS = frozenset(
    [
        "bash",
        "shell",
        "shell_command",
        "exec_command",
        "local_shell_call",
        "execute_bash",
        "execute_command",
        "run_command",
        "run_shell_command",
        "terminal",
        "bash_command",
        "command_execution",
        "run",
        "cmd",
        "container.exec",
    ]
)
COMMAND_KEYS = ("command", "cmd", "keystrokes", "code", "script", "input", "chars")
PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "notebook_path", "image_path", "url")


@dataclass(frozen=True)
class ToolInfo:
    tool: str | None
    programs: tuple[str, ...]
    modality: str | None
    command: str | None


def program_name(word: str) -> str:
    base = word.rsplit("/", 1)[-1].lower()
    if base in _ALIASES:
        return _ALIASES[base]
    m = re.fullmatch(r"(python|pip|node|ruby|perl|php)[\d.]*", base)
    if m:
        return _ALIASES.get(m.group(1), m.group(1))
    return base


def _skip_assignments(argv: list[str], i: int) -> int:
    while i < len(argv) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[i], flags=re.S):
        i += 1
    return i


def _skip_options(argv: list[str], i: int, with_value: frozenset[str] = frozenset()) -> int:
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        i += 2 if argv[i] in with_value else 1
    return i


def _resolve(argv: list[str], depth: int = 0) -> list[tuple[str, list[str]]]:
    """Programs run by one simple command: [(program, its args)], looking through wrappers."""
    i = _skip_assignments(argv, 0)
    if i >= len(argv) or depth > 6:
        return []
    prog = program_name(argv[i])
    rest = argv[i + 1 :]
    if prog == "sudo" or prog == "doas":
        j = _skip_options(rest, 0, frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}))
        return _resolve(rest[j:], depth + 1)
    if prog == "env":
        j = _skip_options(rest, 0, frozenset({"-u", "-C", "-S"}))
        return _resolve(rest[j:], depth + 1)
    if prog == "timeout":
        j = _skip_options(rest, 0, frozenset({"-k", "-s", "--signal", "--kill-after"}))
        return _resolve(rest[j + 1 :], depth + 1)  # skip the duration
    if prog in WRAPPERS_SIMPLE:
        j = _skip_options(rest, 0, frozenset({"-n", "-c", "-o", "-e", "-i"}))
        return _resolve(rest[j:], depth + 1)
    if prog == "xargs":
        j = _skip_options(rest, 0, frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"}))
        return [("xargs", rest), *_resolve(rest[j:], depth + 1)]
    if prog in ("uv", "poetry", "pipenv", "conda", "mamba", "pixi") and rest[:1] == ["run"]:
        j = _skip_options(rest, 1, frozenset({"-n", "--name", "-p", "--prefix", "--with"}))
        return _resolve(rest[j:], depth + 1)
    if prog in ("npx", "pnpx", "bunx"):
        j = _skip_options(rest, 0, frozenset({"-p", "--package"}))
        return _resolve(rest[j:], depth + 1)
    if prog in SHELLS:
        for k, a in enumerate(rest):
            if a.startswith("-") and "c" in a[1:] and not a.startswith("--"):
                if k + 1 < len(rest):
                    return [
                        prog_args
                        for sc in parse_shell(rest[k + 1]).commands
                        for prog_args in _resolve(sc.argv, depth + 1)
                    ]
                return [(prog, rest)]
        return [(prog, rest)]
    if prog == "python" or prog.startswith("python"):
        j = 0
        while j < len(rest) and rest[j].startswith("-"):
            if rest[j] == "-m" and j + 1 < len(rest):
                mod = rest[j + 1]
                target = _PY_MODULES.get(mod, _PY_MODULES.get(mod.split(".")[0]))
                if target and target != "python":
                    return [(target, rest[j + 2 :])]
                return [("python", rest)]
            if rest[j] == "-c":
                break
            j += 1
        return [("python", rest)]
    if prog in ("pip",):
        return [("pip", rest)]
    return [(prog, rest)]


def _ext(word: str) -> str | None:
    m = _EXT_RE.search(word + " ")
    return m.group(1).lower() if m else None


def _media_of_words(words: list[str]) -> str | None:
    found = {"audio": False, "video": False, "image": False}
    for w in words:
        e = _ext(w)
        if e in VIDEO_EXT:
            found["video"] = True
        elif e in AUDIO_EXT:
            found["audio"] = True
        elif e in IMAGE_EXT:
            found["image"] = True
    for m in ("video", "audio", "image"):
        if found[m]:
            return m
    return None


def _ffmpeg_modality(args: list[str]) -> str:
    inputs = [args[k + 1] for k, a in enumerate(args[:-1]) if a == "-i"]
    outputs = [a for k, a in enumerate(args) if not a.startswith("-") and (k == 0 or args[k - 1] != "-i")]
    in_media = _media_of_words(inputs) or _media_of_words(args)
    out_exts = {_ext(o) for o in outputs}
    if "-vn" in args or (out_exts & AUDIO_EXT and not out_exts & (VIDEO_EXT | IMAGE_EXT)):
        return "audio"
    if in_media == "video" or (out_exts & IMAGE_EXT and in_media != "image"):
        return "video"
    return in_media or "video"


def _program_modality(prog: str, args: list[str], script: str | None) -> str:
    if prog in AUDIO_PROGRAMS:
        return "audio"
    if prog in ("ffmpeg", "ffprobe", "ffplay", "mediainfo"):
        return _ffmpeg_modality(args)
    if prog in IMAGE_PROGRAMS:
        return "image"
    if prog in WEB_PROGRAMS:
        return "web"
    if prog in INSTALLERS:
        return (
            "web"
            if any(a in ("install", "add", "i", "download", "update", "upgrade") for a in args)
            else "compute"
        )
    if prog in INTERPRETERS or prog in ("pytest", "make", "cargo", "gcc", "g++", "javac", "tsc"):
        media = _media_of_words(args)
        if media:
            return media
        code = script if script is not None else ""
        if prog == "python" and "-c" in args:
            k = args.index("-c")
            code += args[k + 1] if k + 1 < len(args) else ""
        for rx, mod in _PY_IMPORT_MODALITY:
            if code and rx.search(code):
                return mod
        return "compute"
    if prog in FILE_PROGRAMS or prog == "git":
        media = _media_of_words(args) if prog in ("cp", "mv", "ls", "file", "stat") else None
        return media or "file"
    return "compute"


@lru_cache(maxsize=131_072)
def analyze_command(command: str) -> ToolInfo:
    """Programs, main tool and modality of a shell command line."""
    parsed = parse_shell(command)
    resolved: list[tuple[str, list[str], SimpleCommand]] = []
    for sc in parsed.commands:
        for prog, args in _resolve(sc.argv):
            resolved.append((prog, args, sc))
        for sub in sc.substitutions:
            for sc2 in parse_shell(sub).commands:
                for prog, args in _resolve(sc2.argv):
                    resolved.append((prog, args, sc2))
    programs = tuple(p for p, _, _ in resolved)
    # Writing a script with `cat > f <<EOF` is preparation; the program that runs next is the tool.
    candidates = [(p, a, sc) for p, a, sc in resolved if p not in TRIVIAL and p != "xargs"]
    writers = [c for c in candidates if c[0] in ("cat", "tee") and c[2].heredocs]
    main = next((c for c in candidates if c not in writers), None) or (candidates or resolved or [None])[0]
    if main is None:
        return ToolInfo(None, programs, None, command)
    prog, args, sc = main
    heredocs = [h for _, _, c in resolved for h in c.heredocs]
    script = "\n".join(heredocs) if heredocs else None
    if main in writers:
        modality = "file"
    else:
        modality = _program_modality(prog, args, script)
    # A pipeline's media program decides the modality (e.g. `ls frames | xargs tesseract`).
    if modality in ("file", "compute"):
        for p, a, sc2 in resolved:
            m = _program_modality(p, a, "\n".join(sc2.heredocs) if sc2.heredocs else None)
            if m in ("audio", "video", "image", "web"):
                prog, modality = p, m
                break
    return ToolInfo(prog, programs, modality, command)


def _command_from_args(args: dict[str, Any]) -> str | None:
    for k in COMMAND_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v.strip():
            return v
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return _join_argv(v)
    return None


def _join_argv(argv: list[str]) -> str:
    # `["bash", "-lc", "cmd"]` is the common Codex form: keep the inner command as the command line.
    if len(argv) >= 3 and program_name(argv[0]) in SHELLS and argv[1].startswith("-") and "c" in argv[1]:
        return argv[2]
    out = []
    for a in argv:
        if a and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", a):
            out.append(a)
        else:
            out.append("'" + a.replace("'", "'\"'\"'") + "'")
    return " ".join(out)


def normalize_call(tool_name: str | None, args: Any) -> ToolInfo:
    """Normalize a runner tool call given its name and (parsed) arguments."""
    name = (tool_name or "").strip()
    low = name.lower()
    if isinstance(args, str):
        command_text: str | None = args if (low in SHELL_TOOLS or not name) else None
        argd: dict[str, Any] = {}
    elif isinstance(args, dict):
        argd = args
        command_text = (
            _command_from_args(args) if (low in SHELL_TOOLS or "command" in args or "cmd" in args) else None
        )
    elif isinstance(args, list) and args and all(isinstance(x, str) for x in args):
        argd = {}
        command_text = _join_argv(args)
    else:
        argd = {}
        command_text = None
    if low in SHELL_TOOLS or (command_text and low not in RUNNER_TOOLS):
        if command_text:
            info = analyze_command(command_text)
            return info
        return ToolInfo(low or None, (), "compute", None)
    if low in RUNNER_TOOLS:
        tool, modality = RUNNER_TOOLS[low]
        if low in ("python", "execute_python", "run_ipython", "ipython"):
            code = argd.get("code") or argd.get("script") or argd.get("input") or ""
            modality = _program_modality("python", [], code if isinstance(code, str) else "")
        if modality is None:
            path = next((argd[k] for k in PATH_KEYS if isinstance(argd.get(k), str)), None)
            modality = (_media_of_words([path]) if path else None) or "file"
            if tool == "read" and path and modality == "image":
                tool = "image_read"
        return ToolInfo(tool, (), modality, None)
    if low.startswith("mcp__") or low.startswith("mcp_"):
        return ToolInfo(
            low, (), "web" if re.search(r"search|fetch|browse|web|http", low) else "compute", None
        )
    if re.search(r"search|fetch|browse|http|url", low):
        return ToolInfo(low, (), "web", None)
    return ToolInfo(low or None, (), "compute", None)
