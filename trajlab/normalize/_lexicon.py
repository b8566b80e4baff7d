"""Word lists behind tool normalization: programs by family, runner tools, file extensions."""

from __future__ import annotations

import re
from typing import NamedTuple


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
INSTALLERS = _set(
    "pip apt npm yarn pnpm bun conda mamba micromamba brew cargo gem uv apk dnf yum poetry pdm pipx pipenv "
    "rye pixi mix"
)
# Environment managers whose `activate`/`deactivate`/`shell ...`/`init` only set up the shell, like
# `cd` or `source venv/bin/activate`: the program run afterwards is the tool (`conda shell.bash hook`
# is a `shell.*` verb).
ENV_MANAGERS = _set("conda mamba micromamba")
ENV_SETUP_VERBS = _set("activate deactivate shell init")
INSTALL_VERBS = _set("install add i download update upgrade sync deps.get")  # `mix deps.get` (Elixir)
SHELL_LANGS = frozenset(["sh", "bash", "shell", "console", "zsh"])
PYTHON_LANGS = frozenset(["python", "py", "python3", "ipython", ""])
"""Code-block languages (a Markdown fence's info string) run as shell commands and as Python; a block
without a language is Python, as AutoGen's code executor runs it."""
SUBMIT_SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
"""A shell command printing one of these hands in the result (mini-swe-agent): the call is a `submit`."""
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
SHELLS = _set("bash sh zsh dash ksh fish")
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
    "setsid": frozenset(),
    "xvfb-run": _set(
        "-e --error-file -f --auth-file -n --server-num -p --xauth-protocol -s --server-args -w --wait"
    ),
}
WRAPPERS_SIMPLE = frozenset(WRAPPER_OPTIONS_WITH_VALUE)
SUDO_OPTIONS_WITH_VALUE = _set(
    "-u -g -C -D -h -p -r -t -U --user --group --close-from --chdir --host --prompt --role --type "
    "--other-user"
)
ENV_OPTIONS_WITH_VALUE = _set("-u -C --unset --chdir")
TIMEOUT_OPTIONS_WITH_VALUE = _set("-k -s --signal --kill-after")
XARGS_OPTIONS_WITH_VALUE = _set(
    "-I -n -P -d -L -s -E -a --max-args --max-procs --delimiter --arg-file --max-chars --max-lines"
)
# `script` options that take a value (util-linux, and BSD's `-F pipe`); its command is `-c CMD`.
SCRIPT_OPTIONS_WITH_VALUE = _set(
    "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format -o --output-limit -F"
)
WATCH_OPTIONS_WITH_VALUE = _set("-n --interval -q --equexit")
# GNU parallel's options that take a value (`-j 4`, `--joblog FILE`, `--arg-sep ,,`); short ones bundle
# (`-kj4`, `-kj 4`). `--onall`, `--nonall`, `--shebang-wrap`, `--pipe`, `--link` are flags.
PARALLEL_OPTIONS_WITH_VALUE = _set(
    "-j --jobs -P --max-procs -S --sshlogin --sshloginfile --slf -a --arg-file --arg-sep --arg-file-sep "
    "--joblog --jl --results --res --delay --timeout -N --max-replace-args -n --max-args -s --max-chars "
    "-L -C --colsep -I -d --delimiter -E --env --tmpdir --workdir --wd --tagstring --ctagstring --halt "
    "--halt-on-error --retries --memfree --memsuspend --load --nice --block --block-size --block-timeout "
    "--bt --recstart --recend --basefile --bf --return --trc --transferfile --transfer-file --tf "
    "--extensionreplace --er --basenamereplace --bnr --dirnamereplace --dnr --basenameextensionreplace "
    "--bner --seqreplace --slotreplace --bin --shard --group-by --compress-program --decompress-program "
    "--filter --header --limit --minversion --parens --process-slot-var -J --profile --rpl --rsync-opts "
    "--semaphore-name --id --semaphore-timeout --st --sql --sql-master --sqlmaster --sql-and-worker "
    "--sqlandworker --sql-worker --sqlworker --ssh --ssh-delay --sshdelay --shell-completion --template "
    "--tmpl --term-seq --termseq --total-jobs --total --trim --_parset"
)
# Options whose value is optional: a long one takes the next word when it is one (`--replace X`, a number
# for `--max-lines`), a short one only an attached value (`-i{}`, `-l2`, `-eEOF`).
PARALLEL_OPTIONS_OPTIONAL_VALUE = _set("--replace --eof --max-lines -i -e -l")


