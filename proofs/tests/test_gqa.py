import pytest

from proofs.theorems.gqa import gqa_equals_repeated_mha, kv_head, repeat_interleave


def test_gqa_equals_repeated_mha_is_proved():
    d = gqa_equals_repeated_mha()
    assert d.verified
    assert d.result.cache_ratio.name == "G"


def test_modulo_mapping_is_refused():
    d = gqa_equals_repeated_mha(lambda h, hq, hkv: h % hkv)
    assert not d.verified
    assert any("refuted" in s.detail for s in d.failed_steps)


def test_mapping_matches_repeat_interleave():
    assert [kv_head(h, 8, 2) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert repeat_interleave(["a", "b"], 3) == ["a", "a", "a", "b", "b", "b"]
    assert gqa_equals_repeated_mha(n_heads_q=6, n_heads_kv=3).verified
    assert gqa_equals_repeated_mha(n_heads_q=3, n_heads_kv=1).verified  # MQA


@pytest.mark.parametrize("args,name", [((0, 6, 4), "n_heads_q"), ((6, 4, 2), "h"), ((-1, 4, 2), "h"),
                                       ((0, 4, 0), "n_heads_kv")])
def test_bad_head_arguments(args, name):
    with pytest.raises(ValueError, match=name):
        kv_head(*args)
