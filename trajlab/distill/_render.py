"""Deterministic templates: mined rules become short, readable guidance items.

Used offline and as the fallback of the LLM writer. Example commands are generalized (media file
names become `input.<ext>`, inline python becomes `...`) and redacted, so a skill carries the
procedure, not one task's specifics.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from ..redact import redact
from ._features import INSTALLERS, Example
from ._mine import Rule
from ._skill import Item, Skill

SECTION_DO = "Do"
SECTION_AVOID = "Avoid"
SECTION_RECOVER = "When something fails"
SECTION_MODES = "Failure modes seen"
SECTION_REFS = "References"
MEDIA_EXT = (
    "mp4|mkv|mov|avi|webm|m4v|wav|mp3|flac|ogg|m4a|aac|png|jpe?g|gif|bmp|tiff?|webp|pdf|txt|srt|vtt|csv|json"
)
_MEDIA_RE = re.compile(r"(?P<dir>(?:[\w.%-]+/)*)(?P<stem>[\w.%-]*[\w-])\.(?P<ext>" + MEDIA_EXT + r")\b", re.I)
_PY_CODE_RE = re.compile(r"""(python3?\s+-c\s+)(["']).*?\2""", re.S)
_HEREDOC_RE = re.compile(r"<<-?\s*'?(\w+)'?\n.*?\n\1", re.S)
EXAMPLE_CHARS = 110
GENERALIZE_CHARS = 1_000
"""Only this much of a command is generalized: the result is cut to EXAMPLE_CHARS anyway, and the
heredoc and path patterns backtrack quadratically on hostile text (40 KB of `<<EOF` lines took 1.3 s)."""


def generalize(command: str, keep: str = "") -> str:
    """A command with task specifics removed: file names, inline code, secrets, excess length.

    `keep` is the part of elided inline code that the example is about (`import cv2`): without it an
    Avoid item about scripts that import cv2 shows `python3 -c "..."`, the same example as a Do item
    recommending `python3 -c`."""
    c = redact(command or "").strip()[:GENERALIZE_CHARS]
    if c.startswith(("{", "[")):
        return ""  # structured tool arguments, not a command line
    shown = f"{keep}; ..." if keep else "..."
    c = _HEREDOC_RE.sub(lambda m: f"<<'{m.group(1)}' {shown} {m.group(1)}", c)
    c = _PY_CODE_RE.sub(lambda m: f'{m.group(1)}"{shown}"', c)

    def media(m: re.Match[str]) -> str:
        if "%" in m.group("stem"):
            return m.group(0)
        return f"{m.group('dir')}input.{m.group('ext').lower()}"

    c = _MEDIA_RE.sub(media, c)
    c = " ".join(c.split())
    return c if len(c) <= EXAMPLE_CHARS else c[: EXAMPLE_CHARS - 1] + "…"


_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_TICKS_RE = re.compile(r"`+")


def one_line(text: str) -> str:
    """Trajectory text on one line: control characters and line breaks become spaces, runs of spaces one."""
    return " ".join(_CONTROL_RE.sub(" ", str(text)).split())


def code(text: str) -> str:
    """`text` as one Markdown inline code span that no character of it can close or break.

    Tool names, flags, modules and categories come from trajectories: a backtick in one would end
    the span and let the rest of the text read as guidance, a line break could start a heading or a
    frontmatter fence. The fence is one backtick longer than any backtick run inside (CommonMark), so
    an ordinary value renders exactly as `value`."""
    t = one_line(text)
    runs = _TICKS_RE.findall(t)
    if not runs:
        return f"`{t}`"
    fence = "`" * (max(map(len, runs)) + 1)
    return f"{fence} {t} {fence}"


def _example(ex: list[Example], keep: str = "") -> str:
    for e in ex:
        g = generalize(e.command, keep)
        if g and "`" not in g:
            return g
    return ""


def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def scope_label(scope: str) -> str:
    if scope == "all":
        return "all runs"
    col, _, val = scope.partition("=")
    val = one_line(val)
    return f"{val} tasks" if col == "domain" else f"runs with {col} {val}"


def evidence_note(r: Rule) -> str:
    verb = "succeeded" if r.direction == "do" else "failed"
    return (
        f"Evidence: {_pct(r.confidence)} of {r.n_with} runs that did this {verb} "
        f"(vs {_pct(r.base_rate)} of {scope_label(r.scope)}; lift {r.lift:.2f})."
    )


def _before(r: Rule) -> str:
    tool = r.value
    later = [m.split("<", 1)[1] for m in r.merged if m.startswith(f"order:{tool}<")]
    return f" before {code(later[0])}" if later else ""


PYTHONS = frozenset({"python", "python3"})


def exceptions(r: Rule, rules: Sequence[Rule]) -> list[str]:
    """What the Avoid rules among `rules` forbid of the program that the Do rule `r` recommends in
    general, as short phrases.

    "Call python with -c" next to "Avoid python scripts that import cv2" reads as a contradiction
    unless the Do item names its exception. Only rules of the same scope (or of all runs) count, and a
    flag with the same option as the Do rule's (`--model tiny` against `--model small`) is no exception
    to it but its alternative."""
    if r.direction != "do" or r.family not in ("use", "flag"):
        return []
    prog, _, opt = r.value.partition(" ")
    out: list[str] = []
    for a in rules:
        if a.direction != "avoid" or a.scope not in (r.scope, "all"):
            continue
        if a.family == "import" and prog in PYTHONS:
            out.append(f"scripts that import {code(a.value)}")
        elif a.family == "flag":
            a_prog, _, a_opt = a.value.partition(" ")
            if a_prog == prog and a_opt.split()[:1] != opt.split()[:1]:
                out.append(code(a.value))
    return list(dict.fromkeys(out))


def guidance(r: Rule, rules: Sequence[Rule] = ()) -> str:
    """The guidance sentence of one rule (markdown, one item); `rules`, the other rules of its skill,
    give a Do item the exceptions their Avoid items make to it."""
    fam, val = r.family, r.value
    ex = _example(r.examples, keep=f"import {val}" if fam == "import" else "")
    eg = f", e.g. `{ex}`" if ex else ""
    but = exceptions(r, rules)
    eg = f" (but not {', '.join(but)}: see Avoid){eg}" if but else eg
    if r.direction == "do":
        if fam == "use":
            text = f"**Run {code(val)}{_before(r)}**{eg}."
        elif fam == "order":
            a, b = val.split("<", 1)
            text = f"**Run {code(a)} before {code(b)}**{eg}."
        elif fam == "flag":
            prog, _, opt = val.partition(" ")
            text = f"**Call {code(prog)} with {code(opt)}**{eg}."
        elif fam == "import":
            text = f"**Use the python module {code(val)}**{eg}."
        elif fam == "recover":
            if ex and ex.split()[0] in INSTALLERS | {"python", "python3", "sudo"}:
                text = (
                    f"**If {code(val)} fails or is missing, install it ({code(ex)}) and rerun {code(val)}**."
                )
            else:
                text = f"**If {code(val)} fails, fix the call and rerun it**{eg} instead of giving up."
        else:
            text = f"**{code(r.feature)}**{eg}."
    else:
        if fam == "use":
            text = f"**Avoid relying on {code(val)}**{eg}; prefer the tools in the Do list."
        elif fam == "import":
            text = f"**Avoid ad-hoc python scripts that import {code(val)}**{eg}; use the command-line tools instead."
        elif fam == "error":
            text = f"**Do not build on a failed {code(val)} call**{eg}: check its output and fix or replace it before answering."
        elif fam == "flag":
            prog, _, opt = val.partition(" ")
            text = f"**Avoid {code(f'{prog} {opt}')}**{eg}."
        elif fam == "order":
            a, b = val.split("<", 1)
            text = f"**Do not run {code(a)} before {code(b)}**."
        elif fam == "recover":
            text = f"**Do not keep retrying {code(val)} the same way**{eg}."
        else:
            text = f"**Avoid {code(r.feature)}**{eg}."
    return f"{text} {evidence_note(r)}"


def section_of(r: Rule) -> str:
    if r.family == "recover" and r.direction == "do":
        return SECTION_RECOVER
    return SECTION_DO if r.direction == "do" else SECTION_AVOID


def failure_mode_items(modes: list[dict]) -> list[Item]:
    total = sum(m["failures"] for m in modes)
    out = []
    for m in modes:
        marks = ", ".join(code(mk["feature"].split(":", 1)[1]) for mk in m["marks"])
        tail = f"; often together with {marks}" if marks else ""
        out.append(Item(f"{code(m['category'])}: {m['failures']} of {total} labeled failures{tail}.", None))
    return out


def skill_name(prefix: str, scope: str) -> str:
    val = "general" if scope == "all" else scope.partition("=")[2]
    raw = f"{prefix}-{val}".lower()
    name = re.sub(r"[^a-z0-9]+", "-", raw).strip("-")
    name = re.sub(r"-{2,}", "-", name)[:64].strip("-")
    return name or "distilled"


def skill_names(prefix: str, scopes: list[str]) -> dict[str, str]:
    """The skill name of each scope, distinct: scopes whose values fold to one name (`Video` and
    `video`, `a b` and `a-b`, long values cut at 64 characters) would otherwise write into one skill
    folder, each run replacing the other's version. A scope whose value is the name as written keeps
    it; the others get a suffix from a hash of the scope, so the names stay the same on every rerun."""
    plain = {sc: skill_name(prefix, sc) for sc in scopes}
    by_name: dict[str, list[str]] = {}
    for sc, n in plain.items():
        by_name.setdefault(n, []).append(sc)
    out: dict[str, str] = {}
    for n, group in by_name.items():
        if len(group) == 1:
            out[group[0]] = n
            continue
        exact = [sc for sc in group if f"{prefix}-{sc.partition('=')[2]}" == n]
        for sc in group:
            if exact == [sc]:
                out[sc] = n
                continue
            tag = hashlib.sha256(sc.encode()).hexdigest()[:6]
            out[sc] = f"{n[: 64 - len(tag) - 1].rstrip('-')}-{tag}"
    return out


def describe(scope: str, n_s: int, n_f: int, rules: list[Rule], benchmark: str | None = None) -> str:
    where = "any task" if scope == "all" else f"{scope_label(scope).replace(' tasks', '')} tasks"
    if benchmark:
        where += f" ({benchmark})"
    heads = []
    for r in rules[:3]:
        g = guidance(r).split("**")
        if len(g) > 1:
            heads.append(g[1].replace("`", "").rstrip("."))
    what = "; ".join(heads) if heads else "tool-use lessons from past runs"
    d = (
        f"Tool-use procedure distilled from {n_s} successful and {n_f} failed agent runs: {what}. "
        f"Use when working on {where} with command-line tools, before choosing how to extract and check evidence."
    )
    d = one_line(d.replace("<", "").replace(">", ""))
    return d if len(d) <= 1000 else d[:999].rsplit(" ", 1)[0] + "."


def new_skill(name: str, scope: str, description: str, n_s: int, n_f: int, lab: str) -> Skill:
    title = "Distilled guidance: " + ("all tasks" if scope == "all" else scope_label(scope))
    intro = (
        f"Lessons mined by contrasting {n_s} successful and {n_f} failed runs (lab {code(lab)}). "
        "The Do list follows the order in which successful runs took these steps; each item says how "
        "strongly the logs back it (full evidence in references/)."
    )
    sk = Skill(name=name, description=description, title=title, intro=intro)
    for t in (SECTION_DO, SECTION_AVOID, SECTION_RECOVER, SECTION_MODES):
        sk.section(t)
    refs = sk.section(SECTION_REFS)
    assert refs is not None
    refs.prose = (
        "Support, lift, p-values and the supporting/contradicting run ids of every rule are in "
        "[references/rules.md](references/rules.md); provenance in "
        "[references/provenance.json](references/provenance.json)."
    )
    sk.section(SECTION_DO).numbered = True  # type: ignore[union-attr]
    return sk


def rules_markdown(name: str, rules: list[Rule], rejected: list[dict]) -> str:
    lines = [f"# Evidence for {code(name)}", ""]
    for r in rules:
        lines += [
            f"## {r.direction}: {code(r.feature)} ({scope_label(r.scope)})",
            "",
            guidance(r, rules),
            "",
            f"- support: {r.n_with} runs with the feature ({r.n_with_success} succeeded) of {r.n_scope} in scope",
            f"- confidence {r.confidence:.3f}, base rate {r.base_rate:.3f}, lift {r.lift:.3f}, "
            f"Fisher p = {r.p_value:.3g}" + (" (stale: not re-found in the latest runs)" if r.stale else ""),
            f"- supporting runs ({len(r.supporting)}): {', '.join(r.supporting[:20])}"
            + (" ..." if len(r.supporting) > 20 else ""),
            f"- contradicting runs ({len(r.contradicting)}): {', '.join(r.contradicting[:20]) or 'none'}"
            + (" ..." if len(r.contradicting) > 20 else ""),
        ]
        if r.merged:
            lines.append(f"- merged near-duplicates: {', '.join(code(m) for m in r.merged)}")
        if r.also_scopes:
            lines.append(f"- also found in: {', '.join(one_line(x) for x in r.also_scopes)}")
        for e in r.examples[:3]:
            g = generalize(e.command)
            if g:
                lines.append(f"- example ({e.trajectory_id} step {e.step_index}): `{g.replace('`', '')}`")
        lines.append("")
    if rejected:
        lines += ["## Rules left out by the size budget", ""]
        lines += [f"- {code(x['rule'])}: {one_line(x['reason'])}" for x in rejected]
        lines.append("")
    return "\n".join(lines)
