"""The contamination parameter, the limits' false-alarm rate and the robust cut's constants:
what the method registry needs at import, without importing scikit-learn (which would weigh on
the window's start-up). :mod:`robustcore._outlier` re-exports them."""
from __future__ import annotations

from ._mad import MAD_NORMAL
from ._params import Param

__all__ = ["CONTAMINATION", "LIMIT_ALPHA", "MAD_NORMAL", "N_MAD", "MAD_RULE", "contamination_rule"]

CONTAMINATION = Param(
    "contamination", float, "auto", "Share of training samples flagged as outliers; 'auto' uses "
    "the method's own limit.", low=0.0, high=0.5, low_inclusive=False, special=("auto",))

# False-alarm rate of the limits behind "auto" where the method has no alpha parameter of its own
# (PCA, Coherence Pursuit), and of the registry's SPE/T² flags.
LIMIT_ALPHA = 0.01

# (MAD_NORMAL x MAD estimates the standard deviation of normal scores: robustcore._mad.)
# Width of the robust cut median + N_MAD x 1.4826 MAD (scores without a control limit, and the
# gross outliers left out of a robust fit's calibration rows).
N_MAD = 3.0


# The robust cut by name (PCP's contamination="mad"), in words.
MAD_RULE = f"score above median + {N_MAD:g} x 1.4826 MAD of the training scores"


def contamination_rule(c) -> str:
    """The outlier rule of a run with a ``contamination`` other than "auto", in words."""
    if c == "mad":
        return f"{MAD_RULE} (contamination='mad')"
    return f"the {c:.3g} share of samples with the largest outlier score (contamination)"
