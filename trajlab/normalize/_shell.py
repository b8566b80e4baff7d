"""A small POSIX-shell word splitter: enough of sh to find the programs a command line runs.

It understands quoting ('...', "...", $'...'), backslash escapes, comments, the control operators
`| || && ; & \\n`, redirections (`> >> < 2>&1 &> <<<`), here-documents (`<<EOF`, `<<-'EOF'`),
command substitution (`$(...)` and backticks, parsed recursively) and subshell/brace groups.
It never executes anything and never fails: unbalanced quotes just end the word at end of input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ";;", "|&", "|", ";", "&", "\n")
_REDIRECT_CHARS = "<>"


@dataclass
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


def parse_shell(s: str) -> ParsedShell:
    commands: list[SimpleCommand] = []
    operators: list[str] = []
    cur = SimpleCommand()
    word: list[str] = []
    in_word = False
    pending_redirect: str | None = None
    pending_heredocs: list[tuple[str, bool]] = []  # (delimiter, strip_tabs)
    i = 0
    n = len(s)

    def end_word() -> None:
        nonlocal word, in_word, pending_redirect
        if not in_word:
            return
        w = "".join(word)
        word = []
        in_word = False
        if pending_redirect is not None:
            op = pending_redirect
            pending_redirect = None
            if op in ("<<", "<<-"):
                pending_heredocs.append((w, op == "<<-"))
                cur.redirects.append((op, w))
            else:
                cur.redirects.append((op, w))
        else:
            cur.argv.append(w)

    def end_command(op: str) -> None:
        nonlocal cur
        end_word()
        if cur.argv or cur.redirects or cur.substitutions:
            commands.append(cur)
            operators.append(op)
        elif op and operators:
            operators[-1] = op
        cur = SimpleCommand()

    while i < n:
        c = s[i]
        if c == "\\":
            if i + 1 < n and s[i + 1] == "\n":
                i += 2
                continue
            if i + 1 < n:
                word.append(s[i + 1])
            in_word = True
            i += 2
            continue
        if c == "'":
            j = s.find("'", i + 1)
            j = n if j < 0 else j
            word.append(s[i + 1 : j])
            in_word = True
            i = j + 1
            continue
        if c == "$" and s.startswith("$'", i):
            j = i + 2
            buf = []
            while j < n and s[j] != "'":
                if s[j] == "\\" and j + 1 < n:
                    esc = s[j + 1]
                    buf.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'"}.get(esc, esc))
                    j += 2
                    continue
                buf.append(s[j])
                j += 1
            word.append("".join(buf))
            in_word = True
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < n and s[j] != '"':
                if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`\n':
                    if s[j + 1] != "\n":
                        buf.append(s[j + 1])
                    j += 2
                    continue
                if s.startswith("$(", j) and not s.startswith("$((", j):
                    inner, j2 = _read_dollar_paren(s, j + 2)
                    cur.substitutions.append(inner)
                    buf.append(s[j:j2])
                    j = j2
                    continue
                buf.append(s[j])
                j += 1
            word.append("".join(buf))
            in_word = True
            i = j + 1
            continue
        if c == "$" and s.startswith("$(", i) and not s.startswith("$((", i):
            inner, j = _read_dollar_paren(s, i + 2)
            cur.substitutions.append(inner)
            word.append(s[i:j])
            in_word = True
            i = j
            continue
        if c == "`":
            j = s.find("`", i + 1)
            j = n if j < 0 else j
            cur.substitutions.append(s[i + 1 : j])
            word.append(s[i : j + 1])
            in_word = True
            i = j + 1
            continue
        if c == "#" and not in_word:
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in " \t\r":
            end_word()
            i += 1
            continue
        if c in "()" or (c in "{}" and not in_word and (i + 1 >= n or s[i + 1] in " \t\n;")):
            # Subshells and brace groups only delimit commands for our purposes.
            end_command(";")
            i += 1
            continue
        if c in _REDIRECT_CHARS or (c == "&" and s.startswith("&>", i)):
            # fd prefix like 2> or 2>&1: the digits we already put in the word belong to the redirect.
            fd = ""
            if in_word and "".join(word).isdigit():
                fd = "".join(word)
                word = []
                in_word = False
            else:
                end_word()
            for op in ("<<<", "<<-", "&>>", "<<", ">>", "&>", ">&", "<&", ">|", "<>", ">", "<"):
                if s.startswith(op, i):
                    break
            i += len(op)
            if op in (">&", "<&"):
                j = i
                while j < n and (s[j].isdigit() or s[j] == "-"):
                    j += 1
                if j > i:
                    cur.redirects.append((fd + op, s[i:j]))
                    i = j
                    continue
            pending_redirect = fd + op if fd else op
            while i < n and s[i] in " \t":
                i += 1
            continue
        matched = next((op for op in _OPERATORS if s.startswith(op, i)), None)
        if matched is not None:
            end_command(matched.strip() or ";")
            i += len(matched)
            if matched == "\n" and pending_heredocs:
                i = _consume_heredocs(s, i, pending_heredocs, commands)
                pending_heredocs = []
            continue
        word.append(c)
        in_word = True
        i += 1
    end_command("")
    if pending_heredocs and commands:
        # here-doc delimiter without body (single-line input): nothing to consume.
        pass
    if operators:
        operators[-1] = ""
    return ParsedShell(commands, operators)


def _consume_heredocs(s: str, i: int, pending: list[tuple[str, bool]], commands: list[SimpleCommand]) -> int:
    n = len(s)
    target = commands[-1] if commands else None
    for delim, strip_tabs in pending:
        body: list[str] = []
        while i < n:
            j = s.find("\n", i)
            line = s[i:] if j < 0 else s[i:j]
            i = n if j < 0 else j + 1
            check = line.lstrip("\t") if strip_tabs else line
            if check == delim:
                break
            body.append(line)
        if target is not None:
            # attach to the command that owns the heredoc redirect (the last one that has it)
            owner = next((c for c in reversed(commands) if any(r[1] == delim for r in c.redirects)), target)
            owner.heredocs.append("\n".join(body))
    return i
