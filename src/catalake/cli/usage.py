"""A user's error, and the days a command is given (--date, --from, --to)."""

from __future__ import annotations

from catalake.platform.errors import UsageError


def date(text: str, flag: str):
    """A YYYY-MM-DD day, or a UsageError naming the flag and the value."""
    import datetime as dt
    import re

    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text or ""):
        raise UsageError(f"{flag} {text!r}: not a day (YYYY-MM-DD, e.g. 2026-11-20)")
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"{flag} {text!r}: {exc}") from None


def days(args) -> list:
    import datetime as dt

    if args.date:
        return [date(args.date, "--date")]
    first, last = date(args.start, "--from"), date(args.end or args.start, "--to")
    if last < first:
        raise UsageError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
