"""The error boundary of a Dagster step: an error a person can fix (`CatalakeError`, see
platform/errors.py) fails the step with the text `catalake` prints for it on the command line
(`error_text`) as the `Failure`'s description, what the UI shows beside it as metadata (every
problem of an invalid catalog, every refused table change), and without retries (the same input
fails the same way); any other exception is a bug, and Dagster shows its traceback."""

from __future__ import annotations

import functools
import inspect
from typing import Callable, TypeVar

from dagster import Failure, MetadataValue

from catalake.display import markdown_table
from catalake.platform.errors import CatalakeError, CatalogError, EvolutionError
from catalake.platform.errortext import error_text

F = TypeVar("F", bound=Callable)


def problems_markdown(problems) -> str:
    """Catalog problems (or warnings) as a table: file, pointer, rule, problem."""
    rows = [[p.file, p.pointer or "(document)", p.rule, p.message] for p in problems]
    return markdown_table(["file", "pointer", "rule", "problem"], rows)


def failure_metadata(exc: CatalakeError) -> dict:
    """What the UI shows beside the error's text: the problems of an invalid catalog as a table, the
    refused changes of a table's schema one a line."""
    if isinstance(exc, CatalogError):
        return {"problems": MetadataValue.md(problems_markdown(exc.problems))}
    if isinstance(exc, EvolutionError):
        return {"problems": MetadataValue.md("\n".join(f"- {r}" for r in exc.refusals))}
    return {}


def as_failure(exc: CatalakeError) -> Failure:
    return Failure(description=error_text(exc), metadata=failure_metadata(exc), allow_retries=False)


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


def progress_log(context) -> Callable[[str], None]:
    """The engine's `progress` for a step: each line in the run's log at INFO, a `Notice` (what a
    stopped run left, mended) at WARNING, which `catalake run` shows on the terminal too."""
    from catalake.platform.runs.recovery import Notice

    def progress(message: str) -> None:
        (context.log.warning if isinstance(message, Notice) else context.log.info)(message)

    return progress

