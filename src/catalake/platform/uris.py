"""Where things are: the landing root and the warehouse as a local path or a URI.

Every location is a string: an absolute local path, or a URI of any filesystem pyarrow speaks
(`s3://bucket/prefix`, `gs://...`; `file://` is read as the local path it names), or one fsspec
provides when its package is installed (`abfss://`, ...). Credentials and endpoints come from each
store's standard environment (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `AWS_REGION`, ...), which
pyarrow and delta-rs both read, plus `CATALAKE_STORAGE_OPTIONS` for what the environment cannot
say (a JSON object of delta-rs storage options, e.g. `{"aws_endpoint_url": "..."}`). They never
appear in logs, metadata or errors: `redact` removes their values from any text shown.

Executors read and write the same stores: the driver's storage environment travels with the
task plan (`storage_environment`, `adopt`), so a cluster's workers need no credentials of their
own unless they have them (theirs win).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse

import pyarrow as pa
from pyarrow import fs as pafs

from .errors import LocationError

OPTIONS_VARIABLE = "CATALAKE_STORAGE_OPTIONS"
# the environment variables of the stores pyarrow and delta-rs read
STORAGE_PREFIXES = ("AWS_", "GOOGLE_", "GCS_", "AZURE_", "HADOOP_", OPTIONS_VARIABLE)
NATIVE_SCHEMES = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs")  # pyarrow's filesystems
_SECRET = re.compile(r"secret|token|password|key|credential|sas|signature", re.IGNORECASE)



def normalize(raw: str | os.PathLike) -> str:
    """A location as catalake keeps it: a URI without its trailing slash, or an absolute local path."""
    text = str(raw).strip()
    if text.startswith("file://"):
        text = urlparse(text).path
    if is_remote(text):
        return text.rstrip("/")
    return os.path.abspath(os.path.expanduser(text))


@dataclass(frozen=True)
class Location:
    """A root as catalake keeps it, derived once where it enters (the settings, a run's landing)
    and passed down: its normalized URI, whether it is on object storage, and the pyarrow
    filesystem with the path inside it. What is asked of it afterwards are its fields."""

    uri: str
    remote: bool
    filesystem: pafs.FileSystem = field(repr=False, compare=False)
    path: str  # inside `filesystem`

    @classmethod
    def of(cls, raw: "str | os.PathLike | Location") -> "Location":
        if isinstance(raw, Location):
            return raw
        uri = normalize(raw)
        opened, path = filesystem(uri)
        return cls(uri, is_remote(uri), opened, path)


def openable(scheme: str) -> bool:
    """A store scheme catalake can open: pyarrow's own, else one fsspec knows (see `filesystem`)."""
    if scheme in NATIVE_SCHEMES:
        return True
    try:
        import fsspec
    except ImportError:
        return False
    return scheme in fsspec.available_protocols()


def is_remote(location: str) -> bool:
    """True for a URI of a store other than the local disk."""
    scheme = urlparse(str(location)).scheme
    return "://" in str(location) and scheme not in ("", "file")


def make_folders(filesystem: pafs.FileSystem, path: str) -> None:
    """Folder `path` and its parents, created where folders exist: object stores have none, and
    pyarrow would write an empty marker object for each level (a request each, for every file)."""
    if filesystem.type_name not in ("s3", "gcs"):
        filesystem.create_dir(path, recursive=True)


def join(base: str, *parts: str) -> str:
    """`base` with path parts appended ('/' inside URIs, the OS separator on disk)."""
    if is_remote(base):
        return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts if p)])
    return os.path.join(base, *parts)


def as_uri(location: str) -> str:
    """A location as a URI (`file://` for the local disk): what Dagster's `dagster/uri` shows."""
    return location if is_remote(location) else Path(os.path.abspath(location)).as_uri()


def relative(base: str, location: str) -> str:
    """`location` below `base`, '/'-separated."""
    if is_remote(base):
        return location[len(base.rstrip("/")):].lstrip("/")
    return os.path.relpath(location, base).replace(os.sep, "/")


