"""The weights' 8-bit image (path fp8) from Python (docs/fp8-path.md): fp8_weights_bytes, prepack_fp8 and the
``fp8`` options of prepack / prepack_dense / MXFP4Linear / the tensor-parallel layers. On the
CPU the GEMM ignores the image, so results with and without it are identical bit for bit; the
image itself is checked against the layout of src/core/fp8_layout.hpp. CUDA variants (the
image byte-identical to the CPU's, path fp8 within the bound, the tiled fallback without an
image) skip without a CUDA torch and a CUDA build."""
import ml_dtypes
import numpy as np
import pytest

import mxfp4
import ref
from mxfp4 import tp

BF16 = ml_dtypes.bfloat16


def _image_bytes(Rp, S):
    """Image bytes for Rp padded rows and S slices (src/core/fp8_layout.hpp): s8 codes S*Rp*128,
    float32 scales S*Rp, exponent words S*Rp (4 E8M0 bytes each), wide records S*Rp/64 of 16
    bytes, flags S*Rp/16 (one per 16 rows and slice), rounded up to 16."""
    return -(-(S * Rp * 136 + S * (Rp // 64) * 16 + S * (Rp // 16)) // 16) * 16


def _image_geometry(N, K):
    """(Rp, S) of the image of B [N, K]: S = ceil(K / 128) slices; the row padding (a multiple
    of 64 atoms' rows, fp8::kRowPad) is read off fp8_weights_bytes so that the test follows it."""
    S = -(-K // 128)
    total = mxfp4.fp8_weights_bytes(N, K)
    for Rp in range(-(-N // 64) * 64, N + 1024, 64):
        if _image_bytes(Rp, S) == total:
            return Rp, S
    raise AssertionError(f"fp8_weights_bytes({N}, {K}) = {total} fits no row padding")


def _decode_image(img, N, K):
    """(values float64 [N, K], exponent bytes uint8 [S, Rp, 4], flags uint8 [S, Rp/16]) of an
    8-bit image, from the layout documented in src/core/fp8_layout.hpp: value = s8 code times
    2^(byte - 127) of its block's exponent byte (byte 0: zero, a flagged group)."""
    Rp, S = _image_geometry(N, K)
    # Layout 4: after the codes one 528-byte block per (slice, 64-row atom): 64 float32 scales,
    # 64 exponent words (bytes 256 .. 511 of the block), a 16-byte record.
    blocks = img[S * Rp * 128:S * Rp * 128 + S * (Rp // 64) * 528].reshape(S, Rp // 64, 528)
    exps = np.ascontiguousarray(blocks[:, :, 256:512]).reshape(S, Rp, 4)
    flag_at = S * Rp * 128 + S * (Rp // 64) * 528  # after the metadata blocks
    flags = img[flag_at:flag_at + S * (Rp // 16)].reshape(S, Rp // 16)
    r, k = np.meshgrid(np.arange(N), np.arange(K), indexing="ij")
    j, kk, t, rr = k // 128, k % 128, r // 64, r % 64
    off = (j * (Rp // 64) + t) * 8192 + rr * 128 + ((kk // 16) ^ (rr % 8)) * 16 + kk % 16
    codes = img[off].view(np.int8).astype(np.float64)
    e = exps[j, r, kk // 32].astype(np.int64)
    scale = np.where(e == 0, 0.0, np.exp2((e - 127).astype(np.float64)))
    return codes * scale, exps, flags


def _weights(rng, N=130, K=416):
    """Weights with ordinary rows, and rows 3 (blocks of 2^-60 and 2^60: exponents out of range,
    flagged), 4 (all zero), 5 (a NaN block: flagged) and 6 (a group spanning 2^-20..2^20: wide,
    one exponent per block)."""
    w = (rng.standard_normal((N, K)) * np.exp2(rng.integers(-6, 6, (N, 1)))).astype(np.float32)
    w[3, :32] *= 2.0**-60
    w[3, 32:64] *= 2.0**60
    w[4] = 0
    w[5, K // 2] = np.nan
    w[6, :32] *= 2.0**-20
    w[6, 32:64] *= 2.0**20
    return w


def _same_bits(x, y):
    """Bit equality of two torch tensors (NaN included)."""
    return x.dtype == y.dtype and x.shape == y.shape and torch_equal_bytes(x, y)


def torch_equal_bytes(x, y):
    import torch

    return torch.equal(x.contiguous().view(torch.uint8), y.contiguous().view(torch.uint8))


def _bf16(rng, M, K):
    return rng.standard_normal((M, K)).astype(np.float32).astype(BF16)


# ---- sizes, prepack_fp8 ----------------------------------------------------------------------


@pytest.mark.parametrize("N,K", [(1, 32), (16, 128), (130, 160), (256, 4096), (300, 2880), (512, 384)])
def test_fp8_weights_bytes_follows_the_layout(N, K):
    Rp, S = _image_geometry(N, K)  # raises unless the size has the documented form
    assert Rp % 128 == 0 and N <= Rp < N + 256
    assert mxfp4._C.fp8_weights_bytes(N, K) == mxfp4.fp8_weights_bytes(N, K)
    if N % 256 == 0 and K % 128 == 0:  # no padding: about 1.07 bytes per weight
        assert mxfp4.fp8_weights_bytes(N, K) == _image_bytes(N, K // 128) <= 1.066 * N * K + 16


def test_fp8_weights_bytes_rejects_bad_sizes():
    for N, K in [(0, 64), (16, 0), (16, 48), (-1, 64)]:
        with pytest.raises(ValueError):
            mxfp4.fp8_weights_bytes(N, K)
    with pytest.raises(ValueError):
        mxfp4.fp8_weights_bytes(2**40, 2**40)


def test_prepack_fp8_returns_a_new_tensor_sharing_data(rng):
    p = mxfp4.prepack_dense(_weights(rng))
    p8 = mxfp4.prepack_fp8(p)
    assert isinstance(p8, mxfp4.PackedTensor) and p8 is not p
    assert p8.data is p.data and (p8.N, p8.K, p8.version) == (p.N, p.K, p.version)
    assert p.fp8 is None and p.fp8_nbytes == 0  # the input is left alone
    assert isinstance(p8.fp8, np.ndarray) and p8.fp8.dtype == np.uint8 and p8.fp8.ndim == 1
    assert p8.fp8.size == p8.fp8_nbytes == mxfp4.fp8_weights_bytes(p.N, p.K)
    assert p8.nbytes == p.nbytes == mxfp4.packed_bytes(p.N, p.K)
    assert f"fp8_bytes={p8.fp8_nbytes}" in repr(p8) and "fp8_bytes" not in repr(p)
    # deterministic, and the same through every entry point
    assert np.array_equal(mxfp4.prepack_fp8(p8).fp8, p8.fp8)
    w = _weights(rng)
    codes, scales = mxfp4.quantize(w)
    a = mxfp4.prepack(codes, scales, fp8=True)
    b = mxfp4.prepack_dense(w, fp8=True)
    c = mxfp4.prepack_fp8(mxfp4.prepack(codes, scales))
    assert np.array_equal(a.fp8, c.fp8) and np.array_equal(b.fp8, c.fp8) and np.array_equal(a.data, c.data)
    codes, scales = mxfp4.quantize(_weights(rng, 128, 512))
    sh = mxfp4.prepack(mxfp4.shuffle_weight(codes), mxfp4.shuffle_scales(scales),
                       code_layout="aiter_shuffled", scale_layout="aiter_shuffled", fp8=True)
    assert np.array_equal(sh.fp8, mxfp4.prepack(codes, scales, fp8=True).fp8)
    assert mxfp4.prepack(codes, scales).fp8 is None and mxfp4.prepack_dense(w).fp8 is None


def test_pickle_keeps_the_image_of_this_layout_and_drops_others(rng):
    import pickle

    p8 = mxfp4.prepack_fp8(mxfp4.prepack_dense(_weights(rng)))
    q = pickle.loads(pickle.dumps(p8))
    assert np.array_equal(q.fp8, p8.fp8) and np.array_equal(q.data, p8.data) and q.shape == p8.shape
    assert "fp8_layout" not in vars(q)
    a = _bf16(rng, 3, p8.K)
    np.testing.assert_array_equal(mxfp4.gemm(a, q).view(np.uint16), mxfp4.gemm(a, p8).view(np.uint16))
    # A pickle from a library with another image layout (or from before the layout was
    # recorded): the image is dropped, the packed data kept.
    for state in ({**vars(p8), "fp8_layout": mxfp4.FP8_IMAGE_LAYOUT - 1}, dict(vars(p8))):
        old = mxfp4.PackedTensor.__new__(mxfp4.PackedTensor)
        old.__setstate__(state)
        assert old.fp8 is None and old.data is p8.data and old.shape == p8.shape
    plain = pickle.loads(pickle.dumps(mxfp4.prepack_dense(_weights(rng))))
    assert plain.fp8 is None and "fp8_layout" not in vars(plain)


def test_image_decodes_to_the_weights_and_flags_the_rest(rng):
    N, K = 130, 416  # rows padded to 256, the last of 4 slices 32 wide
    codes, scales = mxfp4.quantize(_weights(rng, N, K))
    p = mxfp4.prepack(codes, scales, fp8=True)
    vals, exps, flags = _decode_image(p.fp8, N, K)
    want = ref.dequantize(codes, scales)
    flagged_rows = {3, 5}
    ok = np.array([r not in flagged_rows for r in range(N)])
    np.testing.assert_array_equal(vals[ok], want[ok])
    assert (exps[:, N:] == 127).all() and (exps[:, 4] == 127).all()  # padding and the all-zero row: 2^0
    assert (exps[0, 3] == 0).all() and (exps[1, 5] == 0).all()  # flagged groups: byte 0 (and zero codes)
    assert (vals[3, :128] == 0).all() and (vals[5, 128:256] == 0).all()
    np.testing.assert_array_equal(vals[3, 128:], want[3, 128:])  # only the flagged group leaves the path
    assert len(set(exps[0, 6])) > 1  # the wide group: one exponent per block
    narrow = [r for r in range(N) if r not in (3, 5, 6)]
    assert (exps[:, narrow] == exps[:, narrow, :1]).all()  # every other group: one exponent
    expect = np.zeros_like(flags)
    expect[0, 0] = expect[1, 0] = 1
    np.testing.assert_array_equal(flags, expect)


# ---- GEMM with and without the image ---------------------------------------------------------


@pytest.mark.parametrize("M", [1, 37, 200])
@pytest.mark.parametrize("out_dtype", [None, np.float32])
def test_gemm_with_image_gives_identical_bits_on_the_cpu(rng, M, out_dtype):
    p = mxfp4.prepack_dense(_weights(rng))
    p8 = mxfp4.prepack_fp8(p)
    a = _bf16(rng, M, p.K)
    c = mxfp4.gemm(a, p, out_dtype=out_dtype)
    c8 = mxfp4.gemm(a, p8, out_dtype=out_dtype)
    assert c8.dtype == c.dtype and c8.shape == (M, p.N)
    np.testing.assert_array_equal(c8.view(np.uint8), c.view(np.uint8))
    # N-D activations
    c3 = mxfp4.gemm(a.reshape(1, M, p.K), p8, out_dtype=out_dtype)
    np.testing.assert_array_equal(c3.reshape(M, p.N).view(np.uint8), c.view(np.uint8))


def test_unpack_and_dequantize_ignore_the_image(rng):
    codes, scales = mxfp4.quantize(_weights(rng))
    p8 = mxfp4.prepack(codes, scales, fp8=True)
    u = mxfp4.unpack(p8)
    assert np.array_equal(u[0], codes) and np.array_equal(u[1], scales)
    assert np.array_equal(p8.dequantize(), mxfp4.dequantize(codes, scales), equal_nan=True)
    assert p8.numpy() is p8 and p8.cpu() is p8


def test_explain_names_path_fp8():
    assert mxfp4.GemmPath.fp8 != mxfp4.GemmPath.tiled and "fp8" in mxfp4.GemmPath.__members__
    cfg = mxfp4.GemmConfig()
    cfg.path, cfg.block_n, cfg.block_m, cfg.split_k, cfg.warps = mxfp4.GemmPath.fp8, 128, 128, 1, 12
    assert str(cfg) == "path=fp8 block_n=128 block_m=128 split_k=1 warps=12"
    dev = mxfp4._C.DeviceInfo()
    assert mxfp4._C.choose_gemm_config(256, 4096, 4096, dev).path == mxfp4.GemmPath.fp8
    assert mxfp4._C.choose_gemm_config(128, 4096, 4096, dev).path == mxfp4.GemmPath.fp8
    # 32 < M <= 64: path fp8 from N x K = 10 Mi weights (session 23).
    assert mxfp4._C.choose_gemm_config(64, 4096, 4096, dev).path == mxfp4.GemmPath.fp8
    assert mxfp4._C.choose_gemm_config(64, 4096, 2048, dev).path != mxfp4.GemmPath.fp8
    assert mxfp4._C.choose_gemm_config(32, 4096, 4096, dev).path != mxfp4.GemmPath.fp8
    # A's image, or the tiled fallback's bf16 fragments (256 * 512 * 2 bytes) when larger.
    assert mxfp4._C.gemm_workspace_bytes(256, 512, cfg) == max(mxfp4.fp8_weights_bytes(256, 512), 256 * 512 * 2)
    # With N: the same for path fp8; path splitk with split_k = 8 and K >= 4096 adds its split-K
    # scratch (counters, then 8 ranks x 5 tiles of 16 x 64 fp32 partials, 256-byte aligned
    # regions); split 2, or split 8 over a shorter K, reduces through clusters and adds nothing.
    assert mxfp4._C.gemm_workspace_bytes(256, 4096, 512, cfg) == mxfp4._C.gemm_workspace_bytes(256, 512, cfg)
    sk = mxfp4.GemmConfig()
    sk.path, sk.block_n, sk.block_m, sk.split_k, sk.warps = mxfp4.GemmPath.splitk, 64, 16, 8, 4
    frags = 16 * 4096 * 2
    assert mxfp4._C.gemm_workspace_bytes(16, 4096, sk) == frags
    assert mxfp4._C.gemm_workspace_bytes(16, 272, 4096, sk) == frags + 256 + 5 * 8 * 16 * 64 * 4
    assert mxfp4._C.gemm_workspace_bytes(16, 272, 2048, sk) == mxfp4._C.gemm_workspace_bytes(16, 2048, sk)
    sk.split_k = 2
    assert mxfp4._C.gemm_workspace_bytes(16, 272, 4096, sk) == frags
    # describe with the shape names the split-K reduction the cached workspace gets.
    assert mxfp4._C.describe(sk, 16, 272, 4096) == str(sk) + " reduce=clusters"
    sk.split_k = 8
    assert mxfp4._C.describe(sk, 16, 272, 4096) == str(sk) + " reduce=workspace"


# ---- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["packed_bytes", "fp8_weights_bytes"])
def test_size_functions_refuse_bools_and_huge_sizes(fn):
    f = getattr(mxfp4, fn)
    with pytest.raises(TypeError, match="integer"):
        f(True, 32)
    with pytest.raises(TypeError, match="integer"):
        f(32, 64.0)
    with pytest.raises(ValueError):
        f(2**70, 32)
    assert f(np.int64(32), 64) == f(32, 64)


def test_prepack_fp8_errors(rng):
    p = mxfp4.prepack_dense(_weights(rng, 32, 128))
    with pytest.raises(TypeError, match="PackedTensor"):
        mxfp4.prepack_fp8(p.data)
    with pytest.raises(ValueError, match="packed_bytes"):
        mxfp4.prepack_fp8(mxfp4.PackedTensor(p.data[:-16], 32, 128))
    with pytest.raises(ValueError, match="packed_bytes"):
        mxfp4.prepack_fp8(mxfp4.PackedTensor(p.data, 48, 128))
    with pytest.raises(TypeError, match="uint8"):
        mxfp4.prepack_fp8(mxfp4.PackedTensor(p.data.view(np.float32), 32, 128))
    with pytest.raises(TypeError, match="version"):
        mxfp4.prepack_fp8(mxfp4.PackedTensor(p.data, 32, 128, version=1))
    with pytest.raises(ValueError, match="C-contiguous"):
        big = np.zeros(2 * p.data.size, np.uint8)
        mxfp4.prepack_fp8(mxfp4.PackedTensor(big[::2], 32, 128))
    with pytest.raises(TypeError, match="fp8 must be"):
        mxfp4.PackedTensor(p.data, 32, 128, fp8=[0, 1])


def test_low_level_prepack_fp8_checks_the_output_and_overlap(rng):
    p = mxfp4.prepack_dense(_weights(rng, 32, 128))
    n8 = mxfp4.fp8_weights_bytes(32, 128)
    v = mxfp4.PACKED_LAYOUT_VERSION
    with pytest.raises(ValueError, match=f"expected {n8} = fp8_weights_bytes"):
        mxfp4._C.prepack_fp8(p.data, 32, 128, v, np.zeros(n8 - 16, np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        mxfp4._C.prepack_fp8(p.data, 32, 128, v, np.zeros(n8 // 4, np.float32))
    # out overlapping the packed weights: the library's overlap check (ValueError)
    buf = np.zeros(p.data.size + n8, np.uint8)
    buf[:p.data.size] = p.data
    with pytest.raises(ValueError, match="overlap"):
        mxfp4._C.prepack_fp8(buf[:p.data.size], 32, 128, v, buf[p.data.size - 16:p.data.size - 16 + n8])
    out = np.zeros(n8, np.uint8)
    mxfp4._C.prepack_fp8(buf[:p.data.size], 32, 128, v, out)
    assert np.array_equal(out, mxfp4.prepack_fp8(p).fp8)


def test_gemm_rejects_bad_images(rng):
    p = mxfp4.prepack_dense(_weights(rng, 32, 128))
    img = mxfp4.prepack_fp8(p).fp8
    a = _bf16(rng, 4, 128)
    with pytest.raises(ValueError, match="fp8_weights_bytes"):
        mxfp4.gemm(a, mxfp4.PackedTensor(p.data, 32, 128, fp8=img[:-16]))
    with pytest.raises(ValueError, match="fp8_weights_bytes"):  # an image for other sizes
        mxfp4.gemm(a, mxfp4.PackedTensor(p.data, 32, 128, fp8=mxfp4.prepack_dense(_weights(rng, 300, 256),
                                                                                   fp8=True).fp8))
    with pytest.raises(TypeError, match="uint8"):
        mxfp4.gemm(a, mxfp4.PackedTensor(p.data, 32, 128, fp8=img.view(np.float32)))
    with pytest.raises(ValueError, match="C-contiguous"):
        mxfp4.gemm(a, mxfp4.PackedTensor(p.data, 32, 128, fp8=np.repeat(img, 2)[::2]))
    # C overlapping the image (low-level binding: the package always allocates C itself)
    buf = np.zeros(max(img.size, 4 * 32 * 2), np.uint8)
    buf[:img.size] = img
    c = buf[:4 * 32 * 2].view(np.uint16).reshape(4, 32)
    with pytest.raises(ValueError, match="overlap"):
        mxfp4._C.gemm(a.view(np.uint16), p.data, 32, 128, mxfp4.PACKED_LAYOUT_VERSION, c, mxfp4._C.ScaleRule.aiter,
                      fp8=buf[:img.size])


# ---- torch -----------------------------------------------------------------------------------


def test_torch_prepack_fp8_and_gemm(torch, rng):
    w = torch.from_numpy(_weights(rng))
    p = mxfp4.prepack_dense(w)
    p8 = mxfp4.prepack_fp8(p)
    assert isinstance(p8.fp8, torch.Tensor) and p8.fp8.dtype == torch.uint8 and p8.data is p.data
    assert p8.fp8.numel() == mxfp4.fp8_weights_bytes(p.N, p.K)
    assert np.array_equal(p8.fp8.numpy(), mxfp4.prepack_fp8(p.numpy()).fp8)
    assert torch.equal(mxfp4.prepack_dense(w, fp8=True).fp8, p8.fp8)
    assert torch.equal(mxfp4.prepack(*mxfp4.quantize(w), fp8=True).fp8, p8.fp8)
    for M in (3, 150):
        a = torch.randn(M, p.K, dtype=torch.float32).to(torch.bfloat16)
        for out_dtype in (None, torch.float32):
            c = mxfp4.gemm(a, p, out_dtype=out_dtype)
            c8 = mxfp4.gemm(a, p8, out_dtype=out_dtype)
            assert _same_bits(c, c8)
    # the numpy form of a torch PackedTensor keeps its image, and back
    n = p8.numpy()
    assert isinstance(n.fp8, np.ndarray) and np.array_equal(n.fp8, p8.fp8.numpy())
    t = n.to("cpu")
    assert t is n
    back = mxfp4.PackedTensor(torch.from_numpy(n.data), n.N, n.K, fp8=torch.from_numpy(n.fp8)).to("cpu")
    assert torch.equal(back.fp8, p8.fp8)


def test_torch_gemm_rejects_an_image_on_another_device(torch, rng):
    # A meta tensor among real ones sends the call to the op's fake implementation: without a
    # device check it returned an uninitialised C instead of the product (or an error).
    from mxfp4.nn import MXFP4Linear

    p8 = mxfp4.prepack_dense(torch.from_numpy(_weights(rng, 32, 128)), fp8=True)
    a = torch.from_numpy(_bf16(rng, 4, 128).view(np.uint16)).view(torch.bfloat16)
    for bad in (mxfp4.PackedTensor(p8.data, 32, 128, fp8=p8.fp8.to("meta")),
                mxfp4.PackedTensor(p8.data.to("meta"), 32, 128, fp8=p8.fp8)):
        with pytest.raises(ValueError, match="same device"):
            mxfp4.gemm(a, bad)
    with pytest.raises(ValueError, match="same device"):
        torch.ops.mxfp4.gemm_mx(a, *(x.to("meta") for x in mxfp4.quantize(torch.ones(32, 128))))
    # a module built on meta whose weight_packed alone was materialised keeps a meta image
    with torch.device("meta"):
        lin = MXFP4Linear(128, 32, bias=False, fp8=True)
    lin.weight_packed = p8.data.clone()
    with pytest.raises(ValueError, match="same device"):
        lin(a)
    lin.refresh_fp8()
    assert _same_bits(lin(a), mxfp4.gemm(a, p8))


@pytest.mark.parametrize("case", ["prepack_fp8", "gemm", "gemm_f32"])
def test_opcheck_fp8_ops(torch, case):
    g = torch.Generator().manual_seed(0)
    p = mxfp4.prepack_dense(torch.randn(20, 160, generator=g), fp8=True)
    v = mxfp4.PACKED_LAYOUT_VERSION
    a = torch.randn(3, 160, generator=g).to(torch.bfloat16)
    op, args = {
        "prepack_fp8": (torch.ops.mxfp4.prepack_fp8, (p.data, 20, 160, v)),
        "gemm": (torch.ops.mxfp4.gemm, (a, p.data, 20, 160, v, "aiter", None, p.fp8)),
        "gemm_f32": (torch.ops.mxfp4.gemm, (a, p.data, 20, 160, v, "aiter", torch.float32, p.fp8)),
    }[case]
    torch.library.opcheck(op.default, args, test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_compile_fullgraph_with_image_cpu(torch):
    g = torch.Generator().manual_seed(1)
    p8 = mxfp4.prepack_dense(torch.randn(48, 128, generator=g), fp8=True)

    def f(x):
        return mxfp4.gemm(x.to(torch.bfloat16), p8)

    cf = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    for M in (4, 33, 130):
        x = torch.randn(M, 128, generator=g)
        assert torch.equal(cf(x), f(x))


def test_compile_prepack_fp8_with_symbolic_sizes(torch):
    """The fake of torch.ops.mxfp4.prepack_fp8 sizes the image from symbolic N and K with the
    layout's formula (python/mxfp4/_torch_ops.py): it must agree with fp8_weights_bytes."""
    def f(w):
        p = torch.ops.mxfp4.prepack_dense(w)
        return torch.ops.mxfp4.prepack_fp8(p, w.shape[0], w.shape[1])

    cf = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    g = torch.Generator().manual_seed(2)
    for N, K in ((48, 256), (80, 256), (300, 416)):
        w = torch.randn(N, K, generator=g)
        out = cf(w)
        assert out.numel() == mxfp4.fp8_weights_bytes(N, K)
        assert torch.equal(out, f(w))


def test_linear_fp8_option(torch, rng):
    from mxfp4.nn import MXFP4Linear

    lin = torch.nn.Linear(160, 72)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(_weights(rng, 72, 160)))
    plain = MXFP4Linear.from_linear(lin)
    q = MXFP4Linear.from_linear(lin, fp8=True)
    assert plain.fp8 is False and plain.weight_fp8 is None
    assert q.fp8 is True and q.weight_fp8.dtype == torch.uint8
    assert torch.equal(q.weight_fp8, mxfp4.prepack_fp8(plain.packed()).fp8)
    assert torch.equal(q.packed().fp8, q.weight_fp8) and plain.packed().fp8 is None
    x = torch.randn(140, 160)
    assert _same_bits(q(x), plain(x))  # CPU: identical with and without the image
    r = repr(q)
    assert f"fp8=uint8[{mxfp4.fp8_weights_bytes(72, 160)}]" in r and "fp8=None" in repr(plain)
    # state dict: the image is derived, not stored; load_state_dict rebuilds it
    sd = q.state_dict()
    assert set(sd) == {"weight_packed", "bias", "_extra_state"}
    fresh = MXFP4Linear(160, 72, fp8=True)
    assert torch.equal(fresh.weight_fp8, mxfp4.prepack_fp8(mxfp4.PackedTensor(fresh.weight_packed, 72, 160)).fp8)
    fresh.load_state_dict(sd)
    assert torch.equal(fresh.weight_fp8, q.weight_fp8) and _same_bits(fresh(x), q(x))
    plain2 = MXFP4Linear(160, 72)
    plain2.load_state_dict(sd)  # a module without the option loads the same state dict
    assert plain2.weight_fp8 is None and _same_bits(plain2(x), q(x))
    # from_packed: a carried image is used as is; fp8=True builds one
    p8 = mxfp4.prepack_dense(lin.weight.detach(), fp8=True)
    m = MXFP4Linear.from_packed(p8)
    assert m.fp8 and m.weight_fp8.data_ptr() == p8.fp8.data_ptr()
    assert torch.equal(MXFP4Linear.from_packed(plain.packed(), fp8=True).weight_fp8, q.weight_fp8)
    codes, scales = mxfp4.quantize(lin.weight.detach())
    assert torch.equal(MXFP4Linear.from_mxfp4(codes, scales, fp8=True).weight_fp8, q.weight_fp8)
    with pytest.raises(ValueError, match="fp8_weights_bytes"):
        MXFP4Linear.from_packed(mxfp4.PackedTensor(p8.data, 72, 160, fp8=p8.fp8[:-16]))
    # an image of the right element count but not bytes is refused at construction
    wide = torch.zeros(p8.fp8.numel(), dtype=torch.float32)
    with pytest.raises(TypeError, match="uint8"):
        MXFP4Linear.from_packed(mxfp4.PackedTensor(p8.data, 72, 160, fp8=wide))
    # after an in-place change of the weights, refresh_fp8 rebuilds the image
    with torch.no_grad():
        fresh.weight_packed.copy_(plain.weight_packed)
    fresh.refresh_fp8()
    assert torch.equal(fresh.weight_fp8, q.weight_fp8)
    # meta construction (as from_packed uses it) and compile
    meta = MXFP4Linear(160, 72, device="meta", fp8=True)
    assert meta.weight_fp8.device.type == "meta" and meta.weight_fp8.numel() == mxfp4.fp8_weights_bytes(72, 160)
    cq = torch.compile(q, fullgraph=True, backend="aot_eager")
    assert _same_bits(cq(x), q(x))


def test_tp_shards_and_layers_with_images(torch, rng):
    from mxfp4.tp import ColumnParallelMXFP4Linear, RowParallelMXFP4Linear

    w = _weights(rng, 128, 512)
    codes, scales = mxfp4.quantize(w)
    p8 = mxfp4.prepack(codes, scales, fp8=True)
    for dim in ("N", "K"):
        for r in range(2):
            s = tp.shard_packed(p8, r, 2, dim)
            plain = tp.shard_packed(mxfp4.prepack(codes, scales), r, 2, dim)
            assert plain.fp8 is None and np.array_equal(s.data, plain.data)
            assert np.array_equal(s.fp8, mxfp4.prepack_fp8(plain).fp8)
    lin = torch.nn.Linear(512, 128)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
    x = torch.randn(140, 512)
    for cls in (ColumnParallelMXFP4Linear, RowParallelMXFP4Linear):
        base = cls.from_linear(lin, rank=0, world_size=1)
        assert base.local.weight_fp8 is None
        for m in (cls.from_linear(lin, rank=0, world_size=1, fp8=True),
                  cls.from_packed(mxfp4.prepack_dense(lin.weight.detach(), fp8=True), bias=lin.bias.detach(), rank=0,
                                  world_size=1),
                  cls.from_mxfp4(*mxfp4.quantize(lin.weight.detach()), bias=lin.bias.detach(), rank=0, world_size=1,
                                 fp8=True)):
            assert m.fp8 and m.local.weight_fp8 is not None
            assert torch.equal(m.local.weight_fp8, mxfp4.prepack_fp8(base.local.packed()).fp8)
            assert _same_bits(m(x), base(x))
        assert cls(512, 128, rank=0, world_size=1, fp8=True).local.weight_fp8 is not None
    # rank 1 of 2 (no process group: the shard is built, the forward of a row shard needs one)
    col = ColumnParallelMXFP4Linear.from_linear(lin, rank=1, world_size=2, gather_output=False, fp8=True)
    want = mxfp4.prepack_dense(lin.weight.detach()[64:], fp8=True).fp8
    assert torch.equal(col.local.weight_fp8, want)
    row = RowParallelMXFP4Linear.from_linear(lin, rank=1, world_size=2, fp8=True)
    assert torch.equal(row.local.weight_fp8, mxfp4.prepack_dense(lin.weight.detach()[:, 256:].contiguous(),
                                                                 fp8=True).fp8)


# ---- CUDA ------------------------------------------------------------------------------------


def test_cuda_image_equals_the_cpu_image(cuda, rng):
    import torch

    for N, K in [(130, 416), (256, 2048)]:
        codes, scales = mxfp4.quantize(_weights(rng, N, K))
        p_cpu = mxfp4.prepack(codes, scales, fp8=True)
        p_gpu = mxfp4.prepack(torch.from_numpy(codes).to(cuda), torch.from_numpy(scales).to(cuda), fp8=True)
        assert p_gpu.fp8.device.type == "cuda"
        assert np.array_equal(p_gpu.fp8.cpu().numpy(), p_cpu.fp8)
        moved = p_cpu.to(cuda)
        assert moved.fp8.device.type == "cuda" and torch.equal(moved.fp8, p_gpu.fp8)


@pytest.mark.parametrize("M", [129, 300])
def test_cuda_gemm_path_fp8_and_the_tiled_fallback(cuda, rng, M):
    import torch

    N, K = 384, 1024
    w = _weights(rng, N, K)
    w[5, K // 2] = 1.0  # no NaN row here: checked against the bound below
    codes, scales = mxfp4.quantize(w)
    p = mxfp4.prepack(torch.from_numpy(codes).to(cuda), torch.from_numpy(scales).to(cuda))
    p8 = mxfp4.prepack_fp8(p)
    a = _bf16(rng, M, K)
    at = torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(cuda)
    assert mxfp4.explain(M, N, K, cuda).path == mxfp4.GemmPath.fp8
    r, absum = ref.gemm_reference(a, codes, scales)
    for b in (p8, p):  # path fp8, and the tiled path the dispatcher's fp8 choice falls back to
        c = mxfp4.gemm(at, b)
        ref.check_bound(c.float().cpu().numpy(), r, absum)
        c32 = mxfp4.gemm(at, b, out_dtype=torch.float32).cpu().numpy().astype(np.float64)
        assert (np.abs(c32 - r) <= 2.0**-12 * absum + 2.0**-133).all()
    # exact sums: path fp8 equals the CPU bit for bit
    m, k = np.meshgrid(np.arange(M), np.arange(K), indexing="ij")
    ae = np.exp2((m + k // 32) % 5).astype(np.float32).astype(BF16)
    n, kk = np.meshgrid(np.arange(N), np.arange(K), indexing="ij")
    pe = mxfp4.prepack_dense((((n + kk // 32) % 7) - 3).astype(np.float32), fp8=True)
    c_cpu = mxfp4.gemm(ae, pe)
    aet = torch.from_numpy(ae.view(np.int16).copy()).view(torch.bfloat16).to(cuda)
    c_gpu = mxfp4.gemm(aet, pe.to(cuda))
    assert np.array_equal(c_gpu.cpu().view(torch.int16).numpy().view(np.uint16), c_cpu.view(np.uint16))


def test_cuda_linear_fp8_and_graph_capture(cuda, rng):
    import torch
    from mxfp4.nn import MXFP4Linear

    lin = torch.nn.Linear(512, 256, bias=False)
    q = MXFP4Linear.from_linear(lin.to(cuda), fp8=True)
    plain = MXFP4Linear.from_linear(lin)
    assert q.weight_fp8.device.type == "cuda" and "path(M=1024): path=fp8" in repr(q)
    assert "no FP8 image: runs path=tiled" in repr(plain.to(cuda))
    x = torch.randn(256, 512, device=cuda)
    y = q(x)
    codes, scales = mxfp4.unpack(q.packed().to("cpu"))
    xb = x.to(torch.bfloat16).cpu().view(torch.int16).numpy().view(np.uint16).view(BF16)
    r, absum = ref.gemm_reference(xb, codes.numpy(), scales.numpy())
    ref.check_bound(y.cpu().numpy(), r, absum)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        q(x)  # warm-up outside capture
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yg = q(x)
    x.copy_(torch.randn(256, 512, device=cuda))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(yg, q(x))
