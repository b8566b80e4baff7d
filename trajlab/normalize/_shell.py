"""A small POSIX-shell word splitter: enough of sh to find the programs a command line runs.

It understands quoting ('...', "...", $'...'), backslash escapes, comments, the control operators
`| || && ; & \\n`, redirections (`> >> < 2>&1 &> <<<`), here-documents (`<<EOF`, `<<-'EOF'`),
command substitution (`$(...)` and backticks, recorded for the caller to parse), `$((...))`
arithmetic and subshell/brace groups.

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
_COMPLEX = re.compile(r"[\"\\$`#()<>{}]|[^\S \t]")
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


def _read_dollar_paren(s: str, i: int) -> tuple[str, int]:
    """s[i] is just after '$(' ; return (inner text, index after the matching ')')."""
    depth = 1
    j = i
    n = len(s)
    quote = ""
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
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return s[i:j], j + 1
        j += 1
    return s[i:], n


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
        else:
            self.cur.argv.append(w)

    def end_command(self, op: str) -> None:
        self.end_word()
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
            m = _PLAIN.match(s, i)
            if m is not None:
                self.add(m.group())
                i = m.end()
                continue
            c = s[i]
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
        return ParsedShell(self.commands, self.operators)

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
                _, j2 = _read_dollar_paren(s, j + 2)
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
            _, j = _read_dollar_paren(s, i + 2)
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
        for op in ("&&", "||", ";;", "|&", "|", ";", "&", "\n"):
            if s.startswith(op, i):
                break
        else:  # not reachable: the caller only dispatches operator characters here
            self.add(s[i])
            return i + 1
        self.end_command(";" if op == "\n" else op)
        i += len(op)
        if op == "\n" and self.pending_heredocs:
            i = self._consume_heredocs(i)
        return i

    def _consume_heredocs(self, i: int) -> int:
        s = self.s
        n = len(s)
        for delim, strip_tabs in self.pending_heredocs:
            body: list[str] = []
            while i < n:
                j = s.find("\n", i)
                line = s[i:] if j < 0 else s[i:j]
                i = n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                body.append(line)
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
    if _COMPLEX.search(s) is None and s.count("'") % 2 == 0:
        return _fast(s)
    return _Parser(s).run()
