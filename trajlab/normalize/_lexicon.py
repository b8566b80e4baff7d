"""Word lists behind tool normalization: programs by family, runner tools, file extensions."""

from __future__ import annotations

import re


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


AUDIO_EXT = _set("wav mp3 flac m4a aac ogg oga opus wma aiff aif amr")
VIDEO_EXT = _set("mp4 mkv webm mov avi flv wmv m4v mpeg mpg ts 3gp")
IMAGE_EXT = _set("png jpg jpeg gif bmp tiff tif webp heic svg ppm pgm")
DOC_EXT = _set("pdf docx doc pptx xlsx csv txt md json srt vtt html")

AUDIO_PROGRAMS = _set(
    "whisper sox soxi arecord aplay lame flac mpg123 audiowaveform praat vosk deepspeech aubio librosa"
)
VIDEO_PROGRAMS = _set("ffmpeg ffprobe ffplay mediainfo mkvmerge mkvextract mplayer mpv vlc")
IMAGE_PROGRAMS = _set("tesseract imagemagick convert identify exiftool zbarimg gm ocrmypdf")
WEB_PROGRAMS = _set("curl wget yt-dlp http httpie aria2c lynx w3m gh ssh scp rsync")
GIT_WEB_VERBS = _set("clone fetch pull push ls-remote submodule")
# Git's global options that take a separate value (`git -C repo push`): skipped to find the sub-command.
GIT_OPTIONS_WITH_VALUE = _set("-C -c --git-dir --work-tree --namespace --config-env --super-prefix")
INSTALLERS = _set("pip apt npm yarn pnpm conda mamba micromamba brew cargo gem uv apk dnf yum")
# Environment managers whose `activate`/`deactivate`/`shell ...`/`init` only set up the shell, like
# `cd` or `source venv/bin/activate`: the program run afterwards is the tool (`conda shell.bash hook`
# is a `shell.*` verb).
ENV_MANAGERS = _set("conda mamba micromamba")
ENV_SETUP_VERBS = _set("activate deactivate shell init")
INSTALL_VERBS = _set("install add i download update upgrade sync")
INTERPRETERS = _set("python node deno bun ruby perl php julia r rscript lua java go bc dc awk jq")
BUILD_TOOLS = _set("pytest make cmake cargo gcc g++ clang javac tsc mvn gradle")
FILE_PROGRAMS = _set(
    "cat ls head tail grep sed find fd tree wc sort uniq cut tr diff cp mv rm mkdir rmdir touch chmod "
    "chown ln stat file du df less more nl tee xxd od strings basename dirname realpath readlink zip "
    "unzip tar gzip gunzip xz bzip2 7z patch apply_patch git"
)
MEDIA_FILE_PROGRAMS = _set("cp mv ls file stat du")  # their modality follows the media they name
TRIVIAL = _set(
    "cd pushd popd echo printf export set unset true false source . pwd sleep exit return read wait clear [ [[ test "
    "alias local declare typeset shift trap eval let"
)
# Wrappers that run the command after their options, with the options of each that take a value.
WRAPPER_OPTIONS_WITH_VALUE: dict[str, frozenset[str]] = {
    "nohup": frozenset(),
    "exec": _set("-a"),
    "command": frozenset(),  # `command -v`/`-V` is a lookup, not a run (see `_resolve`)
    "builtin": frozenset(),
    "time": _set("-f --format -o --output"),
    "nice": _set("-n --adjustment"),
    "ionice": _set("-c -n -p -P -u --class --classdata --pid --pgid --uid"),
    "stdbuf": _set("-i -o -e --input --output --error"),
    "caffeinate": _set("-t -w"),
    "unbuffer": frozenset(),
    "chronic": frozenset(),
}
WRAPPERS_SIMPLE = frozenset(WRAPPER_OPTIONS_WITH_VALUE)
# Package runners that fetch (if needed) and run a package's program: `uvx ruff check .` runs ruff.
# {program: (sub-command words before the package, or () for none; options that take a value)}
PACKAGE_RUNNERS: dict[str, tuple[tuple[tuple[str, ...], ...], frozenset[str]]] = {
    "npx": ((), _set("-p --package")),
    "pnpx": ((), _set("-p --package")),
    "bunx": ((), _set("-p --package")),
    "uvx": ((), _set("--from --with --with-editable --with-requirements -p --python --index --index-url")),
    "uv": ((("tool", "run"),), _set("--from --with --with-editable --with-requirements -p --python")),
    "pipx": ((("run",),), _set("--spec --python --pip-args --index-url")),
    "npm": ((("exec",), ("x",)), _set("-p --package -w --workspace")),
    "pnpm": ((("exec",), ("dlx",)), _set("-p --package --filter -F -C --dir")),
    "yarn": ((("exec",), ("dlx",)), _set("-p --package")),
    "bun": ((("x",),), _set("-p --package")),
}
SHELLS = _set("bash sh zsh dash ksh fish")
# Shell reserved words: skipped before a command (`then ffmpeg ...`), or the command is not a program.
KEYWORDS_PREFIX = _set("if then else elif while until do ! { time")
KEYWORDS_NOT_COMMAND = _set("for select case esac done fi } function in ((")

ALIASES = {
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
    "mawk": "awk",
    "magick": "imagemagick",
    "convert": "imagemagick",
    "identify": "imagemagick",
    "mogrify": "imagemagick",
    "apt-get": "apt",
    "pytesseract": "tesseract",
}
PY_MODULES = {
    "pip": "pip",
    "whisper": "whisper",
    "faster_whisper": "whisper",
    "whisperx": "whisper",
    "yt_dlp": "yt-dlp",
    "pytest": "pytest",
    "http.server": "python",
    "venv": "python",
    "json.tool": "python",
}
PY_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})
PY_IMPORT_MODALITY = [
    (
        re.compile(
            r"\b(whisper|faster_whisper|whisperx|librosa|soundfile|pydub|torchaudio|speech_recognition|vosk)\b"
        ),
        "audio",
    ),
    (re.compile(r"\b(cv2|moviepy|decord|imageio_ffmpeg|VideoCapture|ffmpeg)\b"), "video"),
    (re.compile(r"\b(PIL|pytesseract|easyocr|skimage|Image\.open)\b"), "image"),
    (re.compile(r"\b(requests|urllib|httpx|aiohttp|bs4|selenium|playwright)\b"), "web"),
]
EXT_RE = re.compile(r"\.([A-Za-z0-9]{2,5})(?:$|[\"'\s:?#)\]])")

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
PYTHON_TOOLS = frozenset({"python", "execute_python", "run_ipython", "ipython"})
# File-editor tools with sub-commands (SWE-agent / OpenHands `str_replace_editor`, Anthropic's text
# editor): the sub-command decides the tool, so `view` is a read, not an edit.
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool"})
EDITOR_COMMANDS = {
    "view": "read",
    "create": "write",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
    "edit": "edit",
}
# Runner tools whose argument is a shell command line, and the argument keys that may hold it.
SHELL_TOOLS = _set(
    "bash shell shell_command exec_command local_shell_call execute_bash execute_command run_command "
    "run_shell_command terminal bash_command command_execution run cmd container.exec"
)
COMMAND_KEYS = ("command", "cmd", "keystrokes", "code", "script", "input", "chars")
PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "notebook_path", "image_path", "url")
