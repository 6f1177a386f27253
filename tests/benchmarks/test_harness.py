"""The speed-claim harness (benchmarks/_bench.py): fresh processes, interleaving, the BLAS
setting each child sees, and the arithmetic of the tables. No timing is asserted."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _bench  # noqa: E402

PROBE = ("import os\nreport['pid'] = os.getpid()\n"
         "report['blas_var'] = os.environ.get('OPENBLAS_NUM_THREADS', 'unset')\n"
         "report['marker'] = os.environ.get('HARNESS_MARK', '')")


@pytest.mark.slow      # six interpreters start: 5-60 s on a busy 2-core machine
def test_each_run_is_a_fresh_process_interleaved_with_the_blas_setting_it_was_given():
    cs = [_bench.Contender("a", "x = sum(range(1000))", after=PROBE),
          _bench.Contender("b", "y = [0] * 1000", after=PROBE, env={"HARNESS_MARK": "b"})]
    log = []
    runs = _bench.race(cs, repeat=2, blas="1", log=None)
    for name in ("a", "b"):
        assert [r["round"] for r in runs[name]] == [0, 1]
        for r in runs[name]:
            assert "error" not in r, r
            assert r["blas_var"] == "1"
            assert r["cpu"] >= 0 and r["wall"] >= 0 and r["proc_cpu"] >= r["cpu"]
            log.append(r["pid"])
    assert len(set(log)) == 4 and os.getpid() not in log          # four runs, four processes
    assert runs["b"][0]["marker"] == "b" and runs["a"][0]["marker"] == ""
    default = _bench.race(cs[:1], repeat=1, blas="default", log=None)["a"][0]
    assert default["blas_var"] == "unset"                            # as in a user's script


def test_a_failing_contender_reports_its_error_and_is_not_run_again():
    runs = _bench.race([_bench.Contender("bad", "raise ValueError('no such data')")], repeat=3, log=None)
    assert len(runs["bad"]) == 1
    assert "ValueError: no such data" in runs["bad"][0]["error"]
    assert "0 | ValueError" in "\n".join(_bench.race_table(runs, "bad"))


def test_paired_ratios_compare_runs_of_the_same_round_per_unit_of_work():
    runs = {"ours": [{"round": 0, "cpu": 1.0, "n": 10}, {"round": 1, "cpu": 2.0, "n": 10},
                     {"round": 2, "error": "x"}],
            "peer": [{"round": 0, "cpu": 3.0, "n": 5}, {"round": 1, "cpu": 5.0, "n": 5},
                     {"round": 2, "cpu": 9.0, "n": 5}]}
    assert _bench.paired_ratios(runs, "peer", "ours") == [3.0, 2.5]
    assert _bench.paired_ratios(runs, "peer", "ours", per="n") == pytest.approx([6.0, 5.0])


@pytest.mark.parametrize(("values", "unit", "text"), [
    ([2.0, 1.0, 4.0], " s", "2 s (1–4)"),
    ([0.5], "x", "0.50x"),
    ([], " s", "–"),
    ([1.0, 3.0], "x", "2.00x (1.00–3.00)"),
])
def test_span_quotes_the_median_and_the_range(values, unit, text):
    assert _bench.span(values, unit) == text


def test_the_calls_are_recorded_as_written():
    c = _bench.Contender("peer", "est = Peer(tol=1e-7).fit(M)", "from peer import Peer\nM = data(seed=0)",
                         env={"X_FLAG": "1"})
    text = "\n".join(_bench.race_calls([c]))
    assert "from peer import Peer" in text and "M = data(seed=0)" in text
    assert text.index("M = data(seed=0)") < text.index("timed from here") < text.index("est = Peer(tol=1e-7).fit(M)")
    assert "X_FLAG=1" in text
