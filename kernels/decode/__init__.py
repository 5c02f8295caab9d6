"""Split-KV ("flash-decoding") attention: few queries, long key ranges, forward only."""
from kernels.decode.api import flash_decode
from kernels.decode.dispatch import auto_split, num_splits_for, should_split

__all__ = ["auto_split", "flash_decode", "num_splits_for", "should_split"]
