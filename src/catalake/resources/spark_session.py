
from typing import Any

from dagster import ConfigurableResource
from pydantic import PrivateAttr

from catalake.platform import defaults
from catalake.platform.config import local_bytes


class SparkSessionResource(ConfigurableResource):
    """A Spark session started on first use, shared by every asset of a run.

    Like dagster-pyspark's LazyPySparkResource, but it also speaks Spark Connect (`sc://`
    masters) and sets up the executors' Python and the Delta extension (when its jars exist).
    """

    master: str = defaults.SPARK_MASTER
    conf: dict[str, Any] = {}
    engine: str = defaults.ENGINE  # CATALAKE_ENGINE
    local_task_bytes: int = defaults.LOCAL_TASK_BYTES  # CATALAKE_LOCAL_TASK_BYTES
    compiled_path: bool = defaults.COMPILED_PATH  # CATALAKE_COMPILED_PATH: ordinary records decided a batch at a time

    _session: Any = PrivateAttr(default=None)  # a pyspark SparkSession: pyspark is imported when one starts

    @property
    def session(self):
        """The session; a local session whose JVM died (e.g. in an earlier day of a range) is
        replaced by a new one."""
        from catalake.platform.spark import build_session, session_alive

        if self._session is None or (not self.master.startswith("sc://") and not session_alive(self._session)):
            self._session = build_session(self.master, conf={k: str(v) for k, v in self.conf.items()})
        return self._session

    def local_bytes(self, incremental: bool) -> int:
        """Runs of at most this many landed bytes are classified by local Python processes, not
        by Spark (`catalake.platform.config.local_bytes`)."""
        return local_bytes(self.engine, self.local_task_bytes, self.master, incremental)
