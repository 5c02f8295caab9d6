"""The audit's cited model configurations against the pinned transformers' configuration classes, where the
peers extra installs transformers (proofs itself never imports it: the audit cites the model cards)."""
import pytest

from proofs.seed_data import GPT2_INIT_STD, MODEL_CONFIGS

transformers = pytest.importorskip("transformers", reason="needs the peers extra: pip install -e '.[peers]'")


def test_gpt2_small_is_transformers_gpt2config():
    config, cited = transformers.GPT2Config(), MODEL_CONFIGS["GPT-2 small"]
    assert (config.n_embd, config.n_head, config.initializer_range) == (cited["d_model"], cited["heads"], GPT2_INIT_STD)


def test_llama_head_dim_is_what_transformers_derives():
    """LlamaConfig's defaults are not Llama 3.1 8B's (32 KV heads, not 8); built with the model card's sizes,
    the class derives the head dim the audit cites (128 = 4096 / 32)."""
    cited = MODEL_CONFIGS["Llama 3.1 8B"]
    config = transformers.LlamaConfig(hidden_size=cited["d_model"], num_attention_heads=cited["heads"],
                                      num_key_value_heads=cited["kv_heads"])
    assert config.head_dim == cited["head_dim"] == cited["d_model"] // cited["heads"]
    assert config.num_key_value_heads == cited["kv_heads"]
