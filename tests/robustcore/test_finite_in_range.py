"""One pass for ROBPCA's input checks (robustcore._validation.finite_in_range): it proves the
finite and magnitude checks fine or leaves them to decide, with their messages."""
import numpy as np
import pytest

from robustcore import ROBPCA
from robustcore._validation import MAX_ABS, check_finite, check_magnitude, finite_in_range
from robustcore.subspace import robpca as robpca_mod


def _table(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((300, 8)) @ rng.standard_normal((8, 8))


def _checks_pass(X) -> bool:
    try:
        check_magnitude(X, method="ROBPCA", fix="", bounds=check_finite(X))
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("case", ["plain", "nan", "inf", "-inf", "one huge", "at the limit", "beyond it",
                                  "all tiny", "one tiny among zeros", "zeros", "large", "small"])
def test_proof_never_passes_what_the_checks_refuse(case):
    X = _table()
    if case == "nan":
        X[7, 3] = np.nan
    elif case in ("inf", "-inf"):
        X[7, 3] = np.inf if case == "inf" else -np.inf
    elif case == "one huge":
        X[7, 3] = 2.0 * MAX_ABS
    elif case == "at the limit":
        X[7, 3] = MAX_ABS
    elif case == "beyond it":
        X[7, 3] = MAX_ABS * (1.0 + 1e-12)
    elif case == "all tiny":
        X *= 1e-152
    elif case == "one tiny among zeros":
        X[:] = 0.0
        X[7, 3] = 1e-151
    elif case == "zeros":
        X[:] = 0.0
    elif case == "large":
        X *= 1e140
    elif case == "small":
        X *= 1e-140
    proven = finite_in_range(X)
    if proven:
        assert _checks_pass(X)
    # what it proves in the ordinary cases (else it saves nothing)
    assert proven == (case in ("plain", "large", "small"))


def test_proof_of_a_view_or_another_dtype_is_left_to_the_checks():
    X = _table()
    assert finite_in_range(X)
    assert not finite_in_range(X[:, ::2]) and not finite_in_range(np.asfortranarray(X))
    assert not finite_in_range(X.astype(np.float32)) and not finite_in_range(X[:0])


def test_robpca_skips_the_two_checks_where_the_proof_holds(monkeypatch):
    """An ordinary table: neither check's two reductions run (a fit before this change called
    check_finite on every in-memory table)."""
    def refuse(*a, **k):
        raise AssertionError("check ran")
    monkeypatch.setattr(robpca_mod, "check_finite", refuse)
    monkeypatch.setattr(robpca_mod, "check_magnitude", refuse)
    ROBPCA(n_components=2, random_state=0, scale="none").fit(_table())


@pytest.mark.parametrize("scale", ["none", "auto"])
@pytest.mark.parametrize("value, message", [
    (np.nan, r"X contains 1 NaN or infinite value\(s\) \(first: NaN at row 7, column 3\)"),
    (np.inf, r"X contains 1 NaN or infinite value\(s\) \(first: infinite at row 7, column 3\)"),
    (1e200, r"X holds values as large as 1e\+200; ROBPCA works with their squares"),
])
def test_robpca_refusals_keep_their_messages(value, message, scale):
    X = _table()
    X[7, 3] = value
    if value == 1e200 and scale == "auto":
        # ("auto" standardises this column, whose squares then fit: fitted, as before)
        assert ROBPCA(n_components=2, random_state=0, scale=scale).fit(X).scaling_ == "standard"
        return
    with pytest.raises(ValueError, match=message):
        ROBPCA(n_components=2, random_state=0, scale=scale).fit(X)


def test_robpca_refuses_a_table_of_subnormal_size_by_name():
    with pytest.raises(ValueError, match="largest value is .*ROBPCA works with squares"):
        ROBPCA(n_components=2, random_state=0, scale="none").fit(_table() * 1e-160)
