import pytest
import sympy as sp

from proofs.theorems.gqa import gqa_equals_repeated_mha, kv_head, kv_head_rule, repeat_interleave


def test_gqa_equals_repeated_mha_is_proved_for_any_head_counts():
    d = gqa_equals_repeated_mha()
    assert d.verified, d.reasons
    assert d.computations == []
    assert d.result.cache_ratio.name == "G"
    assert {s.name for s in d.statement.free_symbols} >= {"H_q", "H_kv", "G", "h"}  # symbolic, not explicit sizes


def test_modulo_mapping_is_refused():
    d = gqa_equals_repeated_mha(lambda h, hq, hkv: sp.Mod(h, hkv))
    assert not d.verified
    assert any("refuted" in s.detail for s in d.failed_steps)


def test_a_mapping_wrong_only_past_8_query_heads_is_refused():
    # ⌊h/G⌋ up to 8 query heads (all the old proof enumerated), h mod H_kv beyond.
    def wrong(h, hq, hkv):
        return sp.Piecewise((kv_head_rule(h, hq, hkv), hq <= 8), (sp.Mod(h, hkv), True))

    assert all(wrong(h, q, kv) == kv_head_rule(h, q, kv) for q in range(1, 9) for kv in range(1, q + 1)
               if q % kv == 0 for h in range(q))
    assert not gqa_equals_repeated_mha(wrong).verified


def test_mapping_matches_repeat_interleave():
    assert [kv_head(h, 8, 2) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert repeat_interleave(["a", "b"], 3) == ["a", "a", "a", "b", "b", "b"]
    for hq, hkv in ((6, 3), (3, 1), (12, 4)):
        assert [kv_head(h, hq, hkv) for h in range(hq)] == repeat_interleave(list(range(hkv)), hq // hkv)


@pytest.mark.parametrize("args,name", [((0, 6, 4), "n_heads_q"), ((6, 4, 2), "h"), ((-1, 4, 2), "h"),
                                       ((0, 4, 0), "n_heads_kv")])
def test_bad_head_arguments(args, name):
    with pytest.raises(ValueError, match=name):
        kv_head(*args)
