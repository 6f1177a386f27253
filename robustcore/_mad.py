"""The normal consistency constant of the median absolute deviation, defined once.

For normal data the MAD is ``Z75`` standard deviations (``Z75`` = Φ⁻¹(0.75), the normal upper
quartile), so ``MAD_NORMAL * MAD`` (``MAD_NORMAL = 1 / Z75 ≈ 1.4826``) estimates the standard
deviation and is not moved by a minority of outliers. Every robust spread here (the median +
3 MAD cuts, robust scaling, the outlier map's robust cut-off, the calibration of limits from
quartiles) uses these two numbers. Standard library only: the registry imports it when the
window starts. (``tests/robustcore/test_mad.py`` checks them against scipy.stats.norm.)
"""

__all__ = ["Z75", "MAD_NORMAL"]

#: Φ⁻¹(0.75): the normal distribution's upper quartile, in standard deviations.
Z75 = 0.6744897501960817
#: 1 / Φ⁻¹(0.75): MAD_NORMAL x MAD is consistent for the standard deviation of normal data.
MAD_NORMAL = 1.0 / Z75
