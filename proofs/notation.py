"""The symbols claims are stated in, shared by the catalogue and the theorems that prove them.

One definition per symbol: a statement in ``proofs/claims.py`` and the step that establishes
it must use the very same SymPy objects, since the engine matches them structurally.
"""
from __future__ import annotations

import sympy as sp

# Moments.
E = sp.Function("E")
Var = sp.Function("Var")
Std = sp.Function("Std")
Cov = sp.Function("Cov")
P = sp.Function("P")  # probability of an event

# Dot product q·k of two d_k-vectors.
S = sp.Symbol("S")  # the raw score q·k
D_K = sp.Symbol("d_k", integer=True, positive=True)
MU_Q, MU_K = sp.symbols("mu_q mu_k", real=True)
VAR_Q, VAR_K = sp.symbols("sigma_q^2 sigma_k^2", positive=True)
SCALE_S = sp.Symbol("s", positive=True)  # a scale factor applied to the scores

# Index form: generic indices and sizes.
I, J, K_IDX, C_IDX = sp.symbols("i j k c", integer=True, positive=True)
N = sp.Symbol("n", integer=True, positive=True)
Z = sp.IndexedBase("z", real=True)  # logits
A = sp.IndexedBase("a", real=True)  # softmax weights (real: sums of squares of them are ≥ 0)
QI, KI = sp.IndexedBase("q"), sp.IndexedBase("k")  # entries of Q and K
JAC = sp.IndexedBase("J")  # the softmax Jacobian
C = sp.Symbol("c", real=True)  # a shift
LAMBDA = sp.Symbol("lambda", real=True)  # any eigenvalue of J
T_LEAD = sp.Symbol("t", real=True)  # the lead of one logit over the others

# Online softmax.
merge = sp.Function("merge")
lse = sp.Function("lse")
STATE_A, STATE_B, STATE_C = sp.symbols("A B C")  # block states (m, l, o)
IDENTITY_STATE = sp.Tuple(-sp.oo, sp.Integer(0), sp.Integer(0))
O_MERGED = sp.Symbol("o_merged")  # o of the merged state of all blocks
L_MERGED = sp.Symbol("l_merged")
ACC_OVER_L = sp.Symbol("acc/l")  # FlashAttention-2's output after the last block

# Masks.
N_Q, N_K = sp.symbols("N_q N_k", integer=True, positive=True)
I0, J0, K0 = sp.symbols("i j k", integer=True, nonnegative=True)  # 0-based query / key indices
SCORES = sp.IndexedBase("s")
WEIGHTS = sp.IndexedBase("a")

# Scale trap.
N_KEYS = sp.Symbol("n", integer=True, positive=True)
A_J = sp.Symbol("a_j")  # any one softmax weight
A_MAX = sp.Symbol("a_max")  # the largest weight

# Projections and heads.
BATCH, SEQ, D_MODEL, D_V = sp.symbols("B T d_model d_v", integer=True, positive=True)
shape = sp.Function("shape")
params = sp.Function("params")
G = sp.Symbol("G", integer=True, positive=True)  # query heads per KV head

# Saturation: the weights of z = (t, 0, ..., 0) as functions of the lead t.
A_1 = sp.Function("a_1")(T_LEAD)  # the leading weight
A_J_T = sp.Function("a_j")(T_LEAD)  # a trailing weight, j > 1
A_K_T = sp.Function("a_k")(T_LEAD)  # another trailing weight, k > 1, k ≠ j

# Log-sum-exp.
M_REF, L_SUM = sp.Symbol("m", real=True), sp.Symbol("l", positive=True)
SUM_EXP = sp.Symbol("Σ_j exp(s_j)", positive=True)
M_BASE2 = sp.Symbol("m_2", positive=True)

# Online softmax over any number of blocks: block b's raw sums Z_b = Σ_{j∈B_b} exp(s_j), U_b = Σ exp(s_j) v_j.
N_BLOCKS = sp.Symbol("N_B", integer=True, positive=True)
B_IDX = sp.Symbol("b", integer=True, positive=True)
Z_BLOCK = sp.IndexedBase("Z", positive=True)
U_BLOCK = sp.IndexedBase("U", real=True)
M_FINAL = sp.Symbol("M", real=True)  # the merged state's reference

# Projections, scores and heads as matrix symbols.
N_TOK = sp.Symbol("N", integer=True, positive=True)  # tokens
H_IDX = sp.Symbol("h", integer=True, nonnegative=True)
kv_head = sp.Function("kv_head")


def explicit(expr, sizes: dict, matrices: dict):
    """A statement's matrix expression at explicit sizes and entries (MatrixSymbols by name → Matrix)."""
    expr = sp.sympify(expr).subs(sizes)
    by_name = {m.name: m for m in expr.atoms(sp.MatrixSymbol)}
    expr = expr.xreplace({by_name[name]: sp.ImmutableMatrix(value) for name, value in matrices.items()
                          if name in by_name}).doit()
    return sp.Matrix(expr.as_explicit()) if isinstance(expr, sp.MatrixExpr) else expr

# Rotary position embedding: query at position m, key at n, both shifted by t; h pairs of components.
ROPE_M, ROPE_N, ROPE_T = sp.symbols("m n t", integer=True)
ROPE_H = sp.Symbol("h", integer=True, positive=True)
ROPE_THETA = sp.IndexedBase("theta", real=True)  # pair i's frequency θ_i
score_rope = sp.Function("s_RoPE")  # s(m, n) = ⟨R_m q, R_n k⟩

# Kurtosis of q·k: central moments and kurtosis of the score S and of one product term P = q_i k_i.
P_TERM = sp.Symbol("P")
# μ₂(P) > 0: the kurtosis claim assumes a non-degenerate product P (its assumptions say so).
mu_2, mu_4, kappa = sp.Function("mu_2", positive=True), sp.Function("mu_4"), sp.Function("kappa")


def inline(expr) -> str:
    """``expr`` inside a sentence (a step's description, a check's detail, an audit value): inline TeX made by
    SymPy, which every renderer typesets (HTML and Markdown as math, the terminal as written), so no sentence
    carries SymPy's program text (``4*N**2``)."""
    from proofs.latex import latex  # the report's printer; the symbols above need none of it

    return f"${latex(expr)}$"
