"""Framework-neutral implementation of the mxfp4 Python API.

Every public function accepts numpy arrays (CPU) and torch tensors (CPU or CUDA) and returns
results in the input's framework and on the input's device. Arrays reach the C++ library
through DLPack / the buffer protocol without copies; outputs are allocated here, in the
input's framework, and filled by the library. torch tensors go through the custom ops of
``mxfp4._torch_ops`` (``torch.ops.mxfp4.*``) so that torch.compile and CUDA graphs see one
opaque op per call; those ops call the ``_*_impl`` functions below.

The C++ library validates sizes, strides and layouts (ValueError / TypeError naming the
constraint); this module only maps names and dtypes and shapes the outputs.
"""

from __future__ import annotations

import numpy as np

from . import _C

try:  # torch is optional: numpy-only installs work without it
    import torch
except ImportError:  # pragma: no cover - exercised on machines without torch
    torch = None

try:  # bfloat16 numpy arrays; uint16 bit patterns work without it
    import ml_dtypes
    _NP_BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    ml_dtypes = None
    _NP_BF16 = None

#: Version of the packed weight layout produced by :func:`prepack` (docs/packed-layout.md).
PACKED_LAYOUT_VERSION: int = int(_C.PACKED_LAYOUT_VERSION)
#: Version of the FP8 image layout (docs/fp8-path.md); PackedTensor pickles carry it.
FP8_IMAGE_LAYOUT: int = int(_C.FP8_IMAGE_LAYOUT)
#: Elements that share one E8M0 scale.
BLOCK_SIZE: int = int(_C.BLOCK_SIZE)

_RULES = {"aiter": _C.ScaleRule.aiter, "floor": _C.ScaleRule.floor, "rceil": _C.ScaleRule.rceil}
_SCALE_LAYOUTS = {
    "plain": _C.ScaleLayout.plain,
    "aiter_shuffled": _C.ScaleLayout.aiter_shuffled,
    "shuffled": _C.ScaleLayout.aiter_shuffled,
}
_CODE_LAYOUTS = {
    "plain": _C.CodeLayout.plain,
    "aiter_shuffled": _C.CodeLayout.aiter_shuffled,
    "shuffled": _C.CodeLayout.aiter_shuffled,
}


def _choice(value, table, what):
    if isinstance(value, str) and value in table:
        return table[value]
    raise ValueError(f"{what} must be one of {', '.join(repr(k) for k in table)}; got {value!r}")


def _rule(rule):
    return _choice(rule, _RULES, "rule")


def _scale_layout(layout):
    return _choice(layout, _SCALE_LAYOUTS, "scale_layout")


def _code_layout(layout):
    return _choice(layout, _CODE_LAYOUTS, "code_layout")


def _round_up(x, m):
    return (x + m - 1) // m * m


def _prod(shape):
    n = 1
    for s in shape:
        n = n * s
    return n


def _check_int(fn: str, name: str, v) -> None:
    """TypeError unless ``v`` is an integer: int or numpy integer (bool refused; a float such as
    4.9 is not truncated), a 0-d integer tensor, or a SymInt (symbolic tracing)."""
    if torch is not None and (isinstance(v, torch.SymInt) or (
            isinstance(v, torch.Tensor) and v.ndim == 0 and v.dtype != torch.bool and not v.is_floating_point()
            and not v.is_complex())):
        return
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}: {name} must be an integer; got {type(v).__name__} {v!r}")


def _size_args(fn: str, **sizes) -> None:
    """Sizes given to the API: integers (_check_int, TypeError) within int64 (else ValueError,
    the error the library gives for sizes too large; a SymInt is not specialised here)."""
    for name, v in sizes.items():
        _check_int(fn, name, v)
        if not (torch is not None and isinstance(v, torch.SymInt)) and not -2**63 <= int(v) < 2**63:
            raise ValueError(f"{fn}: {name} = {v} is out of range")


def _shuffled_shape(rows, kblocks):
    """shuffled_scales_shape without its integer check, for the internal callers (the torch
    fake implementations pass SymInts)."""
    if not (1 <= int(rows) <= 2**40 and 1 <= int(kblocks) <= 2**40):
        raise ValueError(f"shuffled_scales_shape: rows = {rows} and kblocks = {kblocks} must be in [1, 2^40]")
    return (_round_up(rows, 256), _round_up(kblocks, 8))


