"""Online softmax (Milakov & Gimelshein 2018; FlashAttention): blocks merge exactly.

A block of scores s_j with values v_j is summarised by a state (m, l, o): a reference
m, the rescaled sum l = Σ exp(s_j - m) and the normalised output o = Σ exp(s_j - m) v_j / l.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs import notation as nt
from proofs.engine import DEFINITION, HYPOTHESIS, Derivation, Proof, Result, identity

# Symbols of two states; downstream layers lambdify the merge over exactly these.
M1, L1, O1, M2, L2, O2 = sp.symbols("m_1 l_1 o_1 m_2 l_2 o_2", real=True)
STATE_SYMBOLS = (M1, L1, O1, M2, L2, O2)
IDENTITY_STATE = (-sp.oo, sp.Integer(0), sp.Integer(0))

Merge = Callable[..., tuple]


def merge(m1, l1, o1, m2, l2, o2, *, reference=None):
    """The rescaling identity: m = max(m1, m2), l = e^{m1-m} l1 + e^{m2-m} l2,
    o = (e^{m1-m} l1 o1 + e^{m2-m} l2 o2) / l. Any reference works; max only avoids overflow."""
    m = sp.Max(m1, m2) if reference is None else reference
    w1, w2 = sp.exp(m1 - m) * l1, sp.exp(m2 - m) * l2
    l = w1 + w2
    return m, l, (w1 * o1 + w2 * o2) / l


def _block(prefix: str, size: int, dim: int):
    scores = list(sp.symbols(f"{prefix}_1:{size + 1}", real=True))
    values = [sp.Matrix(sp.symbols(f"v_{prefix}{j + 1}_1:{dim + 1}", real=True)) for j in range(size)]
    return scores, values


def _state(scores, values, ref):
    l = sum(sp.exp(s - ref) for s in scores)
    o = sum((sp.exp(s - ref) * v for s, v in zip(scores, values)), sp.zeros(*values[0].shape)) / l
    return ref, l, o


def _softmax_output(scores, values):
    denom = sum(sp.exp(s) for s in scores)
    return sum((sp.exp(s) * v for s, v in zip(scores, values)), sp.zeros(*values[0].shape)) / denom


# A block of any size, summarised by its raw sums: Z = Σ_j exp(s_j), U = Σ_j exp(s_j) v_j (one component of v).
def _raw(name: str) -> tuple[sp.Symbol, sp.Symbol]:
    return sp.Symbol(f"Z_{name}", positive=True), sp.Symbol(f"U_{name}", real=True)


def _abstract_state(z, u, ref):
    """state(B, m) of a block of any size in its raw sums: (m, e^{−m} Z, U / Z)."""
    return ref, sp.exp(-ref) * z, u / z


def _block_definitions(pf: Proof) -> None:
    """A block of any size: its state in terms of its raw sums Z, U, checked on the symbolic sum."""
    j, size = sp.symbols("j n_B", integer=True, positive=True)
    s, v, m = sp.IndexedBase("s", real=True), sp.IndexedBase("v", real=True), sp.Symbol("m", real=True)
    pf.premise("definition", "block state: l = Σ_j exp(s_j − m), o = Σ_j exp(s_j − m) v_j / l; raw sums "
               "Z = Σ_j exp(s_j), U = Σ_j exp(s_j) v_j; softmax attention over a set of keys is U / Z",
               sp.Symbol("(m, l, o)"), sp.Symbol("state(s, V; m)"), kind=DEFINITION)
    l_sum = sp.Sum(sp.exp(s[j] - m), (j, 1, size))
    z_sum = sp.Sum(sp.exp(s[j]), (j, 1, size))
    pulled = sp.factor_terms(sp.expand(l_sum, power_exp=True))
    pf.equal("linearity of the sum", "a block of any size n_B: l = Σ_j exp(s_j − m) = e^{−m} Z", pulled,
             sp.exp(-m) * z_sum, subject=l_sum)
    pf.premise("definition", "sums over disjoint blocks add: Z_{A∪B} = Z_A + Z_B, U_{A∪B} = U_A + U_B",
               sp.Symbol("Z_{A∪B}"), sp.Symbol("Z_A + Z_B"), kind=DEFINITION)


def online_softmax_merge(merge: Merge | None = None, *, sizes=(2, 3), dim: int = 2) -> Derivation:
    """Merging the states of any number of blocks of any sizes equals softmax attention over their union.

    Proved by induction on the number of blocks from a two-block lemma over raw sums (any block
    sizes, any references, and the default max reference). ``merge`` defaults to the derived
    rule; pass another (same signature) to have it judged: a merge that drops a rescale factor is
    refused. ``sizes``/``dim`` set the explicit cross-check.
    """
    rule = merge or globals()["merge"]
    pf = Proof("online-softmax-merge")
    _block_definitions(pf)
    (za, ua), (zb, ub) = _raw("A"), _raw("B")
    ma, mb, ref = sp.symbols("m_A m_B M", real=True)
    for label, reference in (("any merge reference M", ref), ("the default reference M = max(m_A, m_B)", None)):
        m, l, o = rule(*_abstract_state(za, ua, ma), *_abstract_state(zb, ub, mb), reference=reference)
        target = _abstract_state(za + zb, ua + ub, m)
        pf.equal("rescaling identity", f"lemma, blocks of any sizes, {label}: merge(state(A), state(B)) = "
                 "state(A ∪ B) in l and o", sp.Matrix([l, o]), sp.Matrix(target[1:]))

    # Induction on the number of blocks N: fold_N = merge(fold_{N−1}, state(B_N)), the statement at N − 1
    # as the hypothesis. Sums to N − 1 stand as opaque symbols Z_<, U_< in the checks.
    N, b = nt.N_BLOCKS, nt.B_IDX
    l_stated, o_stated = pf.claimed(nt.L_MERGED), pf.claimed(nt.O_MERGED)
    zp, up = sp.symbols("Z_< U_<", positive=True)
    opaque = {sp.Sum(nt.Z_BLOCK[b], (b, 1, N - 1)): zp, sp.Sum(nt.U_BLOCK[b], (b, 1, N - 1)): up}

    def at(expr, n_blocks, ref):
        """The stated expression for n_blocks blocks and merged reference ref; a last term split off."""
        out = expr.subs({nt.M_FINAL: ref})
        if n_blocks == N:
            out = out.replace(lambda e: isinstance(e, sp.Sum) and e.limits[0][2] == N,
                              lambda e: sp.Sum(e.function, (b, 1, N - 1)) + e.function.subs(b, N))
        else:
            out = out.subs(N, n_blocks).doit()
        return out.xreplace(opaque)

    m1, m_prev, m_last = sp.symbols("m_1 m_{N-1} m_N", real=True)
    z1, u1, zn, un = nt.Z_BLOCK[1], nt.U_BLOCK[1], nt.Z_BLOCK[N], nt.U_BLOCK[N]
    m, l, o = rule(*IDENTITY_STATE, *_abstract_state(z1, u1, m1))
    base = pf.equal("base case N_B = 1", "merge((−∞, 0, 0), state(B_1)) has the stated l and o at N_B = 1",
                    sp.Matrix([l, o]), sp.Matrix([at(l_stated, 1, m), at(o_stated, 1, m)]))
    hyp_l = l_stated.subs({nt.M_FINAL: m_prev, N: N - 1}).xreplace(opaque)
    hyp_o = o_stated.subs({N: N - 1}).xreplace(opaque)
    pf.premise("induction hypothesis", "the merged state of B_1..B_{N−1} is as stated for N_B − 1 blocks, with "
               "reference m_{N−1}", sp.Symbol("fold_{N-1}"), sp.Tuple(m_prev, hyp_l, hyp_o), kind=HYPOTHESIS)
    m, l, o = rule(m_prev, hyp_l, hyp_o, *_abstract_state(zn, un, m_last))  # default: max reference
    step = pf.equal("rescaling identity", "step: merge(fold_{N−1}, state(B_N)) with the default max reference has the "
                    "stated l and o at N_B", sp.Matrix([l, o]), sp.Matrix([at(l_stated, N, m), at(o_stated, N, m)]))
    monoid = merge_monoid(rule)
    assoc = pf.cite(monoid, sp.Eq(nt.merge(nt.merge(nt.STATE_A, nt.STATE_B), nt.STATE_C),
                                  nt.merge(nt.STATE_A, nt.merge(nt.STATE_B, nt.STATE_C)), evaluate=False))

    def conclude() -> tuple[bool, str]:
        ok = bool(base and step and assoc)
        return ok, ("base case and step checked above; associativity: any merge order of the N_B blocks gives the "
                    "left fold's state" if ok else "base case, step or associativity failed")

    for subject, stated in ((nt.L_MERGED, l_stated), (nt.O_MERGED, o_stated)):
        pf.holds("induction on the number of blocks", f"{subject} = {sp.sstr(stated)} for every N_B ≥ 1",
                 subject, stated, conclude, subject=subject)

    # Cross-check on explicit symbolic scores and vector values.
    (xs, xv), (ys, yv) = _block("x", sizes[0], dim), _block("y", sizes[1], dim)
    r1, r2 = sp.symbols("m_x m_y", real=True)
    sx, sy = _state(xs, xv, r1), _state(ys, yv, r2)
    direct_out = _softmax_output(xs + ys, xv + yv)
    m, l, o = rule(*sx, *sy, reference=ref)
    pf.equal("rescaling identity", f"cross-check, blocks of {sizes[0]} and {sizes[1]} explicit scores, "
             f"{dim}-dimensional values: o = softmax attention over x ∪ y", o, direct_out)
    return pf.finish(Result(zip(("m", "l", "o"), rule(*STATE_SYMBOLS)), symbols=STATE_SYMBOLS))


def merge_monoid(rule: Merge | None = None) -> Derivation:
    """Associative, commutative, with identity (-∞, 0, 0): blocks may be merged in any order."""
    rule = rule or merge
    # l > 0 is the stated assumption: with l merely real the merged l can vanish and o is undefined.
    a, b, c = ((sp.Symbol(f"m_{s}", real=True), sp.Symbol(f"l_{s}", positive=True), sp.Symbol(f"o_{s}", real=True))
               for s in "abc")
    pf = Proof("online-softmax-monoid")
    A, B, C, e = nt.STATE_A, nt.STATE_B, nt.STATE_C, nt.IDENTITY_STATE
    mg = nt.merge
    pf.premise("definition", "A, B, C are states (m, l, o) with l > 0; merge is the rescaling rule",
               sp.Tuple(A, B, C), sp.Tuple(sp.Tuple(*a), sp.Tuple(*b), sp.Tuple(*c)), kind=DEFINITION)
    left = rule(*rule(*a, *b), *c)
    right = rule(*a, *rule(*b, *c))
    pf.equal("associativity", "merge(merge(A, B), C) = merge(A, merge(B, C)) in m, l and o",
             sp.Matrix(left), sp.Matrix(right), establishes=sp.Eq(mg(mg(A, B), C), mg(A, mg(B, C)), evaluate=False))
    pf.equal("commutativity", "merge(A, B) = merge(B, A)", sp.Matrix(rule(*a, *b)), sp.Matrix(rule(*b, *a)),
             establishes=sp.Eq(mg(A, B), mg(B, A), evaluate=False))
    pf.equal("identity", "merge((−∞, 0, 0), A) = A", sp.Matrix(rule(*IDENTITY_STATE, *a)), sp.Matrix(a),
             establishes=sp.Eq(mg(e, A), A, evaluate=False))
    pf.equal("identity", "merge(A, (−∞, 0, 0)) = A", sp.Matrix(rule(*a, *IDENTITY_STATE)), sp.Matrix(a),
             establishes=sp.Eq(mg(A, e), A, evaluate=False))
    return pf.finish(Result(identity=IDENTITY_STATE))


def stream_unnormalised(blocks, init=None):
    """FlashAttention-2 loop: running max m, running sum l, unnormalised accumulator acc."""
    m, l, acc = init or (-sp.oo, sp.Integer(0), sp.zeros(*blocks[0][1][0].shape))
    history = []
    for scores, values in blocks:
        m_new = sp.Max(m, *scores)
        alpha = sp.exp(m - m_new)  # rescales what was accumulated under the old max
        p = [sp.exp(s - m_new) for s in scores]
        l = alpha * l + sum(p)
        acc = alpha * acc + sum((pj * v for pj, v in zip(p, values)), sp.zeros(*values[0].shape))
        m = m_new
        history.append((m, l, acc))
    return m, l, acc, history


def _stream_step(m, l, acc, m_new, z_block, u_block):
    """One FA-2 update with a block given by its raw sums, rescaled to the new running max m_new."""
    alpha = sp.exp(m - m_new)
    return m_new, alpha * l + sp.exp(-m_new) * z_block, alpha * acc + sp.exp(-m_new) * u_block


def unnormalised_accumulator() -> Derivation:
    """Any number of blocks of any sizes: by induction l = e^{−m} Σ_b Z_b and acc = e^{−m} Σ_b U_b, so acc/l is
    the stated softmax attention."""
    pf = Proof("online-softmax-unnormalised")
    _block_definitions(pf)
    pf.premise("definition", "within a block, Σ_j exp(s_j − m') = e^{−m'} Z_B and Σ_j exp(s_j − m') v_j = e^{−m'} U_B",
               sp.Symbol("Σ_j exp(s_j − m')"), sp.Symbol("e^{−m'} Z_B"), kind=DEFINITION)
    N, b = nt.N_BLOCKS, nt.B_IDX
    z_sum, u_sum = sp.Sum(nt.Z_BLOCK[b], (b, 1, N)), sp.Sum(nt.U_BLOCK[b], (b, 1, N))
    zp, up = sp.symbols("Z_< U_<", positive=True)  # the sums to N − 1, opaque in the checks
    m_prev, m_new = sp.symbols("m_{N-1} m_N", real=True)
    zn, un = nt.Z_BLOCK[N], nt.U_BLOCK[N]
    _, l1, acc1 = _stream_step(-sp.oo, 0, 0, m_new, nt.Z_BLOCK[1], nt.U_BLOCK[1])
    base = pf.equal("exp(−∞) = 0", "base case: from (−∞, 0, 0), one block gives l = e^{−m} Z_1, acc = e^{−m} U_1",
                    sp.Matrix([l1, acc1]), sp.Matrix([sp.exp(-m_new) * z_sum, sp.exp(-m_new) * u_sum]).subs(N, 1).doit())
    pf.premise("induction hypothesis", "after N − 1 blocks: l = e^{−m} Σ_{b<N} Z_b, acc = e^{−m} Σ_{b<N} U_b",
               sp.Symbol("(l, acc)_{N-1}"), sp.Tuple(sp.exp(-m_prev) * zp, sp.exp(-m_prev) * up), kind=HYPOTHESIS)
    _, l, acc = _stream_step(m_prev, sp.exp(-m_prev) * zp, sp.exp(-m_prev) * up, m_new, zn, un)
    step = pf.equal("rescaling identity", "step: with α = e^{m_{N−1} − m_N}, l = e^{−m_N} Σ_{b≤N} Z_b and "
                    "acc = e^{−m_N} Σ_{b≤N} U_b, for any new running max m_N",
                    sp.Matrix([l, acc]), sp.Matrix([sp.exp(-m_new) * (zp + zn), sp.exp(-m_new) * (up + un)]))
    out = (sp.exp(-m_new) * u_sum) / (sp.exp(-m_new) * z_sum)
    pf.holds("induction on the number of blocks", "so after the last block acc / l = e^{−m} Σ U_b / (e^{−m} Σ Z_b), "
             "the stated attention", out, pf.claimed(nt.ACC_OVER_L),
             lambda: (base and step and identity(out, pf.claimed(nt.ACC_OVER_L))[0],
                      "base case and step checked above; e^{−m} cancels"), subject=nt.ACC_OVER_L)
    # Cross-check: the real loop on explicit symbolic blocks.
    (xs, xv), (ys, yv) = _block("x", 2, 2), _block("y", 3, 2)
    m, l, acc, history = stream_unnormalised([(xs, xv), (ys, yv)])
    pf.equal("rescaling identity", "cross-check, explicit blocks of 2 and 3 scores: after block 2, "
             "l = Σ_{x∪y} exp(s − m)", l, sum(sp.exp(s - m) for s in xs + ys))
    pf.equal("rescaling identity", "cross-check: acc / l equals softmax attention over both blocks", acc / l,
             _softmax_output(xs + ys, xv + yv))
    pf.equal("definition of max", "cross-check: the running max is the max over all scores", m, sp.Max(*(xs + ys)))
    return pf.finish(Result(m=m, l=l, acc=acc))


def logsumexp_merge() -> Derivation:
    """lse = m + log l = log Σ exp(s); merged lse computed from the merge rule; base 2 converts by ln 2."""
    pf = Proof("logsumexp-merge")
    (za, _), (zb, _) = _raw("A"), _raw("B")
    ma, mb = sp.symbols("m_A m_B", real=True)
    _block_definitions(pf)
    m, l = nt.M_REF, nt.L_SUM
    pf.premise("definition", "a state's l = Σ_j exp(s_j − m), so Σ_j exp(s_j) = e^m l", nt.SUM_EXP,
               sp.exp(m) * l, kind=DEFINITION)
    pf.equal("log of a product", "m + log l = log(e^m l) = log Σ_j exp(s_j)", m + sp.log(l),
             sp.expand_log(sp.log(sp.exp(m) * l), force=True), subject=m + sp.log(l),
             establishes=sp.Eq(m + sp.log(l), sp.log(nt.SUM_EXP), evaluate=False))
    # The merged lse, computed from the merge rule (not typed): lse of the merged state.
    lse_a, lse_b = sp.symbols("lse_1 lse_2", real=True)
    mm, lm, _ = merge(*_abstract_state(za, 0, ma), *_abstract_state(zb, 0, mb))
    merged = mm + sp.log(lm)
    at = {za: sp.exp(lse_a), zb: sp.exp(lse_b)}  # Z = e^{lse}
    pf.equal("exp is injective on ℝ", "exp(lse of the merged state) = e^{lse_1} + e^{lse_2}",
             sp.exp(merged).subs(at), sp.exp(lse_a) + sp.exp(lse_b),
             establishes=sp.Eq(nt.lse(nt.merge(nt.STATE_A, nt.STATE_B)),
                               sp.log(sp.exp(nt.lse(nt.STATE_A)) + sp.exp(nt.lse(nt.STATE_B))), evaluate=False))
    x = sp.Symbol("x", real=True)
    pf.equal("change of base", "exp2(x · log₂e) = eˣ: a base-2 kernel computes the same weights",
             sp.Pow(2, x / sp.log(2), evaluate=False).rewrite(sp.exp), sp.exp(x))
    stated = next(c for c in sp.And.make_args(pf.statement) if c.lhs.has(nt.M_BASE2))
    pf.equal("change of base", "a base-2 state (m₂ = m log₂e, l) has natural lse (m₂ + log₂ l) · ln 2",
             stated.lhs, stated.rhs, establishes=stated)
    return pf.finish(Result(lse=M1 + sp.log(L1), merged=sp.simplify(merged.subs(at)), symbols=(lse_a, lse_b)))
