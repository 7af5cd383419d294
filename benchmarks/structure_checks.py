"""JSON Structure payload checks: catalake's compiled typing against the json-structure SDK
(issue 21: which validator the classifier uses, and why).

    python benchmarks/structure_checks.py [--instances 20000]

Both check the same instance of a schema with the usual mix (strings with bounds, an int32 with
a minimum, a string-encoded int64, a datetime, an array, an alternate name); catalake's figure
includes typing the values for the table (the SDK only says valid or not). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import json
import time

from json_structure import InstanceValidator

from catalake.platform.schemas.json_structure import json_structure_field
from catalake.platform.schemas.payload import compile_payload
from catalake.platform.warehouse.message_tables import relax

SCHEMA = {"$schema": "https://json-structure.org/meta/validation/v0/#", "$id": "urn:bench", "name": "T", "type": "object",
          "required": ["a"], "properties": {
              "a": {"type": "string", "maxLength": 10}, "n": {"type": "int32", "minimum": 0}, "big": {"type": "int64"},
              "t": {"type": "datetime"}, "l": {"type": "array", "items": {"type": "string"}},
              "dr_type": {"type": "string", "altnames": {"json": "dr-type"}}}}
INSTANCE = {"a": "hello", "n": 5, "big": "123", "t": "2026-11-20T10:00:00Z", "l": ["x", "y"], "dr-type": "v"}


def per_instance(check, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        check()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=20000)
    n = parser.parse_args().instances
    sdk = InstanceValidator(copy.deepcopy(SCHEMA), extended=True)
    dtype, _, meta = json_structure_field(SCHEMA)
    typing = compile_payload(relax(dtype), meta)
    assert sdk.validate(INSTANCE) == [] and typing(INSTANCE, []) is not None
    print(json.dumps({"instances": n, "sdk_us": round(per_instance(lambda: sdk.validate(INSTANCE), n), 2),
                      "catalake_us": round(per_instance(lambda: typing(INSTANCE, []), n), 2)}))


if __name__ == "__main__":
    main()
