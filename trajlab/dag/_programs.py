"""What each program of a shell command line reads and writes: one rule per program family.

`program_io(acc, prog, args, sc)` applies the rule of one simple command (after `_shellio` has looked
through wrappers, `sh -c` and `find -exec`) to a `ShellIOBuilder`: redirections and here-documents,
output flags, then the program's own rule (ffmpeg, whisper, tesseract, copiers, downloads, archives,
converters, `sed -i`, apply_patch, interpreters running scripts or inline code, listers). Every
production carries the name of the rule that found it; docs/dag.md lists them with examples.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from ..normalize import SimpleCommand
from ._tokens import basename, code_io, has_glob, is_pathlike, is_url, norm_path, words

SHELLS = frozenset(["bash", "sh", "zsh", "dash", "ksh"])
_INTERPRETERS = words("python node ruby perl php deno bun rscript julia lua")
_CODE_FLAGS = {
    "python": "-c",
    "node": "-e",
    "ruby": "-e",
    "perl": "-e",
    "php": "-r",
    "deno": "eval",
    "bun": "-e",
}
_O_PROGRAMS = words(
    "gcc g++ cc clang clang++ curl yt-dlp sort pandoc go rustc openssl wkhtmltopdf qpdf gs ghostscript aria2c ld nvcc zig"
)
_OUTPUT_LONG = words(
    "--output --output-dir --output_dir --outdir --out --out-dir --output-file --output_file --output-document --save-path --download-dir --directory-prefix --target-dir"
)
_OUTPUT_FLAGS_O = _OUTPUT_LONG | {"-o"}  # `-o` is an output only for _O_PROGRAMS
_DIR_OUTPUT = words(
    "--output-dir --output_dir --outdir --out-dir --save-path --download-dir --directory-prefix --target-dir"
)
_FFMPEG_FLAGS = words(
    "-y -n -hide_banner -vn -an -sn -dn -nostdin -stats -nostats -shortest -report -re -copyts -benchmark -xerror -accurate_seek -noaccurate_seek -h -version -autorotate -noautorotate"
)
_WHISPER_FORMATS = ("txt", "vtt", "srt", "tsv", "json")
_COPIERS = words("cp mv rsync scp install ln")
_LISTERS = frozenset(["ls", "tree", "dir"])
_NAME_VALUES: dict[str, frozenset[str]] = {
    "mini": words("-m --model -t --task --model-class --cost-limit -l"),
    "claude": words(
        "--model --output-format --input-format --permission-mode --allowedTools --allowed-tools"
        " --disallowedTools --disallowed-tools --max-turns --append-system-prompt --session-id -r --resume"
    ),
    "codex": words("-m --model -c --config -s --sandbox -a --ask-for-approval -p --profile"),
    "llm": words("-m --model -s --system -o --option -t --template"),
    "aider": words("--model --message -m --edit-format"),
}
"""Agent CLIs run inside a run (Terminal-Bench installs one and starts it): flags whose values are model
names, prompts or settings (`mini -m anthropic/claude-sonnet-4-0`), not paths to read."""
_ASCIINEMA_VALUES = words("-c --command -t --title -i --idle-time-limit --cols --rows -e --env")
_REDIRECT_OUT = frozenset([">", ">>", ">|", "&>", "&>>"])


@dataclass
class ShellIO:
    """Reads and writes of one command line. Paths are normalized against the working directory."""

    produced: list[tuple[str, str]] = field(default_factory=list)  # (path, rule); patterns keep %03d / *
    produced_dirs: list[tuple[str, str]] = field(default_factory=list)  # (dir, rule)
    consumed: list[str] = field(default_factory=list)  # paths and globs read
    words: list[str] = field(default_factory=list)  # plain words that may name a produced directory
    urls: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # paths run as programs
    edits: list[str] = field(default_factory=list)  # paths changed in place (read and written)
    written_code: dict[str, str] = field(default_factory=dict)  # script path -> its heredoc body
    lists_dir: str | None = None  # `ls D`: bare names in the output live in D
    deleted: list[str] = field(default_factory=list)  # paths removed (`rm`, `git rm`, `unlink`)
    cwd: str | None = None  # working directory after the line (`cd` persists in most runners)


def _positional(
    args: list[str], with_value: frozenset[str] = frozenset(), all_take_value: bool = False
) -> list[str]:
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and a != "-" and len(a) > 1:
            if "=" in a:
                i += 1
            elif all_take_value or a in with_value:
                i += 2
            else:
                i += 1
            continue
        pos.append(a)
        i += 1
    return pos


def _glob_like(w: str) -> bool:
    """A word with `*`/`?`/`[` that may be a file pattern: no option, no regex alternation, no spaces
    (`context.*compact|compact.*context` and a markdown `--description=**x**` are none)."""
    return w[0] != "-" and "|" not in w and " " not in w and "\n" not in w and len(w) <= 400


_SEARCHERS = words("grep egrep fgrep rg ag ack zgrep")
_SEARCH_LONG_VALUES = words(
    "--regexp --file --after-context --before-context --context --max-count --include --exclude --exclude-dir"
    " --glob --iglob --type --type-not --color --colour --directories --devices --label --max-columns"
    " --max-depth --sort --sortr --threads --ignore-file --pre --encoding"
)
_SEARCH_SHORT_VALUES = frozenset("efABCmgtTdDMEj")
"""Options of grep and its kin that take a value (a pattern, a pattern file, a count, a file glob); short
ones may be bundled (`-rnf pats.txt`) or carry it attached (`-eTODO`, `-A3`)."""


def _search_files(args: list[str]) -> list[str]:
    """The files and directories a grep/rg/ag call searches: its positional words bar the pattern (the
    first, unless `-e`/`-f`/`--regexp`/`--file` gave it, or `rg --files` lists files), plus a pattern
    file (`-f FILE`, `-rnf FILE`, `--file=FILE`)."""
    files: list[str] = []
    pos: list[str] = []
    given = False
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a == "--":
            pos += args[i + 1 :]
            break
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if name == "--files":
                given = True
            elif name in _SEARCH_LONG_VALUES:
                given = given or name in ("--regexp", "--file")
                if name == "--file" and (val if eq else nxt):
                    files.append(val if eq else nxt or "")
                i += 0 if eq else 1
        elif a.startswith("-") and len(a) > 1:
            for j in range(1, len(a)):
                ch = a[j]
                if ch in _SEARCH_SHORT_VALUES:
                    attached = a[j + 1 :]
                    given = given or ch in "ef"
                    if ch == "f" and (attached or nxt):
                        files.append(attached or nxt or "")
                    i += 0 if attached else 1
                    break
        else:
            pos.append(a)
        i += 1
    return files + (pos if given else pos[1:])


def _without_values(args: list[str], names: frozenset[str]) -> list[str]:
    """The arguments without the values of the named flags (`-m X` and `--model=X` both go)."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in names:
            skip = True
        elif not (a.startswith("--") and a.partition("=")[0] in names):
            out.append(a)
    return out


