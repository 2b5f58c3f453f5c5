"""Public functions of the mxfp4 package (re-exported by ``mxfp4``).

Conventions (spec: docs/semantics.md, "spec §n"):

* Dense matrices are ``[..., K]`` with K a multiple of 32 along the last dimension; leading
  dimensions are rows. MXFP4 matrices are packed e2m1 codes ``uint8 [..., K/2]`` (element
  2i in the LOW nibble) and E8M0 scales ``uint8 [..., K/32]`` (byte b = 2^(b-127), 0xFF NaN).
* Inputs are numpy arrays (CPU) or torch tensors (CPU or CUDA); nothing is copied on the way
  in, and results come back in the input's framework on the input's device. CUDA work runs on
  torch's current stream of the input's device, without host synchronisation.
* bfloat16 numpy arrays are ``ml_dtypes.bfloat16`` or ``uint16`` bit patterns; bf16 results
  are ``ml_dtypes.bfloat16`` when ml_dtypes is installed (uint16 when the input was uint16).
* Errors: ``ValueError`` for bad sizes, strides, shapes, mixed devices or unknown names;
  ``TypeError`` for unsupported dtypes or layout versions; ``RuntimeError`` for backend
  failures (e.g. CUDA arrays with a CPU-only build).
"""

from __future__ import annotations

import numpy as np

from . import _C
from ._core import (
    FP8_IMAGE_LAYOUT,
    PACKED_LAYOUT_VERSION,
    _array,
    _dequantize_impl,
    _gemm_impl,
    _gemm_mx_impl,
    _gemm_out_kind,
    _is_torch,
    _nbytes,
    _nk,
    _parse_device,
    _size_args,
    _prepack_dense_impl,
    _prepack_fp8_impl,
    _prepack_impl,
    _quantize_impl,
    _shuffle_scales_impl,
    _unpack_impl,
    _unshuffle_scales_impl,
    _weight_layout_impl,
    shuffled_scales_shape,
    torch,
)

__all__ = [
    "PackedTensor",
    "quantize",
    "dequantize",
    "prepack",
    "prepack_dense",
    "prepack_fp8",
    "unpack",
    "gemm",
    "explain",
    "shuffle_scales",
    "unshuffle_scales",
    "shuffle_weight",
    "unshuffle_weight",
    "shuffled_scales_shape",
    "packed_bytes",
    "fp8_weights_bytes",
    "built_with_cuda",
    "cuda_device_count",
]


# ---------------------------------------------------------------------------------------
# Packed weights
# ---------------------------------------------------------------------------------------


