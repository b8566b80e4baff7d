"""Text as LaTeX that compiles with pdflatex in its default OT1 font encoding and with T1.

Table cells hold text from the logs (tool names, commands, step labels), which can be any Unicode.
pdflatex stops at the first character its UTF-8 input setup has no glyph for (`Unicode character
≥ (U+2265) not set up for use with LaTeX`, `Command \\DH unavailable in encoding OT1`), so:

- LaTeX's special characters are escaped, and those OT1 prints as other glyphs (`|<>`) spelled out;
- characters that compile in both encodings are kept (`SAFE`: Latin-1, most of Latin Extended-A,
  dashes, quotes, `€ ™ ← →`; checked by compiling every one under OT1 and T1);
- common math symbols and Greek letters become `\\ensuremath{...}` (`≥`, `α`, `∞`);
- other accented letters lose their accent (`Ą` -> `A`), control characters become spaces, and anything
  else (CJK, emoji, symbols) is written as its code point, `[U+4E2D]`, so nothing disappears unseen.

A lualatex or xelatex document can take the characters as they are: `latex_escape(text, unicode=True)`.
"""

from __future__ import annotations

import re
import unicodedata

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # with LaTeX's default OT1 font encoding these print as other glyphs (an em dash, inverted ! and ?)
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}
_OT1_OR_T1_MISSING = set("«»ÐÞðþĄąĐđĘęĦħĮįĸĿŀŉŊŋŦŧŲųſ")
SAFE = frozenset({chr(c) for c in range(0xA0, 0x180)} - _OT1_OR_T1_MISSING | set("–—‘’“”†‡•…‰€™←→↑↓№℃℮"))
"""Non-ASCII characters that pdflatex typesets in both the OT1 and the T1 font encoding."""

_GREEK = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "o",
    "pi",
    "rho",
    "varsigma",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
]
MATH: dict[str, str] = {
    **{chr(0x3B1 + k): name for k, name in enumerate(_GREEK) if name != "o"},
    **{"Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma"},
    **{"Υ": "Upsilon", "Φ": "Phi", "Ψ": "Psi", "Ω": "Omega", "\u2126": "Omega"},
    **{"≤": "leq", "≥": "geq", "≠": "neq", "≈": "approx", "≡": "equiv", "∼": "sim", "∞": "infty"},
    **{"√": "surd", "∑": "sum", "∏": "prod", "∈": "in", "∉": "notin", "⊂": "subset", "⊆": "subseteq"},
    **{"∪": "cup", "∩": "cap", "∧": "wedge", "∨": "vee", "⇒": "Rightarrow", "⇔": "Leftrightarrow"},
    **{"∂": "partial", "∇": "nabla", "∀": "forall", "∃": "exists", "∅": "emptyset", "⋅": "cdot"},
}
"""Characters written as `\\ensuremath{\\NAME}`."""
_MATH_TEXT = {c: rf"\ensuremath{{\{n}}}" for c, n in MATH.items()} | {
    "−": r"\ensuremath{-}",
    "′": r"\ensuremath{{}^{\prime}}",
    "″": r"\ensuremath{{}^{\prime\prime}}",
    "ο": "o",
}
_SPECIAL_RE = re.compile("|".join(re.escape(k) for k in _SPECIAL))
_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")  # a blank line in a cell ends the paragraph: a LaTeX error
_NON_ASCII = re.compile(r"[^\x20-\x7e]")


def _char(c: str) -> str:
    if c in SAFE:
        return c
    if c in _MATH_TEXT:
        return _MATH_TEXT[c]
    if c == "\t" or unicodedata.category(c) in ("Cc", "Zs", "Zl", "Zp"):
        return " "
    if unicodedata.category(c) in ("Cf", "Mn"):  # zero-width and combining marks: nothing to print
        return ""
    base = unicodedata.normalize("NFKD", c)
    base = "".join(b for b in base if unicodedata.category(b) != "Mn")
    if base and all(" " <= b <= "~" for b in base):
        return "".join(_SPECIAL.get(b, b) for b in base)
    return f"[U+{ord(c):04X}]"


def latex_escape(text: str, unicode: bool = False) -> str:
    """`text` as LaTeX text that compiles with pdflatex (see the module docstring); with
    `unicode=True` only LaTeX's special characters and line breaks are changed."""
    out = _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group()], _LINE_BREAKS.sub(" ", text))
    if unicode:
        return out
    return _NON_ASCII.sub(lambda m: _char(m.group()), out)
