"""mxfp4.gemm on numpy arrays: spec §3's bound against an fp64 numpy reference, exact bug-kind
cases (K08-K12), packed vs (codes, scales) vs AITER layouts, GEMM on bf16 A == GEMM on
quantize(A) (K03), N-D activations, and (with MXFP4_CLI) equality with the C++ CLI."""
import subprocess

import ml_dtypes
import numpy as np
import pytest

import mxfp4
import ref

BF16 = ml_dtypes.bfloat16


def _weights(rng, N, K, scale_spread=8):
    return mxfp4.quantize(ref.scaled_normal(rng, N, K, scale_spread))


def _act(rng, M, K):
    return ref.scaled_normal(rng, M, K, 6).astype(BF16)


@pytest.mark.parametrize("M,N,K", [(1, 16, 32), (3, 40, 96), (17, 64, 256), (64, 33, 512), (130, 96, 1024)])
@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
def test_bound_vs_fp64_reference(rng, M, N, K, rule):
    codes, scales = _weights(rng, N, K)
    a = _act(rng, M, K)
    packed = mxfp4.prepack(codes, scales)
    c = mxfp4.gemm(a, packed, rule=rule)
    assert c.dtype == BF16 and c.shape == (M, N)
    r, absum = ref.gemm_reference(a, codes, scales, rule)
    ref.check_bound(c.astype(np.float64), r, absum)
    # the (codes, scales) form gives the same bits
    c2 = mxfp4.gemm(a, (codes, scales), rule=rule)
    assert np.array_equal(c.view(np.uint16), c2.view(np.uint16))


def test_uint16_activations_give_uint16(rng):
    codes, scales = _weights(rng, 32, 64)
    a = _act(rng, 4, 64)
    c = mxfp4.gemm(a.view(np.uint16), mxfp4.prepack(codes, scales))
    assert c.dtype == np.uint16
    assert np.array_equal(c, mxfp4.gemm(a, (codes, scales)).view(np.uint16))


def test_layouts_give_identical_results(rng):
    N, K = 48, 192
    codes, scales = _weights(rng, N, K)
    a = _act(rng, 5, K)
    base = mxfp4.gemm(a, mxfp4.prepack(codes, scales)).view(np.uint16)
    sw, ss = mxfp4.shuffle_weight(codes), mxfp4.shuffle_scales(scales)
    for cl, sl, cc, sc in [("aiter_shuffled", "plain", sw, scales), ("plain", "aiter_shuffled", codes, ss),
                           ("aiter_shuffled", "aiter_shuffled", sw, ss)]:
        p = mxfp4.prepack(cc, sc, code_layout=cl, scale_layout=sl)
        assert np.array_equal(mxfp4.gemm(a, p).view(np.uint16), base)
        assert np.array_equal(mxfp4.gemm(a, (cc, sc), code_layout=cl, scale_layout=sl).view(np.uint16), base)


def test_gemm_equals_gemm_on_quantized_a(rng):
    # K03: GEMM on bf16 A == GEMM on quantize(A), bit for bit (the library's own oracle path)
    M, N, K = 7, 24, 128
    codes, scales = _weights(rng, N, K)
    a = _act(rng, M, K)
    c = mxfp4.gemm(a, mxfp4.prepack(codes, scales)).view(np.uint16)
    qa, sa = mxfp4.quantize(a)
    c2 = np.empty((M, N), np.uint16)
    mxfp4._C.gemm_quantized(qa, sa, M, codes, scales, N, K, c2)
    assert np.array_equal(c, c2)
    # the library's exact reference agrees with ours
    c3, f64, ab = np.empty((M, N), np.uint16), np.empty((M, N)), np.empty((M, N))
    mxfp4._C.gemm_reference(qa, sa, M, codes, scales, N, K, c3, f64, ab)
    r, absum = ref.gemm_reference(a, codes, scales)
    assert np.allclose(f64, r, rtol=1e-12, atol=0) and np.allclose(ab, absum, rtol=1e-12, atol=0)


def test_nd_activations_and_empty_batch(rng):
    codes, scales = _weights(rng, 16, 64)
    p = mxfp4.prepack(codes, scales)
    a = _act(rng, 6, 64).reshape(2, 3, 64)
    c = mxfp4.gemm(a, p)
    assert c.shape == (2, 3, 16)
    assert np.array_equal(c.reshape(6, 16).view(np.uint16), mxfp4.gemm(a.reshape(6, 64), p).view(np.uint16))
    e = mxfp4.gemm(np.zeros((0, 64), BF16), p)
    assert e.shape == (0, 16)
    # rows with a stride larger than K (no copy)
    wide = _act(rng, 6, 128)
    c4 = mxfp4.gemm(wide[:, :64], p)
    assert np.array_equal(c4.view(np.uint16), mxfp4.gemm(np.ascontiguousarray(wide[:, :64]), p).view(np.uint16))


