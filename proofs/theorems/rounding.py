"""Rounding-error bounds for attention: tolerances that are proved, not tuned.

The chain of claims, each a checked derivation:

- ``rounding-gamma-lemma``: a product of n factors (1 + δ_k), |δ_k| ≤ u, is 1 + θ_n with
  |θ_n| ≤ (1 + u)ⁿ − 1 ≤ γ_n = nu/(1 − nu), by induction on n (Higham, *Accuracy and Stability of
  Numerical Algorithms*, Lemma 3.1).
- ``rounding-dot-product``: |fl(xᵀy) − xᵀy| ≤ γ_n |x|ᵀ|y| for any summation order.
- ``rounding-softmax-shifted``: softmax with max subtraction (Blanchard, D. J. Higham & N. J.
  Higham 2021): the weight factors, the sum's error and the quotient, the pattern the forward repeats.
- ``rounding-online-rescale``: what one rescale by fl(exp(m_old − m_new)) adds, and the total over
  T = ⌈N_k / BLOCK_N⌉ key blocks (the exponent drifts telescope; the counts grow by 2 per block).
- ``rounding-attention-forward``: a per-element a-posteriori bound for the whole forward of a
  FlashAttention-2 style kernel, computable from c|Q||K|ᵀ, |P||V| and the block count, for a
  precision :class:`Recipe`.
- ``rounding-attention-probabilistic``: the same with the Higham–Mary λ√n·u chains and a
  Hoeffding bound for the rounding of P, holding with a stated failure probability.

The standard model of floating-point arithmetic, the accuracy of exp and a few facts of real analysis
(the triangle inequality, |e^t − 1| ≤ e^{|t|} − 1, exp's tangent line) are cited premises; every step
is a rule application the checker replays, and each claim's inequality is the end of one chain. Numbers flow downstream as the SymPy expressions in ``result``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from proofs.checker import conjuncts, substitute
from proofs.engine import Derivation, Proof, Result
from proofs.notation import inline

HIGHAM_BOOK = "N. J. Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., SIAM 2002"
STANDARD_MODEL = (f"standard model of floating-point arithmetic, with gradual underflow "
                  f"({HIGHAM_BOOK}, §2.2, eqs. (2.4) and (2.8))")
EXP_ACCURACY = ("stated accuracy of the exp/exp2 implementation in ulps (CUDA C Programming Guide, "
                "mathematical functions appendix: exp2f 2 ulp; PyTorch ATen Vectorized<float>::exp_u20: "
                "20 ulp; a correctly rounded exp: 1/2 ulp)")
HIGHAM_MARY = ("N. J. Higham & T. Mary, A new approach to probabilistic rounding error analysis, "
               "SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4")
HOEFFDING = "W. Hoeffding, Probability inequalities for sums of bounded random variables, JASA 58, 1963, Thm 2"
# Lemma 3.1's proof (claim rounding-gamma-lemma, for one u) with a bound u_k per factor: where several roundings of
# different formats compose, and a citation of the claim cannot be instantiated at another n or u.
MIXED_PRODUCTS = (f"{HIGHAM_BOOK}, Lemma 3.1 (its proof, with |δ_k| ≤ u_k): |Π(1 + δ_k) − 1| ≤ Π(1 + u_k) − 1 "
                  "(claim rounding-gamma-lemma)")
BLANCHARD = ("P. Blanchard, D. J. Higham & N. J. Higham, Accurate computation of the log-sum-exp and "
             "softmax functions, IMA J. Numer. Anal. 41(4), 2021")

# ----------------------------------------------------------------------------- precision facts

# Unit roundoff u = 2^-p (p the precision in bits, round to nearest) and the smallest positive
# normal number λ of each format: the one source of these numbers for every layer.
UNIT_ROUNDOFF = {"float64": sp.Rational(1, 2**53), "float32": sp.Rational(1, 2**24),
                 "float16": sp.Rational(1, 2**11), "bfloat16": sp.Rational(1, 2**8)}
SMALLEST_NORMAL = {"float64": sp.Rational(1, 2**1022), "float32": sp.Rational(1, 2**126),
                   "float16": sp.Rational(1, 2**14), "bfloat16": sp.Rational(1, 2**126)}


@dataclass(frozen=True)
class Recipe:
    """Where a kernel rounds: the formats of its inputs/output, accumulators and P before P·V,
    its exp's accuracy in ulps of the accumulator format, and its key-block sizes.

    ``block_n`` lists the block sizes the kernel may use (autotuning picks one); the bound takes
    the worst of them. (1,) is the loosest: every key its own block."""

    name: str
    inputs: str
    accumulator: str
    probabilities: str
    exp_ulps: sp.Rational
    block_n: tuple[int, ...]

    def __post_init__(self):
        for field in ("inputs", "accumulator", "probabilities"):
            if getattr(self, field) not in UNIT_ROUNDOFF:
                raise ValueError(f"recipe {field} must be one of {sorted(UNIT_ROUNDOFF)}, got {getattr(self, field)!r}")
        if not self.block_n or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in self.block_n):
            raise ValueError(f"recipe block_n must be a non-empty tuple of positive ints, got {self.block_n!r}")

    @property
    def values(self) -> dict:
        """The recipe's numbers, keyed by the symbols of the forward bound."""
        ua = UNIT_ROUNDOFF[self.accumulator]
        return {U_IN: UNIT_ROUNDOFF[self.inputs], U_A: ua, U_P: UNIT_ROUNDOFF[self.probabilities],
                MU: 2 * sp.Rational(self.exp_ulps) * ua, LAMBDA_A: SMALLEST_NORMAL[self.accumulator],
                LAMBDA_P: SMALLEST_NORMAL[self.probabilities], LAMBDA_O: SMALLEST_NORMAL[self.inputs]}


RECIPES = ("flash-attention-2", "torch-cpu-sdpa", "float32-blocked", "loosest")


def recipe(name: str, dtype: str, **changes) -> Recipe:
    """A named precision recipe for inputs of ``dtype`` (float32, float16 or bfloat16).

    flash-attention-2: FlashAttention-2 and this project's Triton kernel (float32 accumulators,
    P rounded to the input format, exp2 to 2 ulp, BLOCK_N 32 or 64). torch-cpu-sdpa: PyTorch's
    CPU flash kernel (float32 accumulators, P in the input format, exp_u20, key blocks of 512).
    float32-blocked: a float32 FlashAttention-2 loop with P kept in float32 (kernels.mutants
    .blocked_attention, blocks of 16). loosest: everything in the input format, exp to 2 ulp,
    any blocking."""
    if dtype not in ("float32", "float16", "bfloat16"):
        raise ValueError(f"dtype must be float32, float16 or bfloat16, got {dtype!r}")
    table = {
        "flash-attention-2": dict(accumulator="float32", probabilities=dtype, exp_ulps=2, block_n=(32, 64)),
        "torch-cpu-sdpa": dict(accumulator="float32", probabilities=dtype, exp_ulps=20, block_n=(512,)),
        "float32-blocked": dict(accumulator="float32", probabilities="float32", exp_ulps=1, block_n=(16,)),
        "loosest": dict(accumulator=dtype, probabilities=dtype, exp_ulps=2, block_n=(1,)),
    }
    if name not in table:
        raise ValueError(f"recipe name must be one of {', '.join(RECIPES)}, got {name!r}")
    fields = dict(table[name], exp_ulps=sp.Rational(table[name]["exp_ulps"]))
    return replace(Recipe(name, dtype, **fields), **changes)


# ----------------------------------------------------------------------------- symbols

U = sp.Symbol("u", positive=True)
N = sp.Symbol("n", integer=True, positive=True)
_J, _K = sp.symbols("j k", integer=True, positive=True)
THETA = sp.Function("theta", real=True)
DELTAS = sp.IndexedBase("delta", real=True)  # δ_{j,k}, the relative error of rounding k of product j
FAMILY = sp.Symbol("j", integer=True, positive=True)  # which product: one per term of a sum, say
_M0 = sp.Symbol("m", integer=True, nonnegative=True)
_TA, _TB = sp.symbols("a b", real=True)
DELTA = sp.Symbol("delta", real=True)

# The forward bound's symbols: recipe, shape, and per-(row, key) inputs.
U_IN, U_A, U_P, MU = sp.symbols("u_in u_a u_p mu", positive=True)
LAMBDA_A, LAMBDA_P, LAMBDA_O = sp.symbols("lambda_a lambda_p lambda_o", positive=True)
HEAD_DIM, BLOCK_N, BLOCKS, KEYS = sp.symbols("D B_N T N_k", integer=True, positive=True)
QK_ABS = sp.Symbol("c|q||k|", nonnegative=True)  # c·|q_i|ᵀ|k_j|: the score's rounding acts at it
GAP = sp.Symbol("m-s", nonnegative=True)  # m_i − s_ij ≥ 0, distance below the row max
DELTA_MAX = sp.Symbol("Delta_max", nonnegative=True)  # the row's largest score-error bound
LAM = sp.Symbol("lambda", positive=True)  # the probabilistic bound's λ
# Row quantities (sums over the row's keys j, one column d of V):
T_P = sp.Symbol("T_P", nonnegative=True)  # the rounding of P: u_p Σ p(1 + R)|v|, or its λ-form
PRV = sp.Symbol("(P∘R)|V|", nonnegative=True)
PB = sp.Symbol("(P∘B)1", nonnegative=True)
O_ABS = sp.Symbol("|o|", nonnegative=True)
V_L1 = sp.Symbol("||v||_1", nonnegative=True)
ZETA = sp.Symbol("zeta", nonnegative=True)
ERR = sp.Symbol("|fl(o) - o|", nonnegative=True)


# What the statements speak of (the catalogue builds them from these, the theorems establish them).
X_F, Y_F = sp.Function("x", real=True), sp.Function("y", real=True)  # functions of the index j
DOT_ERROR = sp.Symbol("|fl(x^T y) - x^T y|", nonnegative=True)
SOFTMAX_GAP = sp.Symbol("|s_j - m|", nonnegative=True)
SOFTMAX_PB = sp.Symbol("Σ p_k B_k", nonnegative=True)
SOFTMAX_ERROR = sp.Symbol("|p̂_j - p_j| / p_j", nonnegative=True)
DRIFT = sp.Symbol("|tau_j|", nonnegative=True)
LAST_MAX, SCORE_J = sp.symbols("m_T s_j", real=True)
COUNT_L, COUNT_A, COUNT_EXP = sp.symbols("n_l(T) n_a(T) exps(T)", integer=True, positive=True)
FAILURE_PROB = sp.Symbol("P(some element exceeds its bound)", nonnegative=True)
CHAINS, Q_FAIL = sp.symbols("C Q", positive=True)  # rounding chains in one output tensor; failure probability


def rescale_counts(per_block: int = 2) -> tuple[sp.Expr, sp.Expr]:
    """(n_l, n_a): roundings on a weight in l and in acc over T blocks (claim rounding-online-rescale)."""
    return BLOCK_N + per_block * (BLOCKS - 1), BLOCK_N + 1 + per_block * (BLOCKS - 1)


def softmax_relative_bound() -> sp.Expr:
    a_j = sp.exp(U * SOFTMAX_GAP) * (1 + MU) - 1
    return (1 + U) * (a_j + SOFTMAX_PB) / (1 - SOFTMAX_PB) + U


def forward_bound_expression() -> sp.Expr:
    return _forward_expressions()["bound"]


def product_bound(n, u=U) -> sp.Expr:
    """(1 + u)ⁿ − 1: what n roundings of at most u can do to a product (claim rounding-gamma-lemma)."""
    return (1 + u)**n - 1


def gamma(n, u=U) -> sp.Expr:
    """γ_n = nu / (1 − nu)."""
    return n * u / (1 - n * u)


def gamma_tilde(n, lam=LAM, u=U) -> sp.Expr:
    """Higham–Mary's γ̃_n(λ) = exp(λ√n u + n u²/(1 − u)) − 1."""
    return sp.exp(lam * sp.sqrt(n) * u + n * u**2 / (1 - u)) - 1


