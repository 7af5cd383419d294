"""Real services the object-storage tests start on the loopback, from the project's own packages:
an S3 server (moto's standalone server, `moto[server]` in the dev extras) and a standalone Spark
cluster (master and workers from pyspark's own launch classes). Each is stopped by its fixture,
also when the test fails."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

BIN = Path(sys.executable).parent
SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"port {port} not open after {seconds} s: {log.read_text()[-2000:]}")


def stop(process: subprocess.Popen) -> None:
    """Stop a process started in its own session, and everything it started."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=20)


@dataclass
class S3Server:
    endpoint: str
    environment: dict[str, str]

    def bucket(self, name: str) -> str:
        """A new bucket, as its s3:// URI."""
        from pyarrow import fs as pafs

        pafs.S3FileSystem(endpoint_override=self.endpoint, allow_bucket_creation=True,
                          access_key=self.environment["AWS_ACCESS_KEY_ID"],
                          secret_key=self.environment["AWS_SECRET_ACCESS_KEY"],
                          region=self.environment["AWS_REGION"]).create_dir(name)
        return f"s3://{name}"

    def upload(self, local: Path, uri: str) -> str:
        """A local folder copied to `uri` (s3://bucket/prefix); returns the URI."""
        from pyarrow import fs as pafs

        from catalake.platform.uris import Location

        location = Location.of(uri)
        pafs.copy_files(str(local), location.path, source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=location.filesystem)
        return uri


@contextmanager
def s3_server(folder: Path, auth: bool = False):
    """moto's S3 server on a free loopback port. `auth`: every request must carry credentials the
    server knows (it knows none), as a real store refuses a wrong key."""
    port = free_port()
    log = folder / f"moto-{port}.log"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"} if auth else dict(os.environ)
    with open(log, "wb") as out:
        process = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_for_port(port, process, log)
        endpoint = f"http://127.0.0.1:{port}"
        yield S3Server(endpoint, {
            "AWS_ACCESS_KEY_ID": "catalake-test-key", "AWS_SECRET_ACCESS_KEY": "catalake-test-secret-value",
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true",
            # never ask a cloud's metadata service for credentials (no such address here)
            "AWS_EC2_METADATA_DISABLED": "true",
        })
    finally:
        stop(process)


@dataclass
class SparkCluster:
    master: str
    processes: list = field(default_factory=list)


@contextmanager
def spark_cluster(folder: Path, workers: int = 2, environment: dict | None = None):
    """A standalone Spark cluster: a master and `workers` workers of one core each, every worker
    with its own work and local folders (they share nothing but what the job reads and writes)."""
    port, ui = free_port(), free_port()
    base = {**os.environ, **(environment or {}), "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1"}
    cluster = SparkCluster(f"spark://127.0.0.1:{port}")
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    try:
        log = folder / "master.log"
        with open(log, "wb") as out:
            master = subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(ui)], stdout=out, stderr=subprocess.STDOUT, env=base, start_new_session=True)
        cluster.processes.append(master)
        wait_for_port(port, master, log)
        for i in range(workers):
            own = folder / f"worker-{i}"
            (own / "work").mkdir(parents=True)
            (own / "local").mkdir()
            env = {**base, "SPARK_WORKER_DIR": str(own / "work"), "SPARK_LOCAL_DIRS": str(own / "local")}
            with open(own / "worker.log", "wb") as out:
                worker = subprocess.Popen(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                     "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(own / "work"), cluster.master],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            cluster.processes.append(worker)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and log.read_text().count("Registering worker") < workers:
            time.sleep(0.5)
        if log.read_text().count("Registering worker") < workers:
            raise RuntimeError(f"workers did not register: {log.read_text()[-2000:]}")
        yield cluster
    finally:
        for process in reversed(cluster.processes):
            stop(process)
