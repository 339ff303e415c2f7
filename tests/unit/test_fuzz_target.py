"""Runs the class-file fuzz target for a bounded number of inputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TARGET = Path(__file__).parent.parent / "fuzz" / "fuzz_classfile.py"


def test_fuzz_target_finds_no_crash(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(TARGET), "-runs=30000", "-seed=1", f"-artifact_prefix={tmp_path}/"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 30000 runs" in proc.stderr
