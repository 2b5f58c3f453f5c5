"""torch.library custom ops ``torch.ops.mxfp4.*`` (registered when torch is importable).

Each op is one opaque call for torch.compile (fullgraph, no graph breaks) and CUDA graph
capture: the real implementation allocates its outputs with torch (the caching allocator,
graph-pool aware), runs the library on torch's current stream and never synchronises; the
fake (meta) implementation only computes output shapes and dtypes.

Ops (all functional, no input is mutated; ``str`` arguments as in the Python API):

* ``quantize(Tensor x, str rule="aiter", str scale_layout="plain") -> (Tensor codes, Tensor scales)``
* ``dequantize(Tensor codes, Tensor scales, ScalarType dtype, str code_layout="plain",
  str scale_layout="plain") -> Tensor``
* ``prepack(Tensor codes, Tensor scales, int N, int K, str code_layout="plain",
  str scale_layout="plain") -> Tensor``  (uint8 [packed_bytes(N, K)])
* ``prepack_dense(Tensor w, str rule="aiter") -> Tensor``
* ``prepack_fp8(Tensor packed, int N, int K, int version=PACKED_LAYOUT_VERSION) -> Tensor``
  (the FP8 image, uint8 [fp8_weights_bytes(N, K)]; docs/fp8-path.md)
* ``unpack(Tensor packed, int N, int K, int version=PACKED_LAYOUT_VERSION) -> (Tensor codes, Tensor scales)``
* ``gemm(Tensor a, Tensor packed, int N, int K, int version=PACKED_LAYOUT_VERSION, str rule="aiter",
  ScalarType? out_dtype=None, Tensor? fp8=None, bool weights_static=False) -> Tensor``  (bf16,
  or float32 with ``out_dtype=torch.float32``; ``fp8``: the weights' FP8 image, which lets the
  CUDA GEMM take path fp8 for M > 64, or M > 32 with N x K >= 10 Mi weights: explain() tells;
  ``weights_static``: see mxfp4.gemm)
* ``gemm_mx(Tensor a, Tensor codes, Tensor scales, str code_layout="plain",
  str scale_layout="plain", str rule="aiter", ScalarType? out_dtype=None) -> Tensor``
* ``shuffle_scales(Tensor scales) -> Tensor``, ``unshuffle_scales(Tensor shuffled, int rows,
  int kblocks) -> Tensor``, ``shuffle_weight(Tensor codes) -> Tensor``,
  ``unshuffle_weight(Tensor codes) -> Tensor``
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _core
from ._core import BLOCK_SIZE, PACKED_LAYOUT_VERSION, _prod, _shuffled_shape

_U8 = torch.uint8


def _torch_dtype(dtype) -> torch.dtype:
    """dequantize's output dtype as a torch.dtype (float32 or bfloat16, any spelling)."""
    return torch.float32 if _core._out_kind(dtype) == "f32" else torch.bfloat16


def _check_names(rule=None, code_layout=None, scale_layout=None):
    # Fake implementations check names too, so torch.compile reports them at trace time.
    if rule is not None:
        _core._rule(rule)
    if code_layout is not None:
        _core._code_layout(code_layout)
    if scale_layout is not None:
        _core._scale_layout(scale_layout)


def _same_device(a: Tensor, **others) -> None:
    # Torch routes a call that mixes a meta tensor with real ones to the fake implementation,
    # which would return an uninitialised result instead of computing it: every tensor of a
    # call must be on a's device (the real implementations check this too; ValueError).
    for name, t in others.items():
        if t is not None and t.device != a.device:
            raise ValueError(f"all arrays of one call must be on the same device: a on {a.device}, "
                             f"{name} on {t.device}")


def _rows_k(x: Tensor, name: str):
    if x.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension [..., K]; got a scalar")
    return _prod(x.shape[:-1]), x.shape[-1]


# ---- quantize ---------------------------------------------------------------------------------


