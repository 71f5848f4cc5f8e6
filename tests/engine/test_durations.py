"""Durations as a person reads them: one wording for the app, the progress lines and reports."""

from __future__ import annotations

from engine.text.durations import said_duration


def test_under_a_minute_is_seconds_with_tenths() -> None:
    assert [said_duration(s) for s in (0, 0.04, 4.23, 59.94)] == ["0.0s", "0.0s", "4.2s", "59.9s"]


def test_under_an_hour_is_minutes_and_seconds() -> None:
    assert [said_duration(s) for s in (59.96, 60, 1348.0, 3599.9)] == [
        "1m00s",
        "1m00s",
        "22m28s",
        "59m59s",
    ]


def test_an_hour_or_more_is_hours_and_minutes() -> None:
    assert [said_duration(s) for s in (3600, 3725, 90061)] == ["1h00m", "1h02m", "25h01m"]


def test_a_negative_or_unknown_duration_is_never_printed_as_a_number() -> None:
    assert [said_duration(s) for s in (-3.0, float("nan"))] == ["0.0s", "?"]
