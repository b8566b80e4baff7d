"""Token scanning and matching used by the data-edge rules."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from trajlab.dag import _tokens
from trajlab.dag._tokens import code_io, has_path, norm_path, pattern_matches, same_file, scan, value_use


def test_scan_finds_paths_urls_and_values() -> None:
    paths, urls, values = scan(
        "wrote frames/%03d.png and /tmp/out/x.txt; see https://example.com/a?b=1. "
        "Total 1,234.50 for ORBIT-42 (id bb53fb4) at 00:07.000 in src/a.py:12: done 7 times"
    )
    assert paths == ["frames/%03d.png", "/tmp/out/x.txt", "src/a.py"]
    assert urls == ["https://example.com/a?b=1"]
    # a clock time is one value (`00:07`), its fields none; no line numbers or single digits
    assert values == ["1234.5", "ORBIT-42", "bb53fb4", "00:07"]


def test_no_values_in_clock_times_with_offsets_or_in_numbers_of_one_digit() -> None:
    # `Arrow(2013, 5, 5, 12, 30, 45)` printed as 2013-05-05T12:00:00+05:30: neither 30 nor 56 is a value
    assert "30" not in scan("created 2013-05-05T12:00:00+05:30 at 03:56:47")[2]
    assert "56" not in scan("created 2013-05-05T12:00:00+05:30 at 03:56:47")[2]
    # the times are (chat-messages t_a5db5f936f241ff7: `56` of 03:56:47 linked two steps; the hour `03`
    # and a `T`-glued date made `2013-05-01T03` a value)
    assert scan("created 2013-05-05T12:00:00+05:30 at 03:56:47")[2] == ["12:00:00", "03:56:47"]
    assert scan("2013-05-01T03:56:47-00:00")[2] == ["03:56:47"]
    assert scan("the train arrives at 12:00 PM")[2] == ["12:00"]
    assert value_use("at 03:56:47 x", "56") == 0 and value_use("at 03:56:47 x", "03") == 0
    assert value_use("2013-05-09T03:56:47-00:00", "56") == 0 and value_use("got 56 rows", "56") == 1
    # a duration under a minute states its seconds (ffprobe); longer ones do not in their seconds field
    assert value_use("Duration: 00:00:12.00, start: 0", "12") == 1
    assert value_use("Duration: 00:01:12.00, start: 0", "12") == 0
    # style lengths are design constants, no values (Claude Code t_e03a19b88c1ce36d linked CSS of a test's
    # HTML dump to a button style of an edit by `0.8rem`)
    assert scan("padding: 0.8rem 1.5em; width: 16px; transition: 300ms; ORBIT-42")[2] == ["ORBIT-42"]
    assert scan("1" * 7990 + "pz")[2] == ["1" * 7990 + "pz"]  # (quadratic before: a code, no length)
    # a range is two times, a zone on its own none, a MAC address no time; typed durations state seconds
    assert scan("12:30-13:45")[2] == ["12:30", "13:45"]
    assert scan("03:56:47 -00:00")[2] == ["03:56:47"]
    assert scan("00:11:22:33:44:55")[2] == []
    assert scan("Duration: 00:00:12.00")[2] == ["00:00:12", "12"]


def test_paths_with_spaces_are_files_of_a_known_type_not_prose() -> None:
    from trajlab.dag._tokens import is_pathlike

    assert is_pathlike("/Users/u/Sample BiS Demo Prep.vtt") and is_pathlike("./my notes.md")
    for prose in ("/tmp is full", "/fix the bug", "/start here/", "/api/v1 is deprecated, use /api/v2"):
        assert not is_pathlike(prose), prose
    # `1.0` is the digit 1 (no value, as 1 itself); 10.0 and 2.50 are 10 and 2.5
    assert scan("ratio 1.0, total 10.0, price 2.50, delta -1.0")[2] == ["10", "2.5", "-1"]


def test_right_aligned_line_numbers_followed_by_a_space_are_no_values() -> None:
    # an editor view numbering lines as `    30 )` (SWE-smith's str_replace_editor), CRLF too
    listing = "    28     large_file_check,\r\n    29     templater_logger,\r\n    30 )\r\n    31 \r\n"
    assert value_use(listing, "30") == 2 and value_use(listing, "28") == 2 and value_use(listing, "31") == 2
    # counts printed the same way are values: `uniq -c`, BSD `wc -l`
    assert value_use("      3 foo\n     12 bar\n", "12") == 1
    assert value_use("      42 notes.txt", "42") == 1


def test_fractions_are_values_not_paths() -> None:
    assert scan("The answer is ORBIT-42/5 and 120/340") == ([], [], ["ORBIT-42", "120", "340"])


def test_whole_token_matching() -> None:
    assert value_use("at 120 thousand", "120") == 1 and value_use("x 915.0\n", "915") == 1
    assert value_use("1200", "120") == value_use("915.5", "915") == value_use("v120", "120") == 0
    assert has_path("/x/lib/a.ex:3", "lib/a.ex") and not has_path("/x/lib/a.exs", "lib/a.ex")


def test_paths_compare_by_suffix() -> None:
    assert same_file("/w/frames/001.png", "frames/001.png")
    assert not same_file("/a/b.txt", "/c/b.txt") and not same_file("xb.txt", "b.txt")
    assert norm_path("./frames/../a.txt", "/w") == "/w/a.txt"
    assert pattern_matches("frames/%03d.png", "/w/frames/042.png")
    assert not pattern_matches("frames/%03d.png", "frames/42.png")
    assert pattern_matches("page-*.png", "page-3.png") and pattern_matches("/w/out/%d.jpg", "out/12.jpg")


def test_code_literals() -> None:
    written, read, urls = code_io(
        "import cv2\ncap = cv2.VideoCapture('in.mp4')\nopen('out/x.txt', 'w').write('a')\n"
        "Image.open('frames/001.png').save('crop.png')\nrequests.get('https://x.org/a')"
    )
    assert written == ["out/x.txt", "crop.png"]
    assert read == ["in.mp4", "frames/001.png"]
    assert urls == ["https://x.org/a"]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab c/.:=1\n\t-_é\u00a0", max_size=60))
def test_word_candidates_same_without_the_possessive_quantifier(text):
    """Python 3.10 has no `*+`: the plain pattern it gets must find the same words."""
    plain = re.compile(_tokens._CANDIDATES_RE.replace("]*+[", "]*[")).findall
    assert _tokens._CANDIDATES(text) == plain(text)


def test_tokens_compile_on_this_python():
    assert ("]*+[" in _tokens._CANDIDATES_RE) == (sys.version_info >= (3, 11))
