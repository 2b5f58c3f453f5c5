"""A small, independent numpy model of the MXFP4 contract (spec: docs/semantics.md).

Written from the spec's rules, not from the library: quantization (§2, three scale rules,
§2.1 non-finite policy), decoding (§1), the AITER layouts by their offset formulas (§4), the
exact GEMM reference and the accuracy bound of §3. Slow but vectorised; fine for test sizes.
"""

import numpy as np

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float64)

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    BF16 = None


# ---- dtypes ------------------------------------------------------------------------------


def bf16_bits_to_f32(u16):
    return (np.asarray(u16, np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """fp32 -> bf16 bits, round to nearest even; NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def to_f32(x):
    """Exact fp32 widening of float32 / float16 / ml_dtypes.bfloat16 / uint16 (bf16 bits)."""
    x = np.asarray(x)
    if x.dtype == np.uint16:
        return bf16_bits_to_f32(x)
    if BF16 is not None and x.dtype == BF16:
        return bf16_bits_to_f32(x.view(np.uint16))
    return x.astype(np.float32)


# ---- quantization (§2) -----------------------------------------------------------------------


def shared_exponent(amax, rule):
    """Unbiased exponent s per block from amax (float32 array, finite, >= 0)."""
    bits = amax.view(np.uint32).astype(np.int64) & 0x7FFFFFFF
    if rule == "aiter":
        e = ((bits + 0x00200000) >> 23) & 0xFF
        return np.where(e == 0, -127, np.where(e == 255, 127, np.clip(e - 129, -127, 127)))
    m, ex = np.frexp(amax.astype(np.float64))  # amax = m * 2^ex, m in [0.5, 1)
    fl = ex - 1
    if rule == "floor":
        s = fl - 2
    elif rule == "rceil":
        s = np.where(2 * m <= 1.5, fl - 2, fl - 1)
    else:
        raise ValueError(rule)
    return np.where(bits == 0, -127, np.clip(s, -127, 127))


def quantize_codes(x, rule="aiter"):
    """x [rows, K] (any supported dtype) -> (codes uint8 [rows, K] one per element, scales)."""
    xf = to_f32(x)
    rows, K = xf.shape
    blk = xf.reshape(rows, K // 32, 32)
    finite = np.all(np.isfinite(blk), axis=-1)
    amax = np.max(np.abs(np.where(np.isfinite(blk), blk, 0)), axis=-1).astype(np.float32)
    s = shared_exponent(amax, rule)
    inv = np.ldexp(np.ones(s.shape, np.float32), (-s).astype(np.int32))
    with np.errstate(all="ignore"):
        y = (blk * inv[..., None]).astype(np.float32)
    a = np.abs(y)
    mag = ((a > 0.25).astype(np.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5) + (a > 5.0))
    codes = (mag | (np.signbit(y).astype(np.uint8) << 3)).astype(np.uint8)
    codes = np.where(finite[..., None], codes, 0).astype(np.uint8)
    scales = np.where(finite, s + 127, 255).astype(np.uint8)
    return codes.reshape(rows, K), scales


def pack(codes):
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def unpack(packed):
    out = np.empty((packed.shape[0], packed.shape[1] * 2), np.uint8)
    out[:, 0::2] = packed & 0xF
    out[:, 1::2] = packed >> 4
    return out


def quantize(x, rule="aiter"):
    """x [rows, K] -> (packed codes uint8 [rows, K/2], scales uint8 [rows, K/32])."""
    codes, scales = quantize_codes(x, rule)
    return pack(codes), scales


def dequantize(packed, scales):
    """Exact values float64 [rows, K] (NaN for scale 0xFF)."""
    codes = unpack(packed)
    sc = np.repeat(scales.astype(np.int64), 32, axis=1)
    v = E2M1[codes] * np.ldexp(1.0, sc - 127)
    return np.where(sc == 255, np.nan, v)


# ---- AITER layouts (§4) ------------------------------------------------------------------------


def shuffle_scales(plain):
    rows, kb = plain.shape
    sm, sn = -(-rows // 256) * 256, -(-kb // 8) * 8
    out = np.zeros(sm * sn, np.uint8)
    r, c = np.meshgrid(np.arange(rows), np.arange(kb), indexing="ij")
    off = (r // 32) * (32 * sn) + (c // 8) * 256 + (c % 4) * 64 + (r % 16) * 4 + ((c // 4) % 2) * 2 + ((r // 16) % 2)
    out[off] = plain
    return out.reshape(sm, sn)


def shuffle_weight(plain):
    N, kb = plain.shape
    out = np.zeros(N * kb, np.uint8)
    n, c = np.meshgrid(np.arange(N), np.arange(kb), indexing="ij")
    off = (n // 16) * (16 * kb) + (c // 16) * 256 + (n % 16) * 16 + (c % 16)
    out[off] = plain
    return out.reshape(N, kb)


# ---- GEMM (§3) ---------------------------------------------------------------------------------


def gemm_reference(a, b_codes, b_scales, rule="aiter"):
    """(ref float64 [M, N], sum_k |a_k b_k| float64 [M, N]) for bf16 a [M, K] and MXFP4 B."""
    qa, sa = quantize(a, rule)
    da = dequantize(qa, sa)
    db = dequantize(b_codes, b_scales)
    with np.errstate(all="ignore"):
        return da @ db.T, np.abs(da) @ np.abs(db).T


def check_bound(c, ref, absum):
    """Asserts spec §3's bound for C (bf16 as float) against the exact sum."""
    c = np.asarray(c, np.float64)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(c), nan), "NaN exactly where the reference is NaN"
    bf16_max = float(np.float32(bf16_bits_to_f32(np.uint16(0x7F7F))))
    ok = ~nan
    over = ok & (np.abs(ref) > bf16_max * (1 + 2.0**-8))
    assert np.all(np.isinf(c[over]) & (np.sign(c[over]) == np.sign(ref[over])))
    fin = ok & ~over
    err = np.abs(c[fin] - ref[fin])
    tol = 2.0**-8 * np.abs(ref[fin]) + 2.0**-12 * absum[fin]
    assert np.all(err <= tol), f"max excess {np.max(err - tol)}"


def scaled_normal(rng, rows, K, spread):
    """float32 [rows, K] standard normal values, each 32-element block times 2^e with e drawn
    from [-spread, spread): realistic MXFP4 test data with varied block scales."""
    x = rng.standard_normal((rows, K)).astype(np.float32)
    x *= np.exp2(rng.integers(-spread, spread, (rows, K // 32))).repeat(32, axis=1).astype(np.float32)
    return x
