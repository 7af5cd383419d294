"""Landing layouts: where a day's files are below the landing root (landing-zone.md "Layouts").

A layout is a template of folder names below the root down to the day's folder; everything below
that folder (hours, minutes, seconds, any subfolders) is the day's. Its last segment may also name
the files themselves, when it holds a field or a `*`: a file whose name (without its extensions,
`.json`, `.avro.gz`) matches it is a file of its day (`{date}/{topic}-{partition}-{offset}` for
Aiven's sink, `{namespace}/{eventhub}/p{partition}--{yyyy}-{mm}-{dd}--*` for Event Hubs Capture
named with the date in the file name). Placeholders:

* `{date}` a `YYYY-MM-DD` folder; `{yyyy}`, `{mm}`, `{dd}` year, month and day folders (a month
  or day of one or two digits). A segment that is only a date placeholder also matches a
  Hive-style `name=value` folder (`dt=2026-11-21`, `year=2026`): writers differ only in that.
* `{name}` any text up to a `/`, which becomes a path field of every file below it (the lineage
  column `source_fields`). A `topic` field makes the records of its files Kafka records of that
  topic when they do not carry one (a sink writes values only), `{partition}` their partition and
  `{offset}` the offset of a file's first record (both digits only, as Kafka Connect's sinks
  write them); `*` any text, not kept.
* anything else is literal text.

Named layouts (CATALAKE_LANDING_LAYOUT), each also writable as its template:
`day` (the default) `{date}`; `hive` `year={yyyy}/month={mm}/day={dd}`; `dated`
`{yyyy}/{mm}/{dd}` below the root; `capture` Azure Event Hubs Capture's
`{namespace}/{eventhub}/{partition}/{yyyy}/{mm}/{dd}` (then `{Hour}/{Minute}/{Second}.avro`);
`connect` Kafka Connect's S3/GCS/Azure sink with its time-based partitioner,
`topics/{topic}/{yyyy}/{mm}/{dd}` (Hive-style or plain path.format).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from .defaults import LAYOUT
from .errors import LayoutError

NAMED = {
    "day": "{date}",
    "hive": "year={yyyy}/month={mm}/day={dd}",
    "dated": "{yyyy}/{mm}/{dd}",
    "capture": "{namespace}/{eventhub}/{partition}/{yyyy}/{mm}/{dd}",
    "connect": "topics/{topic}/{yyyy}/{mm}/{dd}",
}
DATE_PARTS = {"date": r"\d{4}-\d{2}-\d{2}", "yyyy": r"\d{4}", "mm": r"\d{1,2}", "dd": r"\d{1,2}"}
DIGITS = {"partition": r"\d+", "offset": r"\d+"}  # Kafka's partition and first offset: numbers
WILDCARD = "[^/]*?"
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
FIELD_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
HIVE_KEY = r"(?:[A-Za-z_][A-Za-z0-9_]*=)?"



@dataclass(frozen=True)
class Segment:
    text: str  # as written in the template
    pattern: re.Pattern | None  # None: literal text, the folder's name itself
    files: bool = False  # the last segment, with a field or `*`: it may name files as well

    def match(self, name: str) -> dict[str, str] | None:
        if self.pattern is None:
            return {} if name == self.text else None
        m = self.pattern.match(name)
        return None if m is None else {k: v for k, v in m.groupdict().items() if v is not None}

    def match_file(self, name: str) -> dict[str, str] | None:
        """A file's name matched as it is, else without its extensions one by one (the name
        templates of sinks and Capture leave out the `.json`, `.avro`, `.gz` they append)."""
        while True:
            found = self.match(name)
            stem, dot, _ = name.rpartition(".")
            if found is not None or not dot or not stem:
                return found
            name = stem


@dataclass(frozen=True)
class Layout:
    name: str  # the setting's value: a named layout or a template
    template: str
    segments: tuple[Segment, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """The path fields the layout keeps (its named placeholders that are not the date)."""
        return tuple(n for s in self.segments if s.pattern is not None
                     for n in s.pattern.groupindex if n not in DATE_PARTS)

    def describe(self, day: dt.date) -> str:
        """Where the layout looks for a day, as a person reads it (`*/*/*/2026/11/21/`)."""
        values = {"date": day.isoformat(), "yyyy": f"{day.year:04d}", "mm": f"{day.month:02d}", "dd": f"{day.day:02d}"}
        shown = PLACEHOLDER.sub(lambda m: values.get(m.group(1), "*"), self.template) + "/"
        return shown + (f" or dt={day.isoformat()}/" if self.template == "{date}" else "")


def parse(setting: str | None) -> Layout:
    """A layout from CATALAKE_LANDING_LAYOUT: a named layout or a template (module docstring);
    LayoutError naming the value and the rule it breaks."""
    value = (setting or LAYOUT).strip()
    template = NAMED.get(value, value).strip("/")
    if not template:
        raise LayoutError(f"CATALAKE_LANDING_LAYOUT {setting!r}: empty; use one of {', '.join(NAMED)} or a template")
    segments, seen = [], set()
    texts = template.split("/")
    for i, text in enumerate(texts):
        names = PLACEHOLDER.findall(text)
        last = i == len(texts) - 1
        if "{" in PLACEHOLDER.sub("", text) or "}" in PLACEHOLDER.sub("", text) or not text or text in (".", ".."):
            raise LayoutError(f"CATALAKE_LANDING_LAYOUT {setting!r}: folder {text!r} is not a literal name or {{placeholder}}s")
        for name in names:
            if name not in DATE_PARTS and not FIELD_NAME.match(name):
                raise LayoutError(f"CATALAKE_LANDING_LAYOUT {setting!r}: placeholder {{{name}}}: a field name is lower-case "
                                  "letters, digits and _ (or one of {date}, {yyyy}, {mm}, {dd})")
            if name in seen:
                raise LayoutError(f"CATALAKE_LANDING_LAYOUT {setting!r}: placeholder {{{name}}} appears twice")
            seen.add(name)
        if not names and "*" not in text:
            segments.append(Segment(text, None))
            continue
        pattern, at = "", 0
        for m in PLACEHOLDER.finditer(text):
            name = m.group(1)
            value = DATE_PARTS.get(name) or DIGITS.get(name) or (r"[^/]+?" if m.end() < len(text) else r"[^/]+")
            pattern += _literal(text[at:m.start()]) + f"(?P<{name}>{value})"
            at = m.end()
        pattern += _literal(text[at:])
        if len(names) == 1 and names[0] in DATE_PARTS and text == "{" + names[0] + "}":
            pattern = HIVE_KEY + pattern
        files = last and ("*" in text or any(n not in DATE_PARTS for n in names))
        segments.append(Segment(text, re.compile(f"^(?!\\.){pattern}$" if text == "*" else f"^{pattern}$"), files))
    if "date" in seen and seen & {"yyyy", "mm", "dd"} or "date" not in seen and not {"yyyy", "mm", "dd"} <= seen:
        raise LayoutError(f"CATALAKE_LANDING_LAYOUT {setting!r}: the template names the day by {{date}}, "
                          "or by all of {yyyy}, {mm} and {dd}")
    return Layout(value, template, tuple(segments))


def _literal(text: str) -> str:
    """Literal text of a segment as a pattern, each `*` any text."""
    return WILDCARD.join(re.escape(part) for part in text.split("*"))


def day_of(values: dict[str, str]) -> dt.date | None:
    """The day a folder's matched placeholders name, or None (no such date: month 13)."""
    try:
        if "date" in values:
            return dt.date.fromisoformat(values["date"])
        return dt.date(int(values["yyyy"]), int(values["mm"]), int(values["dd"]))
    except (KeyError, ValueError):
        return None


def agrees(values: dict[str, str], day: dt.date) -> bool:
    """Whether the date placeholders matched so far can still be `day` (prunes the walk)."""
    if "date" in values and values["date"] != day.isoformat():
        return False
    return all(int(values[k]) == v for k, v in (("yyyy", day.year), ("mm", day.month), ("dd", day.day)) if k in values)


def fields_of(values: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The path fields of a day folder (its non-date placeholders), in a stable order."""
    return tuple(sorted((k, v) for k, v in values.items() if k not in DATE_PARTS))
