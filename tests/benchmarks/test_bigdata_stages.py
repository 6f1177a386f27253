"""benchmarks/bench_bigdata_stages.py's counters (no timing asserted)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_bigdata_stages as stages  # noqa: E402


def _kernels_count() -> int:
    for line in Path("/proc/vmstat").read_text().splitlines():
        if line.startswith("thp_fault_alloc "):
            return int(line.split()[1])
    return 0


@pytest.mark.skipif(not Path("/proc/vmstat").exists(), reason="the kernel's counter is Linux's")
def test_a_sample_carries_the_kernels_count_of_huge_pages_faulted_in():
    # the page-fault count sees one fault per 2 MB where numpy's large arrays get huge pages, so
    # the stage table carries the kernel's own count of them. It is machine-wide and only grows,
    # and whether this array gets a 2 MB page depends on the kernel's free memory at the time, so
    # the test brackets the kernel's count between two samples rather than asserting a page
    before = stages._now()
    a = np.ones(64 << 20, np.uint8)          # 64 MB, first touched here
    direct = _kernels_count()
    after = stages._now()
    assert len(before) == len(after) == 7
    assert isinstance(before[6], int) and before[6] <= direct <= after[6]
    del a
