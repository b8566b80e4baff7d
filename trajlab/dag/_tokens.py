"""Tokens the DAG rules compare: paths, URLs and distinctive values, found in commands and outputs.

Everything here is a pure function over strings. Outputs are scanned up to `SCAN_HEAD` characters
from the start plus `SCAN_TAIL` from the end (long file dumps and logs keep their summary lines),
which bounds the work per step.
"""

from __future__ import annotations

import posixpath
import re
import sys
from functools import lru_cache

from ..normalize import AUDIO_EXT, IMAGE_EXT, VIDEO_EXT

SCAN_HEAD = 6_000
SCAN_TAIL = 2_000

DOC_EXT = frozenset(["pdf", "docx", "doc", "pptx", "ppt", "xlsx", "xls", "odt", "ods", "odp", "epub", "rtf"])
_OTHER_EXT = (
    "txt md rst json jsonl csv tsv srt vtt ass html htm xml yaml yml toml ini cfg conf env log lock "
    "py pyi ipynb js mjs cjs ts tsx jsx sh bash zsh rb go rs c h cc cpp hpp java kt kts ex exs erl hrl "
    "php pl lua r swift scala cs sql css scss sass less vue svelte proto graphql tex bib "
    "zip tar gz tgz xz bz2 zst 7z whl jar bin pkl pt pth onnx npy npz h5 db sqlite wasm so o a out "
    "patch diff mod sum gradle mk cmake dockerfile sample traj eval parquet arrow feather"
)
KNOWN_EXT = frozenset(_OTHER_EXT.split()) | AUDIO_EXT | VIDEO_EXT | IMAGE_EXT | DOC_EXT

# Texts are split on whitespace and quoting/bracket characters (fast, in C), then each piece is
# classified: a URL, a path (has a slash, or a name with a known extension), a number (two or more
# digits without a leading zero, or a decimal part; clock times like 00:07.000 are skipped) or a code
# (letters and digits, e.g. ORBIT-42, bb53fb4). Anything else is ignored.
_SEP = str.maketrans({c: " " for c in "'\"()[]{}<>;|`\\\t\r\n*"})
_NUM_RE = re.compile(r"[-+]?(?:[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|[1-9]\d+)")
_CURRENCY = frozenset("$€£¥")
_UNIT_END = frozenset("%‰°CFK")
# a number with a currency sign before it or a percent or degree sign after it (°C, °F, K after °)
_UNIT_RE = re.compile(r"[$€£¥]?([-+]?\d[\d.,]*)(?:%|‰|°[CFK]?)?")
_CODE_RE = re.compile(r"(?=[A-Za-z_.-]*\d)(?=[\d_.-]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.-]{2,}[A-Za-z0-9]")
_DIGIT = re.compile(r"\d").search
_CLOCK = re.compile(
    r"(?:\d{4}-\d\d-\d\d[T_])?(?<![\d.:])(\d{1,2}:\d\d(?::\d\d)?)"
    r"(?:(?<=:\d\d:\d\d)(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?|[.,]\d+|Z)?(?![\d:])"
)
"""A time of day, with the date glued to it by `T` and the zone after it: `03:56:47`, `12:00:00+05:30`,
`2013-05-01T03:56:47-00:00`. The time (`03:56:47`, `12:00`) is one value; its fields are none (a clock's
`56` is not the `56` of a result)."""
_CLOCK_IN = _CLOCK.search
_CLOCK_SUB = _CLOCK.sub
_PATH_OK = re.compile(r"[\w.@+%?~/-]+").fullmatch
_PARTS = re.compile(r"[:=]").split
_TRAILING = ".,;:!?'\")]}>"
_SKIP_PATHS = frozenset(["/", ".", "..", "./", "../", "/dev/null", "/dev/stdout", "/dev/stderr", "-", "~"])
_GLOB_CHARS = frozenset("*?[")
# The whitespace-separated words of a text that hold a digit, `/`, `.`, `:` or `=` (no other word can
# be a path, URL or value), found in C: the start of a word, then possessively up to such a character.
# The class and the character after it are disjoint, so the possessive `*+` (Python 3.11+; about 1.6x
# faster on long outputs) finds the same words as the plain `*` that Python 3.10 gets.
_CANDIDATES_RE = r"(?<!\S)[^\s\d/.:=]*" + ("+" if sys.version_info >= (3, 11) else "") + r"[\d/.:=]\S*"
_CANDIDATES = re.compile(_CANDIDATES_RE).findall