# ============================================================================= claims


def gamma_lemma(gamma_of=None) -> Derivation:
    """|Π_{k≤n}(1 + δ_k) − 1| ≤ (1 + u)ⁿ − 1 ≤ γ_n for |δ_k| ≤ u, nu < 1; both by induction on n from n = 0.

    ``gamma_of(n, u)`` replaces γ to have a candidate judged: nu alone (no denominator) is refused."""
    gamma = gamma_of or globals()["gamma"]
    pf = Proof("rounding-gamma-lemma")
    k = sp.Symbol("k", integer=True, positive=True)  # the induction step k − 1 → k
    j = FAMILY
    theta = pf.define(THETA(j, _M0), sp.Product(1 + DELTAS[j, _K], (_K, 1, _M0)) - 1,
                      "θ_{j,m} is defined by Π_{k=1}^{m} (1 + δ_{j,k}) = 1 + θ_{j,m}, for every product j",
                      forall=[j, _M0])
    bounded = pf.assume(sp.Le(sp.Abs(DELTAS[j, _K]), U, evaluate=False), "every rounding errs by at most u: "
                        "|δ_{j,k}| ≤ u", forall=[j, _K])
    triangle = pf.cite_external(sp.Le(sp.Abs(_TA + _TB), sp.Abs(_TA) + sp.Abs(_TB), evaluate=False),
                                "triangle inequality", "|a + b| ≤ |a| + |b| for real a, b", forall=[_TA, _TB])
    # |θ_n| ≤ (1 + u)ⁿ − 1, by induction from n = 0.
    P = pf.stated(sp.Abs(THETA(j, N)))
    empty = pf.truncation(sp.Abs(THETA(j, 0)), 0, [theta], "θ_{j,0} = Π over no factors − 1 = 0", label="base case")
    base = pf.chain([empty, pf.sign(0, "≤", 0)], sp.Abs(THETA(j, 0)), "≤", 0, "n = 0: |θ_{j,0}| = 0 = (1 + u)⁰ − 1",
                    label="base case")
    hyp = pf.hypothesis(substitute(P, {N: k - 1}))
    d_k, before = DELTAS[j, k], THETA(j, k - 1)
    recur = pf.truncation(THETA(j, k), before * (1 + d_k) + d_k, [theta], "θ_k = (1 + θ_{k−1})(1 + δ_k) − 1 = "
                          "θ_{k−1}(1 + δ_k) + δ_k: the last factor of the product taken out", label="algebra", peel=k)
    same = pf.rewrite(sp.Abs(THETA(j, k)), sp.Abs(before * (1 + d_k) + d_k), [recur], label="algebra")
    split = pf.instance(triangle, {_TA: before * (1 + d_k), _TB: d_k}, "|θ_{k−1}(1 + δ_k) + δ_k| ≤ "
                        "|θ_{k−1}||1 + δ_k| + |δ_k|", label="triangle inequality")
    one = pf.instance(triangle, {_TA: 1, _TB: d_k}, "|1 + δ_k| ≤ 1 + |δ_k|", label="triangle inequality")
    small = pf.instance(bounded, {j: j, _K: k}, "|δ_{j,k}| ≤ u", label="the standard model's bound")
    factor = pf.chain([one, pf.sign(1 + sp.Abs(d_k), "≤", 1 + U, using=[small])], sp.Abs(1 + d_k), "≤", 1 + U,
                      "|1 + δ_k| ≤ 1 + u", label="triangle inequality")
    grown = ((1 + U)**(k - 1) - 1) * (1 + U)
    times = pf.bound([hyp, factor], "mul", sp.Abs(before) * sp.Abs(1 + d_k), "≤", grown,
                     "|θ_{k−1}||1 + δ_k| ≤ ((1 + u)^{k−1} − 1)(1 + u), both factors ≥ 0", label="monotonicity")
    plus = pf.bound([times, small], "add", sp.Abs(before) * sp.Abs(1 + d_k) + sp.Abs(d_k), "≤", grown + U,
                    label="monotonicity")
    closes = pf.identity(grown + U, (1 + U)**k - 1, "((1 + u)^{k−1} − 1)(1 + u) + u = (1 + u)^k − 1",
                         label="induction step")
    apart = pf.identity(split.relation.rhs, plus.relation.lhs, "|θ_{k−1}(1 + δ_k)| = |θ_{k−1}||1 + δ_k|",
                        label="algebra")
    step = pf.chain([same, split, apart, plus, closes], sp.Abs(THETA(j, k)), "≤", (1 + U)**k - 1, label="induction step")
    pf.induction(P, N, 0, base, step, hyp, "by induction on n: |θ_n| ≤ (1 + u)ⁿ − 1", step_var=k,
                 label="induction")
    # (1 + u)ⁿ(1 − nu) ≤ 1 for every n ≥ 0, by induction; with nu < 1 it is (1 + u)ⁿ − 1 ≤ γ_n.
    Q = sp.Le((1 + U)**N * (1 - N * U), 1, evaluate=False)
    base_q = pf.sign(1, "≤", 1, "n = 0: (1 + u)⁰(1 − 0) = 1", label="base case")
    hyp_q = pf.hypothesis(substitute(Q, {N: k - 1}))
    lower = (1 + U)**(k - 1) * (1 - (k - 1) * U)
    expand = pf.identity((1 + U)**k * (1 - k * U), lower - k * U**2 * (1 + U)**(k - 1),
                         "(1 + u)^k(1 − ku) = (1 + u)^{k−1}(1 − (k − 1)u) − ku²(1 + u)^{k−1}", label="induction step")
    drop = pf.sign(lower - k * U**2 * (1 + U)**(k - 1), "≤", lower, "ku²(1 + u)^{k−1} ≥ 0", label="induction step")
    step_q = pf.chain([expand, drop, hyp_q], (1 + U)**k * (1 - k * U), "≤", 1, label="induction step")
    all_n = pf.induction(Q, N, 0, base_q, step_q, hyp_q, "by induction on n: (1 + u)ⁿ(1 − nu) ≤ 1", step_var=k,
                         label="induction")
    below_one = pf.assume(sp.Lt(N * U, 1, evaluate=False), "the lemma's hypothesis: n·u below one")
    pf.sign((1 + U)**N - 1, "≤", gamma(N), "γ_n − ((1 + u)ⁿ − 1) = (1 − (1 + u)ⁿ(1 − nu))/(1 − nu) ≥ 0",
            using=[all_n, below_one], label="γ bound")
    return pf.finish(Result(gamma=gamma(N), product=product_bound(N, U), symbols=(N, U)))


def _fl_sum_tree(terms, deltas, pairwise: bool):
    """fl of a sum of ``terms`` with one δ per addition, recursive or pairwise order."""
    if len(terms) == 1:
        return terms[0]
    if pairwise:
        h = len(terms) // 2
        left = _fl_sum_tree(terms[:h], deltas, True)
        right = _fl_sum_tree(terms[h:], deltas, True)
    else:
        left, right = _fl_sum_tree(terms[:-1], deltas, False), terms[-1]
    return (left + right) * (1 + next(deltas))


FL_DOT = sp.Symbol("fl(x^T y)", real=True)
_P = sp.Symbol("p", integer=True, nonnegative=True)  # terms summed so far


def dot_product_bound() -> Derivation:
    """|fl(xᵀy) − xᵀy| ≤ γ_n |x|ᵀ|y| in any summation order: each term carries a θ_{j,n} of the γ lemma
    (cited), and |Σ_{j≤p} x_j y_j θ_{j,n}| ≤ γ_n Σ_{j≤p} |x_j||y_j| by induction on the terms p."""
    from proofs.claims import cited

    x, y, j, t = X_F, Y_F, FAMILY, THETA
    bound = gamma(N) * sp.Sum(sp.Abs(x(j)) * sp.Abs(y(j)), (j, 1, N))
    pf = Proof("rounding-dot-product")
    pf.assume(sp.Lt(N * U, 1, evaluate=False), "nu < 1: γ_n = nu/(1 − nu) is defined (the γ lemma's hypothesis)")
    error = pf.define(DOT_ERROR, sp.Abs(FL_DOT - sp.Sum(x(j) * y(j), (j, 1, N))), "the absolute error of fl(xᵀy)")
    model = pf.cite_external(sp.Eq(FL_DOT, sp.Sum(x(j) * y(j) * (1 + t(j, N)), (j, 1, N)), evaluate=False),
                             STANDARD_MODEL + "; Higham 2002, eqs. (3.2)–(3.4)",
                             "in any summation order, term j is rounded once as a product and once per addition on its "
                             "path to the root: at most n factors (1 + δ_{j,k}), padded with δ = 0 to n, so "
                             "fl(xᵀy) = Σ x_j y_j (1 + θ_{j,n})")
    lemma = cited("rounding-gamma-lemma")
    one, two = (c for c in sorted(conjuncts(lemma.statement), key=lambda c: not c.has(THETA)))
    g_n = sp.Symbol("gamma_n", real=True)  # γ_n by name, so no step divides by 1 − nu
    named = pf.define(g_n, gamma(N), "γ_n = nu/(1 − nu)")
    is_named = pf.rewrite(gamma(N), g_n, [named], relation_="≤", label="γ lemma")
    theta_bound = pf.chain([pf.cite(lemma, one), pf.cite(lemma, two), is_named], sp.Abs(t(j, N)), "≤", g_n,
                           "|θ_{j,n}| ≤ (1 + u)ⁿ − 1 ≤ γ_n for every term j (claim rounding-gamma-lemma)",
                           label="γ lemma", forall=[j])
    absprod = pf.identity(sp.Abs(_TA * _TB), sp.Abs(_TA) * sp.Abs(_TB), "|ab| = |a||b|", forall=[_TA, _TB],
                          label="algebra")
    triangle = pf.cite_external(sp.Le(sp.Abs(_TA + _TB), sp.Abs(_TA) + sp.Abs(_TB), evaluate=False),
                                "triangle inequality", "|a + b| ≤ |a| + |b| for real a, b", forall=[_TA, _TB])
    term = lambda i: x(i) * y(i) * t(i, N)  # noqa: E731
    weight = lambda i: sp.Abs(x(i)) * sp.Abs(y(i))  # noqa: E731
    Q = sp.Le(sp.Abs(sp.Sum(term(j), (j, 1, _P))), g_n * sp.Sum(weight(j), (j, 1, _P)), evaluate=False)
    k = sp.Symbol("k", integer=True, positive=True)
    at = lambda rel, v: substitute(rel, {_P: v})  # noqa: E731
    empty = pf.truncation(at(Q, 0).lhs, at(Q, 0).rhs, [], "no term: both sums are empty", label="base case")
    base = pf.chain([empty, pf.sign(at(Q, 0).rhs, "≤", at(Q, 0).rhs)], at(Q, 0).lhs, "≤", at(Q, 0).rhs,
                    label="base case")
    hyp = pf.hypothesis(at(Q, k - 1))
    head = sp.Sum(term(j), (j, 1, k - 1))
    peel = pf.truncation(at(Q, k).lhs, sp.Abs(head + term(k)), [], "the last term taken out", label="one more term",
                         peel=k)
    split = pf.instance(triangle, {_TA: head, _TB: term(k)}, label="triangle inequality")
    apart = pf.rewrite(split.relation.rhs, sp.Abs(head) + weight(k) * sp.Abs(t(k, N)), [absprod],
                       "|x_k y_k θ_k| = |x_k||y_k||θ_k|", label="algebra")
    times = pf.bound([pf.sign(weight(k), "≤", weight(k)), pf.instance(theta_bound, {j: k})], "mul",
                     weight(k) * sp.Abs(t(k, N)), "≤", weight(k) * g_n, "|x_k||y_k||θ_k| ≤ |x_k||y_k| γ_n",
                     label="γ lemma")
    plus = pf.bound([hyp, times], "add", apart.relation.rhs, "≤", at(Q, k - 1).rhs + weight(k) * g_n,
                    label="monotonicity")
    whole = pf.truncation(plus.relation.rhs, at(Q, k).rhs, [], label="one more term", peel=k)
    step = pf.chain([peel, split, apart, plus, whole], at(Q, k).lhs, "≤", at(Q, k).rhs, label="induction step")
    summed = pf.induction(Q, _P, 0, base, step, hyp, "by induction on the number of terms p", step_var=k,
                          label="induction", forall=[_P])
    unfold = pf.rewrite(DOT_ERROR, sp.Abs(sp.Sum(x(j) * y(j) * (1 + t(j, N)), (j, 1, N)) - sp.Sum(x(j) * y(j), (j, 1, N))),
                        [error, model], label="standard model, collected")
    collect = pf.linearity(unfold.relation.rhs, at(Q, N).lhs, "fl(xᵀy) − xᵀy = Σ x_j y_j θ_{j,n}",
                           label="standard model, collected")
    back = pf.rewrite(at(Q, N).rhs, bound, [named], relation_="≤", label="γ lemma")
    pf.chain([unfold, collect, pf.instance(summed, {_P: N}), back], DOT_ERROR, "≤", bound,
             "|fl(xᵀy) − xᵀy| ≤ γ_n |x|ᵀ|y|", label="conclusion")
    return pf.finish(Result(bound=bound, gamma=gamma(N)))


