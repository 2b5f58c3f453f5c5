"""`mxfp4 dequantize` and `mxfp4 gemm` through real .npy files, against numpy models."""
import numpy as np
import pytest

from cli_helpers import bf16_bits, bf16_to_f32, dequantize_ref, quantize_ref


def test_dequantize_all_codes_and_scales(cli, tmp_path):
    """Every code with every scale byte (0 = 2^-127 subnormal, 254 overflows for |code| >= 4,
    255 = NaN) decodes to e2m1 * 2^(b-127) exactly, signed zeros included."""
    codes = np.tile(np.arange(256, dtype=np.uint8), (256, 1))  # row b: all 256 byte values
    scales = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 16, axis=1)  # K = 512 -> 16 blocks
    np.save(tmp_path / "q.npy", codes)
    np.save(tmp_path / "s.npy", scales)
    cli.ok("dequantize", "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy", "--out", tmp_path / "x.npy")
    x = np.load(tmp_path / "x.npy")
    assert x.dtype == np.float32 and x.shape == (256, 512)
    with np.errstate(over="ignore"):
        ref = dequantize_ref(codes, scales).astype(np.float32)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(x), nan)
    np.testing.assert_array_equal(x[~nan].view(np.uint32), ref[~nan].view(np.uint32))
    assert x[0, 4] == np.float32(2.0**-127) and x[0, 4] != 0  # code 2 (1.0) at scale byte 0
    assert np.isinf(x[254, 8]) and x[254, 6] == np.float32(1.5 * 2.0**127)


def test_quantize_dequantize_round_trip(cli, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 128)).astype(np.float32)
    q, s = cli.quantize(tmp_path, x)
    cli.ok("dequantize", "--codes", tmp_path / "x_q.npy", "--scales", tmp_path / "x_s.npy", "--out", tmp_path / "d.npy")
    d = np.load(tmp_path / "d.npy")
    np.testing.assert_array_equal(d, dequantize_ref(q, s).astype(np.float32))
    # QDQ is a fixed point (bug kind K03).
    q2, s2 = cli.quantize(tmp_path, d, name="d2")
    np.testing.assert_array_equal(q2, q)
    np.testing.assert_array_equal(s2, s)


def gemm_args(tmp_path, a, q, s):
    """Saves A, B's codes and scales as .npy files; the `mxfp4 gemm` arguments that read them
    and write C to c.npy."""
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "bq.npy", q)
    np.save(tmp_path / "bs.npy", s)
    return ["gemm", "--a", tmp_path / "a.npy", "--b-codes", tmp_path / "bq.npy", "--b-scales", tmp_path / "bs.npy",
            "--out", tmp_path / "c.npy"]


def run_gemm(cli, tmp_path, a_bits, q, s, *extra):
    r = cli.ok(*gemm_args(tmp_path, a_bits, q, s), *extra)
    c = np.load(tmp_path / "c.npy")
    assert c.dtype == np.uint16 and c.shape == (a_bits.shape[0], q.shape[0])
    return bf16_to_f32(c), r


def gemm_ref(a_f32, q, s, rule):
    aq, as_ = quantize_ref(a_f32, rule)
    a = dequantize_ref(aq, as_)
    b = dequantize_ref(q, s)
    return a @ b.T, np.abs(a) @ np.abs(b).T


@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
def test_gemm_within_spec_bound(cli, tmp_path, rule):
    rng = np.random.default_rng(7)
    M, N, K = 9, 40, 192
    a_bits = bf16_bits(rng.standard_normal((M, K)) * np.exp2(rng.integers(-8, 8, size=(M, 1))))
    b = rng.standard_normal((N, K)).astype(np.float32) * np.exp2(rng.integers(-8, 8, size=(N, 1))).astype(np.float32)
    q, s = quantize_ref(b, "aiter")
    c, _ = run_gemm(cli, tmp_path, a_bits, q, s, "--rule", rule)
    ref, sabs = gemm_ref(bf16_to_f32(a_bits), q, s, rule)
    bound = 2.0**-8 * np.abs(ref) + 2.0**-12 * sabs
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= bound).all(), f"max err/bound {np.max(err / np.maximum(bound, 1e-300))}"


