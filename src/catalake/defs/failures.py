"""The error boundary of a Dagster step: an error a person can fix (`CatalakeError`, see
platform/errors.py) fails the step with its message as the `Failure`'s description, as
`catalake` prints it on the command line, and without retries (the same input fails the same
way); any other exception is a bug, and Dagster shows its traceback."""

from __future__ import annotations

import functools
import inspect
from typing import Callable, TypeVar

from catalake.platform import uris
from catalake.platform.errors import CatalakeError
from dagster import Failure

F = TypeVar("F", bound=Callable)


def as_failure(exc: CatalakeError) -> Failure:
    return Failure(description=uris.redact(str(exc)), allow_retries=False)


def failing_plainly(step: F) -> F:
    """`step`, a compute function (plain or a generator), with its `CatalakeError`s raised as
    `Failure`s. Dagster reads the signature through `functools.wraps`."""
    if inspect.isgeneratorfunction(step):
        @functools.wraps(step)
        def events(*args, **kwargs):
            try:
                yield from step(*args, **kwargs)
            except CatalakeError as exc:
                raise as_failure(exc) from exc
        return events  # type: ignore[return-value]

    @functools.wraps(step)
    def result(*args, **kwargs):
        try:
            return step(*args, **kwargs)
        except CatalakeError as exc:
            raise as_failure(exc) from exc
    return result  # type: ignore[return-value]