def _flag_values(args: list[str], names: frozenset[str]) -> list[tuple[str, str]]:
    out = []
    for k, a in enumerate(args):
        if "=" in a and a.split("=", 1)[0] in names:
            out.append((a.split("=", 1)[0], a.split("=", 1)[1]))
        elif a in names and k + 1 < len(args):
            out.append((a, args[k + 1]))
    return out


class ShellIOBuilder:
    """The reads and writes of one command line as its simple commands are applied in order."""

    def __init__(self, cwd: str | None):
        self.io = ShellIO(cwd=cwd)
        self.cwd = cwd
        self.outputs: set[str] = set()

    def p(self, path: str) -> str:
        return norm_path(path, self.cwd)

    def produce(self, path: str, rule: str) -> None:
        if not path or path in ("-", "/dev/null", "/dev/stdout", "/dev/stderr") or is_url(path):
            return
        self.outputs.add(path)
        self.io.produced.append((self.p(path), rule))

    def produce_dir(self, path: str, rule: str) -> None:
        if path and path not in ("-", "."):
            self.outputs.add(path)
            self.io.produced_dirs.append((self.p(path), rule))

    def consume_words(self, words: list[str]) -> None:
        for w in words:
            if w in self.outputs or "$" in w or "`" in w:
                continue
            if is_url(w):
                self.io.urls.append(w)
            elif is_pathlike(w) or (has_glob(w) and ("/" in w or "." in w) and _glob_like(w)):
                self.io.consumed.append(self.p(w))
            elif (
                w
                and w[0] != "-"
                and len(w) <= 200
                and w.replace("_", "").replace("-", "").replace(".", "").isalnum()
            ):
                self.io.words.append(self.p(w))