# ----------------------------------------------------------------------------- shared lemmas (rule applications)

_I = sp.Symbol("i", integer=True, positive=True)  # a key index, bound by Σ and ∀
_TT = sp.Symbol("t", real=True)


def _abs_facts(pf: Proof, which=("triangle", "series", "tangent", "product")) -> dict:
    """The facts about |·| and exp the bounds below use: cited theorems of real analysis, and |ab| = |a||b| checked."""
    make = dict(
        triangle=lambda: pf.cite_external(sp.Le(sp.Abs(_TA + _TB), sp.Abs(_TA) + sp.Abs(_TB), evaluate=False),
                                          "triangle inequality", "|a + b| ≤ |a| + |b| for real a, b", forall=[_TA, _TB]),
        series=lambda: pf.cite_external(sp.Le(sp.Abs(sp.exp(_TT) - 1), sp.exp(sp.Abs(_TT)) - 1, evaluate=False),
                                        "exp series", "|e^t − 1| ≤ e^{|t|} − 1 for real t: e^t − 1 = Σ_{i≥1} t^i/i!, and "
                                        "the triangle inequality termwise", forall=[_TT]),
        tangent=lambda: pf.cite_external(sp.Le(sp.exp(_TA) * (1 + _TB - _TA), sp.exp(_TB), evaluate=False),
                                         "convexity of exp", "e^a(1 + b − a) ≤ e^b for real a, b: exp lies above its "
                                         "tangent at a", forall=[_TA, _TB]),
        product=lambda: pf.identity(sp.Abs(_TA * _TB), sp.Abs(_TA) * sp.Abs(_TB), "|ab| = |a||b|", forall=[_TA, _TB],
                                    label="algebra"))
    return {name: make[name]() for name in which}


def _factor_lemma(pf: Proof, facts: dict, a, small_a, t, small_t, label: str):
    """|(1 + a)(1 + t) − 1| ≤ A(1 + T) + T from ``small_a``: |a| ≤ A and ``small_t``: |t| ≤ T (triangle inequality)."""
    big_a, big_t = small_a.rhs, small_t.rhs
    lhs = sp.Abs((1 + a) * (1 + t) - 1)
    spread = pf.identity(lhs, sp.Abs(a * (1 + t) + t), "(1 + a)(1 + t) − 1 = a(1 + t) + t", label=label)
    split = pf.instance(facts["triangle"], {_TA: a * (1 + t), _TB: t}, label="triangle inequality")
    apart = pf.rewrite(split.rhs, sp.Abs(a) * sp.Abs(1 + t) + sp.Abs(t), [facts["product"]], "|a(1 + t)| = |a||1 + t|",
                       label=label)
    one = pf.instance(facts["triangle"], {_TA: 1, _TB: t}, label="triangle inequality")
    up = pf.sign(one.rhs, "≤", 1 + big_t, "1 + |t| ≤ 1 + T", using=[small_t], label=label)
    factor = pf.chain([one, up], sp.Abs(1 + t), "≤", 1 + big_t, label=label)
    times = pf.bound([small_a, factor], "mul", sp.Abs(a) * sp.Abs(1 + t), "≤", big_a * (1 + big_t),
                     "|a||1 + t| ≤ A(1 + T), both factors ≥ 0", label=label)
    plus = pf.bound([times, small_t], "add", apart.rhs, "≤", times.rhs + big_t, label=label)
    return pf.chain([spread, split, apart, plus], lhs, "≤", plus.rhs,
                    "|(1 + a)(1 + t) − 1| ≤ A(1 + T) + T", label=label)


def _exp_monotone(pf: Proof, facts: dict, small, big, below, label: str, signs=()):
    """e^small ≤ e^big from ``below``: small ≤ big (the tangent of exp at ``small`` lies below it); ``signs``: the
    facts that sign the factors of big − small."""
    tangent = pf.instance(facts["tangent"], {_TA: small, _TB: big}, label="convexity of exp")
    lift = pf.sign(sp.exp(small), "≤", tangent.lhs, "e^a ≤ e^a(1 + b − a) since b − a ≥ 0", using=[below, *signs],
                   label=label)
    return pf.chain([lift, tangent], sp.exp(small), "≤", sp.exp(big), label=label)


def _exp_factor(pf: Proof, facts: dict, eta, small_eta, label: str):
    """|e^η − 1| ≤ e^H − 1 from ``small_eta``: |η| ≤ H."""
    h = small_eta.rhs
    series = pf.instance(facts["series"], {_TT: eta}, label="exp series")
    grow = _exp_monotone(pf, facts, sp.Abs(eta), h, small_eta, label)
    less = pf.sign(series.rhs, "≤", sp.exp(h) - 1, using=[grow], label=label)
    return pf.chain([series, less], sp.Abs(sp.exp(eta) - 1), "≤", sp.exp(h) - 1, label=label)


def _sum_abs(pf: Proof, triangle, f, g, each, top, label: str, const=0):
    """|Σ_{i≤top} f(i)| ≤ Σ_{i≤top} g(i) + top·c from ``each``: |f(i)| ≤ g(i) + c for every i (∀ i), by induction on
    the terms (a constant c stays out of the sum: Σ_i c = N c would ask the engine to split a sum)."""
    p, k = _P, sp.Symbol("k", integer=True, positive=True)
    Q = sp.Le(sp.Abs(sp.Sum(f(_I), (_I, 1, p))), sp.Sum(g(_I), (_I, 1, p)) + p * const, evaluate=False)
    at = lambda v: substitute(Q, {p: v})  # noqa: E731
    empty = pf.truncation(at(0).lhs, at(0).rhs, [], "no term: both sums are empty", label="base case")
    base = pf.chain([empty, pf.sign(at(0).rhs, "≤", at(0).rhs)], at(0).lhs, "≤", at(0).rhs, label="base case")
    hyp = pf.hypothesis(at(k - 1))
    head = sp.Sum(f(_I), (_I, 1, k - 1))
    peel = pf.truncation(at(k).lhs, sp.Abs(head + f(k)), [], "the last term taken out", label="one more term", peel=k)
    split = pf.instance(triangle, {_TA: head, _TB: f(k)}, label="triangle inequality")
    plus = pf.bound([hyp, pf.instance(each, {_I: k})], "add", split.rhs, "≤", at(k - 1).rhs + (g(k) + const),
                    label=label)
    whole = pf.truncation(plus.rhs, at(k).rhs, [], label="one more term", peel=k)
    step = pf.chain([peel, split, plus, whole], at(k).lhs, "≤", at(k).rhs, label="induction step")
    summed = pf.induction(Q, p, 0, base, step, hyp, "by induction on the number of terms", step_var=k,
                          label="induction", forall=[p])
    return pf.instance(summed, {p: top}, label=label)


def _abs_sum_of(pf: Proof, facts: dict, parts, bounds, label: str):
    """|Σ parts| ≤ Σ bounds from |part| ≤ bound for each (the triangle inequality, one part at a time)."""
    total, big, fact = parts[0], bounds[0].rhs, bounds[0]
    for part, each in zip(parts[1:], bounds[1:]):
        split = pf.instance(facts["triangle"], {_TA: total, _TB: part}, label="triangle inequality")
        plus = pf.bound([fact, each], "add", split.rhs, "≤", big + each.rhs, label=label)
        total, big = total + part, big + each.rhs
        fact = pf.chain([split, plus], sp.Abs(total), "≤", big, label=label)
    return fact


def _sum_below(pf: Proof, small, big, each, top, label: str):
    """Σ_{i≤top} f(i) ≤ Σ_{i≤top} g(i) from ``each``: f(i) ≤ g(i) for every i (∀ i), by induction on the terms."""
    p, k = _P, sp.Symbol("k", integer=True, positive=True)
    Q = sp.Le(sp.Sum(small(_I), (_I, 1, p)), sp.Sum(big(_I), (_I, 1, p)), evaluate=False)
    at = lambda v: substitute(Q, {p: v})  # noqa: E731
    empty = pf.truncation(at(0).lhs, at(0).rhs, [], "no term: both sums are empty", label="base case")
    base = pf.chain([empty, pf.sign(at(0).rhs, "≤", at(0).rhs)], at(0).lhs, "≤", at(0).rhs, label="base case")
    hyp = pf.hypothesis(at(k - 1))
    peel = pf.truncation(at(k).lhs, sp.Sum(small(_I), (_I, 1, k - 1)) + small(k), [], "the last term taken out",
                         label="one more term", peel=k)
    plus = pf.bound([hyp, pf.instance(each, {_I: k})], "add", peel.rhs, "≤", at(k - 1).rhs + big(k), label=label)
    whole = pf.truncation(plus.rhs, at(k).rhs, [], label="one more term", peel=k)
    step = pf.chain([peel, plus, whole], at(k).lhs, "≤", at(k).rhs, label="induction step")
    summed = pf.induction(Q, p, 0, base, step, hyp, "by induction on the number of terms", step_var=k,
                          label="induction", forall=[p])
    return pf.instance(summed, {p: top}, label=label)


# The softmax model: key i's exact weight w_i = e^{x_i}, x_i = s_i − m; its computed weight
# ê_i = fl(exp(fl(x_i))) = e^{x_i(1 + δx_i)}(1 + ε_i); the computed sum D̂ = Σ ê_i(1 + θ_i); p̂_j = fl(ê_j / D̂).
_XS = sp.Function("x", real=True)  # x_i = s_i − m
_DX = sp.Function("delta_x", real=True)  # the subtraction's rounding
_EPF = sp.Function("epsilon", real=True)  # the exp's error
_THS = sp.Function("theta_s", real=True)  # what the sum's additions do to term i
_WS = sp.Function("w", positive=True)  # exact weights e^{x_i}
_EH = sp.Function("e_hat", real=True)  # computed weights
_AW, _BW = sp.Function("a_w", real=True), sp.Function("b_w", real=True)  # their relative errors, alone and summed
_DH = sp.Symbol("D_hat", positive=True)  # fl(Σ ê_i): a sum of positive floats, rounded, is positive
_OH = sp.Symbol("o_hat", real=True)  # ê_j / D̂ before its rounding
_PH = sp.Symbol("p_hat", real=True)  # p̂_j
_PJ = sp.Symbol("p_j", positive=True)
_SW = sp.Symbol("S", positive=True)  # Σ w_i
_BETA = sp.Symbol("beta", real=True)  # Σ p_i b_i: the sum's relative error


def _softmax_terms():
    """A_i and B_i of the claim as functions of the key index (|x_i| = |s_i − m|)."""
    a_of = lambda i: sp.exp(U * sp.Abs(_XS(i))) * (1 + MU) - 1  # noqa: E731
    theta = (1 + U)**(N - 1) - 1
    b_of = lambda i: (1 + a_of(i)) * (1 + theta) - 1  # noqa: E731
    return a_of, theta, b_of


