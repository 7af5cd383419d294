"""Standing properties of the repository."""

import filecmp
import subprocess
import sys

from catalake.demo.generate import main as generate
from support.paths import REPO


def test_import_platform_from_repo_root_is_the_standard_library():
    out = subprocess.run(
        [sys.executable, "-c", "import platform; platform.system(); print(platform.__file__)"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )
    assert not out.stdout.strip().startswith(str(REPO))


def test_bundled_demo_events_are_what_the_generator_writes(tmp_path):
    generate([str(tmp_path)])
    bundled = REPO / "src" / "catalake" / "demo" / "landing"
    for day in ("2026-11-20", "2026-11-21"):
        cmp = filecmp.dircmp(bundled / day, tmp_path / day)
        assert not cmp.left_only and not cmp.right_only
        _, mismatch, errors = filecmp.cmpfiles(bundled / day, tmp_path / day, cmp.common_files, shallow=False)
        assert mismatch == [] and errors == []