class PackedTensor:
    """MXFP4 weights B [N, K] in the packed layout the GEMM kernels read (layout ``version``,
    docs/packed-layout.md), made by :func:`prepack`, :func:`prepack_dense` or a loader.

    Attributes:
        data: ``uint8 [packed_bytes(N, K)]`` numpy array or torch tensor (CPU or CUDA).
        N, K: logical shape of B (K a multiple of 32). The packed bytes do not record N:
            any N with the same padded size (a multiple of 16 rows) passes the size check,
            and a larger N than the weights had reads padding rows (zero weights), so keep N
            with the data it was packed from.
        version: packed layout version (:data:`mxfp4.PACKED_LAYOUT_VERSION`); the library
            rejects other versions with TypeError.
        fp8: ``None`` or the weights' FP8 image, ``uint8 [fp8_weights_bytes(N, K)]`` in
            data's framework and on data's device (about 1.065 bytes per weight; made by
            :func:`prepack_fp8` or ``prepack(..., fp8=True)``; docs/fp8-path.md). With it
            the CUDA GEMM takes path fp8 (8-bit tensor cores) where the dispatcher picks it
            (M > 64, or M > 32 with N x K >= 10 Mi weights: :func:`explain` tells); without it
            that shape runs a bf16 path. Results on the CPU backend are identical with and without it. It
            must describe the same weights as ``data``: :func:`gemm` checks its size
            (ValueError) and dtype (TypeError), not its contents. The image carries no
            version of its own: a pickled PackedTensor records :data:`mxfp4.FP8_IMAGE_LAYOUT`
            with it, and unpickling one from a library with another image layout drops the
            image (``fp8`` None: the GEMM takes a bf16 path; rebuild it with
            :func:`prepack_fp8`) rather than let the GEMM misread it.
    """

    def __init__(self, data, N: int, K: int, version: int = PACKED_LAYOUT_VERSION, fp8=None):
        _size_args("PackedTensor", N=N, K=K, version=version)
        if N < 1 or K < 1:
            raise ValueError(f"PackedTensor: N = {N} and K = {K} must be >= 1")
        if fp8 is not None and not (_is_torch(fp8) or isinstance(fp8, np.ndarray)):
            raise TypeError(f"PackedTensor: fp8 must be None, a numpy.ndarray or a torch.Tensor; got "
                            f"{type(fp8).__name__}")
        self.data = data
        self.N = int(N)
        self.K = int(K)
        self.version = int(version)
        self.fp8 = fp8

    def __getstate__(self):
        """Pickled state: the attributes and, with an FP8 image, its layout version."""
        state = dict(self.__dict__)
        if self.fp8 is not None:
            state["fp8_layout"] = FP8_IMAGE_LAYOUT
        return state

    def __setstate__(self, state):
        """Restores a pickled PackedTensor; an FP8 image without this library's layout version
        (pickled by a library with another image layout) is dropped."""
        state = dict(state)
        layout = state.pop("fp8_layout", None)
        if state.get("fp8") is not None and layout != FP8_IMAGE_LAYOUT:
            state["fp8"] = None
        self.__dict__.update(state)

    @property
    def shape(self):
        """Logical shape ``(N, K)`` of the weights."""
        return (self.N, self.K)

    @property
    def device(self):
        """``torch.device`` of the data for torch tensors, the string ``'cpu'`` for numpy."""
        return self.data.device if _is_torch(self.data) else "cpu"

    @property
    def nbytes(self) -> int:
        """Bytes of the packed buffer (``data``; the FP8 image, if any, not included)."""
        return _nbytes(self.data)

    @property
    def fp8_nbytes(self) -> int:
        """Bytes of the FP8 image (0 without one)."""
        return 0 if self.fp8 is None else _nbytes(self.fp8)

    def _with(self, data, fp8) -> "PackedTensor":
        return PackedTensor(data, self.N, self.K, self.version, fp8=fp8)

    def to(self, device) -> "PackedTensor":
        """A copy on ``device`` (torch data only; numpy data can go to 'cpu'), FP8 image included."""
        if _is_torch(self.data):
            return self._with(self.data.to(device), None if self.fp8 is None else _torch_of(self.fp8).to(device))
        if str(device) == "cpu":
            return self
        if torch is None:
            raise ValueError(f"numpy data lives on the CPU; moving it to {device!r} needs torch")
        return self._with(torch.from_numpy(self.data).to(device),
                          None if self.fp8 is None else _torch_of(self.fp8).to(device))

    def cpu(self) -> "PackedTensor":
        """A copy in host memory (same framework)."""
        return self.to("cpu")

    def numpy(self) -> "PackedTensor":
        """The same packed weights with numpy data (copied to the host when needed), FP8 image included."""
        if _is_torch(self.data) or _is_torch(self.fp8):
            def host(x):
                return x.detach().cpu().numpy() if _is_torch(x) else x

            return self._with(host(self.data), None if self.fp8 is None else host(self.fp8))
        return self

    def unpack(self):
        """Exact inverse of :func:`prepack`: ``(codes uint8 [N, K/2], scales uint8 [N, K/32])``."""
        return unpack(self)

    def dequantize(self, dtype="float32"):
        """Dequantized weights ``[N, K]`` (float32 or bfloat16), spec §1.3."""
        codes, scales = self.unpack()
        return dequantize(codes, scales, dtype=dtype)

    def __repr__(self):
        fw = "torch" if _is_torch(self.data) else "numpy"
        fp8 = f", fp8_bytes={self.fp8_nbytes}" if self.fp8 is not None else ""
        return (f"PackedTensor(N={self.N}, K={self.K}, version={self.version}, "
                f"bytes={self.nbytes}{fp8}, {fw} on {self.device})")


def _torch_of(x):
    return x if _is_torch(x) else torch.from_numpy(x)


def packed_bytes(N: int, K: int) -> int:
    """Bytes of the packed layout for weights B [N, K] (N padded to 16, K to 64).

    Raises:
        TypeError: N or K not an integer (bool included).
        ValueError: N < 1, K not a positive multiple of 32, sizes too large.
    """
    _size_args("packed_bytes", N=N, K=K)
    return int(_C.packed_bytes(N, K))