def _ffmpeg(acc: ShellIOBuilder, args: list[str]) -> None:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-i" and i + 1 < len(args):
            acc.consume_words([args[i + 1]])
            i += 2
        elif a.startswith("-") and a not in _FFMPEG_FLAGS and len(a) > 1:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            acc.produce(a, "ffmpeg-output")
            i += 1


def _whisper(acc: ShellIOBuilder, args: list[str]) -> None:
    pos = _positional(args, all_take_value=True)
    opts = dict(
        _flag_values(
            args,
            words("--output_dir --output-dir -o --output_format --output-format -f"),
        )
    )
    out_dir = opts.get("--output_dir") or opts.get("--output-dir") or opts.get("-o") or "."
    fmt = opts.get("--output_format") or opts.get("--output-format") or opts.get("-f") or "all"
    formats = _WHISPER_FORMATS if fmt == "all" else tuple(f.strip() for f in fmt.split(",") if f.strip())
    if out_dir != ".":
        acc.produce_dir(out_dir, "whisper-output")
    acc.consume_words(pos)
    for audio in pos:
        if is_url(audio):
            continue
        stem = basename(audio).rsplit(".", 1)[0]
        for f in formats:
            path = f"{stem}.{f}" if out_dir == "." else f"{out_dir.rstrip('/')}/{stem}.{f}"
            acc.produce(path, "whisper-output")


def _tesseract(acc: ShellIOBuilder, args: list[str]) -> None:
    pos = _positional(
        args,
        words("--psm --oem -l -c --tessdata-dir --dpi --user-words --user-patterns"),
    )
    if pos:
        acc.consume_words(pos[:1])
    if len(pos) >= 2 and pos[1] not in ("-", "stdout"):
        configs = [c for c in pos[2:] if c in ("txt", "tsv", "hocr", "pdf", "alto")] or ["txt"]
        for c in configs:
            acc.produce(f"{pos[1]}.{c}", "tesseract-output")


def _copier(acc: ShellIOBuilder, prog: str, args: list[str]) -> None:
    target = dict(_flag_values(args, frozenset(["-t", "--target-directory"])))
    pos = _positional(args, words("-t --target-directory -e -m -o -g --suffix -S"))
    if prog == "ln":
        pos = [p for p in pos]
    dest = target.get("-t") or target.get("--target-directory")
    srcs = pos if dest else pos[:-1]
    if not dest and len(pos) >= 2:
        dest = pos[-1]
    acc.consume_words(srcs)
    if dest:
        if dest.endswith("/") or len(srcs) > 1 or "-t" in target:
            acc.produce_dir(dest, "copy-dest")
            for s in srcs:
                acc.produce(f"{dest.rstrip('/')}/{basename(s)}", "copy-dest")
        else:
            acc.produce(dest, "copy-dest")


