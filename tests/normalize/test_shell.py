"""The shell word splitter: quoting, operators, and that it never raises or hangs on arbitrary text."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from trajlab.normalize import analyze_command, parse_shell
from trajlab.normalize._shell import _fast, _Parser

TOKENS = [
    *"ab -'\"\\$`()<>|&;{}#\n\t=*.~0129",
    *["$(", "$((", "((", "))", "[[ ", " ]]", "<<", "<<-", "EOF", "bash -c ", "\u2003", "\x00"],
    *["case ", " in ", "esac", ";;", "for ", "do ", "done", "f() ", "x=("],
]
SHELLISH = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)


def argvs(s: str) -> list[list[str]]:
    return [c.argv for c in parse_shell(s).commands]


def test_quoting() -> None:
    assert argvs("""echo 'a b' "c $d" e\\ f $'g\\nh'""") == [["echo", "a b", "c $d", "e f", "g\nh"]]
    assert argvs("a'b'\"c\"d") == [["abcd"]]
    assert argvs('echo "$(date +%s) x"') == [["echo", "$(date +%s) x"]]


def test_operators_and_comments() -> None:
    p = parse_shell("a && b || c | d; e & f # comment ; g\nh")
    assert [c.argv for c in p.commands] == [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["h"]]
    assert p.operators == ["&&", "||", "|", ";", "&", ";", ""]


def test_substitutions_are_recorded() -> None:
    p = parse_shell("x=$(ffprobe a.mp4 | head -1) && echo `whoami`")
    assert p.commands[0].substitutions == ["ffprobe a.mp4 | head -1"]
    assert p.commands[1].substitutions == ["whoami"]


def test_compound_commands() -> None:
    p = parse_shell("for ((i=0; i<3; i++)); do a $i; done")
    assert [c.argv for c in p.commands] == [["for", "((", "i=0; i<3; i++"], ["do", "a", "$i"], ["done"]]
    assert argvs("((n = (2+3)*4)) && b") == [["((", "n = (2+3)*4"], ["b"]]
    assert argvs("[[ $x =~ ^a(b|c)$ && -n $y ]] || c") == [
        ["[[", "$x", "=~", "^a", "(", "b", "|", "c", ")", "$", "&&", "-n", "$y", "]]"],
        ["c"],
    ]
    p = parse_shell('case $f in\n  *.mp4 | *.mkv) a "$f" ;;\n  (*.wav) b ;;\n  *) c ;& \nesac; d')
    assert [c.argv for c in p.commands] == [["case", "$f", "in"], ["a", "$f"], ["b"], ["c"], ["esac"], ["d"]]
    p = parse_shell("f () { a; }; function g() { b; }; f; arr=(x y) z")
    assert p.functions == ["f", "g"]
    assert [c.argv for c in p.commands] == [["a"], ["b"], ["f"], ["arr=(x y)", "z"]]
    # words that only look like keywords stay arguments
    assert argvs("echo case x in y) && echo [[ a") == [["echo", "case", "x", "in", "y"], ["echo", "[[", "a"]]


def test_heredoc_inside_command_substitution() -> None:
    # The body's apostrophe and parenthesis are text: `)` after the delimiter line ends the substitution.
    p = parse_shell("git commit -m \"$(cat <<'EOF'\nit's (done\nEOF\n)\" && git push")
    assert [c.argv[:2] for c in p.commands] == [["git", "commit"], ["git", "push"]]
    assert p.commands[0].substitutions == ["cat <<'EOF'\nit's (done\nEOF\n"]
    assert parse_shell(p.commands[0].substitutions[0]).commands[0].heredocs == ["it's (done"]
    p = parse_shell("x=$(cat <<-EOF\n\tdon't\n\tEOF\n) && y")
    assert [c.argv for c in p.commands] == [["x=$(cat <<-EOF\n\tdon't\n\tEOF\n)"], ["y"]]
    # `<<` in arithmetic is a shift, not a here-document
    assert argvs("echo $((1<<2)) 'a'\nb") == [["echo", "$((1<<2))", "a"], ["b"]]


def test_unbalanced_input_ends_at_end() -> None:
    assert argvs("echo 'unterminated") == [["echo", "unterminated"]]
    assert argvs('echo "also $(unterminated') == [["echo", "also $(unterminated"]]
    assert argvs("cat <<EOF") == [["cat"]]


@given(SHELLISH)
@settings(max_examples=400, deadline=None)
def test_parser_never_raises_and_terminates(s: str) -> None:
    t0 = time.perf_counter()
    parse_shell(s)
    analyze_command(s)
    assert time.perf_counter() - t0 < 1.0


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_parser_never_raises_on_any_unicode(s: str) -> None:
    parse_shell(s)
    analyze_command(s)


@given(st.lists(st.sampled_from([*"ab -'|&;\t.=", "||", "&&", ";;"]), max_size=60).map("".join))
@settings(max_examples=300, deadline=None)
def test_fast_path_agrees_with_full_parser(s: str) -> None:
    if s.count("'") % 2 == 0:
        assert _fast(s) == _Parser(s).run()


def test_linear_time_on_large_adversarial_input() -> None:
    # Each input is big enough that a quadratic scan would take minutes; linear takes well under a second.
    for s in [
        "$(" * 20_000,
        "'" * 40_001,
        "a|" * 30_000,
        "echo " + "x" * 500_000,
        "<<E\n" * 5_000,
        "\\" * 50_001,
    ]:
        t0 = time.perf_counter()
        parse_shell(s)
        assert time.perf_counter() - t0 < 10.0, s[:10]
