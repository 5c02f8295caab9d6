"""The backward pass of attention, derived by the chain rule from the softmax Jacobian.

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

from proofs import index_sums
from proofs import notation as nt
from proofs.claims import cited
from proofs.engine import CITED, DEFINITION, Derivation, Proof, Result, identity
from proofs.theorems.softmax import jacobian_in_weights, softmax_jacobian
from proofs.validate import as_dimension

SCALE = sp.Symbol("scale", positive=True)

# dS from (P, dP): the rule under test; the default is the derived one.
DsRule = Callable[[sp.Matrix, sp.Matrix], sp.Matrix]


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


def _any_size(pf: Proof, stated: dict) -> dict:
    """Every identity entrywise for matrices of any size: index sums over symbolic ranges, reduced exactly."""
    i, j, c, a, b, k = sp.symbols("i j c a b k", integer=True, nonnegative=True)
    ms = {m.name: m for rel in stated.values() for m in rel.atoms(sp.MatrixSymbol)}
    P, V, dO, dP, D, Q, K = (ms[n] for n in ("P", "V", "dO", "dP", "D", "Q", "K"))
    n_q, n_k, d_v = P.shape[0], P.shape[1], V.shape[1]
    G = sp.MatrixSymbol("G", n_q, n_k)
    at = lambda name, **by: stated[name].rhs.xreplace({ms[m]: v for m, v in by.items()})  # noqa: E731
    ok = {}
    L = sp.Sum(dO[i, c] * sp.Sum(P[i, j] * V[j, c], (j, 0, n_k - 1)), (i, 0, n_q - 1), (c, 0, d_v - 1))  # Σ dO ∘ (PV)
    for name, var in (("dV", V), ("dP", P)):
        ok[name] = pf.holds("differentiation of O = PV", f"any sizes: ∂L/∂{name[1:]}_ab = ({stated[name].rhs})_ab, "
                            "L = Σ_ic dO_ic Σ_j P_ij V_jc", sp.diff(L, var[a, b]), stated[name].rhs[a, b],
                            lambda var=var, name=name: index_sums.same(sp.diff(L, var[a, b]), stated[name].rhs[a, b]),
                            establishes=stated[name])
    # Softmax layer, from the cited softmax-jacobian: ∂P_ak/∂S_ab = P_ak(δ_kb − P_ab), so
    # dS_ab = Σ_k dP_ak ∂P_ak/∂S_ab (chain rule through row a's softmax).
    jacobian = cited("softmax-jacobian")
    jac = pf.cite(jacobian)
    local = jacobian.statement.rhs.xreplace({nt.I: k, nt.J: b}).replace(
        lambda e: isinstance(e, sp.Indexed) and e.base == nt.A, lambda e: P[a, e.indices[0]])
    pull = sp.Sum(dP[a, k] * local, (k, 0, n_k - 1))
    d_row = stated["D"].rhs[a, 0]
    ok["D"] = pf.holds("softmax Jacobian (softmax-jacobian)", "any sizes: the correction in dS_ab = Σ_k dP_ak P_ak(δ_kb − "
                       "P_ab) is P_ab times the stated D_a", P[a, b] * dP[a, b] - pull, P[a, b] * d_row,
                       lambda: index_sums.same(P[a, b] * dP[a, b] - pull, P[a, b] * d_row), establishes=stated["D"])
    ok["dS"] = pf.holds("softmax Jacobian (softmax-jacobian)", "any sizes: dS_ab = Σ_k dP_ak P_ak(δ_kb − P_ab) is the "
                        "stated P ∘ (dP − D1ᵀ)", pull, stated["dS"].rhs[a, b],
                        lambda: (jac and index_sums.same(pull, stated["dS"].rhs[a, b].xreplace({D[a, 0]: d_row}))[0],
                                 "the pullback equals the stated dS entry, D as stated"), establishes=stated["dS"])
    from_dp = stated["D"].rhs.xreplace({dP: dO * V.T})  # the stated D with dP = dO Vᵀ
    ok["D[dO]"] = pf.holds("O = PV", "any sizes: with dP = dO Vᵀ and O = PV, rowsum(P ∘ dP) = rowsum(dO ∘ O)",
                           from_dp[a, 0], at("D[dO]", O=P * V)[a, 0],
                           lambda: index_sums.same(from_dp[a, 0], at("D[dO]", O=P * V)[a, 0]),
                           establishes=stated["D[dO]"])
    L_lin = sp.Sum(G[i, j] * SCALE * sp.Sum(Q[i, c] * K[j, c], (c, 0, Q.shape[1] - 1)), (i, 0, n_q - 1), (j, 0, n_k - 1))
    for name, var in (("dQ", Q), ("dK", K)):
        ok[name] = pf.holds("differentiation of S = scale·QKᵀ", f"any sizes: ∂/∂{name[1:]} Σ G ∘ S = the stated {name} "
                            "with dS = G, any upstream G", sp.diff(L_lin, var[a, b]), at(name, dS=G)[a, b],
                            lambda var=var, name=name: index_sums.same(sp.diff(L_lin, var[a, b]), at(name, dS=G)[a, b]))
    return ok


def attention_backward(rule: DsRule | None = None, *, n_q: int = 2, n_k: int = 3, d: int = 2) -> Derivation:
    """Derive the backward identities on symbolic matrices (default 2×3 queries/keys, head dim 2).

    ``rule(P, dP) -> dS`` defaults to the derived P ∘ (dP − D); pass another to have it
    judged (dropping the −D correction is refused).
    """
    rule = rule or ds_rule
    n_q, n_k, d = int(as_dimension(n_q, "n_q")), int(as_dimension(n_k, "n_k")), int(as_dimension(d, "d"))
    d_v = d
    pf = Proof("attention-backward")
    # The statement's conjuncts by the gradient they name; D is stated twice (from dP and from dO).
    stated = {str(c.lhs) + ("[dO]" if "dO" in str(c.rhs) and str(c.lhs) == "D" else ""): c
              for c in sp.And.make_args(pf.statement)}
    where = f"(checked on explicit {n_q}×{n_k} scores, head dim {d}, all entries symbolic)"
    sizes = {nt.N_Q: n_q, nt.N_K: n_k, sp.Symbol("d", integer=True, positive=True): d, nt.D_V: d_v}

    def claimed(name: str, **matrices):
        """The statement's right side for ``name`` at these sizes and explicit matrices."""
        return nt.explicit(stated[name].rhs, sizes, matrices)
    ids = backward_identities(n_q, n_k, d, d_v)
    Q, K, V, dO = ids.Q, ids.K, ids.V, ids.dO
    pf.premise("chain rule", "any scalar loss enters through O; its gradient there is dO, so take L = Σ dO ∘ O",
               sp.Symbol("L"), sp.Symbol("Σ_ic dO_ic O_ic"), kind=DEFINITION)
    general = _any_size(pf, stated)

    # Cross-checks on explicit matrices, and the dS rule under test.

    # P as free symbols: the matrix-product layers are polynomial, so these steps are cheap.
    Pf = _matrix("p", n_q, n_k, positive=True)
    L_of_P = sum((dO.multiply_elementwise(Pf * V)))
    pf.equal("differentiation of O = PV", f"dV = ∂L/∂V = Pᵀ dO {where}",
             sp.Matrix(n_k, d_v, lambda j, c: sp.diff(L_of_P, V[j, c])), claimed("dV", P=Pf, dO=dO))
    pf.equal("differentiation of O = PV", f"dP = ∂L/∂P = dO Vᵀ {where}",
             sp.Matrix(n_q, n_k, lambda i, j: sp.diff(L_of_P, Pf[i, j])), claimed("dP", dO=dO, V=V))

    # Softmax layer, from the softmax-Jacobian theorem: dS_i = J(P_i)ᵀ dP_i with J = diag(a) − a aᵀ.
    pf.cite(softmax_jacobian(n_k))
    dPf = _matrix("dp", n_q, n_k, real=True)
    via_jacobian = sp.Matrix.vstack(*[(jacobian_in_weights(Pf.row(i).T).T * dPf.row(i).T).T for i in range(n_q)])
    pf.equal("softmax Jacobian (softmax-jacobian)", "dS_i = J(P_i)ᵀ dP_i equals the rule under test, P ∘ (dP − D)",
             via_jacobian, rule(Pf, dPf))
    pf.equal("definition of D", f"D = rowsum(P ∘ dP), the correction the rule uses {where}", row_correction(Pf, dPf),
             claimed("D", P=Pf, dP=dPf))
    pf.equal("softmax Jacobian (softmax-jacobian)", f"dS_i = J(P_i)ᵀ dP_i equals the stated dS {where}",
             via_jacobian, claimed("dS", P=Pf, dP=dPf, D=claimed("D", P=Pf, dP=dPf)))
    pf.equal("O = PV", f"the row correction in output terms: Σ_j P_ij dP_ij = Σ_c dO_ic O_ic {where}",
             row_correction(Pf, dO * V.T), claimed("D[dO]", dO=dO, O=Pf * V))

    # End to end through the exponentials: differentiate L(S) with P = softmax(S) written out.
    Sf = _matrix("s", n_q, n_k, real=True)
    P_of_S = row_softmax(Sf)
    L_of_S = sum(dO.multiply_elementwise(P_of_S * V))
    by_diff = sp.Matrix(n_q, n_k, lambda i, j: sp.diff(L_of_S, Sf[i, j]))
    by_rule = rule(P_of_S, dO * V.T)
    # One probe suffices to refute; the symbolic reduction to zero is the proof, and probing
    # these exponential quotients at 40 digits is what costs time.
    end_to_end = pf.holds("chain rule through softmax", "∂L/∂S, differentiated through the exponentials, equals dS",
                          by_diff, by_rule, lambda: identity(by_diff, by_rule, probes=1))

    # Score layer S = scale·QKᵀ: linear, so its pullback of any upstream G is exact to check.
    G = _matrix("G", n_q, n_k, real=True)
    L_lin = sum(G.multiply_elementwise(SCALE * Q * K.T))
    pull_q = pf.equal("differentiation of S = scale·QKᵀ", "∂/∂Q Σ G ∘ S = the stated dQ with dS = G, any upstream G",
                      sp.Matrix(n_q, d, lambda i, c: sp.diff(L_lin, Q[i, c])), claimed("dQ", dS=G, K=K))
    pull_k = pf.equal("differentiation of S = scale·QKᵀ", "∂/∂K Σ G ∘ S = the stated dK with dS = G, any upstream G",
                      sp.Matrix(n_k, d, lambda j, c: sp.diff(L_lin, K[j, c])), claimed("dK", dS=G, Q=Q))
    pf.premise("chain rule", "∂L/∂Q = Σ_ij (∂L/∂S_ij) ∂S_ij/∂Q: the pullback through S of G = ∂L/∂S = dS",
               sp.Symbol("∂L/∂Q"), sp.Symbol("Σ_ij dS_ij ∂S_ij/∂Q"), kind=CITED,
               reference="chain rule of multivariable calculus")
    for name in ("dQ", "dK"):
        pf.holds("chain rule", f"with G = dS: {stated[name]} for any sizes", stated[name].lhs, stated[name].rhs,
                 lambda name=name: (general[name] and general["dS"] and pull_q and pull_k and end_to_end,
                                    "G = dS (checked above for any sizes) in the pullback (checked above for every G "
                                    "and any sizes; explicit cross-checks passed)"), establishes=stated[name])
    return pf.finish(ids)