@torch.library.custom_op("mxfp4::quantize", mutates_args=())
def quantize(x: Tensor, rule: str = "aiter", scale_layout: str = "plain") -> Tuple[Tensor, Tensor]:
    """torch.ops.mxfp4.quantize: x [..., K] -> (codes uint8 [..., K/2], scales); see mxfp4.quantize."""
    return _core._quantize_impl(x, rule, scale_layout)


@quantize.register_fake
def _quantize_fake(x, rule="aiter", scale_layout="plain"):
    _check_names(rule=rule, scale_layout=scale_layout)
    rows, K = _rows_k(x, "x")
    lead = tuple(x.shape[:-1])
    codes = x.new_empty((*lead, K // 2), dtype=_U8)
    if _core._scale_layout(scale_layout) == _core._C.ScaleLayout.plain:
        scales = x.new_empty((*lead, K // BLOCK_SIZE), dtype=_U8)
    else:
        scales = x.new_empty(_shuffled_shape(rows, K // BLOCK_SIZE), dtype=_U8)
    return codes, scales


# ---- dequantize -------------------------------------------------------------------------------


@torch.library.custom_op("mxfp4::dequantize", mutates_args=())
def dequantize(codes: Tensor, scales: Tensor, dtype: torch.dtype, code_layout: str = "plain",
               scale_layout: str = "plain") -> Tensor:
    """torch.ops.mxfp4.dequantize: codes, scales -> [..., K] in `dtype`; see mxfp4.dequantize."""
    return _core._dequantize_impl(codes, scales, dtype, code_layout, scale_layout)


@dequantize.register_fake
def _dequantize_fake(codes, scales, dtype, code_layout="plain", scale_layout="plain"):
    _check_names(code_layout=code_layout, scale_layout=scale_layout)
    _same_device(codes, scales=scales)
    _rows_k(codes, "codes")
    return codes.new_empty((*codes.shape[:-1], 2 * codes.shape[-1]), dtype=_torch_dtype(dtype))


# ---- prepack / unpack -------------------------------------------------------------------------


@torch.library.custom_op("mxfp4::prepack", mutates_args=())
def prepack(codes: Tensor, scales: Tensor, N: int, K: int, code_layout: str = "plain",
            scale_layout: str = "plain") -> Tensor:
    """torch.ops.mxfp4.prepack: codes, scales of B [N, K] -> packed uint8 [packed_bytes(N, K)]; see mxfp4.prepack."""
    return _core._prepack_impl(codes, scales, N, K, code_layout, scale_layout)[0]


def _packed_len(N, K):
    # packed_bytes(N, K) = Np*Kp/2 + Np*Kp/32 (docs/packed-layout.md); asks the library when
    # the sizes are concrete so the two never disagree.
    if isinstance(N, int) and isinstance(K, int):
        return int(_core._C.packed_bytes(N, K))
    Np, Kp = (N + 15) // 16 * 16, (K + 63) // 64 * 64
    return Np * Kp // 2 + Np * Kp // 32


@prepack.register_fake
def _prepack_fake(codes, scales, N, K, code_layout="plain", scale_layout="plain"):
    _check_names(code_layout=code_layout, scale_layout=scale_layout)
    _same_device(codes, scales=scales)
    return codes.new_empty((_packed_len(N, K),), dtype=_U8)


@torch.library.custom_op("mxfp4::prepack_dense", mutates_args=())
def prepack_dense(w: Tensor, rule: str = "aiter") -> Tensor:
    """torch.ops.mxfp4.prepack_dense: dense w [N, K] -> packed uint8 [packed_bytes(N, K)]; see mxfp4.prepack_dense."""
    return _core._prepack_dense_impl(w, rule)[0]


@prepack_dense.register_fake
def _prepack_dense_fake(w, rule="aiter"):
    _check_names(rule=rule)
    if w.dim() != 2:
        raise ValueError(f"w must be 2-D [N, K]; got shape {tuple(w.shape)}")
    return w.new_empty((_packed_len(w.shape[0], w.shape[1]),), dtype=_U8)


@torch.library.custom_op("mxfp4::prepack_fp8", mutates_args=())
def prepack_fp8(packed: Tensor, N: int, K: int, version: int = PACKED_LAYOUT_VERSION) -> Tensor:
    """torch.ops.mxfp4.prepack_fp8: packed B [N, K] -> its FP8 image uint8 [fp8_weights_bytes(N, K)];
    see mxfp4.prepack_fp8."""
    return _core._prepack_fp8_impl(packed, N, K, version)


def _fp8_image_bytes(rows_padded, slices):
    # src/core/fp8_layout.hpp: S*Rp*128 code bytes, S*Rp float scales, S*Rp exponent words,
    # S*Rp/64 wide records of 16 bytes, S*Rp/16 flag bytes, rounded up to 16.
    total = slices * rows_padded * 136 + slices * (rows_padded // 64) * 16 + slices * (rows_padded // 16)
    return (total + 15) // 16 * 16


def _fp8_row_pad():
    # The image's row padding (fp8::kRowPad, internal to the library), read off its size.
    total = int(_core._C.fp8_weights_bytes(1, 128))
    return next(p for p in range(64, 1 << 16, 64) if _fp8_image_bytes(p, 1) == total)


def _fp8_len(N, K):
    # fp8_weights_bytes(N, K); asks the library when the sizes are concrete so the two never
    # disagree, else (symbolic sizes) the same formula with the library's row padding.
    if isinstance(N, int) and isinstance(K, int):
        return int(_core._C.fp8_weights_bytes(N, K))
    pad = _fp8_row_pad()
    return _fp8_image_bytes((N + pad - 1) // pad * pad, (K + 127) // 128)


@prepack_fp8.register_fake
def _prepack_fp8_fake(packed, N, K, version=PACKED_LAYOUT_VERSION):
    return packed.new_empty((_fp8_len(N, K),), dtype=_U8)


@torch.library.custom_op("mxfp4::unpack", mutates_args=())
def unpack(packed: Tensor, N: int, K: int, version: int = PACKED_LAYOUT_VERSION) -> Tuple[Tensor, Tensor]:
    """torch.ops.mxfp4.unpack: packed -> (codes uint8 [N, K/2], scales uint8 [N, K/32]); see mxfp4.unpack."""
    return _core._unpack_impl(packed, N, K, version)


@unpack.register_fake
def _unpack_fake(packed, N, K, version=PACKED_LAYOUT_VERSION):
    return (packed.new_empty((N, K // 2), dtype=_U8), packed.new_empty((N, K // BLOCK_SIZE), dtype=_U8))


# ---- GEMM -------------------------------------------------------------------------------------


@torch.library.custom_op("mxfp4::gemm", mutates_args=())
def gemm(a: Tensor, packed: Tensor, N: int, K: int, version: int = PACKED_LAYOUT_VERSION,
         rule: str = "aiter", out_dtype: Optional[torch.dtype] = None, fp8: Optional[Tensor] = None,
         weights_static: bool = False) -> Tensor:
    """torch.ops.mxfp4.gemm: bf16 a [..., K] x packed B [N, K] -> [..., N] in bf16 (default) or
    float32 (``out_dtype=torch.float32``: the unrounded fp32 result); ``fp8``: B's FP8 image
    (prepack_fp8) or None; ``weights_static``: see mxfp4.gemm."""
    return _core._gemm_impl(a, packed, N, K, version, rule, out_dtype, fp8, weights_static)


def _gemm_out(a, N, out_dtype):
    if a.dtype != torch.bfloat16:
        raise TypeError(f"a must be torch.bfloat16 (the GEMM quantizes bf16 activations); got {a.dtype}")
    if a.dim() == 0:
        raise ValueError("a must have at least one dimension [..., K]; got a scalar")
    dt = torch.float32 if _core._gemm_out_kind(out_dtype) == "f32" else torch.bfloat16
    return a.new_empty((*a.shape[:-1], N), dtype=dt)


@gemm.register_fake
def _gemm_fake(a, packed, N, K, version=PACKED_LAYOUT_VERSION, rule="aiter", out_dtype=None, fp8=None,
               weights_static=False):
    _check_names(rule=rule)
    _same_device(a, packed=packed, fp8=fp8)
    return _gemm_out(a, N, out_dtype)


@torch.library.custom_op("mxfp4::gemm_mx", mutates_args=())
def gemm_mx(a: Tensor, codes: Tensor, scales: Tensor, code_layout: str = "plain", scale_layout: str = "plain",
            rule: str = "aiter", out_dtype: Optional[torch.dtype] = None) -> Tensor:
    """torch.ops.mxfp4.gemm_mx: bf16 a [..., K] x (codes, scales) B [N, K] -> [..., N] in bf16 or
    float32 (``out_dtype``); see mxfp4.gemm."""
    return _core._gemm_mx_impl(a, codes, scales, code_layout, scale_layout, rule, out_dtype)


@gemm_mx.register_fake
def _gemm_mx_fake(a, codes, scales, code_layout="plain", scale_layout="plain", rule="aiter", out_dtype=None):
    _check_names(rule=rule, code_layout=code_layout, scale_layout=scale_layout)
    _same_device(a, codes=codes, scales=scales)
    if codes.dim() != 2:
        raise ValueError(f"codes must be 2-D [N, K/2]; got shape {tuple(codes.shape)}")
    return _gemm_out(a, codes.shape[0], out_dtype)


# ---- AITER layouts ----------------------------------------------------------------------------


@torch.library.custom_op("mxfp4::shuffle_scales", mutates_args=())
def shuffle_scales(scales: Tensor) -> Tensor:
    """torch.ops.mxfp4.shuffle_scales: plain scales [rows, K/32] -> AITER e8m0_shuffle order; see mxfp4.shuffle_scales."""
    return _core._shuffle_scales_impl(scales)


@shuffle_scales.register_fake
def _shuffle_scales_fake(scales):
    if scales.dim() != 2:
        raise ValueError(f"scales must be 2-D [rows, K/32]; got shape {tuple(scales.shape)}")
    return scales.new_empty(_shuffled_shape(scales.shape[0], scales.shape[1]), dtype=_U8)


@torch.library.custom_op("mxfp4::unshuffle_scales", mutates_args=())
def unshuffle_scales(shuffled: Tensor, rows: int, kblocks: int) -> Tensor:
    """torch.ops.mxfp4.unshuffle_scales: AITER shuffled scales -> plain [rows, kblocks]; see mxfp4.unshuffle_scales."""
    return _core._unshuffle_scales_impl(shuffled, rows, kblocks)


@unshuffle_scales.register_fake
def _unshuffle_scales_fake(shuffled, rows, kblocks):
    return shuffled.new_empty((rows, kblocks), dtype=_U8)


@torch.library.custom_op("mxfp4::shuffle_weight", mutates_args=())
def shuffle_weight(codes: Tensor) -> Tensor:
    """torch.ops.mxfp4.shuffle_weight: plain codes [N, K/2] -> AITER shuffle_weight order; see mxfp4.shuffle_weight."""
    return _core._weight_layout_impl(codes, True)


@torch.library.custom_op("mxfp4::unshuffle_weight", mutates_args=())
def unshuffle_weight(codes: Tensor) -> Tensor:
    """torch.ops.mxfp4.unshuffle_weight: AITER shuffled codes [N, K/2] -> plain; see mxfp4.unshuffle_weight."""
    return _core._weight_layout_impl(codes, False)


@shuffle_weight.register_fake
def _shuffle_weight_fake(codes):
    if codes.dim() != 2:
        raise ValueError(f"codes must be 2-D [N, K/2]; got shape {tuple(codes.shape)}")
    return codes.new_empty(tuple(codes.shape), dtype=_U8)


@unshuffle_weight.register_fake
def _unshuffle_weight_fake(codes):
    return _shuffle_weight_fake(codes)

