"""Online softmax (Milakov & Gimelshein 2018; FlashAttention): blocks merge exactly.

A block of scores s_j with values v_j is summarised by a state (m, l, o): a reference
m, the rescaled sum l = Σ exp(s_j - m) and the normalised output o = Σ exp(s_j - m) v_j / l.
Every claim here is proved by rule applications alone: the merge (or FlashAttention-2's update)
enters as a definition premise over ∀-symbols, which the checker unfolds in the statement itself,
so the verdict names the rule the claim was proved for and a wrong rule passed in is refused.
"""
from __future__ import annotations

from typing import Callable

import sympy as sp

from proofs import notation_online as no
from proofs.engine import Derivation, Proof, Result

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


# The ∀-symbols of a merge definition: m may be −∞ and l may be 0, so the identity state is an instance.
_DEF_M1, _DEF_M2 = sp.symbols("m_1 m_2", extended_real=True)
_DEF_L1, _DEF_L2 = sp.symbols("l_1 l_2", nonnegative=True)
_DEF_O1, _DEF_O2 = sp.symbols("o_1 o_2", real=True)
_DEF_R = sp.Symbol("R", real=True)
_DEF_ARGS = (_DEF_M1, _DEF_L1, _DEF_O1, _DEF_M2, _DEF_L2, _DEF_O2)


def define_merge(pf: Proof, rule: Merge, *, with_reference: bool = False):
    """The definition premise merge(X, Y) := rule(X, Y) (or merge_at(X, Y, R) := rule(X, Y, reference=R)).

    Its head occurs in the statement, so the verdict lists it: the rule the laws were proved for."""
    x, y = sp.Tuple(*_DEF_ARGS[:3]), sp.Tuple(*_DEF_ARGS[3:])
    if with_reference:
        return pf.define(no.merge_at(x, y, _DEF_R), sp.Tuple(*rule(*_DEF_ARGS, reference=_DEF_R)),
                         "merge_at(X, Y, R): the merge rule with reference R", forall=[*_DEF_ARGS, _DEF_R])
    return pf.define(no.merge(x, y), sp.Tuple(*rule(*_DEF_ARGS)), "merge(X, Y): the merge rule, max reference",
                     forall=list(_DEF_ARGS))


def _conclude(pf: Proof, conjunct, using, description: str):
    return pf.rewrite(conjunct.lhs, conjunct.rhs, using, description)


def online_softmax_merge(merge: Merge | None = None) -> Derivation:
    """Merging block states is softmax attention over the union of the blocks, for any number of blocks.

    The statement characterises the left fold: the closed form S_N(M) = (M, e^{−M} Σ Z_b, Σ U_b / Σ Z_b)
    is what merge((−∞, 0, 0), s_1) gives at N = 1 and what merge(S_N, s_{N+1}) gives at N + 1, for
    any N and any prefix reference M. ``merge`` defaults to the derived rule; pass another (same
    signature) to have it judged: the definition premises unfold it, so a rule that drops a rescale
    factor, on the default path or with a given reference, is refused for a symbolic number of blocks.
    """
    rule = merge or globals()["merge"]
    pf = Proof("online-softmax-merge")
    block_of_scores, first, step, step_at = no.merge_conjuncts()
    pf.linearity(block_of_scores.lhs, block_of_scores.rhs, "a block of any size n_B: e^{−m} leaves each sum, "
                 "Σ_j e^{s_j − m} = e^{−m} Z and Σ_j e^{s_j − m} v_j = e^{−m} U")
    by_max, by_ref = define_merge(pf, rule), define_merge(pf, rule, with_reference=True)
    _conclude(pf, first, [by_max], "N = 1: the identity state drops out (e^{−∞} · 0 = 0)")
    _conclude(pf, step, [by_max], "N → N + 1, max reference: both terms rescaled to max(M, m_{N+1})")
    _conclude(pf, step_at, [by_ref], "N → N + 1, any reference R")
    return pf.finish(Result(zip(("m", "l", "o"), rule(*STATE_SYMBOLS)), symbols=STATE_SYMBOLS))


def merge_monoid(rule: Merge | None = None) -> Derivation:
    """Exact on blocks, associative, commutative, with identity (−∞, 0, 0): blocks merge in any order.

    ``rule`` defaults to the derived merge. The laws alone do not single it out (a merge that never
    rescales, l = l₁ + l₂, is associative too), so the statement includes exactness on blocks, which
    such a rule fails."""
    rule = rule or merge
    pf = Proof("online-softmax-monoid")
    definition = define_merge(pf, rule)
    descriptions = ("exact on two blocks: merge(s(A), s(B)) = s(A ∪ B)", "associativity", "commutativity",
                    "left identity: e^{−∞} · 0 = 0", "right identity")
    for conjunct, description in zip(no.monoid_conjuncts(), descriptions):
        _conclude(pf, conjunct, [definition], description)
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
    alpha = sp.exp(m - m_new)  # rescales what was accumulated under the old max
    return m_new, alpha * l + sp.exp(-m_new) * z_block, alpha * acc + sp.exp(-m_new) * u_block


