"""Triton kernels of a tree layer's values (``[L W_V; N']``, eqs. 5-10, 15-16, 23): one launch forward, three
backward, in place of the eager path's ~30 forward and ~50 backward operators (:mod:`tree_kernels` runs them).

The functions below become triton kernels when the fused path is first used (:func:`jit_kernels`): triton is an
optional dependency that takes about a second to import, and it reads ``TRITON_INTERPRET`` as it jits them
(``TRITON_INTERPRET=1`` runs them on CPU tensors: the parity tests in CI). Until then this module needs nothing.

Layouts: time first, as fairseq's layers hold states. v [L, B, C] (``L = N + M`` positions ``[leaves; nodes]``),
w [L, B, Hw] (leaf weights; Hw = 1 shares them across the heads, Hw = H has one per head), real [L, B] (1 = real
position), and the batch's structure: norm [B, M, N] (``A / (c |C|)``), A [B, M, N], D [B, M, M], and over the
(node, leaf) pairs pw [B, M, Np], pair_leaf / iv / ih [B, Np] (leaf, vertical and horizontal table rows). A program
of the forward owns (sentence b, weight group h, a block of positions, a block of the group's Cw = C / Hw channels):
it copies the leaves' values, or builds its nodes' rows of ``S = [alpha | (alpha A^T) * D]`` block by block and
multiplies them into the values, then adds the pairs' embedding term. Everything accumulates in fp32; padded
positions are zeroed before any product (NaN in padding cannot leak). ``input_precision="ieee"``: no TF32, so the
fused path matches the eager one at 1e-5 in fp32.
"""

from __future__ import annotations  # the kernels' annotations (tl.constexpr) stay text until triton reads them

IEEE = "ieee"  # tl.dot's input precision; jit_kernels makes it a tl.constexpr (a kernel reads no other global)
KERNELS = ("tree_values_fwd", "tree_values_bwd_v", "tree_values_bwd_w", "tree_values_bwd_pairs")
_HELPERS = ("_leaf_w", "_rows", "_pair_rows", "_alpha")
tl = None  # triton.language, set by jit_kernels (the kernels' source names it)
jitted = False


def jit_kernels() -> None:
    """Import triton (deferred: optional, slow to import, and it reads TRITON_INTERPRET here) and turn the functions
    of this module into its kernels, once. The helpers are jitted too: the kernels call them."""
    global tl, jitted, IEEE
    if jitted:
        return
    import triton
    import triton.language

    tl = triton.language
    IEEE = tl.constexpr("ieee")  # a plain str compiles in the interpreter only (the GPU compiler rejects it)
    for name in _HELPERS + KERNELS:
        globals()[name] = triton.jit(globals()[name])
    jitted = True


def _leaf_w(w, real, j, jm, b, h, s_wl, s_wb, s_rl, s_rb):
    """w[j, b, h] in fp32, 0 at padded (or masked) positions."""
    x = tl.load(w + j * s_wl + b * s_wb + h, mask=jm, other=0.0).to(tl.float32)
    r = tl.load(real + j * s_rl + b * s_rb, mask=jm, other=0.0)
    return tl.where(jm & (r > 0), x, 0.0)


def _rows(v, real, pos, pm, b, cols, cm, s_vl, s_vb, s_vc, s_rl, s_rb):
    """v[pos, b, cols] [len(pos), len(cols)] in fp32, 0 at padded (or masked) positions."""
    x = tl.load(v + pos[:, None] * s_vl + b * s_vb + cols[None, :] * s_vc, mask=pm[:, None] & cm[None, :],
                other=0.0).to(tl.float32)
    r = tl.load(real + pos * s_rl + b * s_rb, mask=pm, other=0.0)
    return tl.where((pm & (r > 0))[:, None], x, 0.0)


def _pair_rows(ev, eh, piv, pih, b, p, pm, cc, cm, Np, dh, dv):
    """The pairs' embedding rows ``[E_v(iv_p); E_h(ih_p)]`` at head columns cc, [len(p), len(cc)] in fp32."""
    iv = tl.load(piv + b * Np + p, mask=pm, other=0)
    ih = tl.load(pih + b * Np + p, mask=pm, other=0)
    isv = cc < dv
    e = tl.load(ev + iv[:, None] * dv + cc[None, :], mask=pm[:, None] & (cm & isv)[None, :], other=0.0)
    e2 = tl.load(eh + ih[:, None] * (dh - dv) + (cc - dv)[None, :], mask=pm[:, None] & (cm & (cc >= dv))[None, :],
                 other=0.0)
    return e.to(tl.float32) + e2.to(tl.float32)


