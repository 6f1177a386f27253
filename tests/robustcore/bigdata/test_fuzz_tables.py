"""A short, deterministic run of the table fuzzer (``tests/corpus/fuzz_tables.py``; the long run
is ``benchmarks/fuzz_loaders.py``): Zarr 2/3 stores and HDF5 files written by their libraries
then edited, CSV/LIBSVM bytes, open_lazy options of every type. Each input, in a child capped in
memory (RLIMIT_AS) and time (20 s), gives a LoadError or exactly what was written."""
import os

import pytest

from tests.corpus.harness import run_child

pytest.importorskip("zarr")
pytest.importorskip("h5py")

SEARCHES = ["zarr-stores", "hdf5-layouts", "text-files", "table-options"]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux (/proc, rlimit)")
def test_fuzzed_tables_give_load_errors_or_what_was_written():
    lines = run_child({"hypothesis": SEARCHES, "examples": 10, "seconds": 20})
    # The child exits non-zero (run_child raises, printing the falsifying input) on any failure.
    assert [ln["hypothesis"] for ln in lines] == SEARCHES
    assert all(ln["outcome"] == "ok" and ln["tried"] >= 10 for ln in lines)
