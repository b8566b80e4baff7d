"""trajlab.tabular: every format keeps every column and shows values json/csv cannot take as they are."""

from __future__ import annotations

import csv
import io
import json
from datetime import time, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajlab import tabular
from trajlab.store import fetch_arrow


def _duck(sql: str) -> pa.Table:
    return fetch_arrow(duckdb.connect().execute(sql))


def test_decimal_time_interval_hugeint_and_map_in_every_text_format(tmp_path) -> None:
    t = _duck(
        "SELECT 3.14 AS d, 2::DECIMAL(10,0) AS i, TIME '10:30:00' AS t, INTERVAL 2 DAY AS iv, "
        "12345678901234567890::HUGEINT AS h, MAP {'a': 1.5} AS m, NULL::DECIMAL(4,1) AS n"
    )
    want = {"d": 3.14, "i": 2, "t": "10:30:00", "iv": "0 months 2 days 0 ns", "h": "12345678901234567890",
            "m": [["a", 1.5]], "n": None}  # fmt: skip
    assert json.loads(tabular.render(t, "json")) == [want]
    assert json.loads(tabular.render(t, "jsonl")) == want
    row = list(csv.reader(io.StringIO(tabular.render(t, "csv"))))[1]
    assert row == [
        "3.14",
        "2",
        "10:30:00",
        "0 months 2 days 0 ns",
        "12345678901234567890",
        '[["a", 1.5]]',
        "",
    ]
    assert "3.14" in tabular.render(t, "table") and "10:30:00" in tabular.render(t, "markdown")
    out = tabular.write(t, tmp_path / "r.json")
    assert json.loads(out.read_text()) == [want]


def test_python_values_without_a_json_form() -> None:
    t = pa.table(
        {"d": pa.array([Decimal("1.50")]), "t": [time(1, 2)], "td": pa.array([timedelta(seconds=90)])}
    )
    assert json.loads(tabular.render(t, "json")) == [{"d": 1.5, "t": "01:02:00", "td": "0:01:30"}]


def test_repeated_column_names_keep_their_own_values(tmp_path) -> None:
    t = _duck("SELECT 1 AS a, 2 AS a, 3 AS a_1")
    assert tabular.render(t, "csv").splitlines() == ["a,a_1,a_1_1", "1,2,3"]
    assert json.loads(tabular.render(t, "json")) == [{"a": 1, "a_1": 2, "a_1_1": 3}]
    assert tabular.render(t, "markdown").splitlines()[2] == "| 1 | 2 | 3 |"
    assert tabular.write(t, tmp_path / "r.csv").read_text().splitlines() == ["a,a_1,a_1_1", "1,2,3"]


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl", "table", "markdown"])
def test_no_rows_and_max_rows(fmt: str) -> None:
    empty = pa.table({"x": pa.array([], pa.int64())})
    assert tabular.render(empty, fmt) is not None
    many = pa.table({"x": list(range(10))})
    text = tabular.render(many, fmt, max_rows=3)
    if fmt in ("table", "markdown"):
        assert "9" not in text.split("...")[0]
        assert text.splitlines()[-1].strip("_") == "... 7 more rows"  # cut short, and says so
    else:
        assert "9" in text  # files and machine formats get every row


def test_parquet_write_uses_a_temporary_file_of_its_own(tmp_path) -> None:
    """A temporary file another writer (or an interrupted one) left under the old fixed name
    `.NAME.tmp` is neither written into nor in the way: each write has its own temporary file."""
    out = tmp_path / "gaps.parquet"
    other = tmp_path / ".gaps.parquet.tmp"
    other.mkdir()  # the fixed name taken: pq.write_table to it failed with IsADirectoryError
    (other / "keep").write_text("another writer's")
    tabular.write(pa.table({"tool": ["ffprobe"], "gap": [0.25]}), out)
    assert pq.read_table(out).to_pylist() == [{"tool": "ffprobe", "gap": 0.25}]
    assert (other / "keep").read_text() == "another writer's"
    assert sorted(f.name for f in tmp_path.iterdir()) == [".gaps.parquet.tmp", "gaps.parquet"]


