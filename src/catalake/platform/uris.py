"""Where things are: the landing root and the warehouse as a local path or a URI.

Every location is a string: an absolute local path, or a URI of any filesystem pyarrow speaks
(`s3://bucket/prefix`, `gs://...`; `file://` is read as the local path it names), or one fsspec
provides when its package is installed (`abfss://`, ...). Credentials and endpoints come from each
store's standard environment (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `AWS_REGION`, ...), which
pyarrow and delta-rs both read, plus `CATALAKE_STORAGE_OPTIONS` for what the environment cannot
say (a JSON object of delta-rs storage options, e.g. `{"aws_endpoint_url": "..."}`). They never
appear in logs, metadata or errors: `redact` removes their values from any text shown.

A root is read once where it enters (the settings, a run's landing) as a `Location`, and passed
down: what acts on a root is its methods. Executors read and write the same stores: the driver's
storage environment travels with every Location pickled for them (`storage_environment`,
`adopt`), so a cluster's workers need no credentials of their own unless they have them (theirs
win).
"""

from __future__ import annotations

import atexit
import json
import os
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
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
    and passed down: its normalized URI, whether it is on object storage, and the path inside
    its pyarrow `filesystem`, which is opened when first asked, in the process that asks.

    A Location travels to executors (pickled into a plan or a Spark job) as its URI with the
    storage settings of the process that sends it: the receiving process adopts those it has
    none of (`adopt`; its own win), and opens the filesystem there."""

    uri: str
    remote: bool
    path: str  # inside `filesystem`

    @classmethod
    def of(cls, raw: "str | os.PathLike | Location") -> "Location":
        if isinstance(raw, Location):
            return raw
        uri = normalize(raw)
        if not is_remote(uri):
            return cls(uri, False, uri)
        parsed = urlparse(uri)
        return cls(uri, True, (parsed.netloc + parsed.path).rstrip("/"))

    @cached_property
    def filesystem(self) -> pafs.FileSystem:
        if not self.remote:
            return pafs.LocalFileSystem()
        environment = tuple(sorted(storage_environment().items()))
        return _cached(urlparse(self.uri).scheme, json.dumps(storage_options(), sort_keys=True), environment)

    def __reduce__(self):
        return _arrived, (self.uri, self.remote, self.path, storage_environment() if self.remote else {})

    def child(self, *parts: str) -> "Location":
        """The location of `parts` below this one ('/' inside URIs, the OS separator on disk),
        on the same filesystem."""
        uri = join(self.uri, *parts)
        below = Location(uri, self.remote, self.path + uri[len(self.uri):] if self.remote else uri)
        if "filesystem" in self.__dict__:  # opened once for both
            below.__dict__["filesystem"] = self.filesystem
        return below

    def relative(self, location: str) -> str:
        """`location`, below this one, relative to it, '/'-separated."""
        if self.remote:
            return location[len(self.uri):].lstrip("/")
        return os.path.relpath(location, self.uri).replace(os.sep, "/")

    def as_uri(self) -> str:
        """As a URI (`file://` for the local disk): what Dagster's `dagster/uri` shows."""
        return self.uri if self.remote else Path(self.uri).as_uri()

    def delta_options(self) -> dict[str, str] | None:
        """The storage options a Delta table here is opened with (None on local disk)."""
        return (storage_options() or None) if self.remote else None

    @cached_property
    def object_store(self):
        """This location as an `obstore` store: Rust's object_store, the library delta-rs
        commits through, for what pyarrow's filesystems cannot ask: a create that fails when
        the object exists (S3's `If-None-Match`, an exclusive create on disk), and an object's
        ETag."""
        from obstore.store import LocalStore, from_url

        if not self.remote:
            return LocalStore(self.path, mkdir=True)
        config, client = _object_store_options(storage_options())
        return from_url(self.uri, config=config or None, client_options=client or None)


# delta-rs' option names that object_store takes as client options, not as the store's
_CLIENT_OPTIONS = {"allow_http", "allow_invalid_certificates", "timeout", "connect_timeout", "proxy_url"}


def _object_store_options(options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """CATALAKE_STORAGE_OPTIONS as object_store's store and client options: lower-cased, the
    client's without their `aws_`/`azure_`/`google_` prefix, and delta-rs' own options (which
    object_store refuses) left out."""
    config, client = {}, {}
    for key, value in options.items():
        key = key.lower()
        bare = re.sub(r"^(aws|azure|google)_", "", key)
        if bare in _CLIENT_OPTIONS:
            client[bare] = value
        elif not key.startswith(("aws_s3_", "aws_conditional", "aws_copy_if", "delta")):
            config[key] = value
    return config, client


def _arrived(uri: str, remote: bool, path: str, environment: dict[str, str]) -> Location:
    """A Location unpickled: the sender's storage settings adopted (see `Location`)."""
    adopt(environment)
    return Location(uri, remote, path)


def openable(scheme: str) -> bool:
    """A store scheme catalake can open: pyarrow's own, else one fsspec knows (see `_filesystem`)."""
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
    return Location.of(location).as_uri()


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
    return Location.of(location).delta_options()


# pyarrow's S3 constructor arguments for delta-rs' option names (lower-cased, `aws_` optional)
_S3_ARGUMENTS = {
    "access_key_id": "access_key", "secret_access_key": "secret_key", "session_token": "session_token",
    "region": "region", "endpoint_url": "endpoint_override", "endpoint": "endpoint_override",
}


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