def _download(acc: ShellIOBuilder, prog: str, args: list[str]) -> None:
    with_value = words(
        "-o --output -d --data -H --header -X --request -u --user -A -e -T -F --form -w -m --max-time --connect-timeout --retry -x --proxy -b -c --data-binary --data-raw --data-urlencode -r -O --output-document -P --directory-prefix -i --user-agent --referer -t --tries -T --timeout -f"
    )
    if prog == "curl":
        with_value = with_value - {"-O", "-P", "-f", "-t"}
    pos = _positional(args, with_value)
    urls = [p for p in pos if is_url(p) or (prog != "curl" and "." in p and "/" in p)]
    acc.io.urls += [u for u in urls if is_url(u)]
    flags = dict(_flag_values(args, words("-o --output -O --output-document -P --directory-prefix")))
    if prog == "curl":
        out = flags.get("-o") or flags.get("--output")
        if out:
            acc.produce(out, "download")
        elif "-O" in args or "--remote-name" in args:
            for u in urls:
                acc.produce(basename(u.split("?", 1)[0]) or "index.html", "download")
        for k, a in enumerate(args):
            if a in ("-d", "--data", "--data-binary", "-T", "--upload-file") and k + 1 < len(args):
                acc.consume_words([args[k + 1].lstrip("@")])
    elif prog == "wget":
        out = flags.get("-O") or flags.get("--output-document")
        prefix = flags.get("-P") or flags.get("--directory-prefix")
        if out:
            acc.produce(out, "download")
        for u in urls if not out else []:
            name = basename(u.split("?", 1)[0].rstrip("/")) or "index.html"
            acc.produce(f"{prefix.rstrip('/')}/{name}" if prefix else name, "download")
    else:  # yt-dlp and friends: -o template (its %(...)s fields become a wildcard)
        out = flags.get("-o") or flags.get("--output")
        if out:
            import re

            acc.produce(re.sub(r"%\([^)]*\)[a-z]", "*", out), "download")
        if flags.get("-P"):
            acc.produce_dir(flags["-P"], "download")


def _archive(acc: ShellIOBuilder, prog: str, args: list[str]) -> None:
    if prog == "tar":
        bundle = args[0].lstrip("-") if args and not args[0].startswith("--") else ""
        flags = set(bundle) | {
            a.lstrip("-") for a in args if a.startswith("-") and not a.startswith("--") and len(a) == 2
        }
        create = "c" in flags or "--create" in args or "r" in flags
        archive = None
        rest: list[str] = []
        skip_next = False
        for k, a in enumerate(args):
            if skip_next:
                skip_next = False
                continue
            if k == 0 and bundle and not a.startswith("-") and "f" in bundle:
                rest.append("__F__")
                continue
            if (a.startswith("-") and not a.startswith("--") and a.endswith("f")) or a == "--file":
                skip_next = True
                archive = args[k + 1] if k + 1 < len(args) else None
                continue
            if a in ("-C", "--directory") and k + 1 < len(args):
                skip_next = True
                if not create:
                    acc.produce_dir(args[k + 1], "archive")
                continue
            if not a.startswith("-"):
                rest.append(a)
        if rest and rest[0] == "__F__":
            archive = rest[1] if len(rest) > 1 else archive
            rest = rest[2:]
        if create:
            if archive:
                acc.produce(archive, "archive")
            acc.consume_words(rest)
        else:
            acc.consume_words(([archive] if archive else []) + rest)
    elif prog == "zip":
        pos = _positional(args)
        if pos:
            acc.produce(pos[0], "archive")
            acc.consume_words(pos[1:])
    else:  # unzip / 7z x
        d = dict(_flag_values(args, frozenset(["-d"])))
        acc.consume_words([p for p in _positional(args, frozenset(["-d", "-x"])) if p not in ("x", "e")])
        if d.get("-d"):
            acc.produce_dir(d["-d"], "archive")