def test_parquet_write_that_fails_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch) -> None:
    out = tmp_path / "gaps.parquet"
    tabular.write(pa.table({"tool": ["ffprobe"]}), out)

    def broken(table, where, **kw):
        Path(where).write_bytes(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError) as e:
        tabular.write(pa.table({"tool": ["whisper"]}), out)
    assert e.value.filename == str(out)
    monkeypatch.undo()
    assert pq.read_table(out).to_pylist() == [{"tool": "ffprobe"}]
    assert [f.name for f in tmp_path.iterdir()] == ["gaps.parquet"]


def test_csv_lines_end_in_newline_only() -> None:
    """Lines ended in \\r\\n (the csv module's default), so `trajlab sql ... --format csv | tail -1`
    in a shell gave 't_1\\r' and the next command found no such trajectory. A newline inside a value
    is still quoted."""
    text = tabular.render(pa.table({"id": ["t_1", "a\nb"]}), "csv")
    assert "\r" not in text and text.splitlines()[:2] == ["id", "t_1"]
    assert list(csv.reader(io.StringIO(text))) == [["id"], ["t_1"], ["a\nb"]]


ESCAPES = "a\x1b[31mred\x1b]0;title\x07 b\x1b]52;c;ZXZpbA==\x07\u202eevil\u2066 \x9b1m"


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_terminal_and_markdown_output_shows_control_characters_instead_of_sending_them(fmt):
    # trajectory text is data: an escape sequence in a step's output must not color, retitle or write
    # the clipboard of the terminal that prints a query result (click does not strip them on a tty)
    text = tabular.render(pa.table({"out\x1b[2J": [ESCAPES]}), fmt, max_width=500)
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e\u2066")
    assert "\\x1b[31mred\\x1b]0;title\\x07" in text and "\\u202eevil\\u2066" in text and "\\x9b1m" in text
    assert "out\\x1b[2J" in text  # column names too


def test_markdown_cells_are_never_html():
    text = tabular.render(pa.table({"<b>h</b>": ["<img src=x onerror=alert(1)> & | pipe"]}), "markdown")
    assert "<" not in text and ">" not in text
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; \\| pipe" in text
    assert "| &lt;b&gt;h&lt;/b&gt; |" in text


def test_data_formats_keep_the_text_exact():
    t = pa.table({"x": [ESCAPES]})
    assert json.loads(tabular.render(t, "json"))[0]["x"] == ESCAPES  # JSON escapes control characters itself
    assert ESCAPES in tabular.render(t, "csv")  # CSV is data for other programs: byte for byte


def test_csv_quotes_a_field_with_a_bare_carriage_return(tmp_path):
    # QUOTE_MINIMAL left 'a\rb' bare: csv readers took the \r as the end of the line
    t = pa.table({"x": ["a\rb", "plain"], "n": [1, 2]})
    text = tabular.render(t, "csv")
    assert list(csv.reader(io.StringIO(text))) == [["x", "n"], ["a\rb", "1"], ["plain", "2"]]
    path = tmp_path / "c.csv"
    path.write_bytes(text.encode())
    con = duckdb.connect()
    con.execute("CREATE TABLE c AS SELECT * FROM read_csv(?, header=true)", [str(path)])
    assert con.execute("SELECT x FROM c ORDER BY n").fetchall() == [("a\rb",), ("plain",)]


def test_write_needs_a_known_suffix_or_a_format(tmp_path) -> None:
    from trajlab.errors import ConfigError

    t = pa.table({"x": [1]})
    with pytest.raises(ConfigError, match=r"out\.txt: cannot tell the format from the suffix '\.txt'"):
        tabular.write(t, tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()
    assert tabular.write(t, tmp_path / "out.txt", "csv").read_text() == "x\n1\n"
    assert tabular.write(t, tmp_path / "OUT.JSON").read_text().startswith("[")