def softmax_shifted(sum_roundings=None) -> Derivation:
    """p̂_j = fl(e_j / fl(Σ e_k)), e_k = fl(exp(fl(s_k − m))), m = max s: a relative error bound, by rule
    applications from the standard model. ``sum_roundings`` replaces the n − 1 roundings the sum puts on a
    term, to have a candidate judged: one too few is refused."""
    x, mu, u, j, i, n = SOFTMAX_GAP, MU, U, _J, _I, N
    a_of, theta, b_of = _softmax_terms()
    if sum_roundings is not None:
        theta = (1 + U)**sum_roundings - 1
    rel = softmax_relative_bound()
    pf = Proof("rounding-softmax-shifted")
    facts = _abs_facts(pf)
    weight = pf.define(_WS(i), sp.exp(_XS(i)), "w_i = e^{s_i − m}, x_i = s_i − m", forall=[i])
    computed = pf.cite_external(sp.Eq(_EH(i), sp.exp(_XS(i) * (1 + _DX(i))) * (1 + _EPF(i)), evaluate=False),
                                STANDARD_MODEL + "; " + EXP_ACCURACY,
                                "ê_i = fl(exp(fl(s_i − m))) = e^{x_i(1 + δx_i)}(1 + ε_i)", forall=[i])
    sub_small = pf.cite_external(sp.Le(sp.Abs(_DX(i)), u, evaluate=False), STANDARD_MODEL, "|δx_i| ≤ u", forall=[i])
    exp_small = pf.cite_external(sp.Le(sp.Abs(_EPF(i)), mu, evaluate=False), EXP_ACCURACY, "|ε_i| ≤ μ", forall=[i])
    summed = pf.cite_external(sp.Eq(_DH, sp.Sum(_EH(i) * (1 + _THS(i)), (i, 1, n)), evaluate=False),
                              STANDARD_MODEL + "; Higham 2002, eqs. (3.2)–(3.4)",
                              "D̂ = fl(Σ ê_i): in any order, term i passes through at most n − 1 additions, "
                              "D̂ = Σ ê_i(1 + θ_i), and D̂ > 0 (positive terms, rounded)")
    sum_small = pf.cite_external(sp.Le(sp.Abs(_THS(i)), theta, evaluate=False),
                                 STANDARD_MODEL + "; " + HIGHAM_BOOK + ", Lemma 3.1 (claim rounding-gamma-lemma)",
                                 "|θ_i| ≤ (1 + u)^{n−1} − 1: at most n − 1 roundings", forall=[i])
    quotient = pf.define(_OH, _EH(j) / _DH, "ô = ê_j / D̂")
    rounded = pf.cite_external(sp.Eq(_PH, _OH * (1 + DELTA), evaluate=False), STANDARD_MODEL, "p̂_j = fl(ô) = ô(1 + δ)")
    div_small = pf.cite_external(sp.Le(sp.Abs(DELTA), u, evaluate=False), STANDARD_MODEL, "|δ| ≤ u")
    total = pf.define(_SW, sp.Sum(_WS(i), (i, 1, n)), "S = Σ_i w_i")
    exact = pf.define(_PJ, _WS(j) / _SW, "p_j = w_j / S")
    error = pf.define(SOFTMAX_ERROR, sp.Abs(_PH - _PJ) / _PJ, "the relative error of p̂_j")
    gap = pf.define(x, sp.Abs(_XS(j)), "|s_j − m|")
    a_w = pf.define(_AW(i), sp.exp(_XS(i) * _DX(i)) * (1 + _EPF(i)) - 1, "ê_i = w_i(1 + a_i)", forall=[i])
    b_w = pf.define(_BW(i), (1 + _AW(i)) * (1 + _THS(i)) - 1, "ê_i(1 + θ_i) = w_i(1 + b_i)", forall=[i])
    beta = pf.define(_BETA, sp.Sum(_WS(i) * _BW(i), (i, 1, n)) / _SW, "β = Σ p_i b_i")
    pb = pf.define(SOFTMAX_PB, sp.Sum(_WS(i) * b_of(i), (i, 1, n)) / _SW,
                   "Σ p_i B_i, B_i = e^{u|s_i − m|}(1 + μ)(1 + u)^{n−1} − 1")
    below_one = pf.assume(sp.Lt(SOFTMAX_PB, 1, evaluate=False), "Σ p_k B_k < 1: the bound's denominator is positive")

    # |a_i| ≤ A_i and |b_i| ≤ B_i for every key i.
    eta = _XS(i) * _DX(i)
    eta_apart = pf.rewrite(sp.Abs(eta), sp.Abs(_XS(i)) * sp.Abs(_DX(i)), [facts["product"]], "|x δ| = |x||δ|",
                           label="algebra")
    eta_times = pf.bound([pf.sign(sp.Abs(_XS(i)), "≤", sp.Abs(_XS(i))), pf.instance(sub_small, {i: i})], "mul",
                         eta_apart.rhs, "≤", sp.Abs(_XS(i)) * u, label="argument rounding")
    eta_small = pf.chain([eta_apart, eta_times], sp.Abs(eta), "≤", u * sp.Abs(_XS(i)), "|x_i δx_i| ≤ u|x_i|",
                         label="argument rounding")
    exp_part = _exp_factor(pf, facts, eta, eta_small, "weight factor")
    eps_i = pf.instance(exp_small, {i: i}, label="exp accuracy")
    a_lemma = _factor_lemma(pf, facts, sp.exp(eta) - 1, exp_part, _EPF(i), eps_i, "weight factor")
    a_unfold = pf.rewrite(sp.Abs(_AW(i)), a_lemma.lhs, [a_w], label="weight factor")
    a_close = pf.identity(a_lemma.rhs, a_of(i), "(e^{u|x|} − 1)(1 + μ) + μ = e^{u|x|}(1 + μ) − 1", label="weight factor")
    a_bound = pf.chain([a_unfold, a_lemma, a_close], sp.Abs(_AW(i)), "≤", a_of(i), "|a_i| ≤ A_i",
                       label="weight factor", forall=[i])
    th_i = pf.instance(sum_small, {i: i}, label="summation")
    b_lemma = _factor_lemma(pf, facts, _AW(i), pf.instance(a_bound, {i: i}), _THS(i), th_i, "weight factor")
    b_unfold = pf.rewrite(sp.Abs(_BW(i)), b_lemma.lhs, [b_w], label="weight factor")
    b_close = pf.identity(b_lemma.rhs, b_of(i), "A(1 + Θ) + Θ = (1 + A)(1 + Θ) − 1", label="weight factor")
    b_bound = pf.chain([b_unfold, b_lemma, b_close], sp.Abs(_BW(i)), "≤", b_of(i), "|b_i| ≤ B_i",
                       label="weight factor", forall=[i])

    # |β| ≤ Σ p_i B_i: the triangle inequality over the sum.
    weighted = pf.bound([pf.sign(_WS(i), "≤", _WS(i)), pf.instance(b_bound, {i: i})], "mul", _WS(i) * sp.Abs(_BW(i)),
                        "≤", _WS(i) * b_of(i), label="sum of weights")
    each = pf.chain([weighted, pf.sign(weighted.rhs, "≤", weighted.rhs)], sp.Abs(_WS(i) * _BW(i)), "≤", weighted.rhs,
                    "w_i|b_i| ≤ w_i B_i", label="sum of weights", forall=[i])
    over = _sum_abs(pf, facts["triangle"], lambda k: _WS(k) * _BW(k), lambda k: _WS(k) * b_of(k), each, n,
                    "sum of weights")
    beta_unfold = pf.rewrite(sp.Abs(_BETA), over.lhs * (1 / _SW), [beta], label="ratio")
    beta_scaled = pf.bound([over, pf.sign(1 / _SW, "≤", 1 / _SW)], "mul", beta_unfold.rhs, "≤", over.rhs * (1 / _SW),
                           label="ratio")
    beta_fold = pf.rewrite(beta_scaled.rhs, SOFTMAX_PB, [pb], label="ratio")
    beta_small = pf.chain([beta_unfold, beta_scaled, beta_fold], sp.Abs(_BETA), "≤", SOFTMAX_PB, "|β| ≤ Σ p_i B_i",
                          label="ratio")

    # The computed quotient: ô/p_j = (1 + a_j)/(1 + β), with 1 + β = D̂/S.
    den = pf.rewrite(_DH, sp.Sum(_WS(i) * (1 + _BW(i)), (i, 1, n)), [summed, computed, weight, b_w, a_w],
                     "D̂ = Σ w_i(1 + b_i)", label="ratio")
    den_split = pf.linearity(den.rhs, sp.Sum(_WS(i), (i, 1, n)) + sp.Sum(_WS(i) * _BW(i), (i, 1, n)),
                             "Σ w(1 + b) = Σ w + Σ w b", label="ratio")
    den_sum = pf.chain([den, den_split], _DH, "=", den_split.rhs, label="ratio")
    beta_is = pf.rewrite(_BETA, _DH / _SW - 1, [beta, den_sum, total], "β = D̂/S − 1", label="ratio")
    num = pf.rewrite(_EH(j), _WS(j) * (1 + _AW(j)), [computed, weight, a_w], "ê_j = w_j(1 + a_j)", label="ratio")
    r = (_AW(j) - _BETA) * _SW / _DH
    relative = pf.rewrite(_PH, _PJ * (1 + r) * (1 + DELTA), [rounded, quotient, num, exact, beta_is],
                          "p̂_j = p_j(1 + r)(1 + δ), r = (a_j − β)S/D̂", label="ratio")
    unfold = pf.rewrite(SOFTMAX_ERROR, sp.Abs((1 + r) * (1 + DELTA) - 1), [error, relative],
                        "|p̂_j − p_j|/p_j = |(1 + r)(1 + δ) − 1|", label="ratio")

    # |r| ≤ (A_j + Σ p B)/(1 − Σ p B).
    apart = pf.instance(facts["triangle"], {_TA: _AW(j), _TB: -_BETA}, label="triangle inequality")
    top = pf.chain([apart, pf.bound([pf.instance(a_bound, {i: j}), beta_small], "add", apart.rhs, "≤",
                                    a_of(j) + SOFTMAX_PB, label="ratio")],
                   apart.lhs, "≤", a_of(j) + SOFTMAX_PB, "|a_j − β| ≤ A_j + Σ p B", label="ratio")
    q = _DH / _SW
    reverse = pf.instance(facts["triangle"], {_TA: q, _TB: 1 - q}, label="triangle inequality")
    beta_abs = pf.rewrite(sp.Abs(_BETA), sp.Abs(1 - q), [beta_is], label="ratio")
    near = pf.chain([beta_abs, beta_small], sp.Abs(1 - q), "≤", SOFTMAX_PB, label="ratio")
    low = pf.sign(1 - SOFTMAX_PB, "≤", q, "1 − Σ p B ≤ D̂/S: 1 ≤ D̂/S + |1 − D̂/S|", using=[reverse, near],
                  terms=[reverse.rhs - reverse.lhs, SOFTMAX_PB - near.lhs], label="denominator")
    positive = pf.sign(0, "<", 1 - SOFTMAX_PB, using=[below_one], label="denominator")
    low_scaled = pf.bound([pf.sign(_SW, "≤", _SW), low], "mul", _SW * (1 - SOFTMAX_PB), "≤", _DH,
                          nonnegative=[positive], label="denominator")
    inverse = pf.sign(_SW / _DH, "≤", 1 / (1 - SOFTMAX_PB), "S/D̂ ≤ 1/(1 − Σ p B)", using=[low_scaled, positive],
                      label="denominator")
    r_small = pf.bound([top, inverse], "mul", sp.Abs(r), "≤", top.rhs * inverse.rhs, label="ratio")

    # The final rounding, and the claim's bound.
    lemma = _factor_lemma(pf, facts, r, r_small, DELTA, div_small, "final division")
    close = pf.rewrite(lemma.rhs, rel, [gap, below_one], relation_="≤", label="conclusion")
    pf.chain([unfold, lemma, close], SOFTMAX_ERROR, "≤", rel,
             "|p̂_j − p_j|/p_j ≤ (1 + u)(A_j + Σ p_k B_k)/(1 − Σ p_k B_k) + u", label="conclusion")
    return pf.finish(Result(relative=rel, A=sp.exp(u * x) * (1 + mu) - 1, B=sp.exp(u * x) * (1 + mu) * (1 + u)**(N - 1) - 1,
                            reference=BLANCHARD))


