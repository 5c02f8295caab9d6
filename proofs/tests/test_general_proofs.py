"""The headline claims are proved in general form; each test here fails on the review's findings."""
import sympy as sp

from proofs.engine import CITED, DEFINITION, HYPOTHESIS
from proofs.tests.derived import derived


def _constant(x) -> bool:
    return x is not None and not isinstance(x, str) and not sp.sympify(x).free_symbols


def test_dot_product_variance_compares_no_two_constants():
    # The review: every identity step of dot-product-variance compared constants (0 = 0, 1 = 1, d_k = d_k).
    for claim_id in ("dot-product-variance", "dot-product-moments"):
        d = derived(claim_id)
        constant = [s.description for s in d.checked_steps if _constant(s.lhs) and _constant(s.rhs)
                    and not (s.rule == "linearity" and sp.sympify(s.lhs).func.__name__ == "E")]  # E(0) = 0 only
        assert not constant, (claim_id, constant)


def test_dot_product_variance_is_proved_by_induction_on_symbolic_moments():
    general = derived("dot-product-moments")
    assert general.verified and general.computations == []
    induction = [o for o in general.check.outcomes if o.rule == "induction"]
    assert len(induction) == 2 and all(o.passed for o in induction)  # E(T_d) and Var(T_d)
    step = next(s for s in general.checked_steps if s.description.startswith("step: "))
    assert {"mu_q", "mu_k", "sigma_q^2", "sigma_k^2", "d_k"} <= {str(x) for x in sp.sympify(step.rhs).free_symbols}
    # Nothing about the distributions is assumed: only definitions, independence and the four moments, and the
    # recursion that defines a finite sum (cited).
    assert set(general.trust_base) == {DEFINITION, "assumption", CITED}
    # each cited theorem is listed as "reference: the statement used"
    assert {c.rsplit(": ", 1)[0] for c in general.trust_base[CITED]} == {
        "the recursion that defines a finite sum: Σ_{i=1}^{m} a_i = Σ_{i=1}^{m−1} a_i + a_m"}
    # No step sums a constant d_k times (Sum(c, (i, 1, d_k)).doit() with c free of i) to reach the result.
    sums = [e for s in general.checked_steps if s.rule != "rewrite" for side in (s.lhs, s.rhs)
            if side is not None and not isinstance(side, str)
            for e in sp.sympify(side).atoms(sp.Sum) if not e.function.has(e.limits[0][0])]
    assert not sums, sums


def test_seed_values_are_substituted_last_into_the_general_formulas():
    d = derived("dot-product-variance")
    rules = [s.rule for s in d.checked_steps]
    assert rules[:2] == ["theorem dot-product-moments"] * 2 and "induction" not in rules
    values = [s for s in d.trusted if s.kind == "assumption"]
    assert {str(s.lhs) for s in values} == {"mu_q", "mu_k", "sigma_q^2", "sigma_k^2"}


def test_online_merge_default_max_path_is_judged():
    from proofs.theorems.online_softmax import merge, online_softmax_merge

    def wrong_on_default(m1, l1, o1, m2, l2, o2, *, reference=None):
        if reference is not None:
            return merge(m1, l1, o1, m2, l2, o2, reference=reference)
        m = sp.Max(m1, m2)
        return m, l1 + l2, (l1 * o1 + l2 * o2) / (l1 + l2)  # the max path forgets to rescale

    assert online_softmax_merge().verified
    d = online_softmax_merge(wrong_on_default)
    assert not d.verified and any("max reference" in s.description for s in d.failed_steps)


def test_online_merge_is_stated_for_any_number_of_blocks():
    from proofs.notation import N_BLOCKS

    d = derived("online-softmax-merge")
    assert N_BLOCKS in d.statement.free_symbols
    assert d.verified and not d.computations


def test_causal_rules_are_checked_against_an_independent_definition(monkeypatch):
    import proofs.theorems.masking as masking

    assert masking.causal_mask_top_left().verified and masking.causal_mask_bottom_right().verified
    # A non-causal rule patched into the code under test: the mask and the old "expected" both followed it.
    monkeypatch.setattr(masking, "_last", lambda i, n_q, n_k, align=masking.TOP_LEFT: n_k - 1)
    assert not masking.causal_mask_top_left().verified
    assert not masking.causal_mask_bottom_right().verified