def storage_options(env: dict[str, str] | None = None) -> dict[str, str]:
    """delta-rs storage options from CATALAKE_STORAGE_OPTIONS (the environment does the rest)."""
    raw = (os.environ if env is None else env).get(OPTIONS_VARIABLE, "").strip()
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except ValueError as exc:
        raise LocationError(f"{OPTIONS_VARIABLE} is not a JSON object: {exc}") from None
    if not isinstance(options, dict):
        raise LocationError(f"{OPTIONS_VARIABLE} is not a JSON object of storage options")
    return {str(k): str(v) for k, v in options.items()}


def delta_options(location: str) -> dict[str, str] | None:
    """The storage options a Delta table at `location` is opened with (None on local disk)."""
    return (storage_options() or None) if is_remote(location) else None


# pyarrow's S3 constructor arguments for delta-rs' option names (lower-cased, `aws_` optional)
_S3_ARGUMENTS = {
    "access_key_id": "access_key", "secret_access_key": "secret_key", "session_token": "session_token",
    "region": "region", "endpoint_url": "endpoint_override", "endpoint": "endpoint_override",
}


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """(pyarrow filesystem, path inside it) of a location."""
    if not is_remote(location):
        return pafs.LocalFileSystem(), normalize(location)
    parsed = urlparse(location)
    path = (parsed.netloc + parsed.path).rstrip("/")
    environment = tuple(sorted(storage_environment().items()))
    return _cached(parsed.scheme, json.dumps(storage_options(), sort_keys=True), environment), path


@lru_cache(maxsize=16)
def _cached(scheme: str, options_json: str, environment: tuple) -> pafs.FileSystem:
    return _filesystem(scheme, options_json)


def _filesystem(scheme: str, options_json: str) -> pafs.FileSystem:
    options = json.loads(options_json)
    if scheme in ("s3", "s3a"):
        # pyarrow's constructor does not read the endpoint variables delta-rs and the AWS CLI read
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        arguments = {"endpoint_override": endpoint} if endpoint else {}
        for key, value in options.items():
            name = _S3_ARGUMENTS.get(key.lower().removeprefix("aws_"))
            if name:
                arguments[name] = value
        # the AWS SDK must be shut down before the interpreter, or the process may abort at exit
        atexit.register(_finalize_s3)
        # delayed open: a small file is one PUT rather than a multipart upload's three requests
        return pafs.S3FileSystem(allow_delayed_open=True, **arguments)
    try:
        filesystem_, _ = pafs.FileSystem.from_uri(f"{scheme}://probe/")
        return filesystem_
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValueError):
        pass
    try:  # a filesystem only fsspec provides (abfss://, ...), when its package is installed
        import fsspec

        return pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem(scheme, **options)))
    except (ImportError, ValueError) as exc:
        raise LocationError(f"no filesystem for {scheme}:// ({exc})") from None


def _finalize_s3() -> None:
    try:
        pafs.finalize_s3()
    except Exception:  # noqa: BLE001 - at exit: nothing left to report to
        pass


def storage_environment() -> dict[str, str]:
    """The driver's storage settings, for executors (see `adopt`)."""
    return {k: v for k, v in os.environ.items() if k.startswith(STORAGE_PREFIXES)}


def adopt(environment: dict[str, str]) -> None:
    """On an executor: use the driver's storage settings where this process has none."""
    for key, value in environment.items():
        os.environ.setdefault(key, value)


def redact(text: str) -> str:
    """`text` without the values of any credential in the environment or the storage options."""
    secrets = [v for k, v in os.environ.items() if k.startswith(STORAGE_PREFIXES) and _SECRET.search(k) and len(v) >= 4]
    try:
        secrets += [v for k, v in storage_options().items() if _SECRET.search(k) and len(v) >= 4]
    except LocationError:
        pass
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def describe(error: BaseException) -> str:
    """One line for an error of a store (first line, credentials removed)."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return redact(lines[0] if lines else type(error).__name__)


def files_state(paths: Iterable[str | Path]) -> tuple:
    """What the local files under `paths` hold now: each file's path and a digest of its bytes
    (not its modification time, which a rewrite within the same clock tick leaves as it was). How
    a reader knows the catalog changed without parsing it (the catalog's cache in a process, the
    code location's state against the disk)."""
    state = []
    for path in map(Path, paths):
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            try:
                state.append((str(f), hashlib.blake2b(f.read_bytes(), digest_size=16).digest()))
            except IsADirectoryError:
                continue
            except OSError:
                state.append((str(f), None))
    return tuple(state)