def _alpha(norm, w, real, i, im, j, jm, b, h, N, M, s_wl, s_wb, s_rl, s_rb):
    """alpha[i, j] = norm[b, i, j] * w[j] [len(i), len(j)]."""
    nrm = tl.load(norm + b * M * N + i[:, None] * N + j[None, :], mask=im[:, None] & jm[None, :], other=0.0)
    return nrm * _leaf_w(w, real, j, jm, b, h, s_wl, s_wb, s_rl, s_rb)[None, :]


def tree_values_fwd(v, w, real, norm, A, D, pw, pleaf, piv, pih, ev, eh, out,
                    N, M, Np, Hw, Cw, dh, dv,
                    s_vl, s_vb, s_vc, s_wl, s_wb, s_rl, s_rb, s_ol, s_ob,
                    HIER: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr):
    """out[:N] = v[:N]; out[N + i] = sum_l S[i, l] v[l] + sum_p pw[i, p] w[j_p] e_p (grid: B * Hw, positions / BR,
    Cw / BC)."""
    b = tl.program_id(0) // Hw
    h = tl.program_id(0) % Hw
    r0 = tl.program_id(1) * BR
    rows = r0 + tl.arange(0, BR)
    cl = tl.program_id(2) * BC + tl.arange(0, BC)
    cm = cl < Cw
    cols = h * Cw + cl
    kk = tl.arange(0, BK)
    leaf = rows < N
    x = tl.load(v + rows[:, None] * s_vl + b * s_vb + cols[None, :] * s_vc, mask=leaf[:, None] & cm[None, :],
                other=0.0).to(tl.float32)
    acc = tl.zeros((BR, BC), dtype=tl.float32)
    if r0 + BR > N:  # node rows in this block
        i = rows - N
        im = (i >= 0) & (i < M)
        for j0 in range(0, N, BK):  # alpha @ V_leaves
            j = j0 + kk
            jm = j < N
            a = _alpha(norm, w, real, i, im, j, jm, b, h, N, M, s_wl, s_wb, s_rl, s_rb)
            vj = _rows(v, real, j, jm, b, cols, cm, s_vl, s_vb, s_vc, s_rl, s_rb)
            acc += tl.dot(a, vj, input_precision=IEEE)
        for t0 in range(0, M, BK):  # ((alpha @ A^T) * D) @ V_nodes
            t = t0 + kk
            tm = t < M
            g = tl.zeros((BR, BK), dtype=tl.float32)
            for j0 in range(0, N, BK):
                j = j0 + kk
                jm = j < N
                a = _alpha(norm, w, real, i, im, j, jm, b, h, N, M, s_wl, s_wb, s_rl, s_rb)
                At = tl.load(A + b * M * N + t[:, None] * N + j[None, :], mask=tm[:, None] & jm[None, :], other=0.0)
                g += tl.dot(a, tl.trans(At), input_precision=IEEE)
            d = tl.load(D + b * M * M + i[:, None] * M + t[None, :], mask=im[:, None] & tm[None, :], other=0.0)
            vt = _rows(v, real, N + t, tm, b, cols, cm, s_vl, s_vb, s_vc, s_rl, s_rb)
            acc += tl.dot(g * d, vt, input_precision=IEEE)
        if HIER:  # sum_p pw[i, p] w[j_p] e_p
            cc = cols % dh
            for p0 in range(0, Np, BK):
                p = p0 + kk
                pm = p < Np
                pwb = tl.load(pw + b * M * Np + i[:, None] * Np + p[None, :], mask=im[:, None] & pm[None, :],
                              other=0.0)
                jl = tl.load(pleaf + b * Np + p, mask=pm, other=0)
                wp = _leaf_w(w, real, jl, pm, b, h, s_wl, s_wb, s_rl, s_rb)
                e = _pair_rows(ev, eh, piv, pih, b, p, pm, cc, cm, Np, dh, dv)
                acc += tl.dot(pwb * wp[None, :], e, input_precision=IEEE)
    res = tl.where(leaf[:, None], x, acc)
    tl.store(out + rows[:, None] * s_ol + b * s_ob + cols[None, :], res.to(out.dtype.element_ty),
             mask=(rows < N + M)[:, None] & cm[None, :])


