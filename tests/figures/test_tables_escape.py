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


def test_markdown_tables_are_never_html_and_stay_one_line_per_row() -> None:
    from trajlab.figures._tables import TableSpec, markdown_table

    spec = TableSpec(
        ["Step <b>"],
        [["<img src=x onerror=alert(1)> & a|b\n\nnext \x1b[31mred\u202e"]],
        "l",
        "cap <script>",
    )
    md = markdown_table(spec, "Title <i>")
    assert "<" not in md and ">" not in md and "\x1b" not in md and "\u202e" not in md
    assert "| &lt;img src=x onerror=alert(1)&gt; &amp; a\\|b next [31mred |" in md
    assert md.count("\n") == 7  # title, blank, header, rule, one row, blank, caption