def words(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps long rule tables compact)."""
    return frozenset(text.split())


def clip(text: str) -> str:
    """The part of a long text the rules look at (head and tail)."""
    if len(text) <= SCAN_HEAD + SCAN_TAIL:
        return text
    return text[:SCAN_HEAD] + "\n" + text[-SCAN_TAIL:]


def norm_value(tok: str) -> str:
    """Canonical form of a number (no thousands separators, no trailing zeros, no plus sign)."""
    if tok[:1] in "+-" or tok[:1].isdigit():
        t = tok.lstrip("+").replace(",", "")
        if "." in t:
            t = t.rstrip("0").rstrip(".")
        return t or "0"
    return tok


def scan(text: str | None) -> tuple[list[str], list[str], list[str]]:
    """(paths, urls, values) mentioned in a text, in order of first appearance, deduplicated."""
    if not text:
        return [], [], []
    paths: dict[str, None] = {}
    urls: dict[str, None] = {}
    values: dict[str, None] = {}
    for tok in _CANDIDATES(clip(text).translate(_SEP)):
        if len(tok) < 2:
            continue
        if "://" in tok:
            if tok.startswith(("http://", "https://")):
                urls[tok.rstrip(_TRAILING)] = None
            continue
        if ":" in tok and _CLOCK_IN(tok):  # `12:00 PM`, `2013-05-01T03:56:47-00:00`: one value, the time
            for cm in _CLOCK.finditer(tok):
                t = cm.group(1)
                if cm.start(1) and tok[cm.start(1) - 1] in "+-" and not tok[: cm.start(1) - 1].rstrip("+-"):
                    continue  # a zone on its own (`03:56:47 -00:00`)
                values[t] = None
                if t.startswith("00:00:") and t[6:] != "00":  # a duration under a minute states its seconds
                    _value(t[6:].lstrip("0") or "0", values)
            tok = _CLOCK_SUB(" ", tok)
        parts = _PARTS(tok) if (":" in tok or "=" in tok) else (tok,)
        skip_values = False  # after "12:" (clock times) or "file.py:" (line numbers)
        for part in parts:
            part = part.rstrip(_TRAILING)
            if part and (part[0] in _CURRENCY or part[-1] in _UNIT_END):
                m = _UNIT_RE.fullmatch(part)
                if m is not None:  # `$120`, `45%`, `57°F`: the number is the value
                    part = m.group(1)
            if len(part) < 2:
                skip_values = part.isdigit()
                continue
            if skip_values and part[0].isdigit():
                # the rest of a clock time or position: `12:00:00+05:30`, `a.py:12:15`
                continue
            skip_values = part.isdigit() or "/" in part or "." in part
            if "/" in part:
                if _is_fraction(part):  # "ORBIT-42/5": its parts are values
                    for x in part.split("/"):
                        _value(x, values)
                elif part not in _SKIP_PATHS and _PATH_OK(part):
                    paths[part] = None
            elif "." in part and not part[0].isdigit() and part[0] != "-":
                if part.rsplit(".", 1)[1].lower() in KNOWN_EXT and _PATH_OK(part):
                    paths[part] = None
                elif _DIGIT(part):
                    _value(part, values)
            elif _DIGIT(part):
                if "," in part and not _NUM_RE.fullmatch(part):
                    for x in part.split(","):
                        _value(x, values)
                else:
                    _value(part, values)
    return list(paths), list(urls), list(values)


def scan_long(text: str, limit: int) -> tuple[list[str], list[str], list[str]]:
    """`scan` of up to `limit` characters of a long text (a compaction summary, a report) without the cut
    `clip` makes in the middle: in pieces that end at a line break, merged in order."""
    text = text[:limit]
    if len(text) <= SCAN_HEAD + SCAN_TAIL:
        return scan(text)
    paths: dict[str, None] = {}
    urls: dict[str, None] = {}
    values: dict[str, None] = {}
    at = 0
    while at < len(text):
        end = min(len(text), at + SCAN_HEAD)
        if end < len(text):
            nl = text.rfind("\n", at + 1, end)
            end = nl + 1 if nl > at else end
        ps, us, vs = scan(text[at:end])
        paths.update(dict.fromkeys(ps))
        urls.update(dict.fromkeys(us))
        values.update(dict.fromkeys(vs))
        at = end
    return list(paths), list(urls), list(values)


# Names that mix letters and digits but are vocabulary, not values a run produced: interpreters and
# versioned programs (`python3`, `pip3`, `python3.11`), hashes and encodings (`sha256`, `utf-8`,
# `base64`), number types and architectures (`int64`, `float32`, `x86_64`, `arm64`), codecs and
# protocols (`h264`, `ipv4`, `http2`). A shebang `#!/usr/bin/env python3` is not a printed result.
_VOCAB_CODE = re.compile(
    r"(?:python|pypy|pip|py|perl|php|ruby|node|lua|gcc|g\+\+|clang|llvm|java|jdk|sha|md|crc|base|utf-?|ucs-?"
    r"|latin-?|iso-?|u?int|float|complex|x86[_-]?|amd|arm|aarch|i|h|vp|av|mp|ipv|http|tls|ssl|oauth|es|win)"
    r"\d+(?:[._-]\d+)*",
    re.IGNORECASE,
)


_CSS_LENGTH = re.compile(
    r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:px|rem|em|vh|vw|vmin|vmax|pt|ch|ex|fr|deg|ms)"
).fullmatch
"""Style lengths (`0.8rem`, `16px`, `300ms`): design constants that stylesheets, markup and edits share,
not results a step printed."""


def _value(part: str, values: dict[str, None]) -> None:
    if _NUM_RE.fullmatch(part):
        v = norm_value(part)
        if len(v) >= 2 and v != "-0":  # `1.0` is the digit 1: single digits are no values (see pieces_of)
            values[v] = None
    elif (
        len(part) >= 4
        and _CODE_RE.fullmatch(part)
        and not _VOCAB_CODE.fullmatch(part)
        and not _CSS_LENGTH(part)
    ):
        values[part] = None


def _is_fraction(tok: str) -> bool:
    # "3/4", "ORBIT-42/5", "12/03/2024" are values, not paths
    return "/" in tok and "." not in tok and all(p.isdigit() or (p and p.isupper()) for p in tok.split("/"))


@lru_cache(maxsize=8192)
def values_of(text: str) -> tuple[str, ...]:
    return tuple(scan(text)[2])


_PIECE_RE = re.compile(r"(?<![\w.])\d(?![\w.])")


@lru_cache(maxsize=8192)
def pieces_of(text: str) -> tuple[str, ...]:
    """Single digits standing alone in a command, matched only against printed one-line results."""
    return tuple(dict.fromkeys(_PIECE_RE.findall(text)))


_WORDCH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def value_use(text: str, value: str) -> int:
    """How `value` occurs in `text` as a whole token (`120` in "at 120 thousand" or "120.0", not in "1200"):
    0 not at all, 1 as a value, 2 only
    as a line-number prefix (`a.py:180:` of `grep -n`, `    90→` of Claude Code's Read, `    90\t` of
    `cat -n` and editor views, `1475:` at a line start): those number the lines, they are no printed
    result; only a line-addressing use (an editor's `view_range` start) may come from them."""
    start = 0
    n = len(value)
    found = 0
    while True:
        k = text.find(value, start)
        if k < 0:
            return found
        start = k + 1
        if k and (text[k - 1] in _WORDCH or text[k - 1] == "." or (text[k - 1] == "-" and value[0] != "-")):
            continue
        j = k + n
        if n <= 2 and (":" in text[k - 1 : k] or ":" in text[j : j + 1]) and _clock_at(text, k, j):
            continue
        if j < len(text):
            c = text[j]
            if c in _WORDCH:
                continue
            if c == "." and j + 1 < len(text) and text[j + 1].isdigit():
                z = j + 1
                while z < len(text) and text[z] == "0":
                    z += 1
                if z < len(text) and text[z].isdigit():
                    continue
            if c in _LINE_NUMBER_END and _line_number_at(text, k, c):
                found = 2
                continue
            if c == " " and value.isdigit() and _numbered_listing_at(text, k, value):
                found = 2
                continue
        return 1


_LINE_NUMBER_END = frozenset(":\t→")


def _clock_at(text: str, k: int, j: int) -> bool:
    """Is `text[k:j]` a field of a time of day (`03:56:47`)? See `_CLOCK`. Not the seconds of a duration
    under a minute (ffprobe's `Duration: 00:00:12.00` is 12 seconds)."""
    for m in _CLOCK.finditer(text, max(0, k - 30), min(len(text), j + 30)):
        if m.start() <= k and j <= m.end():
            return not (m.group(1).startswith("00:00:") and k == m.start(1) + 6)
    return False


def _numbered_listing_at(text: str, k: int, value: str) -> bool:
    """Is the number at `k` a right-aligned line number followed by a space (`    30 )`, an editor's
    numbered view)? Only when the line before or after starts with the number before or after it: a
    count of `uniq -c` or `wc -l` is printed the same way but is a value."""
    ls = text.rfind("\n", 0, k) + 1
    if not text[ls:k].isspace():  # right-aligned: only padding before it
        return False
    n = int(value)
    if ls >= 2:
        pl = text.rfind("\n", 0, ls - 1) + 1
        if text[pl : ls - 1].lstrip().startswith(f"{n - 1} "):
            return True
    le = text.find("\n", k)
    return le >= 0 and text[le + 1 : le + 40].lstrip(" \t").startswith(f"{n + 1} ")


def _line_number_at(text: str, k: int, end: str) -> bool:
    """Is the number at `k` (followed by `end`) a line-number prefix of its line?"""
    head = text[text.rfind("\n", 0, k) + 1 : k]
    if end == "→":  # Claude Code Read: `    90→text`
        return not head or head.isspace()
    if end == "\t":  # cat -n, editor views: `    90\ttext` (right-aligned)
        return bool(head) and head.isspace()
    if not head or head.isspace():  # grep -n FILE, SWE-agent's editor: `1475:text`
        return True
    # grep -rn, compilers, linters, tracebacks: `src/a.py:180:` (and `src/a.py:12:15:` for the column)
    if head[-1] != ":":
        return False
    name = head.lstrip().split(":", 1)[0]
    return bool(name) and (" " not in name) and ("." in name or "/" in name) and not name[0].isdigit()


def grouped(value: str) -> str | None:
    """`4210` -> `4,210` (how outputs often print a number the agent later types without separators)."""
    sign = "-" if value[:1] == "-" else ""
    whole, _, frac = value.lstrip("-").partition(".")
    if len(whole) < 4 or not whole.isdigit() or whole[0] == "0" or (frac and not frac.isdigit()):
        return None
    return f"{sign}{int(whole):,}" + (f".{frac}" if frac else "")


def has_grouped(text: str, token: str) -> bool:
    """`4,210` occurs as a whole number (not in `14,210` or `4,210,000`)."""
    start = 0
    while True:
        k = text.find(token, start)
        if k < 0:
            return False
        start = k + 1
        if k and (text[k - 1] in _WORDCH or text[k - 1] in ".,"):
            continue
        j = k + len(token)
        if j < len(text) and (
            text[j] in _WORDCH or (text[j] in ".," and j + 1 < len(text) and text[j + 1].isdigit())
        ):
            continue
        return True


def find_path(text: str, path: str, before: int | None = None, start: int = 0) -> int:
    """Where `path` first occurs in `text` (from `start`, starting before `before`, if given) not as part
    of a longer name (`lib/a.ex` in "/x/lib/a.ex", not in "a.exs"), or -1."""
    n = len(path)
    end = len(text) if before is None else before + n - 1
    while True:
        k = text.find(path, start, end)
        if k < 0:
            return -1
        start = k + 1
        if k and (text[k - 1] in _WORDCH or text[k - 1] in ".-"):
            continue
        j = k + n
        if j < len(text) and (text[j] in _WORDCH or text[j] == "-"):
            continue
        return k


_PATH_STOP = frozenset(" \t\r\n'\"`()[]{}<>=,;:|")
_SHOWS_MAX = 64  # occurrences of a probe looked at in one output


def shows_path(text: str, probe: str, target: str) -> bool:
    """Does `text` show the file `target` by `probe` (the path, its last parts, or its name relative to the
    starting directory; see `_build._probes`)? A match inside a longer path counts only when that whole
    path names the same file: `bin/codemie` in `/mock/bin/codemie` or `package.json` in
    `node_modules/x/package.json` name other files than `/w/node_modules/y/bin/codemie` or `/w/package.json`."""
    start = 0
    for _ in range(_SHOWS_MAX):
        k = find_path(text, probe, start=start)
        if k < 0:
            return False
        start = k + 1
        j = k + len(probe)
        if probe == target or not k or text[k - 1] != "/":
            return True
        b = k - 1
        while b > 0 and text[b - 1] not in _PATH_STOP and k - b < 400:
            b -= 1
        if same_file(text[b:j], target):
            return True
    return False


def has_path(text: str, path: str) -> bool:
    """`path` occurs in `text` and is not part of a longer name (see `find_path`)."""
    return find_path(text, path) >= 0


def is_url(word: str) -> bool:
    return word.startswith(("http://", "https://"))


def ext_of(path: str) -> str | None:
    base = path.rsplit("/", 1)[-1]
    if "." not in base[1:]:
        return None
    return base.rsplit(".", 1)[-1].lower()


_NOT_IN_PATHS = frozenset("\n\t$`(){}<>|;&=\"'")
_SPACED_PATH_START = ("/", "./", "../", "~/")


def _spaced_path(word: str) -> bool:
    """A word with spaces names a file only when it starts like a path, its name has a known extension,
    and it reads like no prose (`/tmp is full`, `/api/v1 is deprecated, use /api/v2`, `/start here/`)."""
    if not word.startswith(_SPACED_PATH_START) or "  " in word or ", " in word or ": " in word:
        return False
    if " /" in word or " ./" in word:
        return False
    e = ext_of(word)
    return e is not None and e in KNOWN_EXT


def is_pathlike(word: str) -> bool:
    """A command-line word that names a file: has a slash, or a known extension. Not an option or URL.
    A word with spaces (quoted, or escaped as `Sample\\ BiS.vtt`) only when it starts like a path and names
    a file of a known type (`/Users/u/Sample BiS Demo.vtt`, `./my notes.md`; see `_spaced_path`), not a
    quoted message (`"Created file.txt"`, `"/tmp is full"`)."""
    if not word or len(word) > 400 or word[0] == "-" or is_url(word):
        return False
    if not _NOT_IN_PATHS.isdisjoint(word):
        return False
    if " " in word and not _spaced_path(word):
        return False
    if word in _SKIP_PATHS:
        return False
    if "/" in word:
        return not _is_fraction(word) and not word.replace("/", "").replace(".", "").isdigit()
    e = ext_of(word)
    return e is not None and e in KNOWN_EXT


def has_glob(word: str) -> bool:
    # three substring tests in C: a third of the time of a regex search (a build makes ~2.5 calls per step)
    return "*" in word or "?" in word or "[" in word


def norm_path(path: str, cwd: str | None = None) -> str:
    """Normalize a path for comparison: strip quotes and `file://`, resolve against cwd, collapse `./` and `..`."""
    p = path.strip().strip("'\"")
    if p.startswith("file://"):
        p = p[7:]
    if cwd and not p.startswith(("/", "~")):
        p = cwd.rstrip("/") + "/" + p
    if "//" in p or "/." in p or p.startswith("./") or p.endswith("/"):
        p = posixpath.normpath(p)
    if p.startswith("./"):
        p = p[2:]
    return p


def basename(path: str) -> str:
    if path.endswith("/"):
        path = path.rstrip("/")
    return path[path.rfind("/") + 1 :]


def dirname(path: str) -> str | None:
    p = path.rstrip("/")
    return p.rsplit("/", 1)[0] if "/" in p else None


def same_file(a: str, b: str) -> bool:
    """Two normalized paths name the same file: equal, or one is a path-suffix of the other."""
    if a == b:
        return True
    if len(a) < len(b):
        a, b = b, a
    return a.endswith(b) and a[-len(b) - 1] == "/" and not b.startswith("/")


_PRINTF_RE = re.compile(r"%0?(\d*)d")


@lru_cache(maxsize=4096)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    for m in _PRINTF_RE.finditer(pattern):
        out.append(_glob_part(pattern[i : m.start()]))
        width = m.group(1)
        out.append(rf"\d{{{int(width)}}}" if width else r"\d+")
        i = m.end()
    out.append(_glob_part(pattern[i:]))
    return re.compile("".join(out))


def pattern_matches(pattern: str, path: str) -> bool:
    """Does `path` name a file of an output pattern (`frames/%03d.png`, `page-*.png`)?

    The trailing path components are compared, so a relative path matches an absolute pattern and
    the other way round (the same suffix rule as `same_file`).
    """
    pc = pattern.rstrip("/").split("/")
    xc = path.rstrip("/").split("/")
    k = min(len(pc), len(xc))
    return _pattern_regex("/".join(pc[-k:])).fullmatch("/".join(xc[-k:])) is not None


def _glob_part(s: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in s)


def is_pattern(path: str) -> bool:
    return bool(_PRINTF_RE.search(path)) or has_glob(path)


def example_of(pattern: str) -> str:
    """An instance of a pattern (`frames/%03d.png` -> `frames/001.png`) to test globs against."""
    s = _PRINTF_RE.sub(lambda m: "1".zfill(int(m.group(1)) if m.group(1) else 1), pattern)
    return s.replace("*", "1").replace("?", "1")


# -- literals in inline code ------------------------------------------------------------------------

_WRITE_CALL_RE = re.compile(
    r"""(?:\bopen\(\s*(['"])(?P<a>[^'"\n]{1,300})\1\s*,\s*(?:mode\s*=\s*)?['"][wax]"""
    r"""|\.(?:save|savefig|imwrite|to_csv|to_json|to_parquet|to_excel|export|write_text|write_bytes|to_file)\(\s*(['"])(?P<b>[^'"\n]{1,300})\3"""
    r"""|\b(?:imwrite|savefig|imsave|write_file|writeFileSync|writeFile)\(\s*(['"])(?P<c>[^'"\n]{1,300})\5"""
    r"""|\bPath\(\s*(['"])(?P<d>[^'"\n]{1,300})\7\s*\)\s*\.(?:write_text|write_bytes|touch|mkdir))"""
)
_LITERAL_RE = re.compile(r"""(['"])([^'"\n]{1,300})\1""")


def code_io(code: str) -> tuple[list[str], list[str], list[str]]:
    """(written paths, read paths, urls) named by string literals in an inline script."""
    code = clip(code)
    written: dict[str, None] = {}
    for m in _WRITE_CALL_RE.finditer(code):
        p = m.group("a") or m.group("b") or m.group("c") or m.group("d")
        if p and (is_pathlike(p) or "/" not in p):
            written[p] = None
    read: dict[str, None] = {}
    urls: dict[str, None] = {}
    for m in _LITERAL_RE.finditer(code):
        lit = m.group(2)
        if is_url(lit):
            urls[lit] = None
        elif lit not in written and is_pathlike(lit):
            read[lit] = None
    return list(written), list(read), list(urls)