# The online rescale's model: key j sits in block b; the running max grows by g_t ≥ 0 from block t to t + 1,
# so m_T = m_b + Σ_{t=b}^{T−1} g_t, and s_j = m_b − h with h ≥ 0. Each rounded exponent argument (−h in block b,
# −g_t in the rescale after block t) carries its relative error: ε_0 h + Σ_t ε_t g_t moves key j's exponent.
_RAISES = sp.IndexedBase("g", nonnegative=True)  # g_t = m_{t+1} − m_t ≥ 0
_EPSS = sp.IndexedBase("epsilon", real=True)  # ε_t: the relative error of the rescale argument after block t


def RAISE(t):  # noqa: N802  (an indexed family, written like the functions it stands for)
    return _RAISES[t]


def EPS(t):  # noqa: N802
    return _EPSS[t]
EPS_0 = sp.Symbol("epsilon_0", real=True)  # the error of fl(s_j − m_b)
BLOCK_MAX = sp.Symbol("m_b", real=True)  # the running max when key j's block b is processed
BELOW = sp.Symbol("h", nonnegative=True)  # m_b − s_j ≥ 0
OWN_BLOCK = sp.Symbol("b", integer=True, positive=True)
LATER = sp.Symbol("w", integer=True, nonnegative=True)  # blocks after b: T = b + w
_T = sp.Symbol("t", integer=True)


def online_rescale(per_block: int = 2) -> Derivation:
    """Key j's exponent drift over T key blocks, and the roundings and exps its weight collects. ``per_block`` is
    the roundings each later block adds to a weight (a multiply and an add: 2); a count that forgets one is refused."""
    n_l, n_a = rescale_counts(2)
    pf = Proof("rounding-online-rescale")
    b, w, t, u = OWN_BLOCK, LATER, _T, U
    later = lambda f, last: sp.Sum(f, (t, b, last))  # noqa: E731  Σ_{t=b}^{last}
    drift = pf.define(DRIFT, sp.Abs(EPS_0 * BELOW + later(EPS(t) * RAISE(t), BLOCKS - 1)),
                      "|τ_j|: ε_0 on the argument s_j − m_b = −h, ε_t on each later rescale argument m_t − m_{t+1} = −g_t "
                      "(errors' signs absorbed in ε)")
    top = pf.define(LAST_MAX, BLOCK_MAX + later(RAISE(t), BLOCKS - 1), "m_T = m_b + Σ_{t=b}^{T−1} g_t, g_t ≥ 0: "
                    "the running max only grows")
    score = pf.define(SCORE_J, BLOCK_MAX - BELOW, "s_j = m_b − h, h ≥ 0: key j is at most its block's max")
    exps = pf.define(COUNT_EXP, sp.Sum(1, (t, 1, BLOCKS)), "the exps on key j's weight: one per block (its own "
                     "exp(s_j − m_b), then one α_t = exp(m_t − m_{t+1}) per later block), written as a sum over blocks")
    count_l = pf.define(COUNT_L, (BLOCK_N - 1) + 1 + sp.Sum(per_block, (t, 2, BLOCKS)), "l: B_N − 1 roundings in the "
                        "block's row sum and 1 adding it in; each later block: fl(l·α_t) and the add (per block)")
    count_a = pf.define(COUNT_A, BLOCK_N + 1 + sp.Sum(per_block, (t, 2, BLOCKS)), "acc: B_N in the block's P·V dot "
                        "product and 1 adding it in; each later block: fl(acc·α_t) and the add")
    blocks = pf.assume(sp.Eq(BLOCKS, b + w, evaluate=False), "key j's block b is one of the T blocks: T = b + w")
    bounded = pf.cite_external(sp.Le(sp.Abs(EPS(t)), u, evaluate=False), STANDARD_MODEL,
                               "each rounded argument errs by at most u relatively: |ε_t| ≤ u", forall=[t])
    own = pf.cite_external(sp.Le(sp.Abs(EPS_0), u, evaluate=False), STANDARD_MODEL, "fl(s_j − m_b): |ε_0| ≤ u")
    triangle = pf.cite_external(sp.Le(sp.Abs(_TA + _TB), sp.Abs(_TA) + sp.Abs(_TB), evaluate=False),
                                "triangle inequality", "|a + b| ≤ |a| + |b| for real a, b", forall=[_TA, _TB])
    # |Σ_{t=b}^{b+w−1} ε_t g_t| ≤ u Σ_{t=b}^{b+w−1} g_t, by induction on w from 0.
    P = sp.Le(sp.Abs(later(EPS(t) * RAISE(t), b + w - 1)), u * later(RAISE(t), b + w - 1), evaluate=False)
    k = sp.Symbol("k", integer=True, positive=True)
    empty = pf.truncation(sp.Abs(later(EPS(t) * RAISE(t), b - 1)), u * later(RAISE(t), b - 1), [],
                          "no later block: both sums are empty", label="base case")
    base = pf.chain([empty, pf.sign(u * later(RAISE(t), b - 1), "≤", u * later(RAISE(t), b - 1))],
                    P.lhs.xreplace({w: 0}), "≤", P.rhs.xreplace({w: 0}), label="base case")
    hyp = pf.hypothesis(substitute(P, {w: k - 1}))
    last = b + k - 1
    head, tail = later(EPS(t) * RAISE(t), last - 1), EPS(last) * RAISE(last)
    peel = pf.truncation(sp.Abs(later(EPS(t) * RAISE(t), last)), sp.Abs(head + tail), [],
                         "the last later block's term taken out", label="telescoping", peel=last)
    split = pf.instance(triangle, {_TA: head, _TB: tail}, label="triangle inequality")
    one = pf.instance(bounded, {t: last}, label="the standard model's bound")
    times = pf.bound([one, pf.sign(RAISE(last), "≤", RAISE(last))], "mul", sp.Abs(EPS(last)) * RAISE(last), "≤",
                     u * RAISE(last), "|ε_t| g_t ≤ u g_t, g_t ≥ 0", label="monotonicity")
    plus = pf.bound([hyp, times], "add", sp.Abs(head) + sp.Abs(EPS(last)) * RAISE(last), "≤",
                    u * later(RAISE(t), last - 1) + u * RAISE(last), label="monotonicity")

    whole = pf.truncation(u * later(RAISE(t), last - 1) + u * RAISE(last), u * later(RAISE(t), last), [],
                          label="telescoping", peel=last)
    step = pf.chain([peel, split, plus, whole], substitute(P, {w: k}).lhs, "≤", substitute(P, {w: k}).rhs,
                    label="induction step")
    rescales = pf.induction(P, w, 0, base, step, hyp, "by induction on the later blocks w", step_var=k,
                            label="induction")
    stated = pf.stated(DRIFT)
    unfold = pf.rewrite(DRIFT, sp.Abs(EPS_0 * BELOW + later(EPS(t) * RAISE(t), b + w - 1)), [drift, blocks],
                        label="exponent drift")
    parts = pf.instance(triangle, {_TA: EPS_0 * BELOW, _TB: later(EPS(t) * RAISE(t), b + w - 1)},
                        label="triangle inequality")
    first = pf.bound([own, pf.sign(BELOW, "≤", BELOW)], "mul", sp.Abs(EPS_0) * BELOW, "≤", u * BELOW,
                     label="monotonicity")
    total = pf.bound([first, rescales], "add", sp.Abs(EPS_0) * BELOW + P.lhs, "≤", u * BELOW + P.rhs,
                     label="monotonicity")

    closes = pf.rewrite(u * BELOW + P.rhs, stated.rhs, [top, score, blocks], "u h + u Σ g_t = u(m_T − s_j): the "
                        "rescale arguments telescope", label="exponent drift")
    pf.chain([unfold, parts, total, closes], DRIFT, "≤", stated.rhs, label="exponent drift")
    for count, definition, what in ((COUNT_L, count_l, "n_l(T)"), (COUNT_A, count_a, "n_a(T)"),
                                    (COUNT_EXP, exps, "exps(T)")):
        pf.rewrite(count, pf.claimed(count), [definition], f"{what} = {inline(pf.claimed(count))}",
                   label="count (step)")
    return pf.finish(Result(n_l=n_l, n_a=n_a, exps=BLOCKS))


# ----------------------------------------------------------------------------- the forward


def _forward_expressions(score_roundings: int = 2):
    """The bound's pieces as SymPy expressions in the recipe and per-element symbols."""
    n_l, n_a = rescale_counts()
    score = gamma(HEAD_DIM + score_roundings, U_A)  # relative to c|q||k|
    delta = score * QK_ABS
    h = delta + U_A * (GAP + delta + DELTA_MAX)
    chain_a = (1 + MU)**BLOCKS * (1 + U_A)**n_a - 1
    chain_l = (1 + MU)**BLOCKS * (1 + U_A)**n_l - 1
    r = sp.exp(h) * (1 + chain_a) - 1
    b = sp.exp(h) * (1 + chain_l) - 1
    e = (T_P + PRV + O_ABS * PB + ZETA * (V_L1 + KEYS * O_ABS)) / (1 - PB - KEYS * ZETA)
    final = (1 + U_A) * (1 + U_IN)
    bound = final * e + (final - 1) * O_ABS + LAMBDA_A + LAMBDA_O * U_IN
    # underflow: every weight's absolute error, normalised by the computed max (≤ e^{Δmax} away)
    zeta = 2 * sp.exp(DELTA_MAX) * (LAMBDA_P * U_P + (2 * BLOCKS + BLOCK_N + 2) * LAMBDA_A)
    amplification = (1 + U_P) * (1 + chain_a)  # must stay ≤ 2 for zeta's factor 2
    return dict(n_l=n_l, n_a=n_a, score=score, delta=delta, H=h, R=r, B=b, E=e, bound=bound, zeta=zeta,
                chain_a=chain_a, chain_l=chain_l, amplification=amplification,
                T_P=U_P * sp.Symbol("Σ p(1+R)|v|", nonnegative=True))


# The forward's model, per key i of one row and one column of V: exact scores s_i, x_i = s_i − m (m the exact row max),
# weights w_i = e^{x_i}, o = Σ w v / Σ w. Computed: scores ŝ_i, the final running max m̂, and the weights as acc and l
# hold them, e^{m − m̂} w_i(1 + a_i) + z_a,i and e^{m − m̂} w_i(1 + b_i) + z_l,i.
_FS, _FSH, _FX = (sp.Function(n, real=True) for n in ("s", "s_hat", "x"))
_FE = sp.Function("e_D", real=True)  # c times the dot product's error
_FDS = sp.Function("delta_s", real=True)  # fl(c)'s and the product's roundings together
_FQ = sp.Function("c|q||k|", nonnegative=True)
_FTAU, _FETA = sp.Function("tau", real=True), sp.Function("eta", real=True)
_FTA, _FTL = sp.Function("theta_a", real=True), sp.Function("theta_l", real=True)  # the weights' rounding chains
_FZA, _FZL, _FV = (sp.Function(n, real=True) for n in ("z_a", "z_l", "v"))
_FW = sp.Function("w", positive=True)
_FH, _FR, _FBB = (sp.Function(n, real=True) for n in ("H", "R", "B"))  # the bound's per-key exponent and factors
_FA, _FB = sp.Function("a_f", real=True), sp.Function("b_f", real=True)
_FNB, _FDB = sp.Function("P_b", real=True), sp.Function("D_b", real=True)  # acc's, l's termwise bounds (l's less ζ)
_FNT, _FDT = sp.Function("P_t", real=True), sp.Function("D_t", real=True)  # acc's and l's error terms
_FEA, _FEL = sp.Function("e_a", real=True), sp.Function("e_l", real=True)  # the weights as acc and l hold them
_MX, _MH = sp.symbols("m m_hat", real=True)
_C0 = sp.Symbol("c_0", positive=True)  # e^{m − m̂}
_ACC = sp.Symbol("acc", real=True)
_L = sp.Symbol("l", positive=True)  # a sum of positive rounded weights, rounded
_O, _OH, _FLO = sp.symbols("o o_hat fl(o)", real=True)
_SF = sp.Symbol("S", positive=True)
_DG, _ETA_O = sp.symbols("delta_g eta_o", real=True)  # the division's and the store's roundings together