def _converter(acc: ShellIOBuilder, prog: str, args: list[str]) -> None:
    if prog == "pdftoppm":
        pos = _positional(args, words("-f -l -r -x -y -W -H -scale-to"))
        ext = "png" if "-png" in args else "jpg" if "-jpeg" in args else "tif" if "-tiff" in args else "ppm"
        acc.consume_words(pos[:1])
        if len(pos) >= 2:
            acc.produce(f"{pos[1]}-*.{ext}", "convert-output")
        return
    if prog == "pdftotext":
        pos = _positional(args, frozenset(["-f", "-l", "-r", "-enc", "-eol"]))
        acc.consume_words(pos[:1])
        if len(pos) >= 2 and pos[1] != "-":
            acc.produce(pos[1], "convert-output")
        elif pos and pos[0].lower().endswith(".pdf"):
            acc.produce(pos[0][:-4] + ".txt", "convert-output")
        return
    pos = _positional(
        args,
        words("-resize -crop -density -quality -rotate -threshold -depth -type -colorspace -r -b -c -t -e"),
    )
    if len(pos) >= 2:
        acc.consume_words(pos[:-1])
        acc.produce(pos[-1], "convert-output")
    else:
        acc.consume_words(pos)


_DOTTED_IMPORT = re.compile(r"\b(?:from|import)\s+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
"""A dotted module an inline Python script imports (a project's `tests.missing_colon`, not `os`)."""


_STDLIB = frozenset(sys.stdlib_module_names)


def _module_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _interpreter(acc: ShellIOBuilder, prog: str, args: list[str], sc: SimpleCommand) -> None:
    code_flag = _CODE_FLAGS.get(prog)
    code: list[str] = []
    k = 0
    while k < len(args):
        a = args[k]
        if a == code_flag and k + 1 < len(args):
            code.append(args[k + 1])
            acc.consume_words(_positional(args[k + 2 :]))
            break
        if a == "-m" and k + 1 < len(args):
            mod = args[k + 1]
            if prog.startswith("python") and "." in mod and mod.split(".", 1)[0] not in _STDLIB:
                acc.io.scripts.append(acc.p(_module_file(mod)))  # `python -m tests.test_x` runs that file
            acc.consume_words(_positional(args[k + 2 :]))
            break
        if a.startswith("-"):
            k += 1
            continue
        if a != "-":
            acc.io.scripts.append(acc.p(a))
        acc.consume_words(_positional(args[k + 1 :]))
        break
    if sc.heredocs and not any(op in _REDIRECT_OUT for op, _ in sc.redirects):
        code += sc.heredocs
    for c in code:
        if prog.startswith("python"):  # `from tests.missing_colon import division` runs that file
            mods = dict.fromkeys(_DOTTED_IMPORT.findall(c))
            acc.consume_words([_module_file(m) for m in mods if m.split(".", 1)[0] not in _STDLIB])
        written, read, urls = code_io(c)
        for w in written:
            acc.produce(w, "code-write")
        acc.consume_words(read)
        acc.io.urls += urls


def program_io(acc: ShellIOBuilder, prog: str, args: list[str], sc: SimpleCommand) -> None:
    if prog == "cd":
        if args and not args[0].startswith("-"):
            acc.cwd = norm_path(args[0], acc.cwd) if not args[0].startswith("~") else args[0]
            acc.io.cwd = acc.cwd
        return
    # redirections and here-documents: `cmd > f`, `cat > f <<EOF`, `cmd < f`
    for op, target in sc.redirects:
        if op.lstrip("0123456789") in _REDIRECT_OUT and not target.startswith("&"):
            rule = "heredoc-write" if sc.heredocs and prog in ("cat", "tee") else "redirect"
            acc.produce(target, rule)
            if rule == "heredoc-write" and sc.heredocs:
                acc.io.written_code[acc.p(target)] = sc.heredocs[0]
        elif op == "<":
            acc.consume_words([target])
    for flag, val in _flag_values(args, _OUTPUT_FLAGS_O if prog in _O_PROGRAMS else _OUTPUT_LONG):
        if prog in ("curl", "wget", "yt-dlp", "whisper"):
            continue
        if flag in _DIR_OUTPUT:
            acc.produce_dir(val, "output-flag")
        else:
            acc.produce(val, "output-flag")
    if prog == "ffmpeg":
        _ffmpeg(acc, args)
    elif prog == "whisper":
        _whisper(acc, args)
    elif prog == "tesseract":
        _tesseract(acc, args)
    elif prog in _COPIERS:
        _copier(acc, prog, args)
    elif prog == "mkdir":
        for d in _positional(args, frozenset(["-m", "--mode"])):
            acc.produce_dir(d, "mkdir")
    elif prog in ("rm", "unlink", "rmdir", "shred") or (prog == "git" and args[:1] == ["rm"]):
        for f in _positional(args[1:] if prog == "git" else args):
            acc.io.deleted.append(acc.p(f))
    elif prog == "touch":
        for f in _positional(args, frozenset(["-d", "-t", "-r"])):
            acc.produce(f, "touch")
    elif prog == "tee":
        for f in _positional(args):
            acc.produce(f, "tee")
    elif prog in ("curl", "wget", "yt-dlp", "aria2c"):
        _download(acc, prog, args)
    elif prog == "git" and args[:1] == ["clone"]:
        pos = _positional(args[1:], words("-b --branch --depth -o --origin -c"))
        acc.io.urls += [p for p in pos[:1] if is_url(p)]
        if pos:
            acc.produce_dir(pos[1] if len(pos) > 1 else basename(pos[0]).removesuffix(".git"), "clone")
    elif prog in ("apply_patch", "applypatch"):
        for body in [*sc.heredocs, *args]:
            for path, kind in patch_targets(body):
                if kind in ("update", "delete"):
                    acc.io.edits.append(acc.p(path))
                if kind != "delete":
                    acc.produce(path, "apply-patch")
                else:
                    acc.io.deleted.append(acc.p(path))
    elif prog in ("tar", "zip", "unzip", "7z"):
        _archive(acc, prog, args)
    elif prog in ("imagemagick", "sox", "pdftoppm", "pdftotext", "cwebp", "dwebp", "heif-convert"):
        _converter(acc, prog, args)
    elif prog == "sed" and any(a == "-i" or a.startswith(("-i", "--in-place")) for a in args):
        pos = _positional(args, frozenset(["-e", "-f"]))
        files = pos[1:] if "-e" not in args else pos
        for f in files:
            p = acc.p(f)
            acc.io.edits.append(p)
            acc.produce(f, "sed-in-place")
    elif prog in _INTERPRETERS or (prog in SHELLS and args and not args[0].startswith("-")):
        _interpreter(acc, prog, args, sc)
    elif prog == "asciinema" and args:
        pos = _positional(args[1:], _ASCIINEMA_VALUES)
        if args[0] == "rec":  # `asciinema rec [--stdin] FILE` records the session into FILE
            for f in pos[:1]:
                acc.produce(f, "recording")
        else:  # play, cat, upload
            acc.consume_words(pos)
    elif prog in _NAME_VALUES:
        acc.consume_words(_without_values(args, _NAME_VALUES[prog]))
    elif prog in _SEARCHERS:
        acc.consume_words(_search_files(args))
    else:
        if prog in _LISTERS:
            pos = _positional(args, frozenset(["-I", "-L", "--ignore"]))
            acc.io.lists_dir = acc.p(pos[0]) if len(pos) == 1 else (acc.cwd or ".") if not pos else None
        acc.consume_words(args)
    if sc.argv and ("/" in sc.argv[0]) and is_pathlike(sc.argv[0]):
        acc.io.scripts.append(acc.p(sc.argv[0]))


_PATCH_MARKERS = (
    ("*** Add File: ", "add"),
    ("*** Update File: ", "update"),
    ("*** Delete File: ", "delete"),
    ("*** Move to: ", "move"),
)


def patch_targets(patch: str) -> list[tuple[str, str]]:
    """(path, add|update|delete|move) for each file an apply_patch envelope touches."""
    out: list[tuple[str, str]] = []
    if "*** " not in patch:
        return out
    for line in patch.splitlines():
        if line.startswith("*** "):
            for marker, kind in _PATCH_MARKERS:
                if line.startswith(marker):
                    path = line[len(marker) :].strip()
                    if path:
                        out.append((path, kind))
    return out