def test_tril_reference_is_pytorchs_documented_form():
    from proofs.theorems.masking import BOTTOM_RIGHT, TOP_LEFT, tril_reference

    # torch.ones(2, 4).tril(0) = [[1,0,0,0],[1,1,0,0]]; .tril(4 - 2) = [[1,1,1,0],[1,1,1,1]].
    assert tril_reference(2, 4, TOP_LEFT) == [[True, False, False, False], [True, True, False, False]]
    assert tril_reference(2, 4, BOTTOM_RIGHT) == [[True, True, True, False], [True, True, True, True]]


def test_spectrum_bound_is_checked_for_general_n_from_gershgorin():
    d = derived("softmax-jacobian-spectrum")
    assert sorted({c.rsplit(": ", 1)[0] for c in d.trust_base[CITED]}) == [
        "Gershgorin circle theorem (Gershgorin, 1931), radii R_x = Σ_{y≠x} |J_xy|",
        "Kronecker delta: δ_xy f(x) = δ_xy f(y)"]
    assert d.computations == []  # the radius R_g = J_gg is derived by the rules (softmax.gershgorin_radius)
    assert not any(s.relation in ("≤", "≥") for s in d.trusted if s.kind != CITED)  # no bound taken on trust
    assert d.result.max_eigenvalue == sp.Rational(1, 2) and d.result.diagonal_max == sp.Rational(1, 4)


def test_spectrum_bound_is_computed_not_typed(monkeypatch):
    import proofs.theorems.softmax as softmax

    real = softmax.jacobian_index_form
    monkeypatch.setattr(softmax, "jacobian_index_form", lambda: 2 * real())  # a Jacobian twice too large
    d = softmax.jacobian_spectrum()
    assert d.result.max_eigenvalue == 1 and not d.verified


def test_logsumexp_merged_is_computed_from_the_merge(monkeypatch):
    import proofs.theorems.online_softmax as online

    good = online.logsumexp_merge()
    lse_1, lse_2 = good.result.symbols
    assert sp.simplify(good.result.merged - sp.log(sp.exp(lse_1) + sp.exp(lse_2))) == 0
    real = online.merge
    monkeypatch.setattr(online, "merge", lambda m1, l1, o1, m2, l2, o2, reference=None:
                        real(m1, l1, o1, m2, 2 * l2, o2, reference=reference))  # double-counts block 2
    bad = online.logsumexp_merge()
    assert not bad.verified and sp.simplify(bad.result.merged - good.result.merged) != 0


def test_scale_trap_probability_content_is_checked_with_the_cited_theorems_named():
    d = derived("scale-trap-limits")
    cited = d.trust_base[CITED]
    assert any("Chebyshev" in c for c in cited) and any("central limit" in c for c in cited)
    # The tail bound, the softmax bounds and the gap's variance are checked steps, not premises.
    premises = " ".join(s.description for s in d.trusted)
    assert "n · Var" not in premises and "e^{−2δ}/n ≤ a_j" not in premises
    checked = " ".join(s.description for s in d.checked_steps)
    assert "n · Var(z_j)/δ²" in checked and "Var(s_1 − s_2) = 2 d_k" in checked


def test_score_moments_are_proved_for_every_n_by_induction():
    # Symbolic n throughout: inductions over partial sums, generalised for use at n and under Σ; no explicit size.
    for cid in ("self-attention-score-moments", "distinct-token-score-moments"):
        d = derived(cid)
        assert d.verified and d.computations == [], (cid, d.reasons)
        rules = [o.rule for o in d.check.outcomes if o.passed]
        assert "induction" in rules and "generalisation" in rules and "computation" not in rules, cid
        assert sp.Symbol("n", integer=True, positive=True) in d.statement.free_symbols, cid


def test_a_causal_statement_with_an_off_by_one_rule_is_refused():
    import sympy

    from proofs import notation as nt
    from proofs.claims import _causal_statement
    from proofs.tests.perturb import stated_as
    from proofs.theorems.masking import causal_mask_top_left

    shifted = _causal_statement(sympy, nt, nt.I0 + 1)  # "query i sees keys j ≤ i + 1"
    with stated_as("causal-mask-top-left", shifted):
        d = causal_mask_top_left()
    assert not d.verified and any(s.rule == "masked softmax" for s in d.failed_steps)