def shuffled_scales_shape(rows, kblocks):
    """Shape ``(round_up(rows, 256), round_up(kblocks, 8))`` of an AITER ``e8m0_shuffle``'d
    scale buffer for ``rows`` x ``kblocks`` scales (spec §4.1).

    Raises:
        TypeError: rows or kblocks not an integer (bool included).
        ValueError: rows or kblocks outside [1, 2^40] (the library's range for a dimension).
    """
    _check_int("shuffled_scales_shape", "rows", rows)
    _check_int("shuffled_scales_shape", "kblocks", kblocks)
    return _shuffled_shape(int(rows), int(kblocks))


# ---------------------------------------------------------------------------------------
# Frameworks, dtypes, devices
# ---------------------------------------------------------------------------------------


def _is_torch(x):
    return torch is not None and isinstance(x, torch.Tensor)


def _array(x, name):
    """x as a numpy array or a detached torch tensor (TypeError for anything else)."""
    if _is_torch(x):
        return x.detach()
    if isinstance(x, np.ndarray):
        return x
    raise TypeError(f"{name} must be a numpy.ndarray or a torch.Tensor; got {type(x).__name__}")


def _torch_byte_dtypes():
    out = [torch.int8]
    for n in ("float4_e2m1fn_x2", "float8_e8m0fnu"):
        if hasattr(torch, n):
            out.append(getattr(torch, n))
    return tuple(out)


def _bytes(x, name):
    """A uint8 view of packed codes / scale bytes. torch.float4_e2m1fn_x2 (two codes a byte,
    first in the low nibble), torch.float8_e8m0fnu, ml_dtypes.float8_e8m0fnu and int8 are
    viewed as uint8; other dtypes pass through for the library to reject (TypeError)."""
    x = _array(x, name)
    if _is_torch(x):
        if x.dtype != torch.uint8 and x.dtype in _torch_byte_dtypes():
            x = x.view(torch.uint8)
    elif x.dtype == np.int8 or x.dtype.name == "float8_e8m0fnu":
        # (ml_dtypes.float4_e2m1fn holds ONE value per byte: not packed codes, not viewed)
        x = x.view(np.uint8)
    return x


_DT_NAMES = "float32, float16 or bfloat16 (numpy: ml_dtypes.bfloat16 or uint16 bit patterns)"


def _floats(x, name):
    """(array for _C, _C.DType) of a dense float input: float32, float16 or bfloat16."""
    x = _array(x, name)
    if _is_torch(x):
        dt = {torch.float32: _C.DType.fp32, torch.float16: _C.DType.fp16, torch.bfloat16: _C.DType.bf16}.get(x.dtype)
        if dt is None:
            raise TypeError(f"{name} must be {_DT_NAMES}; got {x.dtype}")
        return x, dt
    if x.dtype == np.float32:
        return x, _C.DType.fp32
    if x.dtype == np.float16:
        return x, _C.DType.fp16
    if _NP_BF16 is not None and x.dtype == _NP_BF16:
        return x.view(np.uint16), _C.DType.bf16
    if x.dtype == np.uint16:
        return x, _C.DType.bf16
    raise TypeError(f"{name} must be {_DT_NAMES}; got {x.dtype}")


def _bf16(x, name):
    """bf16 input (torch.bfloat16, ml_dtypes.bfloat16 or uint16 bit patterns) for the GEMM."""
    x = _array(x, name)
    if _is_torch(x):
        if x.dtype != torch.bfloat16:
            raise TypeError(f"{name} must be torch.bfloat16 (the GEMM quantizes bf16 activations); got {x.dtype}")
        return x
    if _NP_BF16 is not None and x.dtype == _NP_BF16:
        return x.view(np.uint16)
    if x.dtype == np.uint16:
        return x
    raise TypeError(f"{name} must be bfloat16 (ml_dtypes.bfloat16 or uint16 bit patterns); got {x.dtype}")


def _np_bf16_result(u16, like=None):
    """Presents a uint16 bf16 result as ml_dtypes.bfloat16 unless `like` was raw uint16."""
    if _NP_BF16 is not None and (like is None or like.dtype != np.uint16):
        return u16.view(_NP_BF16)
    return u16


