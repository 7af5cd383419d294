"""Every error catalake raises on purpose, all under `CatalakeError` (classes only: the problems a
`CatalogError` lists are in problems.py, the text a person is told of an error in errortext.py).

An error a person can cause (a setting, the catalog, the landing zone, storage, a data schema, a
command's arguments) is one of these: the command line prints its message as one line and exits 2
(`catalake.cli.main`), and a Dagster step raises it as a `Failure` with the same line
(`catalake.defs.failures`), both from `errortext.error_text`. Anything else is a bug, and keeps
its traceback."""

from __future__ import annotations

from .problems import Problem


class CatalakeError(Exception):
    """The base of every error catalake raises on purpose: its message says what is wrong and where
    (a file, a JSON pointer or line, a setting) and the rule it breaks."""


class CatalogError(CatalakeError, ValueError):
    """The catalog is invalid; `problems` lists every finding."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"invalid message catalog ({len(self.problems)} problem(s)):\n{lines}")


class SettingsError(CatalakeError, ValueError):
    """A `CATALAKE_*` setting whose value cannot be used: the message names the variable, the
    value and what it must be."""


class UsageError(CatalakeError):
    """A command's arguments that cannot be used (a day that is not a day, --to before --from)."""


class NoInstance(CatalakeError):
    """DAGSTER_HOME names no folder."""


class LocationError(CatalakeError, RuntimeError):
    """A location that cannot be reached or read: the message names the URI and the cause."""


class LayoutError(CatalakeError, ValueError):
    """A layout setting that cannot be used; the message names the setting and the rule."""


class StorageError(CatalakeError, RuntimeError):
    """A table operation that cannot be carried out as asked."""


class AlreadyCommitted(StorageError):
    """An append whose application transaction another writer committed first."""


class Conflict(StorageError):
    """A compaction whose partition another writer changed: nothing was committed."""


class MergeError(StorageError):
    """A merge of a table's files whose output would not hold exactly its inputs' rows: nothing
    of it is committed."""


class SchemaError(CatalakeError, ValueError):
    """A data schema that cannot be mapped or resolved."""


class InvalidConstraint(SchemaError):
    """A constraint whose value its keyword does not allow (JSON Schema validation vocabulary):
    an error of the catalog, since the checks and expectations built from it could never run."""


class NeverFollowed(SchemaError):
    """A reference to the network or to a file (`http://...`, `file:///...`): never followed, an
    error of the catalog wherever it is written (a `dataschemauri`, a `$ref` inside a schema)."""


class EndlessReference(InvalidConstraint):
    """A `$ref` cycle that reads no data (`{"$ref": "#"}`): no validator can finish it, so it is
    an error of the catalog rather than a verdict that depends on who validates."""


class SchemaReferenceError(SchemaError):
    """A data schema reference that cannot be followed."""


class ForbiddenReference(SchemaReferenceError, NeverFollowed):
    """A data schema reference that must not be followed (the network, or a file outside the
    configured roots): an error of the catalog, never a table left untyped."""


class PatternError(CatalakeError, ValueError):
    """A pattern the classifier and GX would not read as ECMA 262 does."""


class EvolutionError(CatalakeError, ValueError):
    """A table whose schema cannot become the catalog's new one; `refusals` says why, field by field."""

    def __init__(self, refusals: list):
        self.refusals = refusals
        super().__init__("\n".join(str(r) for r in refusals))


class ExpectationsBroken(CatalakeError):
    """Stored rows that break an ERROR expectation of their table's suite (GX's own checkpoint on a
    stored partition, `validate_job`): the data or the catalog to fix, not a bug; `tables` names them."""

    def __init__(self, tables: list[str]):
        self.tables = sorted(tables)
        super().__init__(f"stored rows break ERROR expectations in {', '.join(self.tables)}")


# What a record's classification decides rather than what a person must fix: each becomes the
# record's dead-letter row, never a failed command.

class NotJson(CatalakeError, ValueError):
    """A landed record that is not strict JSON: `reason` (a dead-letter reason) and `detail`."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class PatternTimeout(CatalakeError):
    """A value that took a backtracking pattern longer than its budget: its record is a
    `pattern_timeout` dead letter, never a stalled task."""

    def __init__(self, pattern: str, where: str, length: int, budget: float, construct: str):
        self.pattern, self.where = pattern, where
        field = f"{where}: " if where else ""
        super().__init__(f"{field}a value of {length} character(s) took over {budget} s to match the pattern "
                         f"{pattern!r}, which backtracks ({construct}); it was not evaluated")
