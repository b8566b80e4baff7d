"""A small POSIX-shell word splitter: enough of sh to find the programs a command line runs.

It understands quoting ('...', "...", $'...'), backslash escapes, comments, the control operators
`| || && ; & \\n`, redirections (`> >> < 2>&1 &> <<<`), here-documents (`<<EOF`, `<<-'EOF'`),
command substitution (`$(...)` and backticks, recorded for the caller to parse), `$((...))`
arithmetic and subshell/brace groups, and enough of the compound commands to reach the commands inside
them: loop and `if` bodies are ordinary command lists after a reserved word (`do ffmpeg ...`,
`then whisper ...`; the caller skips the word), `((...))` arithmetic (also `for ((i=0; i<3; i++))`) is
one word, `[[ ... ]]` is one test command whose `&& || < > ( )` are words, the patterns of
`case ... in PATTERN) ...;; esac` are dropped, and function definitions `name() {` are recorded in
`ParsedShell.functions` (their bodies are ordinary commands).

It never executes anything and never fails: unbalanced quotes or parentheses just end at end of
input. It runs in time linear in the input: runs of ordinary characters are consumed with one regex
match, and every other branch advances by at least one character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Characters that need attention; everything else is consumed in runs.
_PLAIN = re.compile(r"[^\s'\"\\$`#()<>|&;{}]+")
_DQ_PLAIN = re.compile(r'[^"\\$]+')
# Commands with nothing but words, single quotes and `| || && ; &` take a fast path (most real ones).
# (Checked as one character class, then `[[` and the word `case` with str methods: the same test as
# the single regex `[\"\\$`#()<>{}]|[^\S \t]|\[\[|\bcase\b`, about four times as fast. The class
# lists the characters `str.isspace` (i.e. `\s`) accepts other than space and tab;
# tests/normalize/test_shell_fast_path.py checks it against `[^\S \t]` over every code point.)
_OTHER_SPACE = "\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_COMPLEX_CHAR = re.compile(f'["\\\\$`#()<>{{}}{_OTHER_SPACE}]')
_CASE_WORD = re.compile(r"\bcase\b")
_FAST_TOKEN = re.compile(r"&&|\|\||\|&|;;|[|;&]|(?:[^\s'|;&]+|'[^']*')+")
_REDIRECT_OPS = ("<<<", "<<-", "&>>", "<<", ">>", "&>", ">&", "<&", ">|", "<>", ">", "<")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0", "e": "\x1b"}


@dataclass(slots=True)
class SimpleCommand:
    """One simple command: its words, redirections and any here-document bodies."""

    argv: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    heredocs: list[str] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)  # text of $(...) / `...`


@dataclass
class ParsedShell:
    commands: list[SimpleCommand]
    operators: list[str]  # operator that followed each command ('' for the last)
    functions: list[str] = field(default_factory=list)  # names of shell functions defined in the line


# Reserved words that may stand before a compound command (`then case ...`, `do [[ ... ]]`, `! ((x))`).
_LEADING_KEYWORDS = frozenset(["if", "then", "else", "elif", "while", "until", "do", "!", "time"])
_CASE_END = re.compile(r"esac(?=$|[\s;&|)])")


def _after_keywords(argv: list[str]) -> bool:
    """True when every word so far is a reserved word, i.e. the next word starts a command."""
    return all(w in _LEADING_KEYWORDS for w in argv)


# A here-document operator inside `$(...)`: `<<` or `<<-`, then the delimiter, quoted or not.
_SUB_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|()<>'\"]+))")


def _heredoc_body(s: str, i: int, delim: str, strip_tabs: bool) -> tuple[list[str], int]:
    """The lines of a here-document body starting at s[i], and the index after its delimiter line."""
    n = len(s)
    body: list[str] = []
    while i < n:
        j = s.find("\n", i)
        line = s[i:] if j < 0 else s[i:j]
        i = n if j < 0 else j + 1
        if (line.lstrip("\t") if strip_tabs else line) == delim:
            break
        body.append(line)
    return body, i


def _skip_heredoc_bodies(s: str, i: int, pending: list[tuple[str, bool]]) -> int:
    """s[i] starts the line after a here-document operator: the index after the last body's delimiter."""
    for delim, strip_tabs in pending:
        i = _heredoc_body(s, i, delim, strip_tabs)[1]
    return i