def fp8_weights_bytes(N: int, K: int) -> int:
    """Bytes of the 8-bit image of weights B [N, K] for path fp8 (:func:`prepack_fp8`;
    docs/fp8-path.md): ``S * Rp * 136 + S * Rp / 4 + S * Rp / 16`` rounded up to 16, with
    ``Rp`` = N rounded up to the image's row padding (256) and ``S = ceil(K / 128)`` (s8 codes,
    one float32 scale and one word of four E8M0 block exponents per row and 128-K slice, a
    16-byte record per 64 rows and slice, one flag byte per 16 rows and slice): about 1.065
    bytes per weight.

    Raises:
        TypeError: N or K not an integer (bool included).
        ValueError: N < 1, K not a positive multiple of 32, sizes too large.
    """
    _size_args("fp8_weights_bytes", N=N, K=K)
    return int(_C.fp8_weights_bytes(N, K))


# ---------------------------------------------------------------------------------------
# Quantization
# ---------------------------------------------------------------------------------------


def quantize(x, rule: str = "aiter", scale_layout: str = "plain"):
    """Quantizes ``x [..., K]`` to MXFP4 per 1x32 block along K (spec §2).

    Args:
        x: float32, float16 or bfloat16 ``[..., K]`` (numpy bf16: ``ml_dtypes.bfloat16`` or
            ``uint16`` bit patterns); K a positive multiple of 32; unit stride along K.
        rule: ``"aiter"`` (default, bit-exact with AITER's ``dynamic_mxfp4_quant``),
            ``"floor"`` (OCP MX v1.0) or ``"rceil"`` (round-up).
        scale_layout: ``"plain"`` -> scales ``uint8 [..., K/32]``; ``"aiter_shuffled"`` ->
            AITER ``e8m0_shuffle`` order, ``uint8 [round_up(rows, 256), round_up(K/32, 8)]``
            with rows = prod(leading dims) (padding bytes zero).

    Returns:
        ``(codes uint8 [..., K/2], scales)`` in x's framework and device. Blocks holding
        NaN/Inf get scale 0xFF and zero codes (spec §2.1).

    Raises:
        TypeError: unsupported dtype. ValueError: K not a positive multiple of 32, no rows,
        a non-unit stride along K, unknown ``rule``/``scale_layout``.
    """
    if _is_torch(x):
        return torch.ops.mxfp4.quantize(x, rule, scale_layout)
    return _quantize_impl(x, rule, scale_layout)


def dequantize(codes, scales, dtype="float32", code_layout: str = "plain", scale_layout: str = "plain"):
    """Decodes MXFP4 ``codes uint8 [..., K/2]`` and ``scales`` to ``[..., K]`` (spec §1.3).

    Args:
        codes: packed e2m1 codes ``[..., K/2]``, C-contiguous; ``code_layout="aiter_shuffled"``
            for AITER ``shuffle_weight`` order (2-D ``[N, K/2]``).
        scales: E8M0 bytes: plain ``[..., K/32]`` or, with ``scale_layout="aiter_shuffled"``,
            the padded ``e8m0_shuffle`` buffer; C-contiguous.
        dtype: ``float32`` (default) or ``bfloat16`` in any spelling (str, numpy, ml_dtypes,
            torch).

    Returns:
        Values e2m1 * 2^(b-127), exact; scale 0xFF gives NaN, byte 254 with |code| >= 4
        overflows to +-Inf. numpy bf16 results are ``ml_dtypes.bfloat16`` (uint16 without
        ml_dtypes).

    Raises:
        TypeError: codes/scales not uint8, unsupported dtype. ValueError: sizes that do not
        match (scales must hold rows*K/32 bytes, or the shuffled size), non-contiguous
        buffers, mixed devices.
    """
    if _is_torch(codes):
        from ._torch_ops import _torch_dtype

        return torch.ops.mxfp4.dequantize(codes, scales, _torch_dtype(dtype), code_layout, scale_layout)
    return _dequantize_impl(codes, scales, dtype, code_layout, scale_layout)


# ---------------------------------------------------------------------------------------
# Prepacking
# ---------------------------------------------------------------------------------------


