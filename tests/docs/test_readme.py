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


def test_every_robust_studio_command_in_the_readme_parses():
    """Each ``robust-studio SUBCOMMAND ...`` line of the README is accepted by the command line's
    parser as written (its replay line lacked the required --out: a user pasting it got
    "the following arguments are required: --out")."""
    import shlex

    from app.cli import build_parser
    from app.cli._parse import UsageError

    parser = build_parser()
    lines = [ln.split("#")[0].strip() for ln in README.read_text(encoding="utf-8").splitlines()]
    commands = [shlex.split(ln)[1:] for ln in lines
                if ln.startswith("robust-studio ") and ln.split()[1] in ("run", "replay", "methods", "demos")]
    assert {c[0] for c in commands} == {"run", "replay", "methods", "demos"}
    for argv in commands:
        try:
            parser.parse_args(argv)
        except UsageError as exc:   # the parser's refusal: one line on stderr and exit code 2
            pytest.fail(f"robust-studio {' '.join(argv)}: refused ({exc})")
