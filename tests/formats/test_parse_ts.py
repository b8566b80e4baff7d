"""parse_ts reads the ISO 8601 forms Python 3.11+ `datetime.fromisoformat` reads on every Python the
package supports: 3.10's reads only what `isoformat()` writes, and gave None for these."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlab.formats._base import _iso_for_310, parse_ts

UTC = timezone.utc


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T03:04:05.123Z", datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)),
        # nanoseconds (Go's RFC3339Nano, OpenTelemetry): truncated to microseconds, as 3.11 does
        ("2024-01-02T03:04:05.123456789Z", datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        ("2024-01-02T03:04:05.12z", datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)),
        ("2024-01-02T03:04:05.1234", datetime(2024, 1, 2, 3, 4, 5, 123400, tzinfo=UTC)),
        ("2024-01-02 03:04:05,5", datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
        ("2024-01-02T03:04:05+0000", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (
            "2024-01-02T03:04:05.1+0530",
            datetime(2024, 1, 2, 3, 4, 5, 100000, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        ),
        ("2024-01-02T03:04:05-07", datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-7)))),
        ("1704164645", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_iso_forms_parse_alike_on_every_python(text: str, want: datetime) -> None:
    got = parse_ts(text)
    assert got == want and got.utcoffset() == want.utcoffset()


@pytest.mark.parametrize("text", ["2024-02-30T03:04:05.12Z", "2024-01-02T25:04:05+0000", "yesterday", ""])
def test_impossible_or_unreadable_times_are_none(text: str) -> None:
    assert parse_ts(text) is None


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("20240102T030405Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (
            "20240102T030405.5+0530",
            datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        ),
        ("20240102T0304", datetime(2024, 1, 2, 3, 4, tzinfo=UTC)),
        ("2024-01-02T03:04", datetime(2024, 1, 2, 3, 4, tzinfo=UTC)),
        ("2024-01-02T03", datetime(2024, 1, 2, 3, tzinfo=UTC)),
        ("20240102", datetime(2024, 1, 2, tzinfo=UTC)),
    ],
)
def test_basic_format_and_short_times(text: str, want: datetime) -> None:
    got = parse_ts(text)
    assert got == want and got.utcoffset() == want.utcoffset()


_FORMS = [
    "%Y-%m-%dT%H:%M:%S",
    "%Y%m%dT%H%M%S",
    "%Y-%m-%d %H:%M",
    "%Y%m%dT%H%M",
    "%Y-%m-%dT%H",
    "%Y-%m-%d",
    "%Y%m%d",
]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="compares with 3.11's own datetime.fromisoformat")
@settings(max_examples=300, deadline=None)
@given(
    when=st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)),
    form=st.sampled_from(_FORMS),
    frac=st.one_of(st.none(), st.text("0123456789", min_size=1, max_size=12)),
    comma=st.booleans(),
    offset=st.one_of(st.none(), st.integers(-23 * 60 - 59, 23 * 60 + 59)),
    offset_form=st.sampled_from(["%s%02d:%02d", "%s%02d%02d", "%s%02d"]),
)
def test_the_310_reader_agrees_with_311_fromisoformat(when, form, frac, comma, offset, offset_form) -> None:  # type: ignore[no-untyped-def]
    """What 3.10 falls back to reads every one of these forms as 3.11+ does (hypothesis, on 3.11+)."""
    text = when.strftime(form)
    if frac is not None and form.endswith("%S"):
        text += ("," if comma else ".") + frac
    if offset is not None and "H" in form:
        sign, v = ("-" if offset < 0 else "+"), abs(offset)
        if offset_form.endswith("%02d%02d") or offset_form.endswith(":%02d"):
            text += offset_form % (sign, v // 60, v % 60)
        elif v % 60 == 0:
            text += offset_form % (sign, v // 60)
    assert _iso_for_310(text) == datetime.fromisoformat(text), text
    got, want = _iso_for_310(text), datetime.fromisoformat(text)
    assert (got.utcoffset() if got else None) == want.utcoffset()
