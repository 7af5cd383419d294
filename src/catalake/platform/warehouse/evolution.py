"""Schema evolution of per-message tables, on the model of Kafka's versioned message definitions.

A table only ever gains nullable columns (at any depth). A catalog change that removes a column,
changes its type, or makes a nullable column required is refused: readers of the table would
break, or rows already written would violate the new schema. Such a change needs a new version
of the definition (`versionid`), which gets its own table (see MessageDefinition.table_name).

Payload columns are stored nullable in Delta and carry `catalake.required` in their metadata
(message_tables.py), because Delta cannot relax a NOT NULL column later; "required" is what is
compared here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ..errors import EvolutionError
from ..schemas import keys


@dataclass(frozen=True)
class Refusal:
    table: str
    column: str  # dotted path; `[]` marks array elements and map values
    old: str
    new: str
    rule: str

    def __str__(self) -> str:
        return (
            f"table {self.table}: column {self.column}: {self.old} -> {self.new}: {self.rule}; "
            f"declare a new versionid on the definition to start a new table"
        )



def is_required(field: StructField) -> bool:
    return not field.nullable or field.metadata.get(keys.REQUIRED) in (True, "true")


def _describe(field: StructField | None) -> str:
    if field is None:
        return "(absent)"
    return f"{field.dataType.simpleString()}{' required' if is_required(field) else ''}"


def rule_no_removed_columns(table: str, path: str, old: StructField, new: StructField | None) -> Refusal | None:
    if new is None:
        return Refusal(table, path, _describe(old), "(absent)", "a column cannot be removed")
    return None


def rule_no_new_required_columns(table: str, path: str, old: StructField | None, new: StructField) -> Refusal | None:
    if old is None and is_required(new):
        return Refusal(table, path, "(absent)", _describe(new), "a new column must be nullable (rows already written have no value)")
    return None


def rule_no_nullable_to_required(table: str, path: str, old: StructField, new: StructField) -> Refusal | None:
    if not is_required(old) and is_required(new):
        return Refusal(table, path, _describe(old), _describe(new), "a nullable column cannot become required")
    return None


def rule_no_retyping(table: str, path: str, old: DataType, new: DataType) -> Refusal | None:
    if type(old) is not type(new) or (
        not isinstance(old, (StructType, ArrayType, MapType)) and old.simpleString() != new.simpleString()
    ):
        return Refusal(table, path, old.simpleString(), new.simpleString(), "a column cannot change its type")
    return None


def _compare_types(table: str, path: str, old: DataType, new: DataType, added: list[str], refusals: list[Refusal]) -> None:
    refusal = rule_no_retyping(table, path, old, new)
    if refusal:
        refusals.append(refusal)
    elif isinstance(old, StructType):
        _compare_structs(table, path, old, new, added, refusals)
    elif isinstance(old, ArrayType):
        _compare_types(table, f"{path}[]", old.elementType, new.elementType, added, refusals)
    elif isinstance(old, MapType):
        _compare_types(table, f"{path}{{key}}", old.keyType, new.keyType, added, refusals)
        _compare_types(table, f"{path}[]", old.valueType, new.valueType, added, refusals)


def _compare_structs(table: str, prefix: str, old: StructType, new: StructType, added: list[str], refusals: list[Refusal]) -> None:
    new_fields = {f.name: f for f in new.fields}
    old_names = set(old.fieldNames())
    for field in old.fields:
        path = f"{prefix}.{field.name}" if prefix else field.name
        wanted = new_fields.get(field.name)
        refusal = rule_no_removed_columns(table, path, field, wanted)
        if refusal is None and wanted is not None:
            refusal = rule_no_nullable_to_required(table, path, field, wanted)
            _compare_types(table, path, field.dataType, wanted.dataType, added, refusals)
        if refusal:
            refusals.append(refusal)
    for field in new.fields:
        if field.name not in old_names:
            path = f"{prefix}.{field.name}" if prefix else field.name
            refusal = rule_no_new_required_columns(table, path, None, field)
            if refusal:
                refusals.append(refusal)
            else:
                added.append(path)


def plan_evolution(table: str, current: StructType, wanted: StructType) -> list[str]:
    """The columns `wanted` adds to `current` (dotted paths); EvolutionError if any change is refused."""
    added: list[str] = []
    refusals: list[Refusal] = []
    _compare_structs(table, "", current, wanted, added, refusals)
    if refusals:
        raise EvolutionError(refusals)
    return added
