
from typing import Any

from dagster import ConfigurableResource
from pydantic import PrivateAttr
from pyspark.sql import SparkSession

from catalake.platform.spark import build_session, session_alive


class SparkSessionResource(ConfigurableResource):
    """A Spark session started on first use, shared by every asset of a run.

    Like dagster-pyspark's LazyPySparkResource, but it also speaks Spark Connect (`sc://`
    masters) and sets up the executors' Python and the Delta extension (when its jars exist).
    """

    master: str = "local[*]"
    conf: dict[str, Any] = {}

    _session: SparkSession | None = PrivateAttr(default=None)

    @property
    def session(self) -> SparkSession:
        """The session; a local session whose JVM died (e.g. in an earlier day of a range) is
        replaced by a new one."""
        if self._session is None or (not self.master.startswith("sc://") and not session_alive(self._session)):
            self._session = build_session(self.master, conf={k: str(v) for k, v in self.conf.items()})
        return self._session
