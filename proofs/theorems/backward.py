"""The backward pass of attention, derived by the chain rule from the softmax Jacobian.

The claim is stated in index form over symbolic sizes (``proofs.notation_backward``). The softmax
layer, the one whose correctness depends on the number of keys N_k, is proved by rule applications
for any N_k: the pullback of dP through a row's softmax, differentiated from the softmax's definition,
equals the dS rule under test (a definition premise), and that rule equals P ∘ (dP − D). The four
linear layers are proved by rules for any sizes too: each gradient is defined as the derivative of its
functional, differentiated, and its δ factors sifted. D from dO and O is rules too, for row a in range
(1 ≤ a ≤ N_q, an assumption: past the rows dP's row is 0) and with O := PV (a definition): dP's gradient
definition is put in under the sum over keys, differentiated, its δ over the keys sifted by the engine under that
enclosing sum (every key j of it is in the inner range), and the sums over keys and channels interchanged by
``linearity`` (finite sums over independent ranges commute).

Forward: S = scale·QKᵀ, P = softmax(S) row-wise, O = PV. With the upstream gradient
dO = ∂L/∂O, the gradients FlashAttention's backward kernel computes are
dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP − D) with D_i = Σ_j P_ij dP_ij = Σ_c dO_ic O_ic,
dQ = scale·dS K, dK = scale·dSᵀ Q.

The loss is taken as L = Σ dO ∘ O, the linear functional whose gradient in O is dO:
every gradient of a scalar loss through O is of this form (chain rule), so nothing is
lost by it, and differentiating it is an honest computation, not an assertion.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs import notation_backward as nb
from proofs.engine import Derivation, Proof, Result
from proofs.validate import as_dimension

SCALE = sp.Symbol("scale", positive=True)

# dS_ab from (P, dP, a, b, N_k), P and dP indexed by (row, key): the rule under test, judged for any N_k;
# the default is the derived one.
DsRule = Callable[[sp.IndexedBase, sp.IndexedBase, sp.Expr, sp.Expr, sp.Expr], sp.Expr]


def ds_entry(P, dP, a, b, n_k) -> sp.Expr:
    """dS_ab = P_ab (dP_ab − D_a), D_a = Σ_{k ≤ n_k} P_ak dP_ak: the softmax backward with the row correction."""
    k = nb.K_IDX
    return P[a, b] * (dP[a, b] - sp.Sum(P[a, k] * dP[a, k], (k, 1, n_k)))


def _matrix(name: str, rows: int, cols: int, **assumptions) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", **assumptions))


def row_softmax(S: sp.Matrix) -> sp.Matrix:
    """Softmax of every row of S, written with explicit exponentials."""
    rows = []
    for i in range(S.rows):
        e = [sp.exp(x) for x in S.row(i)]
        total = sum(e)
        rows.append([x / total for x in e])
    return sp.Matrix(rows)


def row_correction(P: sp.Matrix, dP: sp.Matrix) -> sp.Matrix:
    """D_i = Σ_j P_ij dP_ij, one entry per query row (a column vector)."""
    return sp.Matrix([sum(P[i, j] * dP[i, j] for j in range(P.cols)) for i in range(P.rows)])


def ds_rule(P: sp.Matrix, dP: sp.Matrix) -> sp.Matrix:
    """dS = P ∘ (dP − D): the softmax backward with the row correction D."""
    D = row_correction(P, dP)
    return sp.Matrix(P.rows, P.cols, lambda i, j: P[i, j] * (dP[i, j] - D[i]))


def backward_identities(n_q: int = 2, n_k: int = 3, d: int = 2, d_v: int = 2) -> Result:
    """The backward identities over explicit symbol matrices, ready to lambdify.

    ``Q`` (n_q×d), ``K`` (n_k×d), ``V`` (n_k×d_v), ``dO`` (n_q×d_v) and ``scale`` are the
    inputs; ``P``, ``O``, ``dV``, ``dP``, ``D``, ``dS``, ``dQ``, ``dK`` are expressions in them.
    ``D`` is written both ways: ``D`` = rowsum(dO ∘ O), ``D_from_dP`` = rowsum(P ∘ dP).
    """
    n_q, n_k = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k"))
    d, d_v = int(as_dimension(d, "d")), int(as_dimension(d_v, "d_v"))
    Q, K = _matrix("q", n_q, d, real=True), _matrix("k", n_k, d, real=True)
    V, dO = _matrix("v", n_k, d_v, real=True), _matrix("g", n_q, d_v, real=True)
    P = row_softmax(SCALE * Q * K.T)  # (n_q, n_k)
    O = P * V  # (n_q, d_v)
    dP = dO * V.T  # (n_q, n_k)
    D = sp.Matrix([sum(dO[i, c] * O[i, c] for c in range(d_v)) for i in range(n_q)])  # (n_q, 1)
    dS = sp.Matrix(n_q, n_k, lambda i, j: P[i, j] * (dP[i, j] - D[i]))
    return Result(Q=Q, K=K, V=V, dO=dO, scale=SCALE, P=P, O=O, dV=P.T * dO, dP=dP, D=D,
                  D_from_dP=row_correction(P, dP), dS=dS, dQ=SCALE * dS * K, dK=SCALE * dS.T * Q)


# ---------------------------------------------------------------- the linear layers, by rules
_d = sp.KroneckerDelta


def _loss(n_q, n_k, d_v):
    """L = Σ_ic dO_ic O_ic with O = PV written out: the linear functional whose gradient in O is dO."""
    i, k, c = nb.I_IDX, nb.K_IDX, nb.C_IDX
    return sp.Sum(nb.dO[i, c] * sp.Sum(nb.P[i, k] * nb.V[k, c], (k, 1, n_k)), (c, 1, d_v), (i, 1, n_q))


def _score_functional(n_q, n_k, d):
    """Σ_ik dS_ik S_ik with S = scale·QKᵀ written out: the pullback through S of the upstream dS."""
    i, k, c = nb.I_IDX, nb.K_IDX, nb.C_IDX
    return sp.Sum(nb.dS[i, k] * nb.SCALE * sp.Sum(nb.Q[i, c] * nb.K[k, c], (c, 1, d)), (i, 1, n_q), (k, 1, n_k))


def _gradient(pf: Proof, conjunct, functional, wrt, sizes, nested, sifts, what: str) -> None:
    """A linear layer's gradient entry by rules: the gradient defined as ∂functional/∂wrt entrywise; its entry in
    range (each size written entry + gap, gap ≥ 0); differentiated (∂X_jc/∂X_ab = δ_ja δ_cb); the δ factors brought
    out of the sums they do not vary in (``nested``, linearity); each δ sifted (``sifts``: (lhs, rhs, ∀-symbols))."""
    x, y = sp.symbols("x y", integer=True, positive=True)
    head, (a, b) = conjunct.lhs.base, conjunct.lhs.indices
    gaps = [sp.Symbol(f"r_{index}", integer=True, nonnegative=True) for index in (a, b)]
    general = functional(*sizes)
    definition = pf.define(head[x, y], sp.Derivative(general, wrt[x, y]), f"{what}: the gradient, entrywise",
                           forall=[x, y])
    ranges = {nb.dV: (nb.N_K, nb.D_V), nb.dP: (nb.N_Q, nb.N_K), nb.dQ: (nb.N_Q, nb.D_HEAD), nb.dK: (nb.N_K, nb.D_HEAD)}
    at = {size: index + gap for size, index, gap in zip(ranges[head], (a, b), gaps)}  # N_k = a + r_a, …
    in_range = [pf.assume(sp.Eq(size, at[size], evaluate=False), f"1 ≤ {index} ≤ {size}: the entry is in range")
                for size, index in zip(at, (a, b))]
    derivative = sp.Derivative(functional(*(at.get(n, n) for n in sizes)), wrt[a, b])
    differentiated = pf.identity(derivative, derivative.doit(), "differentiate: ∂X_jc/∂X_ab = δ_ja δ_cb")
    split = pf.linearity(derivative.doit(), nested(*gaps), "each δ leaves the sums it does not vary in", nest=True)
    sifted = []
    for lhs, rhs, over in sifts(*gaps):
        step = pf.identity(lhs, rhs, "sifting a δ over an index in range")
        sifted.append(pf.generalisation(step, over) if over else step)
    pf.rewrite(conjunct.lhs, conjunct.rhs, [definition, *in_range, differentiated, split, *sifted], what)
    return definition


def _d_from_do(pf: Proof, conjunct, correction, dp_definition) -> None:
    """D_a = Σ_c dO_ac O_ac by rules, for row a in range (1 ≤ a ≤ N_q: past the rows, dP_a· = ∂L/∂P_a· is 0):
    D by its definition, dP by its gradient definition under the sum over keys, differentiated
    (∂P_ik/∂P_aj = δ_ia δ_kj), the δ factors brought out of the sums they do not vary in, δ_ia sifted over the rows and
    δ_kj over the keys inside the sum over j (the same keys: the engine's sift under an enclosing Σ), O = PV."""
    a, i, k, c, j = nb.A_IDX, nb.I_IDX, nb.K_IDX, nb.C_IDX, sp.Symbol("j", integer=True, positive=True)
    x, y = sp.symbols("x y", integer=True, positive=True)
    gap = sp.Symbol("r_a", integer=True, nonnegative=True)
    P, V, dO, O = nb.P, nb.V, nb.dO, nb.O
    forward = pf.define(O[x, y], sp.Sum(P[x, j] * V[j, y], (j, 1, nb.N_K)), "O = PV", forall=[x, y])
    in_range = pf.assume(sp.Eq(nb.N_Q, a + gap, evaluate=False), "1 ≤ a ≤ N_q: row a is one of the N_q rows")
    keys_of = {"j": (j, 1, nb.N_K), "c": (c, 1, nb.D_V)}  # the keys' range (j) and the channels' (c)
    gradient = sp.Derivative(_loss(a + gap, nb.N_K, nb.D_V), P[a, j])
    differentiated = pf.identity(sp.Sum(P[a, j] * gradient, keys_of["j"]), sp.Sum(P[a, j] * gradient.doit(), keys_of["j"]),
                                 "differentiate under the sum over keys: ∂P_ik/∂P_aj = δ_ia δ_kj")
    rows = sp.Sum(_d(a, i) * dO[i, c], (i, 1, a + gap))
    keys = sp.Sum(_d(j, k) * V[k, c], (k, 1, nb.N_K))
    split = pf.linearity(differentiated.relation.rhs, sp.Sum(P[a, j] * sp.Sum(rows * keys, keys_of["c"]), keys_of["j"]),
                         "each δ leaves the sums it does not vary in", nest=True)
    by_row = pf.generalisation(pf.identity(rows, dO[a, c], "sifting δ_ia over the rows, a in range"), [c])
    by_key = pf.identity(sp.Sum(P[a, j] * sp.Sum(dO[a, c] * keys, keys_of["c"]), keys_of["j"]),
                         sp.Sum(P[a, j] * sp.Sum(dO[a, c] * V[j, c], keys_of["c"]), keys_of["j"]),
                         "sifting δ_kj over the keys, inside the sum over keys j (every j is one of the N_k keys)")
    term = P[a, j] * dO[a, c] * V[j, c]
    # one Σ over j and c, its limits in two orders: `nest` takes out the factor of the first limit's index alone
    p_out, do_out = sp.Sum(term, keys_of["j"], keys_of["c"]), sp.Sum(term, keys_of["c"], keys_of["j"])
    keys_outside = pf.linearity(by_key.relation.rhs, p_out,
                                "Σ over j and c: P_aj, varying in j alone, leaves the sum over c", nest=True)
    interchange = pf.linearity(p_out, do_out, "finite sums over independent ranges commute: Σ_j Σ_c = Σ_c Σ_j")
    channels_outside = pf.linearity(do_out, sp.Sum(dO[a, c] * sp.Sum(P[a, j] * V[j, c], keys_of["j"]), keys_of["c"]),
                                    "Σ over c and j: dO_ac, varying in c alone, leaves the sum over j", nest=True)
    swapped = pf.chain([keys_outside, interchange, channels_outside], by_key.relation.rhs, "=",
                       channels_outside.relation.rhs, "the sums over keys and channels interchanged")
    pf.rewrite(conjunct.lhs, conjunct.rhs, [correction, dp_definition, in_range, differentiated, split, by_row, by_key,
                                            swapped, forward],
               "D_a = Σ_k P_ak dP_ak = Σ_c dO_ac O_ac, any sizes")


# ---------------------------------------------------------------- the derivation

def attention_backward(rule: DsRule | None = None) -> Derivation:
    """The backward identities for any sizes. ``rule(P, dP, a, b, N_k) -> dS_ab`` defaults to the derived
    P_ab (dP_ab − D_a); pass another to have it judged for a symbolic number of keys (a rule that drops −D,
    or that is right only for N_k ≤ 3, is refused)."""
    rule = rule or ds_entry
    pf = Proof("attention-backward")
    dv, dp, pullback, ds_closed, d_from_dp, d_from_do, dq, dk = nb.conjuncts()
    x, y = sp.symbols("x y", integer=True, positive=True)
    a, b, k, l, r, n_k = nb.A_IDX, nb.B_IDX, nb.K_IDX, nb.L_IDX, nb.R_GAP, nb.N_K
    S, P, dP, D, dS = nb.S, nb.P, nb.dP, nb.D, nb.dS
    softmax = pf.define(P[x, y], sp.exp(S[x, y]) / sp.Sum(sp.exp(S[x, l]), (l, 1, n_k)),
                        "P = softmax(S) row by row", forall=[x, y])
    correction = pf.define(D[x], sp.Sum(P[x, k] * dP[x, k], (k, 1, n_k)), "D_a = Σ_k P_ak dP_ak", forall=[x])
    under_test = pf.define(dS[x, y], rule(P, dP, x, y, n_k), "dS: the rule under test", forall=[x, y])
    in_range = pf.assume(sp.Eq(n_k, b + r, evaluate=False), "1 ≤ b ≤ N_k: N_k = b + r with r ≥ 0")

    # The pullback through row a's softmax, differentiated from the definition (N_k = b + r written out).
    total = sp.Sum(sp.exp(S[a, l]), (l, 1, b + r))
    row = sp.Sum(dP[a, k] * sp.exp(S[a, k]) / total, (k, 1, b + r))
    derivative = sp.Derivative(row, S[a, b])
    differentiated = derivative.doit()
    quotient = pf.identity(derivative, differentiated, "quotient and chain rule: ∂S_ak/∂S_ab = δ_kb")
    sifted_total = sp.Sum(sp.exp(S[a, l]) * sp.KroneckerDelta(b, l), (l, 1, b + r))
    split = pf.linearity(differentiated, sp.Sum(sp.exp(S[a, k]) * sp.KroneckerDelta(b, k) * dP[a, k], (k, 1, b + r))
                         / total - sp.Sum(sp.exp(S[a, k]) * dP[a, k], (k, 1, b + r)) * sifted_total / total ** 2,
                         "the sum over k splits; factors free of k leave it")
    sifts = [pf.identity(sifted_total, sp.exp(S[a, b]), "sifting: Σ_l δ_bl exp(S_al) = exp(S_ab), 1 ≤ b ≤ N_k"),
             pf.identity(sp.Sum(sp.exp(S[a, k]) * sp.KroneckerDelta(b, k) * dP[a, k], (k, 1, b + r)),
                         sp.exp(S[a, b]) * dP[a, b], "sifting: Σ_k δ_bk exp(S_ak) dP_ak = exp(S_ab) dP_ab")]
    pulled = pf.linearity(row, sp.Sum(dP[a, k] * sp.exp(S[a, k]), (k, 1, b + r)) / total,
                          "the row's softmax denominator leaves the sum over k")
    layer = [softmax, correction, under_test, in_range, quotient, split, *sifts, pulled]
    pf.rewrite(pullback.lhs, pullback.rhs, layer, "dS_ab = Σ_k dP_ak ∂P_ak/∂S_ab is the rule under test, any N_k")
    pf.rewrite(ds_closed.lhs, ds_closed.rhs, layer, "the rule under test is P_ab (dP_ab − D_a), any N_k")
    pf.rewrite(d_from_dp.lhs, d_from_dp.rhs, [correction], "D by its definition")

    i, c, P, V, dO, Q, K, dS_ = nb.I_IDX, nb.C_IDX, nb.P, nb.V, nb.dO, nb.Q, nb.K, nb.dS
    loss_sizes, score_sizes = (nb.N_Q, nb.N_K, nb.D_V), (nb.N_Q, nb.N_K, nb.D_HEAD)
    (av, bv), (ap, bp), (aq, bq), (ak, bk) = (nb.ENTRY[n] for n in ("V", "P", "Q", "K"))
    _gradient(pf, dv, _loss, V, loss_sizes,
              lambda g, h: sp.Sum(_d(bv, c) * sp.Sum(dO[i, c] * sp.Sum(_d(av, k) * P[i, k], (k, 1, av + g)),
                                                      (i, 1, nb.N_Q)), (c, 1, bv + h)),
              lambda g, h: [(sp.Sum(_d(av, k) * P[i, k], (k, 1, av + g)), P[i, av], [i]),
                            (sp.Sum(_d(bv, c) * sp.Sum(dO[i, c] * P[i, av], (i, 1, nb.N_Q)), (c, 1, bv + h)),
                             dv.rhs, [])], "dV = Pᵀ dO, any sizes")
    dp_definition = _gradient(pf, dp, _loss, P, loss_sizes,
              lambda g, h: sp.Sum(sp.Sum(_d(bp, k) * V[k, c], (k, 1, bp + h)) *
                                  sp.Sum(_d(ap, i) * dO[i, c], (i, 1, ap + g)), (c, 1, nb.D_V)),
              lambda g, h: [(sp.Sum(_d(bp, k) * V[k, c], (k, 1, bp + h)), V[bp, c], [c]),
                            (sp.Sum(_d(ap, i) * dO[i, c], (i, 1, ap + g)), dO[ap, c], [c])], "dP = dO Vᵀ, any sizes")
    _gradient(pf, dq, _score_functional, Q, score_sizes,
              lambda g, h: nb.SCALE * sp.Sum(_d(aq, i) * sp.Sum(dS_[i, k] * sp.Sum(_d(bq, c) * K[k, c], (c, 1, bq + h)),
                                                                 (k, 1, nb.N_K)), (i, 1, aq + g)),
              lambda g, h: [(sp.Sum(_d(bq, c) * K[k, c], (c, 1, bq + h)), K[k, bq], [k]),
                            (sp.Sum(_d(aq, i) * sp.Sum(dS_[i, k] * K[k, bq], (k, 1, nb.N_K)), (i, 1, aq + g)),
                             dq.rhs / nb.SCALE, [])], "dQ = scale·dS K, any sizes")
    _gradient(pf, dk, _score_functional, K, score_sizes,
              lambda g, h: nb.SCALE * sp.Sum(sp.Sum(_d(bk, c) * Q[i, c], (c, 1, bk + h)) *
                                             sp.Sum(_d(ak, k) * dS_[i, k], (k, 1, ak + g)), (i, 1, nb.N_Q)),
              lambda g, h: [(sp.Sum(_d(bk, c) * Q[i, c], (c, 1, bk + h)), Q[i, bk], [i]),
                            (sp.Sum(_d(ak, k) * dS_[i, k], (k, 1, ak + g)), dS_[i, ak], [i])], "dK = scale·dSᵀ Q, any sizes")
    _d_from_do(pf, d_from_do, correction, dp_definition)
    return pf.finish(Result(rule=rule(P, dP, a, b, n_k)))
