"""mxfp4.gemm(..., out_dtype=float32): the fp32 accumulation result without the final bf16
rounding (for row-parallel partial sums). Checked against the fp64 numpy reference with the
bound without its final-rounding term, |C - ref| <= 2^-12 sum|a_k b_k| + 2^-133; bf16(fp32 C)
equals the bf16 result bit for bit on the CPU backend (ordinary scales); numpy and torch,
packed and (codes, scales) B, and the dtype spellings and errors."""
import ml_dtypes
import numpy as np
import pytest

import mxfp4
import ref

BF16 = ml_dtypes.bfloat16


def _weights(rng, N, K, spread=8):
    return mxfp4.quantize(ref.scaled_normal(rng, N, K, spread))


def _act(rng, M, K):
    return ref.scaled_normal(rng, M, K, 6).astype(BF16)


def check_f32_bound(c, r, absum):
    """|C - ref| <= 2^-12 sum|a_k b_k| + 2^-133 per element, NaN exactly where ref is NaN."""
    c = np.asarray(c, np.float64)
    nan = np.isnan(r)
    assert np.array_equal(np.isnan(c), nan), "NaN exactly where the reference is NaN"
    err = np.abs(c[~nan] - r[~nan])
    tol = 2.0**-12 * absum[~nan] + 2.0**-133
    assert np.all(err <= tol), f"max excess {np.max(err - tol)}"


@pytest.mark.parametrize("M,N,K", [(1, 16, 32), (3, 40, 96), (17, 64, 256), (130, 96, 1024)])
@pytest.mark.parametrize("rule", ["aiter", "rceil"])
def test_fp32_bound_and_bf16_consistency(rng, M, N, K, rule):
    codes, scales = _weights(rng, N, K)
    a = _act(rng, M, K)
    packed = mxfp4.prepack(codes, scales)
    c = mxfp4.gemm(a, packed, rule=rule, out_dtype=np.float32)
    assert c.dtype == np.float32 and c.shape == (M, N)
    r, absum = ref.gemm_reference(a, codes, scales, rule)
    check_f32_bound(c, r, absum)
    c16 = mxfp4.gemm(a, packed, rule=rule)
    assert np.array_equal(ref.f32_to_bf16_bits(c), c16.view(np.uint16)), "bf16(fp32 C) == bf16 C"
    c2 = mxfp4.gemm(a, (codes, scales), rule=rule, out_dtype="float32")
    assert np.array_equal(c.view(np.uint32), c2.view(np.uint32)), "packed and (codes, scales) B agree"
    if K >= 256:  # the fp32 result keeps bits that bf16 drops
        assert np.mean((c.view(np.uint32) & 0xFFFF) != 0) > 0.25  # share of values that are not bf16


def test_fp32_nan_rows_and_columns(rng):
    M, N, K = 4, 24, 128
    codes, scales = _weights(rng, N, K)
    scales[5, 2] = 0xFF  # B row 5 holds a NaN block
    a = _act(rng, M, K)
    a[2, 77] = np.nan
    c = mxfp4.gemm(a, mxfp4.prepack(codes, scales), out_dtype=np.float32)
    want = np.zeros((M, N), bool)
    want[2, :] = True
    want[:, 5] = True
    assert np.array_equal(np.isnan(c), want)
    r, absum = ref.gemm_reference(a, codes, scales)
    check_f32_bound(c, r, absum)