def _out_kind(dtype):
    """'f32' or 'bf16' for a dequantize output dtype given in any framework's spelling."""
    if isinstance(dtype, str):
        key = dtype
    elif torch is not None and isinstance(dtype, torch.dtype):
        key = {torch.float32: "float32", torch.bfloat16: "bfloat16"}.get(dtype, str(dtype))
    else:
        try:
            key = np.dtype(dtype).name
        except TypeError:
            key = repr(dtype)
    kind = {"float32": "f32", "fp32": "f32", "f32": "f32", "bfloat16": "bf16", "bf16": "bf16"}.get(key)
    if kind is None:
        raise TypeError(f"dtype must be float32 or bfloat16; got {dtype!r}")
    return kind


def _gemm_out_kind(out_dtype):
    """'bf16' (default, None) or 'f32' for a GEMM output dtype given in any framework's spelling."""
    if out_dtype is None:
        return "bf16"
    try:
        return _out_kind(out_dtype)
    except TypeError:
        raise TypeError(f"out_dtype must be bfloat16 (default) or float32; got {out_dtype!r}") from None


def _empty(like, shape, kind, zero=False):
    """A new array of `shape` in like's framework and on like's device."""
    if _is_torch(like):
        dt = {"u8": torch.uint8, "bf16": torch.bfloat16, "f32": torch.float32}[kind]
        return (torch.zeros if zero else torch.empty)(shape, dtype=dt, device=like.device)
    dt = {"u8": np.uint8, "bf16": np.uint16, "f32": np.float32}[kind]
    return (np.zeros if zero else np.empty)(shape, dtype=dt)


def _stream(x):
    """torch's current CUDA stream of x's device as an integer (0 for host arrays)."""
    if _is_torch(x) and x.device.type == "cuda":
        return torch.cuda.current_stream(x.device).cuda_stream
    return 0


def _is_cuda(x):
    return _is_torch(x) and x.device.type == "cuda"


def _rows(x, name):
    """(x as 2-D [rows, K], leading shape): N-D inputs [..., K] are flattened (a view where
    the framework can), 1-D inputs are one row."""
    if x.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension [..., K]; got a scalar")
    K = x.shape[-1]
    lead = tuple(x.shape[:-1])
    if x.ndim == 2:
        return x, lead
    return x.reshape(_prod(lead), K), lead


def _parse_device(device):
    """(backend, index) of 'cpu', 'cuda', 'cuda:1', a torch.device or a CUDA index."""
    if torch is not None and isinstance(device, torch.device):
        device = str(device)
    if isinstance(device, int) and not isinstance(device, bool):
        return _C.Backend.cuda, device
    if isinstance(device, str):
        if device == "cpu":
            return _C.Backend.cpu, 0
        if device == "cuda":
            idx = torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else 0
            return _C.Backend.cuda, idx
        if device.startswith("cuda:") and device[5:].isdigit():
            return _C.Backend.cuda, int(device[5:])
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:<index>', a torch.device or an index; got {device!r}")


# ---------------------------------------------------------------------------------------
# Implementations (shared by the numpy path and the torch custom ops)
# ---------------------------------------------------------------------------------------


