"""Triton FlashAttention (forward and backward) with torch SDPA's contract; see api.flash_attention."""
from kernels.flash.api import flash_attention

__all__ = ["flash_attention"]
