"""benchmarks/bench_bigdata_stages.py's counters (no timing asserted)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_bigdata_stages as stages  # noqa: E402


@pytest.mark.skipif(not Path("/proc/vmstat").exists(), reason="the kernel's counter is Linux's")
def test_a_sample_counts_the_huge_pages_a_large_array_faults_in():
    # numpy asks for huge pages for a large array, and the page-fault count sees one fault per
    # 2 MB: the stage table must show those pages (machine-wide, so only "at least what we touched"
    # when transparent huge pages are on for madvise or always)
    mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text() if Path(
        "/sys/kernel/mm/transparent_hugepage/enabled").exists() else ""
    before = stages._now()
    a = np.ones(64 << 20, np.uint8)          # 64 MB, first touched here
    after = stages._now()
    assert len(before) == 7 and isinstance(before[6], int)
    if "[never]" not in mode and mode:
        assert after[6] - before[6] >= 1       # a huge page at least (numpy's madvise)
    del a
