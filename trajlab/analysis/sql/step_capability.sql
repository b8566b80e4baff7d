-- @title Every tool call with its meta-capability: external, file, compute or other
-- @kind view
--
-- The three meta-capabilities of the LLM-in-Sandbox study, plus `other` for the agent's own
-- bookkeeping tools. Each tool call gets exactly one capability; the rules are tried in order and the
-- first match wins (the `rule` column says which one fired):
--
--   external:web        the normalizer tagged the call `web`: web search / fetch / browser tools, curl,
--                       wget, yt-dlp, package installs (pip/apt/npm ... install), scripts importing
--                       requests/urllib/httpx
--   external:install    any program of the command line is a package manager and the command installs,
--                       adds or downloads something (`cd app && pip install -r req.txt`)
--   external:download   any program is a downloader (curl, wget, yt-dlp, aria2c), or git clones/fetches/pulls
--   other:agent         the agent's own bookkeeping: todo lists / plans, think, sub-agent spawns, submit,
--                       questions to the user. (A poll of a running command is classified like the
--                       command, by the programs and modality it inherits, where the runner says which
--                       command it polls: Codex)
--   compute:code        any program runs code or a compute tool: interpreters (python, node, ...), test and
--                       build runners, calculators, media processors (ffmpeg, whisper, tesseract ...)
--   file:tool           file tools (read, write, edit, apply_patch, glob, grep, ls, find, image viewing)
--                       or a call the normalizer tagged `file` (cat, ls, grep, sed, git status, ...);
--                       a file tool's read of an audio or video file is file handling too, not computation
--   compute:other       everything else
--
-- Running code wins over file handling in one command line (`ls && python3 run.py` is computation).
-- Edit the lists below to change the rules; `trajlab analyze step_capability LAB` shows every call.
SELECT
    trajectory_id,
    step_index,
    agent_id,
    tool_name,
    coalesce(tool, tool_name, '(unknown)') AS tool,
    programs,
    modality,
    command,
    is_error OR timed_out AS failed,
    split_part(rule, ':', 1) AS capability,
    rule
FROM (
    SELECT
        *,
        CASE
            WHEN modality = 'web' THEN 'external:web'
            WHEN list_has_any(
                    list_append(programs, coalesce(tool, '')),
                    ['pip', 'apt', 'npm', 'yarn', 'pnpm', 'conda', 'mamba', 'brew', 'cargo', 'gem', 'uv',
                     'apk', 'dnf', 'yum', 'poetry', 'go'])
                AND regexp_matches(coalesce(command, ''), '\b(install|add|download|get)\b')
                THEN 'external:install'
            WHEN list_has_any(
                    list_append(programs, coalesce(tool, '')),
                    ['curl', 'wget', 'yt-dlp', 'aria2c', 'scp', 'rsync', 'huggingface-cli', 'gdown'])
                OR regexp_matches(coalesce(command, ''), '\bgit\s+(clone|fetch|pull|lfs\s+pull)\b')
                THEN 'external:download'
            WHEN coalesce(tool, '') IN ('todo', 'think', 'subagent', 'submit', 'plan', 'ask_user')
                THEN 'other:agent'
            WHEN list_has_any(
                    list_append(programs, coalesce(tool, '')),
                    ['python', 'node', 'deno', 'bun', 'ruby', 'perl', 'php', 'julia', 'r', 'rscript', 'lua',
                     'java', 'javac', 'go', 'bc', 'dc', 'awk', 'jq', 'pytest', 'make', 'cmake', 'gcc', 'g++',
                     'clang', 'rustc', 'tsc', 'calculator', 'ffmpeg', 'ffprobe', 'whisper', 'sox', 'soxi',
                     'tesseract', 'imagemagick', 'exiftool', 'mediainfo'])
                OR (coalesce(modality, '') IN ('audio', 'video')
                    AND coalesce(tool, '') NOT IN ('read', 'write', 'edit', 'apply_patch', 'glob', 'grep', 'ls',
                                                   'find', 'image_read'))
                THEN 'compute:code'
            WHEN coalesce(tool, '') IN ('read', 'write', 'edit', 'apply_patch', 'glob', 'grep', 'ls', 'find',
                                        'image_read')
                OR modality = 'file'
                THEN 'file:tool'
            ELSE 'compute:other'
        END AS rule
    FROM steps
    WHERE kind = 'tool_call'
)