def _read_dollar_paren(s: str, i: int, heredocs: bool = True) -> tuple[str, int]:
    """s[i] is just after '$(' ; return (inner text, index after the matching ')').

    Here-document bodies inside are skipped whole: a commit message in `$(cat <<'EOF' ... EOF)` may
    hold an apostrophe or a parenthesis that is text, not a quote or the closing `)`. Arithmetic
    (`$((...))`, `((...))`) passes `heredocs=False`, as `<<` there is a shift."""
    depth = 1
    j = i
    n = len(s)
    quote = ""
    pending: list[tuple[str, bool]] = []  # here-documents whose bodies start at the next newline
    while j < n:
        c = s[j]
        if quote:
            if c == "\\" and quote == '"' and j + 1 < n:
                j += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\" and j + 1 < n:
            j += 2
            continue
        elif c == "<" and heredocs and s.startswith("<<", j) and not s.startswith("<<<", j):
            m = _SUB_HEREDOC.match(s, j)
            if m is not None:
                delim = next(g for g in m.groups()[1:] if g is not None)
                pending.append((delim, m.group(1) == "-"))
                j = m.end()
                continue
        elif c == "\n" and pending:
            j = _skip_heredoc_bodies(s, j + 1, pending)
            pending = []
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return s[i:j], j + 1
        j += 1
    return s[i:], n


_OPS = ("&&", "||", ";;", "|&", "|", ";", "&", "\n")
_CASE_OPS = ("&&", "||", ";;&", ";;", ";&", "|&", "|", ";", "&", "\n")


