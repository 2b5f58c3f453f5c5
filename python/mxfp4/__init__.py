"""mxfp4: MXFP4 quantization and GEMM for CPUs and NVIDIA Hopper.

Bit-exact with AMD AITER's ``dynamic_mxfp4_quant`` quantizer (spec: docs/semantics.md) and
GEMM ``C = quantize(A) @ B^T`` within the spec's accuracy bound. Works on numpy arrays (CPU)
and torch tensors (CPU or CUDA) without copying them; see docs/python.md.

Main entry points:

* :func:`quantize` / :func:`dequantize`: dense <-> MXFP4 codes and E8M0 scales.
* :func:`prepack` / :func:`prepack_dense` / :func:`unpack`: weights <-> :class:`PackedTensor`;
  :func:`prepack_fp8`: adds the weights' FP8 image for the CUDA prefill path (docs/fp8-path.md).
* :func:`gemm`: bf16 activations times MXFP4 weights (bf16 result, or fp32 with
  ``out_dtype``); :func:`explain`: the kernel path used.
* :func:`shuffle_scales`, :func:`unshuffle_scales`, :func:`shuffle_weight`,
  :func:`unshuffle_weight`: AITER layouts.
* :mod:`mxfp4.nn` (``MXFP4Linear``) and :mod:`mxfp4.loaders` (AITER tensors, gpt-oss
  safetensors), both torch-based except the safetensors reader.
* :mod:`mxfp4.tp`: sharding weights for tensor parallelism (column- and row-parallel) and the
  torch.distributed layers ``ColumnParallelMXFP4Linear`` / ``RowParallelMXFP4Linear``.
* ``torch.ops.mxfp4.*``: the same operations as torch custom ops (torch.compile, CUDA graphs),
  registered on import when torch is installed.
"""

from . import _C
from ._api import (
    PackedTensor,
    built_with_cuda,
    cuda_device_count,
    dequantize,
    explain,
    fp8_weights_bytes,
    gemm,
    packed_bytes,
    prepack,
    prepack_dense,
    prepack_fp8,
    quantize,
    shuffle_scales,
    shuffle_weight,
    shuffled_scales_shape,
    unpack,
    unshuffle_scales,
    unshuffle_weight,
)
from ._core import BLOCK_SIZE, FP8_IMAGE_LAYOUT, PACKED_LAYOUT_VERSION, torch as _torch

#: Version of the mxfp4 C++ library the extension was built from.
__version__ = _C.version()

#: Class of GEMM configurations returned by :func:`explain`.
GemmConfig = _C.GemmConfig
#: Kernel paths of the CUDA GEMM (``GemmConfig.path``): fused, splitk, tiled, fp8, gemv.
GemmPath = _C.GemmPath

if _torch is not None:  # register torch.ops.mxfp4.*
    from . import _torch_ops  # noqa: F401

__all__ = [
    "BLOCK_SIZE",
    "FP8_IMAGE_LAYOUT",
    "PACKED_LAYOUT_VERSION",
    "GemmConfig",
    "GemmPath",
    "PackedTensor",
    "built_with_cuda",
    "cuda_device_count",
    "dequantize",
    "explain",
    "fp8_weights_bytes",
    "gemm",
    "packed_bytes",
    "prepack",
    "prepack_dense",
    "prepack_fp8",
    "quantize",
    "shuffle_scales",
    "shuffle_weight",
    "shuffled_scales_shape",
    "unpack",
    "unshuffle_scales",
    "unshuffle_weight",
]