def test_uint16_activations_and_nd_shapes(rng):
    codes, scales = _weights(rng, 32, 64)
    packed = mxfp4.prepack(codes, scales)
    a = _act(rng, 6, 64)
    want = mxfp4.gemm(a, packed, out_dtype=np.float32)
    got = mxfp4.gemm(a.view(np.uint16), packed, out_dtype=np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    got3 = mxfp4.gemm(a.reshape(2, 3, 64), packed, out_dtype=np.float32)
    assert got3.shape == (2, 3, 32) and np.array_equal(got3.reshape(6, 32), want)
    empty = mxfp4.gemm(a[:0], packed, out_dtype=np.float32)
    assert empty.shape == (0, 32) and empty.dtype == np.float32


@pytest.mark.parametrize("spelling", [None, "bfloat16", "bf16", BF16])
def test_bf16_spellings_give_the_default(rng, spelling):
    codes, scales = _weights(rng, 16, 64)
    packed = mxfp4.prepack(codes, scales)
    a = _act(rng, 3, 64)
    c = mxfp4.gemm(a, packed, out_dtype=spelling)
    assert c.dtype == BF16 and np.array_equal(c.view(np.uint16), mxfp4.gemm(a, packed).view(np.uint16))


@pytest.mark.parametrize("bad", ["float16", np.float64, "int8", 3])
def test_other_out_dtypes_are_rejected(rng, bad):
    codes, scales = _weights(rng, 16, 64)
    a = _act(rng, 2, 64)
    with pytest.raises(TypeError, match="out_dtype must be bfloat16 .* or float32"):
        mxfp4.gemm(a, mxfp4.prepack(codes, scales), out_dtype=bad)
    with pytest.raises(TypeError, match="out_dtype"):
        mxfp4.gemm(a, (codes, scales), out_dtype=bad)


def test_bindings_reject_other_output_dtypes(rng):
    codes, scales = _weights(rng, 16, 64)
    packed = mxfp4.prepack(codes, scales)
    a = _act(rng, 2, 64).view(np.uint16)
    with pytest.raises(TypeError, match="out must be bfloat16 .* or float32; got float64"):
        mxfp4._C.gemm(a, packed.data, 16, 64, packed.version, np.zeros((2, 16)), mxfp4._C.ScaleRule.aiter)
    with pytest.raises(ValueError, match=r"out must have shape \(M, N\) = \(2, 16\)"):
        mxfp4._C.gemm(a, packed.data, 16, 64, packed.version, np.zeros((2, 15), np.float32),
                      mxfp4._C.ScaleRule.aiter)


# ---- torch --------------------------------------------------------------------------------------


def test_torch_fp32_matches_numpy(rng, torch):
    codes, scales = _weights(rng, 40, 256)
    a = _act(rng, 5, 256)
    want = mxfp4.gemm(a, mxfp4.prepack(codes, scales), out_dtype=np.float32)
    ta = torch.from_numpy(a.view(np.uint16).view(np.int16)).view(torch.bfloat16)
    packed = mxfp4.prepack(torch.from_numpy(codes), torch.from_numpy(scales))
    for out_dtype in (torch.float32, "float32", np.float32):
        c = mxfp4.gemm(ta, packed, out_dtype=out_dtype)
        assert c.dtype == torch.float32 and c.shape == (5, 40)
        assert np.array_equal(c.numpy().view(np.uint32), want.view(np.uint32))
    c_op = torch.ops.mxfp4.gemm(ta, packed.data, 40, 256, packed.version, "aiter", torch.float32)
    assert torch.equal(c_op, torch.from_numpy(want))
    c_mx = mxfp4.gemm(ta, (torch.from_numpy(codes), torch.from_numpy(scales)), out_dtype=torch.float32)
    assert torch.equal(c_mx, torch.from_numpy(want))
    assert mxfp4.gemm(ta, packed).dtype == torch.bfloat16
    with pytest.raises(TypeError, match="out_dtype"):
        mxfp4.gemm(ta, packed, out_dtype=torch.float16)


def test_torch_fp32_compiles_fullgraph(rng, torch):
    packed = mxfp4.prepack_dense(torch.from_numpy(rng.standard_normal((48, 128)).astype(np.float32)))

    def f(x):
        return mxfp4.gemm(x, packed, out_dtype=torch.float32)

    cf = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    for M in (3, 9):
        x = torch.from_numpy(rng.standard_normal((M, 128)).astype(np.float32)).to(torch.bfloat16)
        got = cf(x)
        assert got.dtype == torch.float32 and torch.equal(got, f(x))


@pytest.mark.parametrize("M,N,K", [(1, 256, 1024), (16, 512, 4096), (100, 384, 2048), (300, 256, 512)])
def test_cuda_fp32_bound(rng, torch, cuda, M, N, K):
    # fused/splitk (small M) and tiled (large M) kernels; the fp32 result against the exact
    # reference (bf16(C) == bf16 result is only claimed for the CPU backend)
    codes, scales = _weights(rng, N, K)
    a = _act(rng, M, K)
    ta = torch.from_numpy(a.view(np.uint16).view(np.int16)).view(torch.bfloat16).to(cuda)
    packed = mxfp4.prepack(torch.from_numpy(codes).to(cuda), torch.from_numpy(scales).to(cuda))
    c = mxfp4.gemm(ta, packed, out_dtype=torch.float32)
    assert c.dtype == torch.float32 and c.device.type == "cuda" and c.shape == (M, N)
    r, absum = ref.gemm_reference(a, codes, scales)
    check_f32_bound(c.cpu().numpy(), r, absum)
    ref.check_bound(mxfp4.gemm(ta, packed).float().cpu().numpy(), r, absum)