class _Parser:
    def __init__(self, s: str):
        self.s = s
        self.commands: list[SimpleCommand] = []
        self.operators: list[str] = []
        self.cur = SimpleCommand()
        self.word: list[str] = []
        self.in_word = False
        self.pending_redirect: str | None = None
        self.pending_heredocs: list[tuple[str, bool]] = []  # (delimiter, strip_tabs)
        self.functions: list[str] = []
        self.dbracket = False  # inside `[[ ... ]]`
        self.case_depth = 0  # open `case ... esac`
        self.case_pattern = False  # a case pattern `PATTERN)` comes next

    def end_word(self) -> None:
        if not self.in_word:
            return
        w = "".join(self.word)
        self.word = []
        self.in_word = False
        op = self.pending_redirect
        if op is not None:
            self.pending_redirect = None
            if op.endswith(("<<", "<<-")):
                self.pending_heredocs.append((w, op.endswith("<<-")))
            self.cur.redirects.append((op, w))
            return
        argv = self.cur.argv
        if self.dbracket:
            self.dbracket = w != "]]"
        elif w == "[[" and _after_keywords(argv):
            self.dbracket = True
        elif w == "in" and len(argv) >= 2 and argv[-2] == "case" and _after_keywords(argv[:-2]):
            argv.append(w)
            self.end_command(";")
            self.case_depth += 1
            self.case_pattern = True
            return
        elif w == "esac" and self.case_depth and _after_keywords(argv):
            self.case_depth -= 1
        argv.append(w)

    def end_command(self, op: str) -> None:
        self.end_word()
        self.dbracket = False
        cur = self.cur
        if cur.argv or cur.redirects or cur.substitutions:
            self.commands.append(cur)
            self.operators.append(op)
        elif op and self.operators:
            self.operators[-1] = op
        self.cur = SimpleCommand()

    def add(self, text: str) -> None:
        self.word.append(text)
        self.in_word = True

    def run(self) -> ParsedShell:
        s = self.s
        n = len(s)
        i = 0
        while i < n:
            if self.case_pattern and not self.in_word:
                i = self._case_pattern(i)
                continue
            m = _PLAIN.match(s, i)
            if m is not None:
                self.add(m.group())
                i = m.end()
                continue
            c = s[i]
            if self.dbracket and c in "()<>&|":  # operators inside `[[ ... ]]` are test words
                self.end_word()
                j = i + 1
                while j < n and s[j] in "<>&|" and j - i < 2:
                    j += 1
                self.add(s[i:j])
                self.end_word()
                i = j
                continue
            if c == " " or c == "\t" or c == "\r" or c == "\f" or c == "\v":
                self.end_word()
                i += 1
            elif c == "\\":
                if i + 1 < n and s[i + 1] == "\n":
                    i += 2
                    continue
                if i + 1 < n:
                    self.add(s[i + 1])
                else:
                    self.in_word = True
                i += 2
            elif c == "'":
                j = s.find("'", i + 1)
                j = n if j < 0 else j
                self.add(s[i + 1 : j])
                i = j + 1
            elif c == '"':
                i = self._double_quoted(i + 1)
            elif c == "$":
                i = self._dollar(i)
            elif c == "`":
                j = s.find("`", i + 1)
                j = n if j < 0 else j
                self.cur.substitutions.append(s[i + 1 : j])
                self.add(s[i : j + 1])
                i = j + 1
            elif c == "#":
                if self.in_word:
                    self.add("#")
                    i += 1
                else:
                    j = s.find("\n", i)
                    i = n if j < 0 else j
            elif (
                c == "("
                and s.startswith("((", i)
                and not self.in_word
                and (self.cur.argv == ["for"] or _after_keywords(self.cur.argv))
            ):
                i = self._arithmetic(i)
            elif c == "(" and self.in_word and self.word[-1].endswith("="):  # array assignment a=(x y)
                _, j = _read_dollar_paren(s, i + 1)
                self.add(s[i:j])
                i = j
            elif c == "(" and self._function_definition(i):
                i = s.index(")", i) + 1
            elif c in "()":
                # Subshells only delimit commands for our purposes.
                self.end_command(";")
                i += 1
            elif c in "{}":
                if not self.in_word and (i + 1 >= n or s[i + 1] in " \t\n;"):
                    self.end_command(";")  # brace group
                else:
                    self.add(c)
                i += 1
            elif c in "<>" or (c == "&" and s.startswith("&>", i)):
                i = self._redirect(i)
            else:  # | & ; \n
                i = self._operator(i)
        self.end_command("")
        if self.operators:
            self.operators[-1] = ""
        return ParsedShell(self.commands, self.operators, self.functions)

    def _arithmetic(self, i: int) -> int:
        """`((expr))` (s[i:] starts with '(('): one word `((` and one word with the expression."""
        self.end_word()
        inner, j = _read_dollar_paren(self.s, i + 2, heredocs=False)
        if j < len(self.s) and self.s[j] == ")":
            j += 1
        self.cur.argv += ["((", inner]
        return j

    def _function_definition(self, i: int) -> bool:
        """`name() {` / `function name() {`: record the name, drop the pseudo-command."""
        self.end_word()
        argv = self.cur.argv
        j = i + 1
        while j < len(self.s) and self.s[j] in " \t":
            j += 1
        if j >= len(self.s) or self.s[j] != ")" or self.cur.redirects:
            return False
        if (len(argv) == 1 or (len(argv) == 2 and argv[0] == "function")) and "=" not in argv[-1]:
            self.functions.append(argv[-1])
            self.cur = SimpleCommand()
            return True
        return False

    def _case_pattern(self, i: int) -> int:
        """Skip blanks, then a case pattern up to its `)`; stop at `esac` (the word is parsed normally)."""
        s = self.s
        n = len(s)
        while i < n and s[i] in " \t\r\n;":
            i += 1
        self.case_pattern = False
        if _CASE_END.match(s, i):
            return i
        if i < n and s[i] == "(":
            i += 1
        quote = ""
        while i < n:
            c = s[i]
            if quote:
                if c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c == "\\":
                i += 1
            elif c == ")":
                return i + 1
            i += 1
        return n

    def _double_quoted(self, j: int) -> int:
        s = self.s
        n = len(s)
        buf: list[str] = []
        while j < n:
            m = _DQ_PLAIN.match(s, j)
            if m is not None:
                buf.append(m.group())
                j = m.end()
                continue
            c = s[j]
            if c == '"':
                j += 1
                break
            if c == "\\":
                if j + 1 < n and s[j + 1] in '"\\$`\n':
                    if s[j + 1] != "\n":
                        buf.append(s[j + 1])
                    j += 2
                else:
                    buf.append("\\")
                    j += 1
                continue
            # c == "$"
            if s.startswith("$((", j):
                _, j2 = _read_dollar_paren(s, j + 2, heredocs=False)
                buf.append(s[j:j2])
                j = j2
            elif s.startswith("$(", j):
                inner, j2 = _read_dollar_paren(s, j + 2)
                self.cur.substitutions.append(inner)
                buf.append(s[j:j2])
                j = j2
            else:
                buf.append("$")
                j += 1
        self.add("".join(buf))
        return j

    def _dollar(self, i: int) -> int:
        s = self.s
        n = len(s)
        if s.startswith("$'", i):
            j = i + 2
            buf: list[str] = []
            while j < n and s[j] != "'":
                if s[j] == "\\" and j + 1 < n:
                    esc = s[j + 1]
                    buf.append(_ESCAPES.get(esc, esc))
                    j += 2
                    continue
                buf.append(s[j])
                j += 1
            self.add("".join(buf))
            return j + 1
        if s.startswith("$((", i):
            _, j = _read_dollar_paren(s, i + 2, heredocs=False)
            self.add(s[i:j])
            return j
        if s.startswith("$(", i):
            inner, j = _read_dollar_paren(s, i + 2)
            self.cur.substitutions.append(inner)
            self.add(s[i:j])
            return j
        self.add("$")
        return i + 1

    def _redirect(self, i: int) -> int:
        s = self.s
        n = len(s)
        # An fd prefix like 2> or 2>&1: digits already in the word belong to the redirect.
        fd = ""
        if self.in_word and "".join(self.word).isdigit():
            fd = "".join(self.word)
            self.word = []
            self.in_word = False
        else:
            self.end_word()
        op = next(o for o in _REDIRECT_OPS if s.startswith(o, i))
        i += len(op)
        if op in (">&", "<&"):
            j = i
            while j < n and (s[j].isdigit() or s[j] == "-"):
                j += 1
            if j > i:
                self.cur.redirects.append((fd + op, s[i:j]))
                return j
        self.pending_redirect = fd + op
        while i < n and s[i] in " \t":
            i += 1
        return i

    def _operator(self, i: int) -> int:
        s = self.s
        ops = _CASE_OPS if self.case_depth else _OPS
        for op in ops:
            if s.startswith(op, i):
                break
        else:  # not reachable: the caller only dispatches operator characters here
            self.add(s[i])
            return i + 1
        self.end_command(";" if op == "\n" else op)
        if self.case_depth and op in (";;", ";&", ";;&"):
            self.case_pattern = True
        i += len(op)
        if op == "\n" and self.pending_heredocs:
            i = self._consume_heredocs(i)
        return i

    def _consume_heredocs(self, i: int) -> int:
        for delim, strip_tabs in self.pending_heredocs:
            body, i = _heredoc_body(self.s, i, delim, strip_tabs)
            # attach to the command that owns the heredoc redirect (the last one that has it)
            owner = next(
                (c for c in reversed(self.commands) if any(r[1] == delim for r in c.redirects)),
                self.commands[-1] if self.commands else None,
            )
            if owner is not None:
                owner.heredocs.append("\n".join(body))
        self.pending_heredocs = []
        return i


_FAST_OPS = frozenset(["&&", "||", "|&", ";;", "|", ";", "&"])


def _fast(s: str) -> ParsedShell:
    commands: list[SimpleCommand] = []
    operators: list[str] = []
    argv: list[str] = []
    for tok in _FAST_TOKEN.findall(s):
        if tok in _FAST_OPS:
            if argv:
                commands.append(SimpleCommand(argv, [], [], []))
                operators.append(tok)
                argv = []
            elif operators:
                operators[-1] = tok
        else:
            argv.append(tok.replace("'", "") if "'" in tok else tok)
    if argv:
        commands.append(SimpleCommand(argv, [], [], []))
        operators.append("")
    if operators:
        operators[-1] = ""
    return ParsedShell(commands, operators)


def parse_shell(s: str) -> ParsedShell:
    """Split a command line into simple commands; never raises, linear time."""
    if (
        _COMPLEX_CHAR.search(s) is None
        and "[[" not in s
        and ("case" not in s or _CASE_WORD.search(s) is None)
        and s.count("'") % 2 == 0
    ):
        return _fast(s)
    return _Parser(s).run()