def attention_forward_bound(score_roundings: int = 2) -> Derivation:
    """The per-element forward bound. ``score_roundings`` is what the bound allows beyond the dot product's
    D roundings (the scale's and the product's: 2); a bound that forgets them is refused."""
    from proofs.claims import cited

    ex = _forward_expressions(score_roundings)
    i, u, nk = _I, U_A, KEYS
    n_l, n_a = rescale_counts()
    pf = Proof("rounding-attention-forward")
    facts = _abs_facts(pf)
    facts["below_abs"] = pf.cite_external(sp.Le(_TA, sp.Abs(_TA), evaluate=False), "absolute value", "a ≤ |a| for real a",
                                          forall=[_TA])
    # ---- what each key's bound is built from (the statement's row quantities are defined through these); γ by
    # name, so no step divides by 1 − (D + 2)u_a before the hypothesis (D + 2)u_a < 1 is at hand
    g_d, g_2 = sp.Symbol("gamma_D", real=True), sp.Symbol("gamma_{D+2}", real=True)
    delta = lambda k: g_2 * _FQ(k)  # noqa: E731
    theta_a, theta_l = (1 + MU)**BLOCKS * (1 + u)**n_a - 1, (1 + MU)**BLOCKS * (1 + u)**n_l - 1
    theta_ap = (1 + MU)**BLOCKS * (1 + u)**n_a * (1 + U_P) - 1  # acc's chain with P's rounding
    a_of = lambda k: _FR(k) * (1 + U_P) + U_P  # noqa: E731
    b_of = _FBB
    # ---- premises: the model (cited), the exact quantities and the statement's names (defined)
    fit = pf.assume(sp.Lt((HEAD_DIM + score_roundings) * u, 1, evaluate=False), "(D + 2)u_a < 1")
    score = pf.cite_external(sp.Eq(_FSH(i), (_FS(i) + _FE(i)) * (1 + _FDS(i)), evaluate=False),
                             STANDARD_MODEL, "ŝ_i = fl(fl(q·k_i)·fl(c)) = (s_i + e_D,i)(1 + δ_s,i), fl(q·k_i) = q·k_i + e "
                             "(c e =: e_D), 1 + δ_s the two roundings of c and of the product", forall=[i])
    exact_small = pf.cite_external(sp.Le(sp.Abs(_FS(i)), _FQ(i), evaluate=False), "triangle inequality",
                                   "|s_i| = c|q·k_i| ≤ c|q|ᵀ|k_i|", forall=[i])
    dot_small = pf.cite_external(sp.Le(sp.Abs(_FE(i)), g_d * _FQ(i), evaluate=False),
                                 HIGHAM_BOOK + ", eq. (3.5) (claim rounding-dot-product, n = D, u = u_a, times c > 0)",
                                 "|e_D,i| ≤ γ_D c|q|ᵀ|k_i|", forall=[i])
    ds_small = pf.cite_external(sp.Le(sp.Abs(_FDS(i)), (1 + u)**2 - 1, evaluate=False), MIXED_PRODUCTS,
                                "two roundings of at most u_a", forall=[i])
    max_near = pf.cite_external(sp.Le(sp.Abs(_MH - _MX), DELTA_MAX, evaluate=False), STANDARD_MODEL,
                                "m̂ = max ŝ (a max is exact) is within Δ_max = max_i Δ_i of m = max s")
    drift = pf.cite_external(sp.Le(sp.Abs(_FTAU(i)), u * (_MH - _FSH(i)), evaluate=False),
                             STANDARD_MODEL + " (claim rounding-online-rescale, u = u_a, for key i)",
                             "the argument roundings move key i's exponent by τ_i, |τ_i| ≤ u_a(m̂ − ŝ_i)", forall=[i])
    counted_a = pf.cite_external(sp.Le(sp.Abs(_FTA(i)), (1 + MU)**COUNT_EXP * (1 + u)**COUNT_A * (1 + U_P) - 1,
                                       evaluate=False), MIXED_PRODUCTS + "; " + EXP_ACCURACY,
                                 "acc's weight i carries exps(T) exp errors (≤ μ), n_a(T) roundings (≤ u_a) and P's "
                                 "rounding to u_p", forall=[i])
    counted_l = pf.cite_external(sp.Le(sp.Abs(_FTL(i)), (1 + MU)**COUNT_EXP * (1 + u)**COUNT_L - 1, evaluate=False),
                                 MIXED_PRODUCTS + "; " + EXP_ACCURACY,
                                 "l's weight i carries exps(T) exp errors and n_l(T) roundings", forall=[i])
    weights_a = pf.cite_external(sp.Eq(_FEA(i), _C0 * _FW(i) * (1 + _FA(i)) + _FZA(i), evaluate=False), STANDARD_MODEL,
                                 "acc's weight i: e^{m − m̂}w_i(1 + a_i) plus its underflow z_a,i", forall=[i])
    weights_l = pf.cite_external(sp.Eq(_FEL(i), _C0 * _FW(i) * (1 + _FB(i)) + _FZL(i), evaluate=False), STANDARD_MODEL,
                                 "l's weight i: e^{m − m̂}w_i(1 + b_i) plus its underflow z_l,i", forall=[i])
    under_a = pf.cite_external(sp.Le(sp.Abs(_FZA(i)), _C0 * ZETA, evaluate=False), STANDARD_MODEL,
                               "underflow (|η| ≤ λ per rounding, amplified at most 2×: (1 + u_p)(1 + Θ_a) ≤ 2) leaves "
                               "|z_a,i| ≤ e^{m − m̂}ζ", forall=[i])
    under_l = pf.cite_external(sp.Le(sp.Abs(_FZL(i)), _C0 * ZETA, evaluate=False), STANDARD_MODEL,
                               "likewise |z_l,i| ≤ e^{m − m̂}ζ", forall=[i])
    acc = pf.cite_external(sp.Eq(_ACC, sp.Sum(_FEA(i) * _FV(i), (i, 1, nk)), evaluate=False), STANDARD_MODEL,
                           "acc = Σ_i (its weight i) v_i: the P·V and rescale roundings are in a_i")
    ell = pf.cite_external(sp.Eq(_L, sp.Sum(_FEL(i), (i, 1, nk)), evaluate=False), STANDARD_MODEL,
                           "l = Σ_i (its weight i) > 0: the row-sum and rescale roundings are in b_i")
    store = pf.cite_external(sp.Eq(_FLO, _OH * (1 + _DG) + _ETA_O, evaluate=False), STANDARD_MODEL,
                             "fl_in(fl_a(acc/l)) = ô(1 + δ_a)(1 + δ_in) + η =: ô(1 + δ_g) + η: an underflowing rounding "
                             "has δ = 0, a subnormal accumulator value is stored exactly or as a subnormal of the output "
                             "format")
    dg_small = pf.cite_external(sp.Le(sp.Abs(_DG), (1 + u) * (1 + U_IN) - 1, evaluate=False), MIXED_PRODUCTS,
                                "a rounding of at most u_a and one of at most u_in")
    store_small = pf.cite_external(sp.Le(sp.Abs(_ETA_O), LAMBDA_A + LAMBDA_O * U_IN, evaluate=False), STANDARD_MODEL,
                                 "|η| ≤ λ_a + λ_o u_in")
    counts = cited("rounding-online-rescale")
    count_a, count_l, count_e = (pf.cite(counts, sp.Eq(c, v, evaluate=False))
                                 for c, v in ((COUNT_A, n_a), (COUNT_L, n_l), (COUNT_EXP, BLOCKS)))
    named_d = pf.define(g_d, gamma(HEAD_DIM, u), "γ_D = Du_a/(1 − Du_a)")
    named_2 = pf.define(g_2, gamma(HEAD_DIM + score_roundings, u), "γ_{D+2} = (D + 2)u_a/(1 − (D + 2)u_a)")
    h_def = pf.define(_FH(i), delta(i) + u * (sp.Abs(_FX(i)) + delta(i) + DELTA_MAX),
                      "H_i = Δ_i + u_a(|s_i − m| + Δ_i + Δ_max), Δ_i = γ_{D+2} c|q||k_i|", forall=[i])
    r_def = pf.define(_FR(i), sp.exp(_FH(i)) * (1 + theta_a) - 1, "R_i = e^{H_i}(1 + μ)^T(1 + u_a)^{n_a} − 1", forall=[i])
    bb_def = pf.define(_FBB(i), sp.exp(_FH(i)) * (1 + theta_l) - 1, "B_i = e^{H_i}(1 + μ)^T(1 + u_a)^{n_l} − 1",
                       forall=[i])
    # What w, e^{m − m̂} and ζ are (the bound holds for any weights w_i > 0, and ζ enters through the underflow premises).
    pf.define(_FW(i), sp.exp(_FX(i)), "w_i = e^{s_i − m}", forall=[i])
    gap = pf.define(_FX(i), _FS(i) - _MX, "x_i = s_i − m", forall=[i])
    pf.define(_C0, sp.exp(_MX - _MH), "e^{m − m̂}: common to every weight")
    eta = pf.define(_FETA(i), _FSH(i) - _FS(i) + _FTAU(i), "η_i: what the score and argument roundings do to "
                    "the exponent, beyond the common m − m̂", forall=[i])
    a_def = pf.define(_FA(i), sp.exp(_FETA(i)) * (1 + _FTA(i)) - 1, "acc's weight factor", forall=[i])
    b_def = pf.define(_FB(i), sp.exp(_FETA(i)) * (1 + _FTL(i)) - 1, "l's weight factor", forall=[i])
    total = pf.define(_SF, sp.Sum(_FW(i), (i, 1, nk)), "S = Σ_i w_i")
    out = pf.define(_O, sp.Sum(_FW(i) * _FV(i), (i, 1, nk)) / _SF, "o = Σ w v / Σ w")
    quotient = pf.define(_OH, _ACC / _L, "ô = acc / l")
    err = pf.define(ERR, sp.Abs(_FLO - _O), "the error of the stored output")
    o_abs = pf.define(O_ABS, sp.Abs(_O), "|o|")
    v_l1 = pf.define(V_L1, sp.Sum(sp.Abs(_FV(i)), (i, 1, nk)), "‖v‖₁")
    prv = pf.define(PRV, sp.Sum(_FW(i) * _FR(i) * sp.Abs(_FV(i)), (i, 1, nk)) / _SF, "(P∘R)|V| = Σ p_i R_i |v_i|")
    t_p = pf.define(T_P, U_P * sp.Sum(_FW(i) * (1 + _FR(i)) * sp.Abs(_FV(i)), (i, 1, nk)) / _SF,
                    "T_P = u_p Σ p_i (1 + R_i)|v_i|")
    pb = pf.define(PB, sp.Sum(_FW(i) * b_of(i), (i, 1, nk)) / _SF, "(P∘B)1 = Σ p_i B_i")
    pf.define(ZETA, ex["zeta"], "ζ: the underflow bound per weight")
    at_least = pf.assume(sp.Le(1, _SF, evaluate=False), "m = max s: the max key's weight is e⁰ = 1, so S ≥ 1")
    room = pf.assume(sp.Lt(PB + nk * ZETA, 1, evaluate=False), "(P∘B)1 + N_k ζ < 1: the bound's denominator is positive")

    _NS, _DS = sp.symbols("P_sum D_sum", real=True)
    one_plus = lambda t, small: pf.chain([pf.instance(facts["triangle"], {_TA: 1, _TB: t}),  # noqa: E731
                                          pf.sign(1 + sp.Abs(t), "≤", 1 + small.rhs, using=[small])],
                                         sp.Abs(1 + t), "≤", 1 + small.rhs, label="triangle inequality")
    # ---- key i's score: |ŝ_i − s_i| ≤ Δ_i = γ_{D+2} c|q||k_i|
    s_i, e_i, q_i = _FS(i), _FE(i), _FQ(i)
    d_s = _FDS(i)
    ds = pf.instance(ds_small, {i: i}, label="score")
    sc_unfold = pf.rewrite(sp.Abs(_FSH(i) - s_i), sp.Abs(s_i * d_s + e_i * (1 + d_s)), [score], label="score")
    sc_split = pf.instance(facts["triangle"], {_TA: s_i * d_s, _TB: e_i * (1 + d_s)}, label="triangle inequality")
    sc_apart = pf.rewrite(sc_split.rhs, sp.Abs(s_i) * sp.Abs(d_s) + sp.Abs(e_i) * sp.Abs(1 + d_s), [facts["product"]],
                          label="algebra")
    sc_exact = pf.bound([pf.instance(exact_small, {i: i}), ds], "mul", sp.Abs(s_i) * sp.Abs(d_s), "≤",
                        q_i * ds.rhs, label="score")
    sc_dot = pf.bound([pf.instance(dot_small, {i: i}), one_plus(d_s, ds)], "mul", sp.Abs(e_i) * sp.Abs(1 + d_s), "≤",
                      g_d * q_i * (1 + u)**2, label="score")
    sc_sum = pf.bound([sc_exact, sc_dot], "add", sc_apart.rhs, "≤", sc_exact.rhs + sc_dot.rhs, label="score")
    sc_gamma = pf.rewrite(sc_sum.rhs, delta(i), [named_d, named_2, fit], "c|q||k|((1 + γ_D)(1 + u)² − 1) ≤ "
                          "γ_{D+2} c|q||k|", relation_="≤", label="γ arithmetic")
    score_near = pf.chain([sc_unfold, sc_split, sc_apart, sc_sum, sc_gamma], sc_unfold.lhs, "≤", delta(i),
                          "|ŝ_i − s_i| ≤ Δ_i", label="score")
    # ---- key i's exponent: |η_i| ≤ H_i
    ex_unfold = pf.rewrite(sp.Abs(_FETA(i)), sp.Abs(_FSH(i) - s_i + _FTAU(i)), [eta], label="exponent")
    ex_split = pf.instance(facts["triangle"], {_TA: _FSH(i) - s_i, _TB: _FTAU(i)}, label="triangle inequality")
    parts = (_MH - _MX, -_FX(i), s_i - _FSH(i))
    below = pf.rewrite(_MH - _FSH(i), sp.Add(*parts), [gap], "m̂ − ŝ_i = (m̂ − m) + (m − s_i) + (s_i − ŝ_i)",
                       label="exponent")
    up_max = pf.chain([pf.instance(facts["below_abs"], {_TA: parts[0]}), max_near], parts[0], "≤", DELTA_MAX,
                      label="exponent")
    up_gap = pf.instance(facts["below_abs"], {_TA: parts[1]}, label="absolute value")
    up_score = pf.chain([pf.instance(facts["below_abs"], {_TA: parts[2]}), score_near], parts[2], "≤", delta(i),
                        label="exponent")
    up = pf.bound([up_max, up_gap, up_score], "add", below.rhs, "≤", DELTA_MAX + sp.Abs(_FX(i)) + delta(i),
                  label="exponent")
    reach = pf.chain([below, up], below.lhs, "≤", up.rhs, "m̂ − ŝ_i ≤ Δ_max + |s_i − m| + Δ_i", label="exponent")
    scaled = pf.sign(u * reach.lhs, "≤", u * reach.rhs, using=[reach], label="exponent")
    tau_small = pf.chain([pf.instance(drift, {i: i}), scaled], sp.Abs(_FTAU(i)), "≤", scaled.rhs,
                         "|τ_i| ≤ u_a(|s_i − m| + Δ_i + Δ_max) (claim rounding-online-rescale's drift)", label="exponent")
    ex_sum = pf.bound([score_near, tau_small], "add", ex_split.rhs, "≤", delta(i) + scaled.rhs, label="exponent")
    ex_fold = pf.rewrite(ex_sum.rhs, _FH(i), [h_def], label="exponent")
    eta_small = pf.chain([ex_unfold, ex_split, ex_sum, ex_fold], sp.Abs(_FETA(i)), "≤", _FH(i), "|η_i| ≤ H_i",
                         label="exponent")
    # ---- the weight factors: |a_i| ≤ R_i(1 + u_p) + u_p, |b_i| ≤ B_i, the rounding counts from the online claim
    exp_part = _exp_factor(pf, facts, _FETA(i), eta_small, "weight factor")

    def chain_bound(counted, count, theta):
        explicit = pf.rewrite(counted.rhs, theta, [count, count_e], "the rounding counts of claim rounding-online-rescale",
                              label="rounding counts")
        return pf.chain([pf.instance(counted, {i: i}), explicit], counted.lhs, "≤", theta, label="rounding counts")

    th_a, th_l = chain_bound(counted_a, count_a, theta_ap), chain_bound(counted_l, count_l, theta_l)
    a_lemma = _factor_lemma(pf, facts, sp.exp(_FETA(i)) - 1, exp_part, _FTA(i), th_a, "weight factor")
    a_unfold = pf.rewrite(sp.Abs(_FA(i)), a_lemma.lhs, [a_def], label="weight factor")
    a_close = pf.rewrite(a_lemma.rhs, a_of(i), [r_def], label="weight factor")
    a_small = pf.chain([a_unfold, a_lemma, a_close], sp.Abs(_FA(i)), "≤", a_of(i),
                       "|a_i| ≤ R_i(1 + u_p) + u_p", label="weight factor", forall=[i])
    b_lemma = _factor_lemma(pf, facts, sp.exp(_FETA(i)) - 1, exp_part, _FTL(i), th_l, "weight factor")
    b_unfold = pf.rewrite(sp.Abs(_FB(i)), b_lemma.lhs, [b_def], label="weight factor")
    b_close = pf.rewrite(b_lemma.rhs, b_of(i), [bb_def], label="weight factor")
    b_small = pf.chain([b_unfold, b_lemma, b_close], sp.Abs(_FB(i)), "≤", b_of(i), "|b_i| ≤ B_i", label="weight factor",
                       forall=[i])

    # ---- termwise: acc's error terms P_i = e^{m−m̂}w_i a_i v_i + z_a,i v_i and l's D_i = e^{m−m̂}w_i b_i + z_l,i
    def product_bound(part, links, label):
        apart = pf.rewrite(sp.Abs(part), sp.Mul(*[l.lhs for l in links]), [facts["product"]], label="algebra")
        times = pf.bound(links, "mul", apart.rhs, "≤", sp.Mul(*[l.rhs for l in links]), label=label)
        return pf.chain([apart, times], apart.lhs, "≤", times.rhs, label=label)

    def termwise(term, parts, bounds, label):
        """|term(i)| ≤ Σ bounds for every i, term(i) := Σ parts (defined)."""
        each = _abs_sum_of(pf, facts, parts, bounds, label)
        named = pf.define(term(i), sp.Add(*parts), f"the {label}'s error term of key i", forall=[i])
        return named, pf.chain([pf.rewrite(sp.Abs(term(i)), each.lhs, [named], label=label), each], sp.Abs(term(i)),
                               "≤", each.rhs, label=label, forall=[i])

    seen: dict = {}
    same = lambda e: seen.get(e) or seen.setdefault(e, pf.sign(e, "≤", e))  # noqa: E731  (x ≤ x, once per x)
    sums = lambda e: sp.Sum(e, (i, 1, nk))  # noqa: E731
    cw = _C0 * _FW(i)
    v_abs, o_abs_ = sp.Abs(_FV(i)), sp.Abs(_O)
    num_parts = (cw * _FA(i) * _FV(i), _FZA(i) * _FV(i))
    nt_def, num_all = termwise(_FNT, num_parts, (
        product_bound(num_parts[0], [same(cw), pf.instance(a_small, {i: i}), same(v_abs)], "numerator"),
        product_bound(num_parts[1], [pf.instance(under_a, {i: i}), same(v_abs)], "numerator")), "numerator")
    den_parts = (cw * _FB(i), _FZL(i))
    dt_def, den_all = termwise(_FDT, den_parts, (
        product_bound(den_parts[0], [same(cw), pf.instance(b_small, {i: i})], "denominator"),
        pf.instance(under_l, {i: i})), "denominator")
    # Σ_i c = N_k c stays out of the sums: l's termwise bound's constant e^{m−m̂}ζ is carried by _sum_abs
    den_c = _C0 * ZETA
    db_def = pf.define(_FDB(i), den_all.rhs - den_c, "l's termwise bound, less its constant part", forall=[i])
    den_all = pf.chain([den_all, pf.rewrite(den_all.rhs, _FDB(i) + den_c, [db_def], label="denominator")],
                       den_all.lhs, "≤", _FDB(i) + den_c, label="denominator", forall=[i])
    nb_def = pf.define(_FNB(i), num_all.rhs, "acc's termwise bound", forall=[i])
    num_all = pf.chain([num_all, pf.rewrite(num_all.rhs, _FNB(i), [nb_def], label="numerator")], num_all.lhs, "≤",
                       _FNB(i), label="numerator", forall=[i])
    num_sum = pf.define(_NS, sums(_FNT(i)), "acc's error, Σ P_i")
    den_sum = pf.define(_DS, sums(_FDT(i)), "l's error, Σ D_i")

    # ---- acc = e^{m − m̂}S·o + P and l = e^{m − m̂}S + D, by linearity
    acc_x = sums((cw * (1 + _FA(i)) + _FZA(i)) * _FV(i))
    acc_open = pf.rewrite(_ACC, acc_x, [acc, weights_a], label="ratio")
    acc_lin = pf.linearity(acc_x, _C0 * sums(_FW(i) * _FV(i)) + sums(sp.Add(*num_parts)), "Σ distributes", label="ratio")
    acc_fold = pf.rewrite(acc_lin.rhs, _C0 * _SF * _O + _NS, [out, total, num_sum, nt_def], "Σ w v = S·o", label="ratio")
    acc_is = pf.chain([acc_open, acc_lin, acc_fold], _ACC, "=", acc_fold.rhs, "acc = e^{m − m̂}S·o + P", label="ratio")
    ell_x = sums(cw * (1 + _FB(i)) + _FZL(i))
    ell_open = pf.rewrite(_L, ell_x, [ell, weights_l], label="ratio")
    ell_lin = pf.linearity(ell_x, _C0 * sums(_FW(i)) + sums(sp.Add(*den_parts)), "Σ distributes", label="ratio")
    ell_fold = pf.rewrite(ell_lin.rhs, _C0 * _SF + _DS, [total, den_sum, dt_def], label="ratio")
    ell_is = pf.chain([ell_open, ell_lin, ell_fold], _L, "=", ell_fold.rhs, "l = e^{m − m̂}S + D", label="ratio")

    # ---- |D| ≤ e^{m − m̂}(S(P∘B)1 + N_k ζ) and |P| ≤ e^{m − m̂}(S(T_P + (P∘R)|V|) + ζ‖v‖₁)
    den_over = _sum_abs(pf, facts["triangle"], _FDT, _FDB, den_all, nk, "denominator", den_c)
    den_open = pf.rewrite(sp.Abs(_DS), den_over.lhs, [den_sum], label="denominator")
    den_open2 = pf.rewrite(den_over.rhs, sums(db_def.rhs) + nk * den_c, [db_def],
                           label="denominator")
    den_dist = pf.linearity(den_open2.rhs, _C0 * sums(_FW(i) * b_of(i)) + nk * den_c, "Σ distributes",
                            label="denominator")
    den_fold = pf.rewrite(den_dist.rhs, _C0 * _SF * PB + _C0 * ZETA * nk, [pb], label="denominator")
    den_small = pf.chain([den_open, den_over, den_open2, den_dist, den_fold], sp.Abs(_DS), "≤", den_fold.rhs,
                         label="denominator")
    num_over = _sum_abs(pf, facts["triangle"], _FNT, _FNB, num_all, nk, "numerator")
    num_open = pf.rewrite(sp.Abs(_NS), num_over.lhs, [num_sum], label="numerator")
    num_open2 = pf.rewrite(num_over.rhs, sums(nb_def.rhs), [nb_def], label="numerator")
    num_dist = pf.linearity(num_open2.rhs, _C0 * sums(_FW(i) * _FR(i) * v_abs) + _C0 * U_P * sums(
        _FW(i) * (1 + _FR(i)) * v_abs) + _C0 * ZETA * sums(v_abs), "Σ distributes", label="numerator")
    num_fold = pf.rewrite(num_dist.rhs, _C0 * (_SF * (T_P + PRV) + ZETA * V_L1), [prv, t_p, v_l1], label="numerator")
    num_small = pf.chain([num_open, num_over, num_open2, num_dist, num_fold], sp.Abs(_NS), "≤", num_fold.rhs, label="numerator")
    # ---- l ≥ e^{m − m̂}S(1 − (P∘B)1 − N_k ζ)
    room_pos = pf.sign(0, "<", 1 - PB - nk * ZETA, using=[room], label="denominator")
    low = _C0 * _SF * (1 - PB - nk * ZETA)
    l1 = pf.sign(low, "≤", _C0 * _SF - den_small.rhs, "S ≥ 1", using=[at_least], label="denominator")
    l2 = pf.sign(l1.rhs, "≤", _C0 * _SF - sp.Abs(_DS), using=[den_small], label="denominator")
    l3 = pf.rewrite(l2.rhs, _L, [ell_is, pf.instance(facts["below_abs"], {_TA: -_DS})], relation_="≤",
                    label="denominator")
    ell_low = pf.chain([l1, l2, l3], low, "≤", _L, "l ≥ e^{m − m̂}S(1 − (P∘B)1 − N_k ζ)", label="denominator")
    # ---- ô − o = (P + o(e^{m − m̂}S − l))/l = (P − oD)/l, and |ô − o| ≤ E
    top = _NS + _O * (_C0 * _SF - _L)
    inside = sp.Abs(_OH - _O).args[0]  # as SymPy keeps it (ô − o or o − ô): what the next rewrite must find
    diff = pf.rewrite(inside, (1 if inside == _OH - _O else -1) * top * (1 / _L), [quotient, acc_is],
                      "ô − o = (P − oD)/l", label="ratio")
    ratio = pf.rewrite(sp.Abs(_OH - _O), sp.Abs(top) * (1 / _L), [diff], label="ratio")
    split = pf.instance(facts["triangle"], {_TA: _NS, _TB: _O * (_C0 * _SF - _L)}, label="triangle inequality")
    apart = pf.rewrite(split.rhs, sp.Abs(_NS) + o_abs_ * sp.Abs(_DS), [facts["product"], ell_is], label="ratio")
    o_den = pf.bound([same(o_abs_), den_small], "mul", o_abs_ * sp.Abs(_DS), "≤", o_abs_ * den_small.rhs, label="ratio")
    both = pf.bound([num_small, o_den], "add", apart.rhs, "≤", num_small.rhs + o_den.rhs, label="ratio")
    e_num = T_P + PRV + O_ABS * PB + ZETA * (V_L1 + nk * O_ABS)
    fold = pf.rewrite(both.rhs, _C0 * _SF * e_num, [o_abs, at_least], "S ≥ 1", relation_="≤", label="ratio")
    top_small = pf.chain([split, apart, both, fold], sp.Abs(top), "≤", fold.rhs, "|P − oD| ≤ e^{m − m̂}S·(E's numerator)",
                         label="ratio")
    inverse = pf.sign(1 / _L, "≤", 1 / low, using=[ell_low, room_pos], label="denominator")
    o_near = pf.bound([top_small, inverse], "mul", ratio.rhs, "≤", top_small.rhs * inverse.rhs, label="ratio")
    o_close = pf.sign(o_near.rhs, "≤", ex["E"], label="ratio")
    ohat_near = pf.chain([ratio, o_near, o_close], ratio.lhs, "≤", ex["E"], "|ô − o| ≤ E", label="ratio")
    # ---- the division and the store
    fin_parts = ((_OH - _O) * (1 + _DG), _O * _DG, _ETA_O)
    fin_unfold = pf.rewrite(ERR, sp.Abs(sp.Add(*fin_parts)), [err, store], label="division and store")
    fin_bounds = (product_bound(fin_parts[0], [ohat_near, one_plus(_DG, dg_small)], "division and store"),
                  product_bound(fin_parts[1], [same(o_abs_), dg_small], "division and store"),
                  store_small)
    fin_sum = _abs_sum_of(pf, facts, fin_parts, fin_bounds, "division and store")
    bound = ex["bound"]
    fin_close = pf.rewrite(fin_sum.rhs, bound, [o_abs], relation_="≤", label="conclusion")
    pf.chain([fin_unfold, fin_sum, fin_close], ERR, "≤", bound, "|fl(o) − o| ≤ (1 + u_a)(1 + u_in)E + ((1 + u_a)(1 + u_in) "
             "− 1)|o| + λ_a + λ_o u_in", label="conclusion")
    symbols = dict(recipe=(U_IN, U_A, U_P, MU, LAMBDA_A, LAMBDA_P, LAMBDA_O), shape=(HEAD_DIM, BLOCK_N, BLOCKS, KEYS),
                   key=(QK_ABS, GAP, DELTA_MAX), row=(T_P, PRV, PB, O_ABS, V_L1, ZETA))
    return pf.finish(Result(ex, symbols=symbols))


