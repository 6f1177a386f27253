"""Closed-form SCW step sizes (alpha, beta) for one example, in plain floats.

Formulas: methods.md section 3.2 (binary) and 3.3 (shared-covariance multi-class), checked
against a numerical minimiser of the SCW objectives in the tests. Both step sizes are computed
from the same pre-update quantities ``m`` (signed margin) and ``v`` (x^T Sigma x); using the
updated mean for beta is a known bug of circulating code.

These run once per update inside Python loops, so they use ``math`` on floats rather than numpy.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

__all__ = ["phi_from_eta", "binary_step", "multiclass_step", "loss_scale", "binary_step_core",
           "multiclass_step_core", "binary_step_array"]


def phi_from_eta(eta: float) -> float:
    """Confidence parameter phi = Phi^-1(eta), the inverse standard-normal CDF (not 1/Phi(eta))."""
    return float(ndtri(eta))


def loss_scale(multiclass: bool) -> float:
    """Factor on v inside the loss phi*sqrt(scale*v) - m.

    For the shared-covariance multi-class form the score difference (mu_r - mu_s)^T x has
    variance 2v, and the update rule below is exact for that loss; binary uses v.
    """
    return 2.0 if multiclass else 1.0


def binary_step(m: float, v: float, phi: float, C: float, variant: str) -> tuple[float, float]:
    """Step sizes of binary SCW-I / SCW-II for margin ``m = y mu^T x`` and ``v = x^T Sigma x > 0``.

    ``C = math.inf`` gives plain CW (the loss is forced to zero). Returns ``(alpha, beta)``.
    """
    return binary_step_core(m, v, phi, C, variant == "II")


def binary_step_core(m, v, phi, C, squared):
    """:func:`binary_step` with ``squared`` = SCW-II; plain math so a JIT can compile it too."""
    phi2 = phi * phi
    if not squared:
        psi = 1.0 + 0.5 * phi2
        zeta = 1.0 + phi2
        alpha = (-m * psi + math.sqrt(m * m * phi2 * phi2 * 0.25 + v * phi2 * zeta)) / (v * zeta)
        alpha = min(C, max(0.0, alpha))
    else:
        n = v + 0.5 / C
        gamma = phi * math.sqrt(phi2 * m * m * v * v + 4.0 * n * v * (n + v * phi2))
        alpha = max(0.0, (-(2.0 * m * n + phi2 * m * v) + gamma) / (2.0 * (n * n + n * v * phi2)))
    avp = alpha * v * phi
    # sqrt(u) = (-avp + sqrt(avp^2 + 4v)) / 2, written without the cancellation for large avp
    root_u = 2.0 * v / (avp + math.sqrt(avp * avp + 4.0 * v))
    beta = alpha * phi / (root_u + avp)
    return alpha, beta


def multiclass_step(m: float, v: float, phi: float, C: float, variant: str) -> tuple[float, float]:
    """Step sizes of shared-covariance multi-class SCW (M-SCW-I / M-SCW-II).

    ``m = (mu_r - mu_s)^T x`` for the true class r and the best other class s, ``v = x^T Sigma x``.
    The update ``mu_r += alpha Sigma x``, ``mu_s -= alpha Sigma x``,
    ``Sigma -= beta (Sigma x)(Sigma x)^T`` exactly minimises
    KL(mu_r) + KL(mu_s) + C * loss (or C * loss^2) with loss = max(0, phi sqrt(2 v) - m).
    M-SCW-I uses the C -> inf limit of M-SCW-II clipped at C (LIBOL's printed M-SCW1 alpha is
    not optimal, methods.md section 3.3).
    """
    return multiclass_step_core(m, v, phi, C, variant == "II")


def multiclass_step_core(m, v, phi, C, squared):
    """:func:`multiclass_step` with ``squared`` = M-SCW-II; plain math (JIT-compilable)."""
    phi2 = phi * phi
    if not squared:
        alpha = (-m * (4.0 + phi2) + phi * math.sqrt(phi2 * m * m + 16.0 * v * (2.0 + phi2))) / (
            4.0 * v * (2.0 + phi2))
        alpha = min(C, max(0.0, alpha))
    else:
        rho = 2.0 * v + 0.5 / C
        gamma = phi * math.sqrt(phi2 * m * m * v * v + 8.0 * rho * v * (rho + v * phi2))
        alpha = max(0.0, (-(2.0 * m * rho + phi2 * m * v) + gamma) / (2.0 * (rho * rho + rho * v * phi2)))
    avp = alpha * v * phi
    # sqrt(2 u) with u = (1/8)(-a v phi + sqrt(a^2 v^2 phi^2 + 8 v))^2
    root_2u = 4.0 * v / (avp + math.sqrt(avp * avp + 8.0 * v))
    beta = alpha * phi / (root_2u + avp)
    return alpha, beta


def binary_step_array(m, v, phi, C, squared):
    """:func:`binary_step_core` on arrays (v > 0 everywhere), for engines that batch examples."""
    m = np.asarray(m, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    phi2 = phi * phi
    if not squared:
        psi = 1.0 + 0.5 * phi2
        zeta = 1.0 + phi2
        alpha = (-m * psi + np.sqrt(m * m * phi2 * phi2 * 0.25 + v * phi2 * zeta)) / (v * zeta)
        alpha = np.minimum(C, np.maximum(0.0, alpha))
    else:
        n = v + 0.5 / C
        gamma = phi * np.sqrt(phi2 * m * m * v * v + 4.0 * n * v * (n + v * phi2))
        alpha = np.maximum(0.0, (-(2.0 * m * n + phi2 * m * v) + gamma) / (2.0 * (n * n + n * v * phi2)))
    avp = alpha * v * phi
    root_u = 2.0 * v / (avp + np.sqrt(avp * avp + 4.0 * v))
    beta = alpha * phi / (root_u + avp)
    return alpha, beta
