"""Wrappers and launchers: a command line is named by the program it runs, not by its launcher.

Package and project runners (`yarn tsc`, `pnpm exec eslint`, `pdm run pytest`), process wrappers
(`xvfb-run`, `script -c`, `watch`, `parallel`) and containers (`docker exec c python x.py`), each with
the options that come before the program. A project script (`yarn build`, `pdm run lint`) keeps the
runner's name, as `npm run build` does.
"""

from __future__ import annotations

import pytest

from trajlab.normalize import analyze_command

# (command line, tool, programs, modality)
LAUNCHERS = [
    # yarn runs a binary named in place of its sub-command (`yarn tsc`) or after `run`
    ("yarn tsc", "tsc", ("tsc",), "compute"),
    ("yarn tsc --noEmit -p .", "tsc", ("tsc",), "compute"),
    ("yarn run tsc", "tsc", ("tsc",), "compute"),
    ("yarn jest --watch=false", "jest", ("jest",), "compute"),
    ("yarn --cwd web eslint .", "eslint", ("eslint",), "compute"),
    ("cd web && yarn vitest run", "vitest", ("cd", "vitest"), "compute"),
    ("yarn workspace web tsc", "tsc", ("tsc",), "compute"),
    ("yarn exec tsc", "tsc", ("tsc",), "compute"),
    # ... but its own verbs and project scripts stay yarn
    ("yarn", "yarn", ("yarn",), "compute"),
    ("yarn add -D vitest", "yarn", ("yarn",), "web"),
    ("yarn install --frozen-lockfile", "yarn", ("yarn",), "web"),
    ("yarn workspace web add lodash", "yarn", ("yarn",), "web"),
    ("yarn run build", "yarn", ("yarn",), "compute"),
    ("yarn build", "yarn", ("yarn",), "compute"),
    ("yarn test", "yarn", ("yarn",), "compute"),
    ("yarn test:unit", "yarn", ("yarn",), "compute"),
    ("yarn dlx create-react-app x", "create-react-app", ("create-react-app",), "compute"),
    # pnpm likewise (a name that is not a pnpm command runs a script, else a binary)
    ("pnpm tsc --noEmit", "tsc", ("tsc",), "compute"),
    ("pnpm vitest run", "vitest", ("vitest",), "compute"),
    ("pnpm run build", "pnpm", ("pnpm",), "compute"),
    ("pnpm test", "pnpm", ("pnpm",), "compute"),
    ("pnpm -C web exec eslint .", "eslint", ("eslint",), "compute"),
    ("pnpm --filter web exec tsc", "tsc", ("tsc",), "compute"),
    ("pnpm --filter web test", "pnpm", ("pnpm",), "compute"),
    ("pnpm --filter web add zod", "pnpm", ("pnpm",), "web"),
    ("pnpm dlx create-vite app", "create-vite", ("create-vite",), "compute"),
    # npx, npm exec
    ("npx tsc", "tsc", ("tsc",), "compute"),
    ("npx -y prettier --check .", "prettier", ("prettier",), "compute"),
    ("npx --package typescript tsc --version", "tsc", ("tsc",), "compute"),
    ("npx -c 'tsc --noEmit && eslint .'", "tsc", ("tsc", "eslint"), "compute"),
    ("npm exec --call='vitest run'", "vitest", ("vitest",), "compute"),
    ("npm --prefix web exec tsc", "tsc", ("tsc",), "compute"),
    ("npm run lint", "npm", ("npm",), "compute"),
    ("corepack yarn tsc", "tsc", ("tsc",), "compute"),
    ("corepack pnpm install", "pnpm", ("pnpm",), "web"),
    ("corepack enable", "corepack", ("corepack",), "compute"),
    # bun
    ("bunx tsc", "tsc", ("tsc",), "compute"),
    ("bun x prettier --write .", "prettier", ("prettier",), "compute"),
    ("bun run tsc", "tsc", ("tsc",), "compute"),
    ("bun run build", "bun", ("bun",), "compute"),
    ("bun install", "bun", ("bun",), "web"),
    ("bun add zod", "bun", ("bun",), "web"),
    ("bun scripts/cut.ts clip.mp4", "bun", ("bun",), "video"),
    # Python project runners
    ("uv run pytest -q", "pytest", ("pytest",), "compute"),
    ("uv run x.py --audio a.wav", "python", ("python",), "audio"),
    ("uv run -m pytest -q", "pytest", ("pytest",), "compute"),
    ("uv run - <<'EOF'\nimport whisper\nEOF", "python", ("python",), "audio"),
    ("uv run -m http.server 8000", "python", ("python",), "compute"),
    ("uv run --directory sub pytest", "pytest", ("pytest",), "compute"),
    ("uv --directory sub run pytest", "pytest", ("pytest",), "compute"),
    ("uv run --env-file .env -- python x.py", "python", ("python",), "compute"),
    ("uvx ruff check .", "ruff", ("ruff",), "compute"),
    ("poetry run pytest", "pytest", ("pytest",), "compute"),
    ("poetry -C sub run pytest", "pytest", ("pytest",), "compute"),
    ("poetry install", "poetry", ("poetry",), "web"),
    ("poetry add requests", "poetry", ("poetry",), "web"),
    ("pipx run black .", "black", ("black",), "compute"),
    ("pipx install black", "pipx", ("pipx",), "web"),
    ("pipenv run pytest", "pytest", ("pytest",), "compute"),
    ("pipenv install requests", "pipenv", ("pipenv",), "web"),
    ("conda run -n env python x.py", "python", ("python",), "compute"),
    ("conda run --cwd /w -n env python x.py", "python", ("python",), "compute"),
    ("pdm run pytest", "pytest", ("pytest",), "compute"),
    ("pdm run python x.py", "python", ("python",), "compute"),
    ("pdm run transcribe.py talk.mp3", "python", ("python",), "audio"),
    ("pdm run lint", "pdm", ("pdm",), "compute"),
    ("pdm install", "pdm", ("pdm",), "web"),
    ("hatch run pytest -x", "pytest", ("pytest",), "compute"),
    ("hatch run test:pytest", "pytest", ("pytest",), "compute"),
    ("hatch -e test run pytest", "pytest", ("pytest",), "compute"),
    ("hatch run test:cov", "hatch", ("hatch",), "compute"),
    ("rye run pytest", "pytest", ("pytest",), "compute"),
    ("rye sync", "rye", ("rye",), "web"),
    ("pixi run python x.py", "python", ("python",), "compute"),
    ("pixi run -e cuda pytest", "pytest", ("pytest",), "compute"),
    ("pixi run test", "pixi", ("pixi",), "compute"),
    ("pixi exec ruff check", "ruff", ("ruff",), "compute"),
    ("pixi add ffmpeg", "pixi", ("pixi",), "web"),
]

