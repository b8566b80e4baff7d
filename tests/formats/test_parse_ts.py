"""parse_ts reads the ISO 8601 forms Python 3.11+ `datetime.fromisoformat` reads on every Python the
package supports: 3.10's reads only what `isoformat()` writes, and gave None for these."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from trajlab.formats._base import parse_ts

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
