"""The numbers the two seed documents give as inputs to their worked examples, as printed.

The theorems in ``proofs.theorems.worked_examples`` derive the exact values from these, and
the seed audit (``proofs.seed_audit``) sets every printed decimal beside them.
"""
from __future__ import annotations

import sympy as sp

SEED_SELF_ATTENTION = "000_6dc9c20305ca48b8.txt"
SEED_WITH_WEIGHTS = "002_84043d61bb2cf99b.txt"
# Each seed's own title (its first line), for people: the file names are hashes.
SEED_TITLES = {SEED_SELF_ATTENTION: "Self-Attention by Hand: Mathematical Mechanics of Scaled Dot-Product Attention",
               SEED_WITH_WEIGHTS: "Self Attention With Weights"}

# The N = 2 example (in SEED_SELF_ATTENTION): X (2×4), W_Q, W_K, W_V (4×2), d_k = 2, and the matrices it prints.
SEED_X = sp.Matrix([[1, 0, 1, 0], [0, 2, 0, 2]])
SEED_W_Q = sp.Matrix([[1, 0], [0, 1], [0, 1], [1, 0]])
SEED_W_K = sp.Matrix([[1, 1], [0, 0], [1, 0], [0, 1]])
SEED_W_V = sp.Matrix([[0, 2], [1, 0], [1, 1], [0, 1]])
PRINTED_Q = sp.Matrix([[1, 1], [2, 2]])
PRINTED_K = sp.Matrix([[2, 1], [0, 2]])
PRINTED_V = sp.Matrix([[1, 3], [2, 2]])
PRINTED_S = sp.Matrix([[3, 2], [6, 4]])

# The 3-token example: raw scores QKᵀ, d_k = 4, the scaled scores it prints, and the 2-D values
# of the z₁ example.
SEED_SCORES_3 = sp.Matrix([[4, 2, 0], [1, 3, -1], [2, 0, 4]])
SEED_DK_3 = 4
PRINTED_SCALED_3 = sp.Matrix([[2, 1, 0], [sp.Rational(1, 2), sp.Rational(3, 2), -sp.Rational(1, 2)], [1, 0, 2]])
SEED_VALUES_3 = sp.Matrix([[1, 2], [3, 0], [0, 4]])  # rows v₁, v₂, v₃


# ---- Cited facts the audit decides seed sentences against (numbers as the sources print them).
# proofs never imports transformers, so the configurations are cited from the model cards' config.json
# files; where the peers extra installs transformers, tests/test_model_facts.py checks them against its
# configuration classes (GPT2Config's defaults; LlamaConfig built with the card's sizes).
MODEL_CONFIGS = {
    "GPT-2 small": dict(d_model=768, heads=12, kv_heads=12, head_dim=None,
                        source="https://huggingface.co/openai-community/gpt2/blob/main/config.json "
                               "(n_embd 768, n_head 12, initializer_range 0.02)"),
    "Llama 3.1 8B": dict(d_model=4096, heads=32, kv_heads=8, head_dim=128,
                         source="https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json "
                                "(hidden_size 4096, num_attention_heads 32, num_key_value_heads 8, head_dim 128)"),
    "Llama 3.1 70B": dict(d_model=8192, heads=64, kv_heads=8, head_dim=None,
                          source="Llama 3 Herd of Models (Dubey et al. 2024), Table 3: model dimension 8192, "
                                 "64 attention heads, 8 key/value heads"),
    "Llama 3.1 405B": dict(d_model=16384, heads=128, kv_heads=8, head_dim=None,
                           source="Llama 3 Herd of Models (Dubey et al. 2024), Table 3: model dimension 16384, "
                                  "128 attention heads, 8 key/value heads"),
}
GPT2_INIT_STD = 0.02  # initializer_range of the GPT-2 config above

# NVIDIA A100 80GB SXM datasheet: 80 GB HBM2e at 2,039 GB/s; 108 SMs with 192 KB of L1/shared memory each.
# FlashAttention (Dao et al. 2022), Figure 1: SRAM 19 TB/s on A100.
A100 = dict(hbm_gb=80, hbm_gbps=2039, sms=108, sram_kb_per_sm=192, sram_tbps=19,
            source="NVIDIA A100 Tensor Core GPU datasheet (80GB SXM); FlashAttention (Dao et al. 2022), Figure 1")

CITED = {
    "vaswani-3.2.1": ("Vaswani et al. 2017, section 3.2.1 and footnote 4",
                      "We suspect that for large values of d_k, the dot products grow large in magnitude, pushing the "
                      "softmax function into regions where it has extremely small gradients. To counteract this "
                      "effect, we scale the dot products by 1/√d_k. [Footnote 4:] To illustrate why the dot products "
                      "get large, assume that the components of q and k are independent random variables with mean 0 "
                      "and variance 1. Then their dot product has mean 0 and variance d_k."),
    "gqa": ("Ainslie et al. 2023, GQA, abstract (https://arxiv.org/abs/2305.13245)",
            "We show that uptrained GQA achieves quality close to multi-head attention with comparable speed to "
            "MQA."),
    "t5": ("Raffel et al. 2020, T5 (JMLR 21), and its Mesh TensorFlow code",
           "T5's attention has no 1/√d_kv factor: the scale is folded into the initialisation of W_q "
           "(std (d_model·d_kv)^(-1/2)); d_kv = 64 in T5-small, -base and -large, 128 in T5-3B and -11B."),
    "fa3": ("Shah et al. 2024, FlashAttention-3, abstract",
            "FP16 reaching up to 740 TFLOPs/s (75% utilization) on H100"),
    "sdpa-defaults": ("torch.nn.functional.scaled_dot_product_attention docs (scale default 1/√E); "
                      "jax.nn.dot_product_attention docs (scale default 1/√H); flash_attn_func docstring "
                      "(softmax_scale default 1/√headdim)", ""),
}
# The default scale of each, as the exponent of the head dimension d (1/√d = d^(-1/2)), as documented above.
DEFAULT_SCALE_EXPONENT = {"PyTorch": sp.Rational(-1, 2), "JAX": sp.Rational(-1, 2), "FlashAttention": sp.Rational(-1, 2)}
