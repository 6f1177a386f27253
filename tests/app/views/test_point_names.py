"""Which samples the outlier map names: those outside the regular region, the farthest first by
the larger of SD and OD in units of their cut-offs, at most MAX_NAMED."""
import numpy as np

from app.views._point_names import MAX_NAMED, most_outlying


def test_the_farthest_outside_the_regular_region_first():
    sd = np.array([0.5, 3.0, 0.2, 9.0, 1.0, 0.1])
    od = np.array([0.1, 0.1, 5.0, 0.1, 0.5, 0.1])
    region = (sd > 2.0).astype(int) + 2 * (od > 1.0)
    # in cut-off units: sample 1 is 1.5, 2 is 5.0, 3 is 4.5; 0, 4 and 5 are regular
    np.testing.assert_array_equal(most_outlying(sd, od, 2.0, 1.0, region), [2, 3, 1])
    np.testing.assert_array_equal(most_outlying(sd, od, 2.0, 1.0, region, n=2), [2, 3])


def test_no_od_cut_off_ranks_by_sd_and_at_most_max_named():
    rng = np.random.default_rng(0)
    sd = rng.exponential(size=500) * 3
    od = np.zeros(500)
    region = (sd > 2.0).astype(int)
    got = most_outlying(sd, od, 2.0, 0.0, region)
    assert got.size == MAX_NAMED
    np.testing.assert_array_equal(got, np.argsort(-sd)[:MAX_NAMED])
    assert most_outlying(sd, od, 2.0, 0.0, np.zeros(500, int)).size == 0