class Launcher(NamedTuple):
    """How a package or project runner names the program it runs."""

    runs: tuple[tuple[str, ...], ...] = ()
    """Sub-commands after which a program (or a package's program) is named: `pnpm exec eslint`,
    `uv tool run ruff`; `()` means the program comes first (`npx tsc`)."""
    scripts: tuple[str, ...] = ()
    """Sub-commands after which a project script or a program is named (`yarn run build`, `pdm run
    pytest`): only a known program counts (see `KNOWN_PROGRAMS`), a script keeps the runner's name."""
    verbs: frozenset[str] = frozenset()
    """The runner's own sub-commands, when any other word in their place is a project script or a
    program, as after `scripts` (`yarn tsc`, `pnpm vitest run`; `yarn build` is a script)."""
    options: frozenset[str] = frozenset()
    """Options that take a separate value, before and after the sub-command."""
    call: bool = False  # `-c CMD` / `--call CMD` runs a command line (`npx -c 'tsc && eslint .'`)
    python: bool = False  # `run x.py` runs python on it, `run -m MOD` is `python -m MOD`
    env_prefix: bool = False  # `hatch run test:pytest`: `ENV:` names an environment


_UV_OPTIONS = (
    "--from --with --with-editable --with-requirements -p --python --directory --project --package "
    "--extra --group --only-group --no-group --env-file --index --index-url --extra-index-url "
    "--default-index -f --find-links --config-file --cache-dir"
)
_CONDA_OPTIONS = _set("-n --name -p --prefix --cwd")
# yarn 1 and yarn 2+ (berry) commands; `yarn X` for any other X runs the script or binary X.
_YARN_VERBS = _set(
    "access add audit autoclean bin cache check config constraints create dedupe dlx exec explain "
    "generate-lock-entry global help import info init install licenses link list login logout node npm "
    "outdated owner pack patch patch-commit plugin policies publish rebuild remove run search set stage "
    "tag team test unlink unplug up upgrade upgrade-interactive version versions why workspace workspaces"
)
_PNPM_VERBS = _set(
    "add i install it install-test update up upgrade remove rm uninstall un link ln unlink import rebuild "
    "rb prune fetch patch patch-commit patch-remove audit list ls ll la outdated why licenses run test t "
    "exec dlx create start publish pack recursive server store root bin config c get set init deploy "
    "doctor env setup self-update cache catalog approve-builds ignored-builds sbom version view info help "
    "dedupe restart stop"
)
LAUNCHERS: dict[str, Launcher] = {
    "npx": Launcher(runs=((),), options=_set("-p --package -w --workspace"), call=True),
    "pnpx": Launcher(runs=((),), options=_set("-p --package"), call=True),
    "bunx": Launcher(runs=((),), options=_set("-p --package")),
    "uvx": Launcher(runs=((),), options=_set(_UV_OPTIONS)),
    "uv": Launcher(runs=(("tool", "run"), ("run",)), options=_set(_UV_OPTIONS), python=True),
    "pipx": Launcher(runs=(("run",),), options=_set("--spec --python --pip-args --index-url")),
    "npm": Launcher(
        runs=(("exec",), ("x",)), options=_set("-p --package -w --workspace --prefix"), call=True
    ),
    "pnpm": Launcher(
        runs=(("exec",), ("dlx",)),
        scripts=("run",),
        verbs=_PNPM_VERBS,
        options=_set("-p --package --filter -F -C --dir --workspace-concurrency --reporter"),
        call=True,
    ),
    "yarn": Launcher(
        runs=(("exec",), ("dlx",)), scripts=("run",), verbs=_YARN_VERBS, options=_set("-p --package --cwd")
    ),
    "bun": Launcher(runs=(("x",),), scripts=("run",), options=_set("-p --package --cwd")),
    "poetry": Launcher(runs=(("run",),), options=_set("-C --directory -P --project")),
    "pipenv": Launcher(runs=(("run",),)),
    "conda": Launcher(runs=(("run",),), options=_CONDA_OPTIONS),
    "mamba": Launcher(runs=(("run",),), options=_CONDA_OPTIONS),
    "micromamba": Launcher(runs=(("run",),), options=_CONDA_OPTIONS | _set("-a --attach")),
    "pixi": Launcher(runs=(("exec",),), scripts=("run",), options=_set("-e --environment --manifest-path")),
    "pdm": Launcher(scripts=("run",), options=_set("-p --project"), python=True),
    "hatch": Launcher(scripts=("run",), options=_set("-e --env -p --project"), env_prefix=True),
    "rye": Launcher(scripts=("run",), options=_set("--pyproject")),
}
# `corepack yarn ...` runs yarn (or pnpm, npm) at the version the project pins.
COREPACK_TOOLS = _set("yarn pnpm npm npx pnpx")
# Well-known command-line programs of JavaScript and Python projects: in a runner's script-or-program
# place (`yarn tsc`, `pdm run mypy`) they name a program; any other word (`yarn build`) a project script.
DEV_PROGRAMS = _set(
    "tsc eslint prettier jest vitest mocha ava karma cypress playwright webpack webpack-cli vite rollup "
    "esbuild tsup tsx ts-node nodemon next nuxt astro remix expo react-scripts ng vue-tsc vue-cli-service "
    "svelte-kit svelte-check biome oxlint stylelint babel swc turbo nx lerna changeset prisma drizzle-kit "
    "wrangler vercel netlify firebase http-server concurrently rimraf knip c8 nyc storybook docusaurus "
    "eleventy hardhat ruff mypy black isort flake8 pylint pyright pyflakes bandit tox nox coverage "
    "pre-commit sphinx-build mkdocs jupyter uvicorn gunicorn flask django-admin alembic celery streamlit "
    "gradio twine maturin"
)
KNOWN_PROGRAMS = (
    DEV_PROGRAMS
    | BUILD_TOOLS
    | INTERPRETERS
    | AUDIO_PROGRAMS
    | VIDEO_PROGRAMS
    | IMAGE_PROGRAMS
    | WEB_PROGRAMS
    | SHELLS
)
# Container CLIs: `docker exec C CMD` / `docker run IMG CMD` run CMD in a container.
CONTAINER_CLIS = _set("docker podman nerdctl")
CONTAINER_GLOBAL_OPTIONS = _set("-H --host -c --context --config -l --log-level")
CONTAINER_EXEC_OPTIONS = _set("-e --env --env-file -u --user -w --workdir --detach-keys")
CONTAINER_RUN_OPTIONS = CONTAINER_EXEC_OPTIONS | _set(
    "--add-host --annotation -a --attach --blkio-weight --blkio-weight-device --cap-add --cap-drop "
    "--cgroup-parent --cgroupns --cidfile --cpu-period --cpu-quota --cpu-rt-period --cpu-rt-runtime "
    "-c --cpu-shares --cpus --cpuset-cpus --cpuset-mems --device --device-cgroup-rule --device-read-bps "
    "--device-read-iops --device-write-bps --device-write-iops --dns --dns-option --dns-search "
    "--domainname --entrypoint --expose --gpus --group-add --health-cmd --health-interval "
    "--health-retries --health-start-interval --health-start-period --health-timeout -h --hostname --ip "
    "--ip6 --ipc --isolation --kernel-memory -l --label --label-file --link --link-local-ip --log-driver "
    "--log-opt --mac-address -m --memory --memory-reservation --memory-swap --memory-swappiness --mount "
    "--name --network --net --network-alias --net-alias --oom-score-adj --pid --pids-limit --platform -p "
    "--publish --pull --restart --runtime --security-opt --shm-size --stop-signal --stop-timeout "
    "--storage-opt --sysctl --tmpfs --ulimit --userns --uts -v --volume --volume-driver --volumes-from"
)
COMPOSE_GLOBAL_OPTIONS = _set("-f --file -p --project-name --profile --env-file --project-directory --ansi")
COMPOSE_OPTIONS = CONTAINER_EXEC_OPTIONS | _set(
    "--index --name --entrypoint -p --publish -v --volume -l --label --cap-add --cap-drop --pull"
)
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
    # OpenCV reads images as often as videos: it is video only when the code opens or writes a video
    (re.compile(r"\b(moviepy|decord|imageio_ffmpeg|VideoCapture|VideoWriter|ffmpeg)\b"), "video"),
    # the image helpers of AutoGen's CaptainAgent `functions` module are image work too
    (
        re.compile(
            r"\b(cv2|PIL|pytesseract|easyocr|skimage|Image\.open|optical_character_recognition|image_qa)\b"
        ),
        "image",
    ),
    # ... and its web helpers (search, Wikipedia tables, arXiv, YouTube captions and downloads) web access,
    # as is code driving a browser (Playwright, Puppeteer, a REPL's `agent.browser`)
    (
        re.compile(
            r"\b(requests|urllib|httpx|aiohttp|bs4|selenium|playwright|puppeteer|browser|perform_web_search"
            r"|scrape_wikipedia_tables"
            r"|arxiv_search|arxiv_download|get_youtube_caption|youtube_download)\b"
        ),
        "web",
    ),
]
EXT_RE = re.compile(r"\.([A-Za-z0-9]{2,5})(?:$|[\"'\s:?#)\]])")