WRAPPERS = [
    ("timeout 60 ffmpeg -i a.mp4 a.wav", "ffmpeg", ("ffmpeg",), "audio"),
    ("timeout -s KILL 10s python x.py", "python", ("python",), "compute"),
    ("timeout --signal KILL 10 python x.py", "python", ("python",), "compute"),
    ("nohup whisper a.mp3 > log.txt 2>&1 &", "whisper", ("whisper",), "audio"),
    ("nice -n 10 ffmpeg -i a.mp4 a.wav", "ffmpeg", ("ffmpeg",), "audio"),
    ("ionice -c2 -n7 ffprobe a.mp4", "ffprobe", ("ffprobe",), "video"),
    ("stdbuf -oL python x.py | tee log", "python", ("python", "tee"), "compute"),
    ("time ffprobe a.mp4", "ffprobe", ("ffprobe",), "video"),
    ("setsid python x.py", "python", ("python",), "compute"),
    ("unbuffer python x.py", "python", ("python",), "compute"),
    # env: options, a split string, and nothing to run (prints the environment)
    ("env -i PATH=/x ffmpeg -i a.mp4 a.wav", "ffmpeg", ("ffmpeg",), "audio"),
    ("env -S 'python -u' x.py", "python", ("python",), "compute"),
    ("env --split-string='python -u' x.py", "python", ("python",), "compute"),
    ("env - PATH=/bin ls", "ls", ("ls",), "file"),
    ("env", "env", ("env",), "compute"),
    ("env A=1", "env", ("env",), "compute"),
    ("exec > log 2>&1; ls", "ls", ("ls",), "file"),  # a bare `exec` only redirects
    ("env | grep -i proxy", "env", ("env", "grep"), "compute"),
    ("sudo --user bob python x.py", "python", ("python",), "compute"),
    ("sudo -i", "sudo", ("sudo",), "compute"),
    ("xvfb-run python x.py", "python", ("python",), "compute"),
    ("xvfb-run -a -s '-screen 0 1280x720x24' python x.py", "python", ("python",), "compute"),
    ("xvfb-run --server-args '-screen 0 1024x768x24' pytest", "pytest", ("pytest",), "compute"),
    # script: util-linux `-c CMD`, BSD `script [file [command ...]]`
    ("script -q -c 'ffmpeg -i a.mp4 a.wav' /dev/null", "ffmpeg", ("ffmpeg",), "audio"),
    ("script -qc 'pytest -q' /dev/null", "pytest", ("pytest",), "compute"),
    ("script -q --command='python x.py' /dev/null", "python", ("python",), "compute"),
    ("script -q /dev/null python x.py", "python", ("python",), "compute"),
    ("script session.log", "script", ("script",), "compute"),
    # watch runs its command through `sh -c`
    ("watch -n1 ls", "ls", ("ls",), "file"),
    ("watch -n 5 'nvidia-smi | head'", "nvidia-smi", ("nvidia-smi", "head"), "compute"),
    # xargs, find -exec and parallel run a program per input: both are listed
    ("ls *.mp4 | xargs -n1 ffprobe", "ffprobe", ("ls", "xargs", "ffprobe"), "video"),
    ("xargs --max-args 1 ffprobe < list.txt", "ffprobe", ("xargs", "ffprobe"), "video"),
    ("find . -name '*.mp4' -exec ffprobe {} \\;", "ffprobe", ("find", "ffprobe"), "video"),
    ("find . -name '*.py' -exec grep -l foo {} +", "find", ("find", "grep"), "file"),
    ("parallel ffprobe ::: a.mp4 b.mp4", "ffprobe", ("parallel", "ffprobe"), "video"),
    ("parallel -j4 'whisper {}' ::: *.mp3", "whisper", ("parallel", "whisper"), "audio"),
    ("ls *.mp4 | parallel --bar ffprobe {}", "ffprobe", ("ls", "parallel", "ffprobe"), "video"),
    (
        "parallel ::: 'ffmpeg -i a.mp4 a.wav' 'sox b.wav c.wav'",
        "ffmpeg",
        ("parallel", "ffmpeg", "sox"),
        "audio",
    ),
    # containers: the command run inside is the tool; docker stays in the programs
    ("docker exec c python x.py", "python", ("docker", "python"), "compute"),
    ("docker exec -it -w /app c bash -lc 'pytest -q'", "pytest", ("docker", "pytest"), "compute"),
    ("docker exec c ls /data", "ls", ("docker", "ls"), "file"),
    ("docker run --rm -v $PWD:/w -w /w img python x.py", "python", ("docker", "python"), "compute"),
    ("docker run --entrypoint ffprobe img a.mp4", "ffprobe", ("docker", "ffprobe"), "video"),
    ("docker container run --rm -e A=1 img ffmpeg -i a.mp4 a.wav", "ffmpeg", ("docker", "ffmpeg"), "audio"),
    ("docker compose exec web pytest", "pytest", ("docker", "pytest"), "compute"),
    ("docker-compose run --rm web python manage.py test", "python", ("docker-compose", "python"), "compute"),
    ("podman exec c ls", "ls", ("podman", "ls"), "file"),
    ("kubectl exec -it pod -c app -- python x.py", "python", ("kubectl", "python"), "compute"),
    ("docker run -d nginx", "docker", ("docker",), "compute"),
    ("docker run --rm -it ubuntu bash", "docker", ("docker",), "compute"),  # an interactive shell
    ("docker ps | grep web", "docker", ("docker", "grep"), "compute"),
    ("docker build -t x . && docker run x", "docker", ("docker", "docker"), "compute"),
    # ssh: the remote command runs on another machine; the call is ssh (web)
    ("ssh host 'ffprobe a.mp4'", "ssh", ("ssh",), "web"),
]


@pytest.mark.parametrize(("command", "tool", "programs", "modality"), LAUNCHERS + WRAPPERS)
def test_wrapped_program_is_named(
    command: str, tool: str | None, programs: tuple[str, ...], modality: str | None
) -> None:
    info = analyze_command(command)
    assert (info.tool, info.programs, info.modality) == (tool, programs, modality)