_STEP_M, _STEP_NEW = sp.Symbol("m", extended_real=True), sp.Symbol("m'", real=True)
_STEP_L, _STEP_ACC = sp.Symbol("l", nonnegative=True), sp.Symbol("acc", real=True)
_STEP_Z, _STEP_U = sp.Symbol("Z", positive=True), sp.Symbol("U", real=True)


def unnormalised_accumulator(step_rule=None) -> Derivation:
    """Any number of blocks of any sizes: the update keeps l = e^{−m} Σ_b Z_b and acc = e^{−m} Σ_b U_b, so
    acc / l is softmax attention. ``step_rule(m, l, acc, m_new, Z, U)`` defaults to FlashAttention-2's update
    (``_stream_step``); pass another to have it judged."""
    rule = step_rule or _stream_step
    pf = Proof("online-softmax-unnormalised")
    state = sp.Tuple(_STEP_M, _STEP_L, _STEP_ACC)
    by_step = pf.define(no.fa2_step(state, _STEP_NEW, _STEP_Z, _STEP_U),
                        sp.Tuple(*rule(_STEP_M, _STEP_L, _STEP_ACC, _STEP_NEW, _STEP_Z, _STEP_U)),
                        "one FlashAttention-2 update: rescale by e^{m − m′}, add the block's e^{−m′} Z and e^{−m′} U",
                        forall=[_STEP_M, _STEP_L, _STEP_ACC, _STEP_NEW, _STEP_Z, _STEP_U])
    positive_l = sp.Symbol("l", positive=True)
    by_output = pf.define(no.normalise(sp.Tuple(_STEP_M, positive_l, _STEP_ACC)), _STEP_ACC / positive_l,
                          "the output after the last block: acc / l", forall=[_STEP_M, positive_l, _STEP_ACC])
    first, step, output = no.unnormalised_conjuncts()
    _conclude(pf, first, [by_step], "the first block, from (−∞, 0, 0): e^{−∞} · 0 = 0")
    _conclude(pf, step, [by_step], "block N + 1: α = e^{M − m′} turns e^{−M} into e^{−m′}")
    _conclude(pf, output, [by_output], "acc / l: e^{−M} cancels")
    return pf.finish(Result(zip(("m", "l", "acc"), rule(_STEP_M, _STEP_L, _STEP_ACC, _STEP_NEW, _STEP_Z, _STEP_U)),
                            symbols=(_STEP_M, _STEP_L, _STEP_ACC, _STEP_NEW, _STEP_Z, _STEP_U)))


_LSE_M, _LSE_L, _LSE_O = sp.Symbol("m", real=True), sp.Symbol("l", positive=True), sp.Symbol("o", real=True)


def logsumexp_merge() -> Derivation:
    """lse = m + log l = log Σ exp(s); lse of the merged state (the merge rule unfolded, not typed) is
    log(e^{lse(A)} + e^{lse(B)}); base 2 converts by ln 2."""
    pf = Proof("logsumexp-merge")
    of_block, of_merge, base2 = no.logsumexp_conjuncts()
    pulled = pf.linearity(no.block_sum(sp.exp(no.SCORE[no.J_IDX] - no.M_REF)),
                          sp.exp(-no.M_REF) * no.block_sum(sp.exp(no.SCORE[no.J_IDX])),
                          "a block of any size n_B: e^{−m} leaves the sum")
    pf.rewrite(of_block.lhs, of_block.rhs, [pulled], "m + log(e^{−m} Σ_j e^{s_j}) = log Σ_j e^{s_j}")
    by_merge = define_merge(pf, globals()["merge"])
    by_lse = pf.define(no.lse(sp.Tuple(_LSE_M, _LSE_L, _LSE_O)), _LSE_M + sp.log(_LSE_L), "lse of a state: m + log l",
                       forall=[_LSE_M, _LSE_L, _LSE_O])
    _conclude(pf, of_merge, [by_merge, by_lse], "lse of the merged state: log(e^{m} · e^{m_A − m} l_A + …)")
    x = sp.Symbol("x", real=True)
    pf.identity(sp.Pow(2, x / sp.log(2), evaluate=False).rewrite(sp.exp), sp.exp(x),
                "exp2(x · log₂e) = eˣ: a base-2 kernel computes the same weights")
    pf.identity(base2.lhs, base2.rhs, "a base-2 state (m₂ = m log₂e, l) has natural lse (m₂ + log₂ l) · ln 2")
    # The merged lse as a function of the two lse's, from the rule in use (downstream checks lambdify it).
    lse_a, lse_b = sp.symbols("lse_1 lse_2", real=True)
    mm, lm, _ = globals()["merge"](lse_a, sp.Integer(1), 0, lse_b, sp.Integer(1), 0)
    return pf.finish(Result(lse=M1 + sp.log(L1), merged=sp.simplify(mm + sp.log(lm)), symbols=(lse_a, lse_b)))
