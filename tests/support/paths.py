"""Where the tests find the repository, the demo catalog and the public test data
(../shared/data next to the repository, or CATALAKE_SHARED_DATA)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("CATALAKE_SHARED_DATA", REPO.parent / "shared" / "data"))
DEMO_CATALOG = REPO / "src" / "catalake" / "demo" / "catalog"
DEMO_DIR = REPO / "src" / "catalake" / "demo"
