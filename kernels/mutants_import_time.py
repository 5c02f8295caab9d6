"""A correct attention function in a module whose import changes the process (red team rt44h: such a module passed
global-state-unchanged, the run's baseline being taken after the target was imported). Its import switches TF32 on
for cuBLAS and cuDNN and lowers the float32 matmul precision to 'high', as training scripts' preambles do, for every
model in the process. Not imported by kernels.mutants: its import is the bug, and is judged only through the loader
(kernels.harness.cli.load_target, which the CLI and the pytest plugin use)."""
from __future__ import annotations

import torch

from kernels.harness.references import full_attention

torch.backends.cuda.matmul.allow_tf32 = True  # the bug: process-wide, at import
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("high")


def attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return full_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
