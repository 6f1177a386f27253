"""tests/watchdog.py: a test that hangs where pytest-timeout cannot reach ends the run with the
stacks on the terminal."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.timing import budget

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timing
def test_a_hung_test_ends_the_run_with_every_threads_stack(tmp_path):
    (tmp_path / "test_hangs.py").write_text(
        "import time\n\n\ndef test_stuck_somewhere():\n    time.sleep(60)\n")
    env = dict(os.environ, RSS_TEST_WATCHDOG_SECONDS="2", PYTHONPATH=str(ROOT))
    t0 = time.monotonic()
    # without pytest-timeout, which would end this Python-level sleep itself
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:timeout",
         "-p", "tests.watchdog", str(tmp_path / "test_hangs.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=budget(50))
    assert time.monotonic() - t0 < budget(40)
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert "Timeout" in out and "test_stuck_somewhere" in out   # the stack, on the terminal