def tree_values_bwd_v(g, w, real, norm, A, D, gv,
                      N, M, Hw, Cw,
                      s_gl, s_gb, s_gc, s_wl, s_wb, s_rl, s_rb, s_vl, s_vb,
                      BR: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr):
    """gv[l] = g[l] (leaves: their own values) + sum_i S[i, l] g[N + i] (grid as the forward's)."""
    b = tl.program_id(0) // Hw
    h = tl.program_id(0) % Hw
    r0 = tl.program_id(1) * BR
    rows = r0 + tl.arange(0, BR)
    cl = tl.program_id(2) * BC + tl.arange(0, BC)
    cm = cl < Cw
    cols = h * Cw + cl
    kk = tl.arange(0, BK)
    leaf = rows < N
    acc = tl.load(g + rows[:, None] * s_gl + b * s_gb + cols[None, :] * s_gc, mask=leaf[:, None] & cm[None, :],
                  other=0.0).to(tl.float32)
    if r0 < N:  # leaf rows j: w_j sum_i norm[i, j] g[N + i]
        wj = _leaf_w(w, real, rows, leaf, b, h, s_wl, s_wb, s_rl, s_rb)
        s = tl.zeros((BR, BC), dtype=tl.float32)
        for i0 in range(0, M, BK):
            i = i0 + kk
            im = i < M
            nT = tl.load(norm + b * M * N + i[None, :] * N + rows[:, None], mask=leaf[:, None] & im[None, :],
                         other=0.0)
            gi = tl.load(g + (N + i)[:, None] * s_gl + b * s_gb + cols[None, :] * s_gc,
                         mask=im[:, None] & cm[None, :], other=0.0).to(tl.float32)
            s += tl.dot(nT, gi, input_precision=IEEE)
        acc += s * wj[:, None]
    if r0 + BR > N:  # node rows t: sum_i D[i, t] (sum_j alpha[i, j] A[t, j]) g[N + i]
        t = rows - N
        tm = (t >= 0) & (t < M)
        s = tl.zeros((BR, BC), dtype=tl.float32)
        for i0 in range(0, M, BK):
            i = i0 + kk
            im = i < M
            GT = tl.zeros((BR, BK), dtype=tl.float32)
            for j0 in range(0, N, BK):
                j = j0 + kk
                jm = j < N
                At = tl.load(A + b * M * N + t[:, None] * N + j[None, :], mask=tm[:, None] & jm[None, :], other=0.0)
                aT = tl.trans(_alpha(norm, w, real, i, im, j, jm, b, h, N, M, s_wl, s_wb, s_rl, s_rb))
                GT += tl.dot(At, aT, input_precision=IEEE)
            dT = tl.load(D + b * M * M + i[None, :] * M + t[:, None], mask=tm[:, None] & im[None, :], other=0.0)
            gi = tl.load(g + (N + i)[:, None] * s_gl + b * s_gb + cols[None, :] * s_gc,
                         mask=im[:, None] & cm[None, :], other=0.0).to(tl.float32)
            s += tl.dot(GT * dT, gi, input_precision=IEEE)
        acc += tl.where(tm[:, None], s, 0.0)
    tl.store(gv + rows[:, None] * s_vl + b * s_vb + cols[None, :], acc.to(gv.dtype.element_ty),
             mask=(rows < N + M)[:, None] & cm[None, :])


