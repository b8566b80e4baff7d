"""Tool normalization on real-world command lines and runner tool calls."""

from __future__ import annotations

import pytest

from trajlab.normalize import analyze_command, normalize_call, parse_shell, program_name

# (command line, tool, programs, modality)
COMMANDS = [
    ("bash -lc 'ffmpeg -i in.mp4 -vn out.wav'", "ffmpeg", ("ffmpeg",), "audio"),
    (
        '/bin/zsh -lc "ffprobe -v error -show_entries format=duration in.mp4"',
        "ffprobe",
        ("ffprobe",),
        "video",
    ),
    ("sudo apt-get install -y ffmpeg", "apt", ("apt",), "web"),
    ("sudo -u bob env A=1 timeout 5 nohup ffmpeg -i a.mkv frame_%03d.png", "ffmpeg", ("ffmpeg",), "video"),
    ("env CUDA_VISIBLE_DEVICES=0 whisper audio.mp3 --model small", "whisper", ("whisper",), "audio"),
    ("timeout 60 python3 -m whisper clip.wav --language en", "whisper", ("whisper",), "audio"),
    ("timeout -s KILL 30s ffprobe x.mp4", "ffprobe", ("ffprobe",), "video"),
    ("python -m pip install openai-whisper", "pip", ("pip",), "web"),
    ("python -X utf8 -m pip install pytesseract", "pip", ("pip",), "web"),
    ("pip3 list", "pip", ("pip",), "compute"),
    ("uv run python -m whisper x.wav", "whisper", ("whisper",), "audio"),
    ("whisper-ctranslate2 talk.m4a --output_format txt", "whisper", ("whisper",), "audio"),
    (
        "cat > /tmp/ocr.py <<'EOF'\nimport pytesseract\nfrom PIL import Image\nprint(pytesseract.image_to_string("
        "Image.open('f.png')))\nEOF\npython3 /tmp/ocr.py",
        "python",
        ("cat", "python"),
        "image",
    ),
    ("python3 - <<'PY'\nimport cv2\ncap = cv2.VideoCapture('v.mp4')\nPY", "python", ("python",), "video"),
    ("python3 -c 'import whisper; whisper.load_model(\"base\")'", "python", ("python",), "audio"),
    ("python3 transcribe.py --audio talk.mp3", "python", ("python",), "audio"),
    ("cd /work && python solve.py", "python", ("cd", "python"), "compute"),
    ("ffprobe -i video.mp4 2>&1 | grep Duration", "ffprobe", ("ffprobe", "grep"), "video"),
    (
        "echo $(ffprobe -v error -of csv=p=0 -show_entries format=duration a.mp4)",
        "ffprobe",
        ("echo", "ffprobe"),
        "video",
    ),
    ("n=`ffprobe -v error a.mkv | wc -l`", "ffprobe", ("ffprobe", "wc"), "video"),
    ("ls frames/*.png | xargs -I{} tesseract {} stdout", "tesseract", ("ls", "xargs", "tesseract"), "image"),
    ("find . -name '*.mp4' -exec ffprobe {} \\;", "ffprobe", ("find", "ffprobe"), "video"),
    ('for f in *.wav; do whisper "$f"; done', "whisper", ("whisper",), "audio"),
    ("if [ -f a.wav ]; then sox a.wav b.wav; fi", "sox", ("[", "sox"), "audio"),
    # loop and conditional bodies: the tool inside is named, the control words are not programs
    ("for x in a.mp4 b.mp4; do ffmpeg -i $x -vn $x.wav; done", "ffmpeg", ("ffmpeg",), "audio"),
    ("for f in *.mp4\ndo\n  echo $f\n  ffprobe -v error $f\ndone", "ffprobe", ("echo", "ffprobe"), "video"),
    (
        "for ((i=0; i<5; i++)); do ffmpeg -ss $i -i v.mp4 -frames:v 1 f$i.png; done",
        "ffmpeg",
        ("ffmpeg",),
        "video",
    ),
    (
        'ls *.wav | while read f; do whisper "$f" --model base; done',
        "whisper",
        ("ls", "read", "whisper"),
        "audio",
    ),
    ("while (( n < 3 )); do tesseract p$n.png -; n=$((n+1)); done", "tesseract", ("tesseract",), "image"),
    ("until [ -s out.txt ]; do sleep 1; done; cat out.txt", "cat", ("[", "sleep", "cat"), "file"),
    (
        "if [[ -f a.mp4 && ! -s a.wav ]]; then ffmpeg -i a.mp4 a.wav; elif [[ -f b.png ]]; then tesseract b.png -; fi",
        "ffmpeg",
        ("[[", "ffmpeg", "[[", "tesseract"),
        "audio",
    ),
    (
        'case "$f" in *.mp4|*.mkv) ffprobe "$f" ;; (*.wav) whisper "$f" ;; *) echo skip ;; esac',
        "ffprobe",
        ("ffprobe", "whisper", "echo"),
        "video",
    ),
    (
        'conv() { ffmpeg -i "$1" "${1%.*}.wav"; }; for f in *.mp4; do conv "$f"; done',
        "ffmpeg",
        ("ffmpeg",),
        "audio",
    ),
    ("files=(a.mp4 b.mp4); for f in ${files[@]}; do ffprobe $f; done", "ffprobe", ("ffprobe",), "video"),
    ("bash -lc 'for f in *.mp3; do whisper $f; done'", "whisper", ("whisper",), "audio"),
    ("git clone https://github.com/x/y && cd y && pip install -e .", "git", ("git", "cd", "pip"), "web"),
    ("git status --short", "git", ("git",), "file"),
    (
        "curl -sL https://x.io/a.json | python3 -c 'import sys,json; print(json.load(sys.stdin))'",
        "curl",
        ("curl", "python"),
        "web",
    ),
    ("yt-dlp -x --audio-format mp3 https://youtu.be/abc", "yt-dlp", ("yt-dlp",), "web"),
    ("ffmpeg -y -i song.mp3 -ar 16000 out.wav", "ffmpeg", ("ffmpeg",), "audio"),
    ("ffmpeg -i in.mp4 -vf fps=1 frames/%04d.jpg", "ffmpeg", ("ffmpeg",), "video"),
    ("convert in.png -resize 50% out.png", "imagemagick", ("imagemagick",), "image"),
    ("grep -rn foo src | wc -l", "grep", ("grep", "wc"), "file"),
    ("rg -n 'a|b' src", "grep", ("grep",), "file"),
    ("sed -n '1,180p' /work/SKILL.md", "sed", ("sed",), "file"),
    ("cp clip.mp4 /tmp/", "cp", ("cp",), "video"),
    ("echo hello", "echo", ("echo",), "compute"),
    ("echo $((1+2)) > n.txt", "echo", ("echo",), "file"),
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", "apply_patch", ("apply_patch",), "file"),
    ("npm test -- --run src/x.test.ts", "npm", ("npm",), "compute"),
    # Claude Code's commit idiom (corpus claude_code/258c7280...jsonl): the apostrophe in the
    # here-document body is text, so `git push` after the substitution is still a program.
    (
        "git add a.ex && git commit -m \"$(cat <<'EOF'\nfeat: show a project's sessions\n\n"
        'Co-Authored-By: Claude\nEOF\n)" && git push 2>&1',
        "git",
        ("git", "git", "cat", "git"),
        "web",
    ),
    ("bash -c \"bash -c 'tesseract f.png stdout'\"", "tesseract", ("tesseract",), "image"),
    # git's global options come before the sub-command: a push from another directory is still a push
    ("git -C repo push", "git", ("git",), "web"),
    ("git -C /work/repo fetch origin", "git", ("git",), "web"),
    ("git --git-dir=x/.git pull", "git", ("git",), "web"),
    ("git -c user.name=bot --work-tree w --git-dir w/.git push origin main", "git", ("git",), "web"),
    ("git --no-pager -C repo log --oneline | head", "git", ("git", "head"), "file"),
    # `command -v`/`-V` looks a program up, like `which`: the looked-up program does not run
    ("command -v python", "command", ("command",), "compute"),
    ("command -V ffmpeg", "command", ("command",), "compute"),
    ("command -v ffmpeg >/dev/null 2>&1 && echo ok", "command", ("command", "echo"), "compute"),
    ("command -v ffmpeg || sudo apt-get install -y ffmpeg", "apt", ("command", "apt"), "web"),
    ("which python", "which", ("which",), "compute"),
    ("command python x.py", "python", ("python",), "compute"),
    # environment set-up is not the tool when a program follows (like `cd x && python y.py`)
    ("conda activate env && python a.py", "python", ("conda", "python"), "compute"),
    ("mamba activate e && pytest -q", "pytest", ("mamba", "pytest"), "compute"),
    (
        'eval "$(conda shell.bash hook)" && conda activate e && python a.py',
        "python",
        ("eval", "conda", "conda", "python"),
        "compute",
    ),
    ("conda deactivate && ls", "ls", ("conda", "ls"), "file"),
    ("micromamba activate e && ffprobe a.mp4", "ffprobe", ("micromamba", "ffprobe"), "video"),
    ("source .venv/bin/activate && python a.py", "python", ("source", "python"), "compute"),
    (". venv/bin/activate; pytest", "pytest", (".", "pytest"), "compute"),
    ("export X=1 && python a.py", "python", ("export", "python"), "compute"),
    ("pushd sub && ls && popd", "ls", ("pushd", "ls", "popd"), "file"),
    ("conda activate env", "conda", ("conda",), "compute"),
    ("conda install -y ffmpeg", "conda", ("conda",), "web"),
    ("conda create -n x python=3.11", "conda", ("conda",), "compute"),
    ("micromamba install -y ffmpeg", "micromamba", ("micromamba",), "web"),
    ("micromamba run -n e python x.py", "python", ("python",), "compute"),
    # `time` with options, and wrappers' own options
    ("time -p python x.py", "python", ("python",), "compute"),
    ("/usr/bin/time -f %e ffmpeg -i a.mp4 a.wav", "ffmpeg", ("ffmpeg",), "audio"),
    ("exec -a worker python x.py", "python", ("python",), "compute"),
    # package runners run the package's program
    ("uvx ruff check .", "ruff", ("ruff",), "compute"),
    ("uvx ruff@0.5.0 format src", "ruff", ("ruff",), "compute"),
    ("uv tool run --from black black .", "black", ("black",), "compute"),
    ("pipx run black .", "black", ("black",), "compute"),
    ("pnpm exec tsc --noEmit", "tsc", ("tsc",), "compute"),
    ("npm exec -- eslint .", "eslint", ("eslint",), "compute"),
    ("npx prettier@3 --write .", "prettier", ("prettier",), "compute"),
    ("npx @biomejs/biome@1.9 check", "biome", ("biome",), "compute"),
    ("npm run build", "npm", ("npm",), "compute"),
    ("uv tool install ruff", "uv", ("uv",), "web"),
    # from an audit of the corpus: an install gives way to an equally telling program run after it ...
    ("pip install yt-dlp && yt-dlp -o v.mp4 https://youtu.be/x", "yt-dlp", ("pip", "yt-dlp"), "web"),
    ("pip install -r requirements.txt && pytest -q", "pytest", ("pip", "pytest"), "compute"),
    # ... but not to a less telling one, nor to another install
    ("pip install foo; cat notes.txt", "pip", ("pip", "cat"), "web"),
    ("pip install foo && npm install", "pip", ("pip", "npm"), "web"),
    ("pip list && python run.py", "pip", ("pip", "python"), "compute"),
    # mini-swe-agent hands in its work by printing its sentinel
    (
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
        "submit",
        ("echo", "git", "git"),
        "compute",
    ),
    ("echo MINI_SWE_AGENT_FINAL_OUTPUT", "submit", ("echo",), "compute"),
    ("echo COMPLETE_TASK", "echo", ("echo",), "compute"),
    # Elixir's mix fetches dependencies with deps.get; its other tasks compute
    ("mix deps.get 2>&1 | tail -5", "mix", ("mix", "tail"), "web"),
    ("mix test", "mix", ("mix",), "compute"),
    # OpenCV alone is image work; opening a video makes it video
    ("python3 -c 'import cv2; print(cv2.imread(\"a.jpg\").shape)'", "python", ("python",), "image"),
    ("python3 -c 'import cv2; cv2.VideoCapture(\"a.mp4\")'", "python", ("python",), "video"),
    ("", None, (), None),
]