# Runner tools (lower-cased name) -> (normalized tool, modality or None to derive from a path argument).
RUNNER_TOOLS: dict[str, tuple[str, str | None]] = {
    "read": ("read", None),
    "read_file": ("read", None),
    "open_local_file": ("read", None),  # Magentic-One FileSurfer
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
    # Inspect AI's browser tools
    "web_browser_go": ("browser", "web"),
    "web_browser_click": ("browser", "web"),
    "web_browser_type": ("browser", "web"),
    "web_browser_type_submit": ("browser", "web"),
    "web_browser_scroll": ("browser", "web"),
    "web_browser_back": ("browser", "web"),
    "web_browser_forward": ("browser", "web"),
    "web_browser_refresh": ("browser", "web"),
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
    # Claude Code's plan mode and questions to the user: the agent's own bookkeeping, like a todo list
    "exitplanmode": ("plan", "compute"),
    "enterplanmode": ("plan", "compute"),
    "askuserquestion": ("ask_user", "compute"),
    "finish": ("submit", "compute"),
    "submit": ("submit", "compute"),
    "mark_task_complete": ("submit", "compute"),  # Terminus
    "task_complete": ("submit", "compute"),
    # Claude Code's waits on a background command (`TaskOutput`, formerly `BashOutput`): like Codex's
    # `write_stdin` polls
    "taskoutput": ("poll", "compute"),
    "bashoutput": ("poll", "compute"),
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
