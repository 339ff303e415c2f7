"""A Swift server started through the launcher leaves the stack of a fatal crash in its log
file, even after it has pointed its stderr at /dev/null."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CRASH = """
import os, signal, sys
from pathlib import Path
from swift_dss.deploy.swiftrun import report_crashes
report_crashes(Path(sys.argv[1]))
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_crash_leaves_its_stack_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    done = subprocess.run([sys.executable, "-c", CRASH, str(log)], capture_output=True)
    assert done.returncode < 0
    text = log.read_text()
    assert "Fatal Python error: Segmentation fault" in text, text
    assert 'File "<string>"' in text, text