@pytest.mark.parametrize(("command", "tool", "programs", "modality"), COMMANDS)
def test_command_lines(
    command: str, tool: str | None, programs: tuple[str, ...], modality: str | None
) -> None:
    info = analyze_command(command)
    assert (info.tool, info.programs, info.modality) == (tool, programs, modality)
    assert info.command == command


# (runner tool name, arguments, tool, modality, command)
CALLS = [
    ("exec_command", '{"cmd": "ffprobe a.mp4", "yield_time_ms": 1000}', "ffprobe", "video", "ffprobe a.mp4"),
    ("shell", {"command": ["bash", "-lc", "whisper a.wav"]}, "whisper", "audio", "whisper a.wav"),
    ("shell", {"command": ["ls", "-la", "my dir"]}, "ls", "file", "ls -la 'my dir'"),
    ("Bash", {"command": "tesseract img.png out -l eng", "description": "ocr"}, "tesseract", "image", None),
    ("Read", {"file_path": "/work/frame.png"}, "image_read", "image", None),
    ("Read", {"file_path": "/work/notes.txt"}, "read", "file", None),
    ("Write", {"file_path": "/work/a.wav", "content": "x"}, "write", "audio", None),
    ("apply_patch", {"input": "*** Begin Patch"}, "apply_patch", "file", None),
    ("web_search", {"type": "search", "query": "q"}, "web_search", "web", None),
    ("WebFetch", {"url": "https://x", "prompt": "p"}, "web_fetch", "web", None),
    ("view_image", {"path": "a.png"}, "image_read", "image", None),
    ("Task", {"prompt": "do"}, "subagent", "compute", None),
    ("execute_python", {"code": "import librosa\nlibrosa.load('a.wav')"}, "python", "audio", None),
    ("mcp__browser__navigate", {"url": "https://x"}, "mcp__browser__navigate", "web", None),
    ("mcp__node_repl__js", '{"title": "t", "code": "1+1"}', "mcp__node_repl__js", "compute", None),
    # a code runner does what its code does: the corpus's Codex drove a browser through a node REPL
    (
        "mcp__node_repl__js",
        {"code": "await tab.goto('https://x'); await tab.playwright.wait()"},
        "mcp__node_repl__js",
        "web",
        None,
    ),
    (
        "mcp__node_repl__js",
        {"code": "const tabs = await agent.browser.tabs.list();"},
        "mcp__node_repl__js",
        "web",
        None,
    ),
    (
        "mcp__repl__python",
        {"code": "import cv2\nprint(cv2.imread('a.png').shape)"},
        "mcp__repl__python",
        "image",
        None,
    ),
    # file-editor tools: the sub-command decides (a `view` is a read, not an edit)
    ("str_replace_editor", {"command": "view", "path": "/a.py"}, "read", "file", None),
    (
        "str_replace_editor",
        '{"command": "view", "path": "/data", "view_range": [0, -1]}',
        "read",
        "file",
        None,
    ),
    ("str_replace_editor", {"command": "view", "path": "/w/frame_01.png"}, "image_read", "image", None),
    ("str_replace_based_edit_tool", {"command": "view", "path": "/w/notes.md"}, "read", "file", None),
    ("str_replace_editor", {"command": "create", "path": "/w/a.py", "file_text": "x"}, "write", "file", None),
    ("str_replace_editor", {"command": "str_replace", "path": "/a.py", "old_str": "a"}, "edit", "file", None),
    ("str_replace_editor", {"command": "insert", "path": "/a.py", "insert_line": 3}, "edit", "file", None),
    ("str_replace_editor", {"command": "undo_edit", "path": "/a.py"}, "edit", "file", None),
    # SWE-agent 0.x action lines
    ("str_replace_editor", {"command": "str_replace_editor view /repo/calc.py"}, "read", "file", None),
    (
        "str_replace_editor",
        {"command": "str_replace_editor str_replace /repo/calc.py\nx"},
        "edit",
        "file",
        None,
    ),
    ("str_replace_editor", "view /repo", "read", "file", None),
    ("str_replace_editor", {"command": 7, "path": "/a.py"}, "edit", "file", None),
    (None, "ffmpeg -i a.mp4 b.wav", "ffmpeg", "audio", "ffmpeg -i a.mp4 b.wav"),
    ("exec_command", '{"cmd": "ffprobe a.mp4', "exec_command", "compute", None),
    ("bash", "{ ffprobe a.mp4; }", "ffprobe", "video", "{ ffprobe a.mp4; }"),
    # runner tools named after an audit of the corpus
    ("web_browser_go", {"url": "https://www.aisi.gov.uk/"}, "browser", "web", None),
    ("web_browser_click", {"element_id": 151}, "browser", "web", None),
    ("mark_task_complete", {}, "submit", "compute", None),
    ("TaskOutput", {"task_id": "bd0afab", "block": True}, "poll", "compute", None),
    ("ExitPlanMode", {"plan": "1. fix"}, "plan", "compute", None),
    ("AskUserQuestion", {"questions": []}, "ask_user", "compute", None),
    # AutoGen CaptainAgent's helper functions say what the Python does
    (
        "python",
        {"code": "from functions import perform_web_search\nperform_web_search('q')"},
        "python",
        "web",
        None,
    ),
    (
        "python",
        {"code": "from functions import optical_character_recognition as ocr\nocr('a.png')"},
        "python",
        "image",
        None,
    ),
    # a code executor's blocks, shell and Python mixed: the most telling program of all of them
    (
        "execute_code",
        {
            "code_blocks": [
                {"language": "sh", "code": "sudo apt-get install -y tesseract-ocr; pip install pytesseract"},
                {"language": "python", "code": "import pytesseract\nfrom PIL import Image\nprint(1)"},
            ]
        },
        "python",
        "image",
        None,
    ),
    (
        "execute_code",
        {
            "code_blocks": [
                {"language": "python", "code": "print(1)"},
                {"language": "sh", "code": "ffprobe a.mp4"},
            ]
        },
        "ffprobe",
        "video",
        None,
    ),
    ("execute_code", {"code_blocks": [{"language": "sh", "code": "pip install x"}]}, "pip", "web", None),
    (
        "execute_code",
        {"code_blocks": [{"language": "r", "code": "1"}, "junk"]},
        "execute_code",
        "compute",
        None,
    ),
]


@pytest.mark.parametrize(("name", "args", "tool", "modality", "command"), CALLS)
def test_runner_calls(name: str | None, args: object, tool: str, modality: str, command: str | None) -> None:
    info = normalize_call(name, args)
    assert (info.tool, info.modality) == (tool, modality)
    if command is not None:
        assert info.command == command


def test_program_names() -> None:
    assert [
        program_name(w) for w in ["/usr/bin/python3.11", "pip3", "rg", "magick", "./run.sh", "FFMPEG"]
    ] == [
        "python",
        "pip",
        "grep",
        "imagemagick",
        "run.sh",
        "ffmpeg",
    ]


def test_heredoc_body_and_redirects() -> None:
    p = parse_shell("cat <<-'EOF' > out.txt\n\thello\n\tEOF\nwc -l out.txt 2>&1")
    assert [c.argv for c in p.commands] == [["cat"], ["wc", "-l", "out.txt"]]
    assert p.commands[0].heredocs == ["\thello"]
    assert ("<<-", "EOF") in p.commands[0].redirects and (">", "out.txt") in p.commands[0].redirects
    assert p.commands[1].redirects == [("2>&", "1")]
    assert p.operators == [";", ""]