def prepack(codes, scales, N: int | None = None, K: int | None = None, code_layout: str = "plain",
            scale_layout: str = "plain", fp8: bool = False) -> PackedTensor:
    """Packs MXFP4 weights B [N, K] into the GEMM's packed layout (docs/packed-layout.md).

    Args:
        codes: ``uint8 [N, K/2]`` in ``code_layout`` ``"plain"`` or ``"aiter_shuffled"``
            (AITER ``shuffle_weight``, needs N % 16 == 0 and K % 64 == 0); flat buffers need
            N and K. torch ``float4_e2m1fn_x2`` is accepted as bytes.
        scales: ``uint8 [N, K/32]`` plain or the padded AITER ``e8m0_shuffle`` buffer
            (``scale_layout="aiter_shuffled"``). torch ``float8_e8m0fnu`` is accepted.
        N, K: optional; checked against codes' shape when given.
        fp8: also build the FP8 image (:func:`prepack_fp8`): about 1.065 more bytes per
            weight, for the CUDA FP8 path (M > 64, or M > 32 with N x K >= 10 Mi weights:
            explain() tells).

    Returns:
        :class:`PackedTensor` on codes' device and framework (``fp8`` set when asked for).

    Raises:
        ValueError: sizes or layouts that do not fit, mixed devices. TypeError: dtypes; N or
        K given but not an integer.
    """
    N, K = _nk(_array(codes, "codes"), N, K)
    if _is_torch(codes):
        data = torch.ops.mxfp4.prepack(codes, scales, N, K, code_layout, scale_layout)
        p = PackedTensor(data, N, K, PACKED_LAYOUT_VERSION)
    else:
        data, version = _prepack_impl(codes, scales, N, K, code_layout, scale_layout)
        p = PackedTensor(data, N, K, version)
    return prepack_fp8(p) if fp8 else p


def prepack_dense(w, rule: str = "aiter", fp8: bool = False) -> PackedTensor:
    """Quantizes dense weights ``w [N, K]`` (float32/float16/bfloat16) under ``rule`` and
    packs them (same result as ``prepack(*quantize(w, rule))``); ``fp8=True`` also builds
    the FP8 image (:func:`prepack_fp8`).

    Raises:
        TypeError: dtype. ValueError: w not 2-D, K not a positive multiple of 32.
    """
    if _is_torch(w):
        if w.ndim != 2:
            raise ValueError(f"w must be 2-D [N, K]; got shape {tuple(w.shape)}")
        data = torch.ops.mxfp4.prepack_dense(w, rule)
        p = PackedTensor(data, w.shape[0], w.shape[1], PACKED_LAYOUT_VERSION)
    else:
        data, version = _prepack_dense_impl(w, rule)
        p = PackedTensor(data, w.shape[0], w.shape[1], version)
    return prepack_fp8(p) if fp8 else p


def prepack_fp8(packed: PackedTensor) -> PackedTensor:
    """Builds the FP8 image of packed weights B [N, K] (docs/fp8-path.md).

    The image re-encodes every (row, 128-K slice) group of B as exact s8 codes e2m1 * 2^(s - e):
    one exponent e per group when its block exponents span at most 3 binades (the anchor of
    the row's chain chunk where it fits, else max s - 3 capped at min s - 1), else e = s - 1
    per block; groups with a NaN scale or a block exponent outside [-47, 49] are flagged and
    computed exactly by the GEMM's fix-up instead. The CUDA GEMM reads it on path fp8, which
    the dispatcher picks for M > 64 and for 32 < M <= 64 with N x K >= 10 Mi weights
    (:func:`explain` tells); the CPU GEMM ignores it (identical results with and without).

    Args:
        packed: a :class:`PackedTensor` (numpy or torch, CPU or CUDA). An image it already
            carries is not reused: a new one is built from ``packed.data``.

    Returns:
        A new :class:`PackedTensor` sharing ``packed.data`` (not copied) whose ``fp8`` is the
        image: ``uint8 [fp8_weights_bytes(N, K)]`` (about 1.065 bytes per weight) in data's
        framework and on data's device. CUDA work runs on torch's current stream.

    Raises:
        TypeError: ``packed`` is not a PackedTensor, its data is not uint8, or it has another
            layout version.
        ValueError: data of the wrong size for (N, K), non-contiguous data, misaligned CUDA
            data.
    """
    if not isinstance(packed, PackedTensor):
        raise TypeError(f"packed must be a mxfp4.PackedTensor; got {type(packed).__name__}")
    if _is_torch(packed.data):
        img = torch.ops.mxfp4.prepack_fp8(packed.data, packed.N, packed.K, packed.version)
    else:
        img = _prepack_fp8_impl(packed.data, packed.N, packed.K, packed.version)
    return PackedTensor(packed.data, packed.N, packed.K, packed.version, fp8=img)


