"""What a person is told of an error they can fix (a `CatalakeError`): one text, the same on the
command line (`catalake: <text>`, exit 2; `catalake.cli.main`) and in Dagster (a failed step's
`Failure` description; `catalake.defs.failures`)."""

from __future__ import annotations

from . import uris
from .errors import CatalakeError


def error_text(exc: CatalakeError) -> str:
    """The error's message without the value of any credential (`uris.redact`)."""
    return uris.redact(str(exc))