def tree_values_bwd_w(g, v, real, norm, A, D, gw,
                      N, M, Hw, Cw,
                      s_gl, s_gb, s_gc, s_vl, s_vb, s_vc, s_rl, s_rb, s_wl, s_wb,
                      BR: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr):
    """gw[j] = sum_i norm[i, j] (R[i, j] + sum_t D[i, t] R[i, N + t] A[t, j]), R = g_nodes @ v^T over the group's
    channels: the leaf weights' gradient through S (grid: B * Hw, N / BR; the pairs' part is added by
    :func:`tree_values_bwd_pairs`)."""
    b = tl.program_id(0) // Hw
    h = tl.program_id(0) % Hw
    j = tl.program_id(1) * BR + tl.arange(0, BR)
    jm = j < N
    kk = tl.arange(0, BK)
    cb = tl.arange(0, BC)
    acc = tl.zeros((BR,), dtype=tl.float32)
    for i0 in range(0, M, BK):
        i = i0 + kk
        im = i < M
        Rij = tl.zeros((BK, BR), dtype=tl.float32)
        for c0 in range(0, Cw, BC):
            cm = (c0 + cb) < Cw
            cols = h * Cw + c0 + cb
            gi = tl.load(g + (N + i)[:, None] * s_gl + b * s_gb + cols[None, :] * s_gc,
                         mask=im[:, None] & cm[None, :], other=0.0).to(tl.float32)
            vj = _rows(v, real, j, jm, b, cols, cm, s_vl, s_vb, s_vc, s_rl, s_rb)
            Rij += tl.dot(gi, tl.trans(vj), input_precision=IEEE)
        for t0 in range(0, M, BK):
            t = t0 + kk
            tm = t < M
            Rit = tl.zeros((BK, BK), dtype=tl.float32)
            for c0 in range(0, Cw, BC):
                cm = (c0 + cb) < Cw
                cols = h * Cw + c0 + cb
                gi = tl.load(g + (N + i)[:, None] * s_gl + b * s_gb + cols[None, :] * s_gc,
                             mask=im[:, None] & cm[None, :], other=0.0).to(tl.float32)
                vt = _rows(v, real, N + t, tm, b, cols, cm, s_vl, s_vb, s_vc, s_rl, s_rb)
                Rit += tl.dot(gi, tl.trans(vt), input_precision=IEEE)
            d = tl.load(D + b * M * M + i[:, None] * M + t[None, :], mask=im[:, None] & tm[None, :], other=0.0)
            At = tl.load(A + b * M * N + t[:, None] * N + j[None, :], mask=tm[:, None] & jm[None, :], other=0.0)
            Rij += tl.dot(Rit * d, At, input_precision=IEEE)
        nrm = tl.load(norm + b * M * N + i[:, None] * N + j[None, :], mask=im[:, None] & jm[None, :], other=0.0)
        acc += tl.sum(nrm * Rij, axis=0)
    r = tl.load(real + j * s_rl + b * s_rb, mask=jm, other=0.0)
    tl.store(gw + j * s_wl + b * s_wb + h, tl.where(r > 0, acc, 0.0), mask=jm)


def tree_values_bwd_pairs(g, w, real, pw, pleaf, piv, pih, ev, eh, gw, gev, geh,
                          N, M, Np, Hw, Cw, dh, dv,
                          s_gl, s_gb, s_gc, s_wl, s_wb, s_rl, s_rb,
                          BP: tl.constexpr, BC: tl.constexpr, BK: tl.constexpr):
    """The embedding term's gradients over a block of pairs: Y = sum over the group's heads of pw^T g_nodes (the
    heads share the tables' rows: summed before any atomic add); gw[j_p] += sum_c Y e_p, and the tables' rows of
    e_p += w[j_p] Y (atomic adds: pairs share leaves and rows; grid: B * Hw, Np / BP)."""
    b = tl.program_id(0) // Hw
    h = tl.program_id(0) % Hw
    p = tl.program_id(1) * BP + tl.arange(0, BP)
    pm = p < Np
    kk = tl.arange(0, BK)
    cb = tl.arange(0, BC)
    jl = tl.load(pleaf + b * Np + p, mask=pm, other=0)
    wp = _leaf_w(w, real, jl, pm, b, h, s_wl, s_wb, s_rl, s_rb)
    iv = tl.load(piv + b * Np + p, mask=pm, other=0)
    ih = tl.load(pih + b * Np + p, mask=pm, other=0)
    gwp = tl.zeros((BP,), dtype=tl.float32)
    for c0 in range(0, dh, BC):  # columns of a head (of the tables)
        cc = c0 + cb
        cm = cc < dh
        Y = tl.zeros((BP, BC), dtype=tl.float32)
        for head in range(0, Cw // dh):
            cols = h * Cw + head * dh + cc
            for i0 in range(0, M, BK):
                i = i0 + kk
                im = i < M
                pwT = tl.load(pw + b * M * Np + i[None, :] * Np + p[:, None], mask=pm[:, None] & im[None, :],
                              other=0.0)
                gi = tl.load(g + (N + i)[:, None] * s_gl + b * s_gb + cols[None, :] * s_gc,
                             mask=im[:, None] & cm[None, :], other=0.0).to(tl.float32)
                Y += tl.dot(pwT, gi, input_precision=IEEE)
        e = _pair_rows(ev, eh, piv, pih, b, p, pm, cc, cm, Np, dh, dv)
        gwp += tl.sum(Y * e, axis=1)
        ge = Y * wp[:, None]
        tl.atomic_add(gev + iv[:, None] * dv + cc[None, :], ge, mask=pm[:, None] & (cm & (cc < dv))[None, :])
        tl.atomic_add(geh + ih[:, None] * (dh - dv) + (cc - dv)[None, :], ge,
                      mask=pm[:, None] & (cm & (cc >= dv))[None, :])
    r = tl.load(real + jl * s_rl + b * s_rb, mask=pm, other=0.0)
    tl.atomic_add(gw + jl * s_wl + b * s_wb + h, gwp, mask=pm & (r > 0))
