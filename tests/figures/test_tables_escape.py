"""LaTeX cells: every character that is special to LaTeX (or prints as another glyph in its default
OT1 font encoding) is escaped, and line breaks from the logs cannot end the table's paragraph."""

from __future__ import annotations

import pytest

from trajlab.figures._tables import latex_escape


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("a|b", r"a\textbar{}b"),
        ("x<y>z", r"x\textless{}y\textgreater{}z"),
        (
            "50% & $3 #1 _x {y} ~ ^ \\",
            r"50\% \& \$3 \#1 \_x \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{}",
        ),
        ("model\n\nname", "model name"),  # a blank line inside a tabular cell is a LaTeX error
        ("a \r\n b", "a b"),
        ("plain text", "plain text"),
    ],
)
def test_latex_escape(text: str, want: str) -> None:
    assert latex_escape(text) == want