def _quantize_impl(x, rule, scale_layout):
    rl, sl = _rule(rule), _scale_layout(scale_layout)
    xv, dt = _floats(x, "x")
    x2, lead = _rows(xv, "x")
    rows, K = x2.shape
    codes = _empty(xv, (*lead, K // 2), "u8")
    if sl == _C.ScaleLayout.plain:
        scales = _empty(xv, (*lead, K // BLOCK_SIZE), "u8")
    else:  # padding is never read; zero it so results are deterministic
        scales = _empty(xv, _shuffled_shape(rows, K // BLOCK_SIZE), "u8", zero=True)
    _C.quantize(x2, dt, codes, scales, rl, sl, _stream(xv))
    return codes, scales


def _dequantize_impl(codes, scales, dtype, code_layout, scale_layout):
    cl, sl = _code_layout(code_layout), _scale_layout(scale_layout)
    kind = _out_kind(dtype)
    codes, scales = _bytes(codes, "codes"), _bytes(scales, "scales")
    c2, lead = _rows(codes, "codes")
    rows, K = c2.shape[0], 2 * c2.shape[1]
    out = _empty(codes, (*lead, K), kind)
    _C.dequantize(c2, scales, rows, K, cl, sl, out.reshape(rows, K), _C.DType.fp32 if kind == "f32" else _C.DType.bf16,
                  _stream(codes))
    if kind == "bf16" and not _is_torch(out):
        out = _np_bf16_result(out)
    return out


def _nk(codes, N, K):
    """(N, K) of weights given as codes [N, K/2] (N, K optional) or flat codes (N, K given).
    TypeError for an N or K given that is not an integer (a float is not truncated)."""
    _size_args("prepack", **{k: v for k, v in (("N", N), ("K", K)) if v is not None})
    if codes.ndim == 2:
        n, k = codes.shape[0], 2 * codes.shape[1]
        if (N is not None and N != n) or (K is not None and K != k):
            raise ValueError(f"codes of shape {tuple(codes.shape)} hold [N, K/2] = [{n}, {k // 2}]; "
                             f"they do not match N={N}, K={K}")
        return n, k
    if N is None or K is None:
        raise ValueError(f"codes of shape {tuple(codes.shape)} are not [N, K/2]: pass N and K")
    return int(N), int(K)


def _prepack_impl(codes, scales, N, K, code_layout, scale_layout):
    cl, sl = _code_layout(code_layout), _scale_layout(scale_layout)
    codes, scales = _bytes(codes, "codes"), _bytes(scales, "scales")
    N, K = _nk(codes, N, K)
    out = _empty(codes, (int(_C.packed_bytes(N, K)),), "u8")
    version = _C.prepack(codes, scales, N, K, cl, sl, out, _stream(codes))
    return out, int(version)


def _prepack_dense_impl(w, rule):
    rl = _rule(rule)
    wv, dt = _floats(w, "w")
    if wv.ndim != 2:
        raise ValueError(f"w must be 2-D [N, K]; got shape {tuple(wv.shape)}")
    N, K = wv.shape
    out = _empty(wv, (int(_C.packed_bytes(N, K)),), "u8")
    tmp = _empty(wv, (N * (K // 2) + N * (K // BLOCK_SIZE),), "u8")
    version = _C.prepack_dense(wv, dt, out, tmp, rl, _stream(wv))
    return out, int(version)


def _nbytes(x) -> int:
    """Bytes of a numpy array or torch tensor."""
    return int(x.numel() * x.element_size()) if _is_torch(x) else int(x.nbytes)


def _check_packed_size(data, N, K):
    """ValueError unless ``data`` holds packed_bytes(N, K) bytes. Run before allocating
    anything sized by (N, K): an absurd N must be the library's ValueError, not a MemoryError
    from the allocation."""
    need = int(_C.packed_bytes(int(N), int(K)))
    have = _nbytes(data)
    if have != need:
        raise ValueError(f"packed has {have} bytes; N={N}, K={K} needs packed_bytes(N, K) = {need}")


def _is_u8(x):
    return x.dtype == torch.uint8 if _is_torch(x) else x.dtype == np.uint8


def _check_empty_batch(a2, K):
    """a's K against the weights' K (ValueError): the first of the checks the library makes
    of a GEMM's operands, repeated here for M = 0, where the library is not called."""
    if a2.shape[1] != K:
        raise ValueError(f"a has K = {a2.shape[1]} columns; the weights have K = {K}")


def _check_dense(**arrays):
    """ValueError for a non-C-contiguous operand, as the library's bindings give it."""
    for name, x in arrays.items():
        if x is not None and not (x.is_contiguous() if _is_torch(x) else x.flags.c_contiguous):
            raise ValueError(f"{name} must be C-contiguous (dense bytes); got shape {tuple(x.shape)} with non-dense strides")


def _check_empty_gemm(a2, data, N, K, version, fp8):
    """The library's checks of gemm()'s operands for M = 0, where it is not called (C++
    validate.cpp, mxfp4::gemm): a's K (ValueError), the packed data's dtype (TypeError; its
    size is _check_packed_size's), the layout version (TypeError), and the FP8 image's dtype
    (TypeError) and size (ValueError)."""
    _check_empty_batch(a2, K)
    for name, x in (("packed", data), ("fp8", fp8)):
        if x is not None and not _is_u8(x):
            raise TypeError(f"{name} must be uint8 (packed e2m1 codes / E8M0 scale bytes); got {x.dtype}")
    _check_dense(packed=data, fp8=fp8)
    if int(version) != PACKED_LAYOUT_VERSION:
        raise TypeError(f"mxfp4::gemm: B.version = {version} is not the supported packed layout version "
                        f"{PACKED_LAYOUT_VERSION} (prepack again with this library)")
    if fp8 is not None:
        need = int(_C.fp8_weights_bytes(int(N), int(K)))
        have = _nbytes(fp8)
        if have != need:
            raise ValueError(f"fp8 has {have} bytes; N={N}, K={K} needs fp8_weights_bytes(N, K) = {need}")


def _check_empty_gemm_mx(a2, codes, scales, N, K, scale_layout):
    """The library's checks of gemm_mx()'s operands for M = 0, where it is not called: a's K
    (ValueError), the dtypes of codes and scales (TypeError), the codes' shape [N, K/2] and the
    scales' bytes for ``scale_layout`` (ValueError; plain N * K/32, AITER-shuffled
    shuffled_scales_bytes(N, K/32), spec §4.1)."""
    _check_empty_batch(a2, K)
    for name, x in (("codes", codes), ("scales", scales)):
        if not _is_u8(x):
            raise TypeError(f"{name} must be uint8 (packed e2m1 codes / E8M0 scale bytes); got {x.dtype}")
    _check_dense(codes=codes, scales=scales)
    if K % BLOCK_SIZE != 0 or tuple(codes.shape) != (N, K // 2):
        raise ValueError(f"codes must be [N, K/2] = [{N}, {K // 2}] with K a multiple of 32 (K = {K}); "
                         f"got shape {tuple(codes.shape)}")
    plain = scale_layout == _C.ScaleLayout.plain
    need = N * (K // BLOCK_SIZE) if plain else int(_C.shuffled_scales_bytes(N, K // BLOCK_SIZE))
    have = _nbytes(scales)
    if have != need:
        how = "N*K/32 plain" if plain else "round_up(N,256)*round_up(K/32,8) shuffled"
        raise ValueError(f"scales has {have} bytes (shape {tuple(scales.shape)}); expected {need} = {how} scales "
                         f"(N={N}, K={K})")


def _prepack_fp8_impl(data, N, K, version):
    """The FP8 image (uint8 [fp8_weights_bytes(N, K)], data's framework and device) of the
    packed weights ``data``."""
    data = _bytes(data, "packed")
    _check_packed_size(data, N, K)
    out = _empty(data, (int(_C.fp8_weights_bytes(int(N), int(K))),), "u8")
    _C.prepack_fp8(data, int(N), int(K), int(version), out, _stream(data))
    return out


def _unpack_impl(data, N, K, version):
    data = _bytes(data, "packed")
    _check_packed_size(data, N, K)  # before allocating [N, K/2]: an absurd N is a ValueError
    codes = _empty(data, (N, K // 2), "u8")
    scales = _empty(data, (N, K // BLOCK_SIZE), "u8")
    _C.unpack(data, N, K, version, codes, scales, _stream(data))
    return codes, scales


def _workspace_bytes(M, N, K, device, has_fp8):
    """Bytes of device workspace the CUDA gemm() needs for ``C [M, N] = quantize(A [M, K]) *
    B [N, K]^T`` on CUDA device index ``device`` without a forced configuration; 0 where it
    needs none (paths fused and gemv).

    The configuration is the one gemm() runs, as ``explain_gemm`` gives it for weights with or
    without an FP8 image (``has_fp8``; the C++ config_for_weights: ``config_without_fp8`` in
    place of a path fp8 choice without one). The size is ``gemm_workspace_bytes(M, N, K, cfg)``
    with N: path splitk's split-K scratch included where it reduces through the workspace.

    Raises:
        ValueError: M, N or K the library rejects (e.g. < 1, or K not a multiple of 32), a
        device index out of range. RuntimeError: no CUDA device, or a CPU-only build.
    """
    cfg = _C.explain_gemm(M, N, K, _C.Backend.cuda, device, has_fp8)
    return int(_C.gemm_workspace_bytes(M, N, K, cfg))


def _gemm_impl(a, data, N, K, version, rule, out_dtype=None, fp8=None, weights_static=False):
    rl = _rule(rule)
    kind = _gemm_out_kind(out_dtype)
    a_in = _array(a, "a")
    av = _bf16(a_in, "a")
    data = _bytes(data, "packed")
    if fp8 is not None:
        fp8 = _bytes(fp8, "fp8")
    # Check the packed buffer against (N, K) before allocating C [..., N].
    _check_packed_size(data, N, K)
    a2, lead = _rows(av, "a")
    M = a2.shape[0]
    if M == 0:  # no library call below checks the operands of an empty batch
        _check_empty_gemm(a2, data, N, K, version, fp8)
    out = _empty(av, (*lead, N), kind)
    if M > 0:
        ws = None
        if _is_cuda(av):  # sized for the configuration gemm() runs, with or without B's FP8 image
            nbytes = _workspace_bytes(M, N, K, av.device.index, fp8 is not None)
            if nbytes > 0:
                ws = torch.empty((nbytes,), dtype=torch.uint8, device=av.device)
        _C.gemm(a2, data, N, K, version, out.reshape(M, N), rl, None, ws, _stream(av), fp8, bool(weights_static))
    if kind == "bf16" and not _is_torch(out):
        out = _np_bf16_result(out, a_in)
    return out


def _gemm_mx_impl(a, codes, scales, code_layout, scale_layout, rule, out_dtype=None):
    cl, sl, rl = _code_layout(code_layout), _scale_layout(scale_layout), _rule(rule)
    kind = _gemm_out_kind(out_dtype)
    a_in = _array(a, "a")
    av = _bf16(a_in, "a")
    codes, scales = _bytes(codes, "codes"), _bytes(scales, "scales")
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D [N, K/2]; got shape {tuple(codes.shape)}")
    N, K = codes.shape[0], av.shape[-1]
    if _is_cuda(av):  # the CUDA GEMM reads prepacked weights: pack into a temporary
        data, version = _prepack_impl(codes, scales, N, K, code_layout, scale_layout)
        return _gemm_impl(a, data, N, K, version, rule, out_dtype)
    a2, lead = _rows(av, "a")
    M = a2.shape[0]
    if M == 0:  # no library call below checks the operands of an empty batch
        _check_empty_gemm_mx(a2, codes, scales, N, K, sl)
    out = _empty(av, (*lead, N), kind)
    if M > 0:
        _C.gemm_mx(a2, codes, scales, N, cl, sl, out.reshape(M, N), rl, _stream(av))
    if kind == "bf16" and not _is_torch(out):
        out = _np_bf16_result(out, a_in)
    return out


def _shuffle_scales_impl(scales):
    scales = _bytes(scales, "scales")
    if scales.ndim != 2:
        raise ValueError(f"scales must be 2-D [rows, K/32]; got shape {tuple(scales.shape)}")
    rows, kb = scales.shape
    out = _empty(scales, _shuffled_shape(rows, kb), "u8", zero=True)
    _C.shuffle_scales(scales, rows, kb, out, _stream(scales))
    return out


def _unshuffle_scales_impl(shuffled, rows, kblocks):
    shuffled = _bytes(shuffled, "shuffled")
    # Sizes before the allocation of [rows, kblocks]: an absurd or negative rows must be the
    # library's ValueError, not a MemoryError or numpy's negative-dimension error.
    shape = _shuffled_shape(rows, kblocks)
    if _nbytes(shuffled) != shape[0] * shape[1]:
        raise ValueError(f"shuffled has {_nbytes(shuffled)} bytes (shape {tuple(shuffled.shape)}); expected "
                         f"{shape[0] * shape[1]} = round_up(rows,256)*round_up(kblocks,8) (rows={rows}, kblocks={kblocks})")
    out = _empty(shuffled, (rows, kblocks), "u8")
    _C.unshuffle_scales(shuffled, rows, kblocks, out, _stream(shuffled))
    return out


def _weight_layout_impl(codes, shuffle):
    codes = _bytes(codes, "codes")
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D [N, K/2]; got shape {tuple(codes.shape)}")
    N, K = codes.shape[0], 2 * codes.shape[1]
    out = _empty(codes, tuple(codes.shape), "u8")
    (_C.shuffle_weight if shuffle else _C.unshuffle_weight)(codes, N, K, out, _stream(codes))
    return out