_FAIL_CHAIN = sp.Function("P_F", nonnegative=True)  # P(rounding chain i's γ̃-bound fails)
_FAIL_PV = sp.Function("P_G", nonnegative=True)  # P(P·V sum i's Hoeffding bound fails)
_UNION = sp.Symbol("P(some chain or sum fails)", nonnegative=True)
_C1, _C2 = sp.symbols("C_1 C_2", integer=True, nonnegative=True)  # rounding chains; P·V sums


def attention_probabilistic_bound() -> Derivation:
    """With probability at least 1 − C·2exp(−λ²(1 − u)²/2) no rounding chain of the tensor's elements leaves its
    Higham–Mary bound and no P·V sum its Hoeffding bound: Boole's inequality over the C = C₁ + C₂ events, the
    Hoeffding events fitted to the same per-event probability by exp's monotonicity."""
    ex = _forward_expressions()
    chains, q_fail = CHAINS, Q_FAIL
    per_chain = 2 * sp.exp(-LAM**2 * (1 - U_A)**2 / 2)
    hoeffding = 2 * sp.exp(-LAM**2 / 2)
    lam_of_q = sp.sqrt(2 * sp.log(2 * chains / q_fail)) / (1 - U_A)
    prob = dict(
        score=sp.Min(gamma(HEAD_DIM + 2, U_A), gamma_tilde(HEAD_DIM + 2, LAM, U_A)),
        chain_a=(1 + MU)**BLOCKS * (1 + sp.Min((1 + U_A)**ex["n_a"] - 1, gamma_tilde(ex["n_a"], LAM, U_A))) - 1,
        chain_l=(1 + MU)**BLOCKS * (1 + sp.Min((1 + U_A)**ex["n_l"] - 1, gamma_tilde(ex["n_l"], LAM, U_A))) - 1,
        T_P=LAM * U_P * sp.Symbol("(1 + R_max)||p∘v||_2", nonnegative=True),
    )
    i = _I
    pf = Proof("rounding-attention-probabilistic")
    count = pf.assume(sp.Eq(chains, _C1 + _C2, evaluate=False), "the tensor's C events: C₁ rounding chains (the "
                      "scores', the weights' in l and acc) and C₂ P·V sums")
    small_u = pf.assume(sp.Lt(U_A, 1, evaluate=False), "u_a < 1: a unit roundoff")
    inside = pf.assume(sp.Le(FAILURE_PROB, _UNION, evaluate=False),
                       "an element exceeds the forward bound with γ → min(γ, γ̃) and T_P → min(u_p Σp(1 + R)|v|, "
                       "λu_p(1 + R_max)‖p∘v‖₂) only if one of its chains leaves its γ̃-bound or its P·V sum its Hoeffding "
                       "bound: the γ-forms hold always (claim rounding-attention-forward), so each min holds when its "
                       "probabilistic form does")
    boole = pf.cite_external(sp.Le(_UNION, sp.Sum(_FAIL_CHAIN(i), (i, 1, _C1)) + sp.Sum(_FAIL_PV(i), (i, 1, _C2)),
                                   evaluate=False), "Boole's inequality", "P(∪ events) ≤ Σ P(event)")
    chain_i = pf.cite_external(sp.Le(_FAIL_CHAIN(i), per_chain, evaluate=False), HIGHAM_MARY,
                               "with independent, mean-zero |δ_k| ≤ u, a chain Π_{k≤n}(1 + δ_k) = 1 + θ_n leaves "
                               "|θ_n| ≤ γ̃_n(λ) = exp(λ√n u + nu²/(1 − u)) − 1 "
                               "with probability at most 2exp(−λ²(1 − u)²/2)", forall=[i])
    sum_i = pf.cite_external(sp.Le(_FAIL_PV(i), hoeffding, evaluate=False), HOEFFDING,
                             "Σ_j a_j δ_j with the a_j fixed before the independent, mean-zero |δ_j| ≤ u leaves "
                             "|Σ a_j δ_j| ≤ λu‖a‖₂ with probability at most 2exp(−λ²/2)", forall=[i])
    # Hoeffding's events fit the chains' per-event probability: −λ²/2 ≤ −λ²(1 − u)²/2.
    exponent = pf.sign(-LAM**2 / 2, "≤", -LAM**2 * (1 - U_A)**2 / 2, "λ²/2 − λ²(1 − u)²/2 = λ²u(2 − u)/2 ≥ 0",
                       using=[small_u], label="Hoeffding ≤ union")
    grow = _exp_monotone(pf, _abs_facts(pf, ["tangent"]), -LAM**2 / 2, -LAM**2 * (1 - U_A)**2 / 2, exponent,
                         "Hoeffding ≤ union", signs=[small_u])
    twice = pf.bound([grow, pf.sign(sp.Integer(2), "≤", 2)], "mul", hoeffding, "≤", per_chain, label="Hoeffding ≤ union")
    sum_each = pf.chain([pf.instance(sum_i, {i: i}), twice], _FAIL_PV(i), "≤", per_chain, label="Hoeffding ≤ union",
                        forall=[i])
    chains_total = _sum_below(pf, _FAIL_CHAIN, lambda k: per_chain, chain_i, _C1, "union bound")
    sums_total = _sum_below(pf, _FAIL_PV, lambda k: per_chain, sum_each, _C2, "union bound")
    both = pf.bound([chains_total, sums_total], "add", boole.rhs, "≤", chains_total.rhs + sums_total.rhs,
                    label="union bound")
    counted = pf.rewrite(both.rhs, chains * per_chain, [count], "Σ_{i≤C₁} q + Σ_{i≤C₂} q = (C₁ + C₂)q = Cq",
                         label="union bound")
    pf.chain([inside, boole, both, counted], FAILURE_PROB, "≤", chains * per_chain,
             "P(some element exceeds its bound) ≤ C·2exp(−λ²(1 − u)²/2)", label="conclusion")
    pf.equal("choosing λ", "λ = √(2 ln(2C/Q))/(1 − u) makes the failure probability exactly Q",
             sp.simplify(chains * per_chain.subs(LAM, lam_of_q)), q_fail)
    return pf.finish(Result(prob, per_chain=per_chain, lam_of_q=lam_of_q, chains=chains, q_fail=q_fail))
