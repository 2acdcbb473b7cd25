"""Slow references for tests/test_structformer.py: a literal transcription of StructFormer's eqs. 6-12 (Shen et al.
2021), one sentence at a time, float64, with the paper's [n, n, n] tensors. Not shipped in the library: it is the
reference the fast O(B T^2) ``fairseq_tree.modules.structformer_parser.dependency_distribution`` is tested against."""

from typing import Tuple

import numpy as np


def dependency_distribution_direct(distance, height, mu1: float = 1.0, mu2: float = 1.0) -> Tuple[np.ndarray,
                                                                                                 np.ndarray]:
    """Literal transcription of eqs. 6-12 for ONE sentence of n words, float64.

    distance [n-1] (τ_k between words k and k+1), height [n] (δ), temperatures μ_1 (eq. 6), μ_2 (eq. 11); the
    sentence boundaries are τ_{-1} = τ_{n-1} = +inf. -> (p_D [n, n] with p_D[i, j] = p_D(j|i), root [n] = the
    j = i term that eq. 12 drops)."""
    tau = [float(t) for t in np.asarray(distance, dtype=np.float64).reshape(-1)]
    delta = np.asarray(height, dtype=np.float64).reshape(-1)
    n = len(delta)
    assert len(tau) == max(n - 1, 0)
    tau_ext = {-1: np.inf, n - 1: np.inf}
    tau_ext.update({k: t for k, t in enumerate(tau)})

    def sig(z):
        return 1.0 / (1.0 + np.exp(-z))

    def p_in_left(l, i):  # eq. 7: p(l ∈ C(x_i)) = σ((δ_i - max(τ_l..τ_{i-1})) / μ_1), 1 for l = i
        if l == i:
            return 1.0
        return sig((delta[i] - max(tau_ext[k] for k in range(l, i))) / mu1)

    def p_in_right(r, i):  # p(r ∈ C(x_i)) = σ((δ_i - max(τ_i..τ_{r-1})) / μ_1), 1 for r = i
        if r == i:
            return 1.0
        return sig((delta[i] - max(tau_ext[k] for k in range(i, r))) / mu1)

    p_left = np.zeros((n, n))
    p_right = np.zeros((n, n))
    for i in range(n):
        for l in range(i + 1):  # eq. 8, with l - 1 = -1 outside (it crosses τ_{-1} = inf: probability 0)
            p_left[i, l] = p_in_left(l, i) - (p_in_left(l - 1, i) if l >= 1 else 0.0)
        for r in range(i, n):  # eq. 9
            p_right[i, r] = p_in_right(r, i) - (p_in_right(r + 1, i) if r + 1 <= n - 1 else 0.0)
    p_C = np.zeros((n, n, n))  # eq. 10: [i, l, r]
    for i in range(n):
        for l in range(i + 1):
            for r in range(i, n):
                p_C[i, l, r] = p_left[i, l] * p_right[i, r]
    p_Pr = np.zeros((n, n, n))  # eq. 11: [l, r, j]
    for l in range(n):
        for r in range(l, n):
            w = np.exp(delta[l:r + 1] / mu2 - np.max(delta[l:r + 1] / mu2))
            p_Pr[l, r, l:r + 1] = w / w.sum()
    full = np.einsum("ilr,lrj->ij", p_C, p_Pr)  # eq. 12 before zeroing j = i
    root = np.diagonal(full).copy()
    p_D = full.copy()
    np.fill_diagonal(p_D, 0.0)
    return p_D, root
