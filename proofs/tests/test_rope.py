import sympy as sp

from proofs.theorems.rope import I, K, Q, rope_relative_position, rotation


def test_rope_scores_depend_on_the_offset_only():
    d = rope_relative_position()
    assert d.verified, d.reasons
    assert d.computations == []
    m, n, *_ = d.result.symbols
    assert d.result.score.has(n - m) and not d.result.pair_score.subs(n, m + sp.Symbol("o")).has(m)


def test_an_embedding_that_rotates_keys_the_other_way_is_refused():
    def wrong(alpha, beta):  # R(−β) on the key: the score then depends on m + n
        return (rotation(alpha) * sp.Matrix([Q[2 * I - 1], Q[2 * I]])).dot(
            rotation(-beta) * sp.Matrix([K[2 * I - 1], K[2 * I]]))

    d = rope_relative_position(pair_score=wrong)
    assert not d.verified
    assert any(s.rule.startswith("rotations compose (pair") for s in d.failed_steps)