def _mx(dense):
    return mxfp4.quantize(np.asarray(dense, np.float32))


def test_k08_nan_rows():
    a = np.ones((2, 64), np.float32)
    a[0, 2] = np.nan
    codes, scales = _mx(np.ones((8, 64)))
    c = mxfp4.gemm(a.astype(BF16), mxfp4.prepack(codes, scales)).astype(np.float32)
    assert np.all(np.isnan(c[0])) and np.all(c[1] == 64.0)


@pytest.mark.parametrize("K", [32, 64, 96, 160, 1664])
def test_k09_k_tails(K):
    M = N = 64
    m, k = np.meshgrid(np.arange(M), np.arange(K), indexing="ij")
    a = np.exp2((m + k // 32) % 5).astype(np.float32).astype(BF16)
    c = mxfp4.gemm(a, mxfp4.prepack(*_mx(np.ones((N, K))))).astype(np.float64)
    want = np.array([32 * sum(2.0 ** ((mm + j) % 5) for j in range(K // 32)) for mm in range(M)])
    want_bf16 = ref.bf16_bits_to_f32(ref.f32_to_bf16_bits(want.astype(np.float32))).astype(np.float64)
    assert np.array_equal(c, np.repeat(want_bf16[:, None], N, axis=1))
    if K == 96:
        assert c[:5, 0].tolist() == [224, 448, 896, 800, 608]
    if K == 1664:
        assert c[:5, 0].tolist() == [9984, 10112, 10304, 10688, 10496]


@pytest.mark.parametrize("N", [1, 3, 17, 258, 260])
def test_k10_k11_n_tails(N):
    K = 128
    b = ((np.arange(N) % 7) - 3).astype(np.float32)[:, None].repeat(K, axis=1)
    c = mxfp4.gemm(np.ones((16, K), BF16), mxfp4.prepack(*_mx(b))).astype(np.float64)
    assert np.array_equal(c, np.repeat((128 * ((np.arange(N) % 7) - 3))[None, :], 16, axis=0).astype(np.float64))
    n = np.arange(min(N, 9))
    b2 = np.exp2(n + 3).astype(np.float32)[:, None].repeat(64, axis=1)
    c2 = mxfp4.gemm(np.ones((1, 64), BF16), mxfp4.prepack(*_mx(b2))).astype(np.float64)
    assert c2[0].tolist() == (64 * np.exp2(n + 3)).tolist()


@pytest.mark.parametrize("M", [1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33])
def test_k12_small_m(M):
    K = N = 64
    c = mxfp4.gemm(np.ones((M, K), BF16), mxfp4.prepack(*_mx(np.ones((N, K)))))
    assert np.all(c.astype(np.float32) == K)


def test_matches_cli(cli_path, tmp_path, rng):
    M, N, K = 9, 40, 160
    codes, scales = _weights(rng, N, K)
    a = _act(rng, M, K)
    for name, arr in [("a", a.view(np.uint16)), ("q", codes), ("s", scales)]:
        np.save(tmp_path / f"{name}.npy", arr)
    subprocess.run([cli_path, "gemm", "--a", str(tmp_path / "a.npy"), "--b-codes", str(tmp_path / "q.npy"),
                    "--b-scales", str(tmp_path / "s.npy"), "--out", str(tmp_path / "c.npy")], check=True,
                   capture_output=True)
    assert np.array_equal(np.load(tmp_path / "c.npy"), mxfp4.gemm(a, mxfp4.prepack(codes, scales)).view(np.uint16))


def test_explain():
    cfg = mxfp4.explain(1, 256, 512)
    assert isinstance(cfg, mxfp4.GemmConfig)
    assert str(cfg).startswith("path=") and "block_n=" in str(cfg)
    assert repr(cfg).startswith("GemmConfig(")
    with pytest.raises(ValueError, match="device"):
        mxfp4.explain(1, 256, 512, device="tpu")


@pytest.mark.parametrize("M,K", [(1, 64), (4, 512), (13, 96)])
def test_weights_static_gives_the_same_bits(rng, M, K):
    # A plumbing check (the CPU backend ignores the option; test_py_cuda.py checks the CUDA
    # kernel): the keyword is accepted and the bits are those of the default call, also for a
    # (codes, scales) B, which ignores it.
    codes, scales = _weights(rng, 40, K)
    a = _act(rng, M, K)
    packed = mxfp4.prepack(codes, scales)
    c = mxfp4.gemm(a, packed)
    assert np.array_equal(mxfp4.gemm(a, packed, weights_static=True).view(np.uint16), c.view(np.uint16))
    assert np.array_equal(mxfp4.gemm(a, (codes, scales), weights_static=True).view(np.uint16), c.view(np.uint16))