def unpack(packed: PackedTensor):
    """Exact inverse of :func:`prepack`: ``(codes uint8 [N, K/2], scales uint8 [N, K/32])``
    in plain layouts, same framework and device as ``packed.data``.

    Raises:
        TypeError: ``packed`` is not a PackedTensor or has another layout version.
    """
    if not isinstance(packed, PackedTensor):
        raise TypeError(f"packed must be a mxfp4.PackedTensor; got {type(packed).__name__}")
    if _is_torch(packed.data):
        return torch.ops.mxfp4.unpack(packed.data, packed.N, packed.K, packed.version)
    return _unpack_impl(packed.data, packed.N, packed.K, packed.version)


# ---------------------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------------------


def gemm(a, b, rule: str = "aiter", code_layout: str = "plain", scale_layout: str = "plain", out_dtype=None,
         weights_static: bool = False):
    """``C = quantize(a) @ B^T`` in bf16, or in float32 with ``out_dtype`` (spec §3).

    Args:
        a: bf16 activations ``[..., K]`` (torch.bfloat16; numpy ml_dtypes.bfloat16 or uint16
            bits), unit stride along K. Quantized per 1x32 block under ``rule``.
        b: the weights B [N, K], either a :class:`PackedTensor` (fastest; the only form the
            CUDA kernels read directly; its FP8 image, when it has one, is passed along and
            lets the CUDA GEMM take path fp8 for M > 64, or M > 32 with N x K >= 10 Mi
            weights: explain() tells) or a tuple
            ``(codes uint8 [N, K/2], scales)`` in ``code_layout`` / ``scale_layout`` (on CUDA
            these are packed into a temporary on every call: prepack once instead).
        rule: scale rule used to quantize ``a``.
        out_dtype: ``None`` or bfloat16 (default) for the bf16 result; float32 (``np.float32``,
            ``torch.float32`` or ``"float32"``) for the fp32 accumulation result without the
            final rounding to bf16, for partial products that are summed afterwards (the K
            shards of a row-parallel layer, docs/tensor-parallel.md).
        weights_static: with a :class:`PackedTensor` B, the caller's promise that B's packed
            data is not written while the call may run: every write of it completed before a
            host synchronisation that precedes the call (weights loaded at start-up and then
            only read, as in serving); stream order alone is not enough. The CUDA paths gemv
            and splitk (the small-M paths: docs/dispatch.md) then read B while the stream's
            previous kernel finishes (C++ GemmOptions::weights_static, docs/dispatch.md
            "Stream order"). The result is bitwise the same; ignored for a (codes, scales) B,
            which is packed into a temporary on every call.

    Returns:
        ``C [..., N]``, same framework and device as ``a``. bf16 (numpy: ml_dtypes.bfloat16,
        or uint16 when ``a`` was uint16): fp32 accumulation, within spec §3's bound
        ``|C - ref| <= 2^-8 |ref| + 2^-12 sum_k |a_k b_k|``. float32: within
        ``|C - ref| <= 2^-12 sum_k |a_k b_k| + 2^-133`` (the bound without its final-rounding
        term; include/mxfp4/mxfp4.hpp), and on the CPU backend ``bf16(C)`` equals the bf16
        result bit for bit except with extreme scale bytes (one rounding to each type there).
        NaN exactly where the exact sum is NaN. An empty batch gives an empty C.

    Raises:
        TypeError: a not bf16, codes/scales (or the FP8 image) not uint8, a PackedTensor of
        another version, out_dtype neither bfloat16 nor float32.
        ValueError: K mismatch, bad sizes or strides, an FP8 image of another size than
        fp8_weights_bytes(N, K), a and B on different devices.
        RuntimeError: CUDA inputs with a CPU-only build.
    """
    if isinstance(b, PackedTensor):
        if _is_torch(a):
            return torch.ops.mxfp4.gemm(a, b.data, b.N, b.K, b.version, rule, _torch_out_dtype(out_dtype), b.fp8,
                                        bool(weights_static))
        return _gemm_impl(a, b.data, b.N, b.K, b.version, rule, out_dtype, b.fp8, weights_static)
    if isinstance(b, (tuple, list)) and len(b) == 2:
        codes, scales = b
        if _is_torch(a):
            return torch.ops.mxfp4.gemm_mx(a, codes, scales, code_layout, scale_layout, rule,
                                           _torch_out_dtype(out_dtype))
        return _gemm_mx_impl(a, codes, scales, code_layout, scale_layout, rule, out_dtype)
    raise TypeError(f"b must be a mxfp4.PackedTensor or a (codes, scales) tuple; got {type(b).__name__}")