def test_gemm_exact_k_tails(cli, tmp_path):
    """Bug kind K09: exact sums, so C must equal the closed form exactly."""
    M, N = 8, 16
    for K in (32, 96, 160):
        m = np.arange(M)[:, None]
        k = np.arange(K)[None, :]
        a = np.exp2((m + k // 32) % 5).astype(np.float32)
        q, s = quantize_ref(np.ones((N, K), dtype=np.float32))
        c, _ = run_gemm(cli, tmp_path, bf16_bits(a), q, s)
        expect = np.array([32 * sum(2.0 ** ((mm + j) % 5) for j in range(K // 32)) for mm in range(M)])
        np.testing.assert_array_equal(c, np.repeat(expect[:, None], N, axis=1))
    assert c[0, 0] == 992.0


def test_gemm_nan_block_propagates(cli, tmp_path):
    """Bug kind K08: row 0 holds a NaN block -> NaN in every column; row 1 = 64 exactly."""
    a = np.ones((2, 64), dtype=np.float32)
    a[0, 2] = np.nan
    q, s = quantize_ref(np.ones((5, 64), dtype=np.float32))
    c, _ = run_gemm(cli, tmp_path, bf16_bits(a), q, s)
    assert np.isnan(c[0]).all()
    np.testing.assert_array_equal(c[1], 64.0)


def test_gemm_explain(cli, tmp_path):
    a = bf16_bits(np.ones((3, 64), dtype=np.float32))
    q, s = quantize_ref(np.ones((4, 64), dtype=np.float32))
    c, r = run_gemm(cli, tmp_path, a, q, s, "--explain")
    assert "path=" in r.stdout
    np.testing.assert_array_equal(c, 64.0)


def test_gemm_shape_mismatch(cli, tmp_path):
    q, s = quantize_ref(np.ones((4, 96), dtype=np.float32))
    line = cli.fails(*gemm_args(tmp_path, bf16_bits(np.ones((3, 64), dtype=np.float32)), q, s))
    assert "K" in line


def test_gemm_a_must_be_bf16_bits(cli, tmp_path):
    q, s = quantize_ref(np.ones((4, 64), dtype=np.float32))
    line = cli.fails(*gemm_args(tmp_path, np.ones((3, 64), dtype=np.float32), q, s))
    assert "<f4" in line and "<u2" in line


def test_scales_shape_mismatch(cli, tmp_path):
    np.save(tmp_path / "q.npy", np.zeros((4, 32), dtype=np.uint8))
    np.save(tmp_path / "s.npy", np.zeros((4, 3), dtype=np.uint8))
    line = cli.fails("dequantize", "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy", "--out",
                     tmp_path / "x.npy")
    assert "scales" in line and "(4, 2)" in line


def cuda_devices(cli):
    for line in cli.ok("info").stdout.splitlines():
        if line.startswith("CUDA devices:"):
            return int(line.split(":")[1])
    return 0


def test_gemm_cuda_backend(cli, tmp_path):
    """--backend cuda (upload, prepack, gemm, download) is within the bound and, on exact
    inputs, equal to the CPU result; without a device it fails with one line."""
    rng = np.random.default_rng(9)
    M, N, K = 33, 80, 320
    a_bits = bf16_bits(rng.standard_normal((M, K)))
    q, s = quantize_ref(rng.standard_normal((N, K)).astype(np.float32))
    if cuda_devices(cli) == 0:
        line = cli.fails(*gemm_args(tmp_path, a_bits, q, s), "--backend", "cuda")
        assert "cuda" in line.lower()
        return
    c, r = run_gemm(cli, tmp_path, a_bits, q, s, "--backend", "cuda", "--explain")
    assert "path=" in r.stdout
    ref, sabs = gemm_ref(bf16_to_f32(a_bits), q, s, "aiter")
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 2.0**-12 * sabs).all()
    # Exact inputs: CPU and GPU agree bit for bit (K09 pattern).
    a = np.exp2((np.arange(M)[:, None] + np.arange(K)[None, :] // 32) % 5).astype(np.float32)
    q1, s1 = quantize_ref(np.ones((N, K), dtype=np.float32))
    c_gpu, _ = run_gemm(cli, tmp_path, bf16_bits(a), q1, s1, "--backend", "cuda")
    c_cpu, _ = run_gemm(cli, tmp_path, bf16_bits(a), q1, s1, "--backend", "cpu")
    np.testing.assert_array_equal(c_gpu, c_cpu)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_gemm_fp32_output(cli, tmp_path, backend):
    """--out-dtype f32 writes '<f4' fp32 sums within 2^-12 sum|a b| (no final bf16 rounding);
    rounded to bf16 they equal the bf16 output on ordinary data; NaN blocks stay NaN."""
    if backend == "cuda" and cuda_devices(cli) == 0:
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(11)
    M, N, K = 6, 48, 256
    a = rng.standard_normal((M, K)).astype(np.float32)
    a[0, 40] = np.nan
    a_bits = bf16_bits(a)
    q, s = quantize_ref(rng.standard_normal((N, K)).astype(np.float32))
    c16, _ = run_gemm(cli, tmp_path, a_bits, q, s, "--backend", backend)
    cli.ok("gemm", "--a", tmp_path / "a.npy", "--b-codes", tmp_path / "bq.npy", "--b-scales", tmp_path / "bs.npy",
           "--out", tmp_path / "c32.npy", "--out-dtype", "f32", "--backend", backend)
    c32 = np.load(tmp_path / "c32.npy")
    assert c32.dtype == np.float32 and c32.shape == (M, N)
    ref, sabs = gemm_ref(bf16_to_f32(a_bits), q, s, "aiter")
    np.testing.assert_array_equal(np.isnan(c32), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert (np.abs(c32[ok].astype(np.float64) - ref[ok]) <= 2.0**-12 * sabs[ok] + 2.0**-133).all()
    assert np.isnan(c32[0]).all() and not np.isnan(c32[1:]).any()
    if backend == "cpu":
        np.testing.assert_array_equal(bf16_to_f32(bf16_bits(c32))[ok], c16[ok])


def test_gemm_out_dtype_rejects_other_types(cli, tmp_path):
    q, s = quantize_ref(np.ones((4, 64), dtype=np.float32))
    line = cli.fails(*gemm_args(tmp_path, bf16_bits(np.ones((2, 64), dtype=np.float32)), q, s), "--out-dtype", "f16")
    assert "out-dtype" in line


def test_gemm_cuda_fp8_path(cli, tmp_path):
    """--backend cuda with M > 128: the CLI builds the weights' FP8 image, so the dispatcher's
    path fp8 runs (docs/fp8-path.md; --explain names it). Exact inputs give the CPU's bits; random
    weights with a group spanning 2^-20..2^20 (flagged, recomputed by the exact fix-up) stay
    within spec §3's bound."""
    if cuda_devices(cli) == 0:
        pytest.skip("no CUDA device")
    M, N, K = 256, 192, 512
    a = np.exp2((np.arange(M)[:, None] + np.arange(K)[None, :] // 32) % 5).astype(np.float32)
    q1, s1 = quantize_ref(np.ones((N, K), dtype=np.float32))
    c_gpu, r = run_gemm(cli, tmp_path, bf16_bits(a), q1, s1, "--backend", "cuda", "--explain")
    assert "path=fp8" in r.stdout, r.stdout
    c_cpu, _ = run_gemm(cli, tmp_path, bf16_bits(a), q1, s1, "--backend", "cpu")
    np.testing.assert_array_equal(c_gpu, c_cpu)
    rng = np.random.default_rng(13)
    b = rng.standard_normal((N, K)).astype(np.float32)
    b[7, :32] *= np.float32(2.0**-20)
    b[7, 32:64] *= np.float32(2.0**20)
    q, s = quantize_ref(b)
    a_bits = bf16_bits(rng.standard_normal((M, K)))
    c, _ = run_gemm(cli, tmp_path, a_bits, q, s, "--backend", "cuda")
    ref, sabs = gemm_ref(bf16_to_f32(a_bits), q, s, "aiter")
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= 2.0**-8 * np.abs(ref) + 2.0**-12 * sabs).all()
