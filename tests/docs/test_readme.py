"""README.md's Python tour runs as written, and finds what it shows on planted data."""
import re
from pathlib import Path

import pytest

from tests.planted import subspace_with_outliers

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.slow
def test_the_readmes_python_tour_runs_and_flags_the_planted_outliers():
    code = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    X, is_out, _ = subspace_with_outliers(n_in=400, n_out=20, d=12, r=2, radius=6.0, seed=1)
    y = (X[:, 0] > 0).astype(int)                       # a label the tour's classifier can learn
    scope = {"X": X, "y": y}
    exec(compile(code, str(README), "exec"), scope)     # noqa: S102 - our own README, as a user pastes it
    flagged = scope["cop"].predict(X) == -1
    assert flagged[is_out].mean() >= 0.9 and flagged[~is_out].mean() <= 0.05