def _torch_out_dtype(out_dtype):
    """The GEMM's out_dtype for the torch ops: None (bf16) or torch.float32 / torch.bfloat16."""
    if out_dtype is None:
        return None
    return torch.float32 if _gemm_out_kind(out_dtype) == "f32" else torch.bfloat16


def explain(M: int, N: int, K: int, device="cpu"):
    """The GEMM configuration :func:`gemm` uses for ``(M, N, K)`` on ``device``.

    Args:
        device: ``"cpu"``, ``"cuda"`` (torch's current device), ``"cuda:<i>"``, a
            ``torch.device`` or a CUDA device index.

    Returns:
        ``mxfp4._C.GemmConfig`` with ``path`` (``mxfp4._C.GemmPath``: fused / splitk / tiled /
        fp8 / gemv), ``block_n``, ``block_m``, ``split_k`` and ``warps``; ``str()`` gives a one-line
        description such as ``"path=splitk block_n=64 block_m=16 split_k=4 warps=4"``. Path
        fp8 (CUDA, M > 64, or M > 32 with N x K >= 10 Mi weights: explain() tells) runs only
        for weights with an FP8 image
        (:func:`prepack_fp8`); :func:`gemm` runs a bf16 path for weights without one (the
        small-M kernel's configuration up to M = 128, the tiled kernel beyond).

    Raises:
        TypeError: M, N or K not an integer. ValueError: bad sizes (outside int64 included) or
        device. RuntimeError: CUDA with a CPU-only build.
    """
    _size_args("explain", M=M, N=N, K=K)
    backend, index = _parse_device(device)
    return _C.explain_gemm(int(M), int(N), int(K), backend, index)


# ---------------------------------------------------------------------------------------
# AITER layouts (spec §4)
# ---------------------------------------------------------------------------------------


def shuffle_scales(scales):
    """Plain E8M0 scales ``uint8 [rows, K/32]`` -> AITER ``e8m0_shuffle`` order (spec §4.1):
    ``uint8 [round_up(rows, 256), round_up(K/32, 8)]``, padding bytes zero.

    Raises:
        ValueError: scales not 2-D or empty. TypeError: not uint8.
    """
    if _is_torch(scales):
        return torch.ops.mxfp4.shuffle_scales(scales)
    return _shuffle_scales_impl(scales)


def unshuffle_scales(shuffled, rows: int, kblocks: int):
    """AITER ``e8m0_shuffle``'d scales (any shape, ``round_up(rows,256)*round_up(kblocks,8)``
    bytes) -> plain ``uint8 [rows, kblocks]`` (spec §4.1). Padding is never read.

    Raises:
        ValueError: rows or kblocks outside [1, 2^40], or a buffer whose bytes do not match
        them (checked before the output is allocated). TypeError: not uint8; rows or kblocks
        not an integer.
    """
    _size_args("unshuffle_scales", rows=rows, kblocks=kblocks)
    if _is_torch(shuffled):
        return torch.ops.mxfp4.unshuffle_scales(shuffled, int(rows), int(kblocks))
    return _unshuffle_scales_impl(shuffled, int(rows), int(kblocks))


def shuffle_weight(codes):
    """Plain codes ``uint8 [N, K/2]`` -> AITER ``shuffle_weight(layout=(16, 16))`` order,
    same shape (spec §4.2). Needs N % 16 == 0 and K % 64 == 0 (ValueError otherwise)."""
    if _is_torch(codes):
        return torch.ops.mxfp4.shuffle_weight(codes)
    return _weight_layout_impl(codes, True)


def unshuffle_weight(codes):
    """Inverse of :func:`shuffle_weight`: ``uint8 [N, K/2]`` shuffled -> plain (spec §4.2)."""
    if _is_torch(codes):
        return torch.ops.mxfp4.unshuffle_weight(codes)
    return _weight_layout_impl(codes, False)


# ---------------------------------------------------------------------------------------
# Build information
# ---------------------------------------------------------------------------------------


def built_with_cuda() -> bool:
    """True when the extension was compiled with the CUDA backend."""
    return bool(_C.built_with_cuda())


def cuda_device_count() -> int:
    """CUDA devices usable by the library now (0 without the CUDA backend or a driver)."""
    return int(_C.cuda_device_count())

