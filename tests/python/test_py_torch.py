"""torch integration on the CPU: tensors in and out without copies, torch.ops.mxfp4.* custom
ops (opcheck: schema, fake implementations, dynamic shapes), torch.compile(fullgraph=True)
without graph breaks, MXFP4Linear (from_linear vs a float reference, state_dict, repr).
Skipped without torch (CI installs it: scripts/install-deps.sh --torch)."""
import copy
import io

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mxfp4  # noqa: E402
import ref  # noqa: E402
from mxfp4.nn import MXFP4Linear  # noqa: E402

OPS = ["quantize", "dequantize", "prepack", "prepack_dense", "prepack_fp8", "unpack", "gemm", "gemm_mx",
       "shuffle_scales", "unshuffle_scales", "shuffle_weight", "unshuffle_weight"]


def _np_bf16(t):
    return t.view(torch.int16).numpy().view(np.uint16).view(ml_dtypes.bfloat16)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def test_ops_registered():
    for name in OPS:
        assert hasattr(torch.ops.mxfp4, name), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
def test_quantize_matches_numpy(gen, dtype, rule):
    x = (torch.randn(24, 192, generator=gen) * 4).to(dtype)
    codes, scales = mxfp4.quantize(x, rule=rule)
    assert isinstance(codes, torch.Tensor) and codes.dtype == torch.uint8 and codes.shape == (24, 96)
    assert scales.shape == (24, 6)
    xn = _np_bf16(x) if dtype == torch.bfloat16 else x.numpy()
    rc, rs = ref.quantize(xn, rule)
    assert np.array_equal(codes.numpy(), rc) and np.array_equal(scales.numpy(), rs)
    cs, ss = mxfp4.quantize(x, rule=rule, scale_layout="aiter_shuffled")
    assert torch.equal(cs, codes) and ss.shape == (256, 8)
    assert torch.equal(mxfp4.unshuffle_scales(ss, 24, 6), scales)


def test_dequantize_and_layouts(gen):
    x = torch.randn(32, 128, generator=gen)
    codes, scales = mxfp4.quantize(x)
    f = mxfp4.dequantize(codes, scales)
    assert f.dtype == torch.float32 and f.shape == (32, 128)
    assert np.array_equal(f.numpy(), mxfp4.dequantize(codes.numpy(), scales.numpy()))
    b = mxfp4.dequantize(codes, scales, dtype=torch.bfloat16)
    assert b.dtype == torch.bfloat16 and torch.equal(b.float(), f)
    sw, ss = mxfp4.shuffle_weight(codes), mxfp4.shuffle_scales(scales)
    assert torch.equal(mxfp4.unshuffle_weight(sw), codes)
    assert np.array_equal(sw.numpy(), ref.shuffle_weight(codes.numpy()))
    g = mxfp4.dequantize(sw, ss, code_layout="aiter_shuffled", scale_layout="aiter_shuffled")
    assert torch.equal(g, f)


def test_gemm_matches_numpy_and_bound(gen):
    M, N, K = 9, 40, 256
    w = torch.randn(N, K, generator=gen)
    codes, scales = mxfp4.quantize(w)
    packed = mxfp4.prepack(codes, scales)
    assert isinstance(packed.data, torch.Tensor) and packed.shape == (N, K)
    a = torch.randn(M, K, generator=gen).to(torch.bfloat16)
    c = mxfp4.gemm(a, packed)
    assert c.dtype == torch.bfloat16 and c.shape == (M, N)
    cn = mxfp4.gemm(_np_bf16(a), mxfp4.prepack(codes.numpy(), scales.numpy()))
    assert np.array_equal(_np_bf16(c).view(np.uint16), cn.view(np.uint16))
    assert torch.equal(mxfp4.gemm(a, (codes, scales)), c)
    r, absum = ref.gemm_reference(_np_bf16(a), codes.numpy(), scales.numpy())
    ref.check_bound(c.float().numpy(), r, absum)
    # N-D activations and an empty batch
    c3 = mxfp4.gemm(a.reshape(3, 3, K), packed)
    assert c3.shape == (3, 3, N) and torch.equal(c3.reshape(M, N), c)
    assert mxfp4.gemm(a[:0], packed).shape == (0, N)
    # requires_grad inputs are fine (inference: no autograd through the op)
    assert torch.equal(mxfp4.gemm(a.clone().requires_grad_(), packed), c)


def test_fp4_and_e8m0_torch_dtypes(gen):
    if not (hasattr(torch, "float4_e2m1fn_x2") and hasattr(torch, "float8_e8m0fnu")):
        pytest.skip("torch without float4_e2m1fn_x2 / float8_e8m0fnu")
    w = torch.randn(32, 128, generator=gen)
    codes, scales = mxfp4.quantize(w)
    p = mxfp4.prepack(codes.view(torch.float4_e2m1fn_x2), scales.view(torch.float8_e8m0fnu))
    assert torch.equal(p.data, mxfp4.prepack(codes, scales).data)


def test_zero_copy_inputs(gen):
    # a strided row view and a numpy-backed tensor go in without copies (results prove the
    # view's stride was honoured)
    wide = torch.randn(8, 320, generator=gen)
    codes, scales = mxfp4.quantize(wide[:, 64:320])
    c2, s2 = mxfp4.quantize(wide[:, 64:320].contiguous())
    assert torch.equal(codes, c2) and torch.equal(scales, s2)


def test_torch_errors(gen):
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        mxfp4.quantize(torch.zeros(2, 32, dtype=torch.float64))
    with pytest.raises(ValueError, match="multiple of 32"):
        mxfp4.quantize(torch.zeros(2, 40))
    with pytest.raises(ValueError, match="unit stride"):
        mxfp4.quantize(torch.zeros(64, 4).t())
    codes, scales = mxfp4.quantize(torch.randn(16, 64, generator=gen))
    p = mxfp4.prepack(codes, scales)
    with pytest.raises(TypeError, match="bfloat16"):
        mxfp4.gemm(torch.zeros(2, 64), p)
    with pytest.raises(ValueError, match="K = 32 columns"):
        mxfp4.gemm(torch.zeros(2, 32, dtype=torch.bfloat16), p)
    with pytest.raises(TypeError, match="uint8"):
        mxfp4.dequantize(codes.to(torch.int32), scales)
    with pytest.raises(ValueError, match="rule must be one of"):
        mxfp4.quantize(torch.zeros(2, 32), rule="bad")


@pytest.mark.parametrize("op,args", [
    ("quantize", lambda g: (torch.randn(5, 64, generator=g), "aiter", "plain")),
    ("quantize", lambda g: (torch.randn(2, 3, 64, generator=g).to(torch.bfloat16), "floor", "aiter_shuffled")),
    ("dequantize", lambda g: (*mxfp4.quantize(torch.randn(4, 64, generator=g)), torch.bfloat16, "plain", "plain")),
    ("prepack", lambda g: (*mxfp4.quantize(torch.randn(20, 128, generator=g)), 20, 128, "plain", "plain")),
    ("prepack_dense", lambda g: (torch.randn(20, 128, generator=g), "rceil")),
    ("unpack", lambda g: (mxfp4.prepack_dense(torch.randn(20, 128, generator=g)).data, 20, 128,
                            mxfp4.PACKED_LAYOUT_VERSION)),
    ("gemm", lambda g: (torch.randn(3, 128, generator=g).to(torch.bfloat16),
                        mxfp4.prepack_dense(torch.randn(20, 128, generator=g)).data, 20, 128,
                        mxfp4.PACKED_LAYOUT_VERSION, "aiter")),
    ("gemm", lambda g: (torch.randn(2, 3, 128, generator=g).to(torch.bfloat16),
                        mxfp4.prepack_dense(torch.randn(20, 128, generator=g)).data, 20, 128,
                        mxfp4.PACKED_LAYOUT_VERSION, "aiter", torch.float32)),
    ("gemm_mx", lambda g: (torch.randn(3, 128, generator=g).to(torch.bfloat16),
                           *mxfp4.quantize(torch.randn(20, 128, generator=g)), "plain", "plain", "aiter")),
    ("gemm_mx", lambda g: (torch.randn(3, 128, generator=g).to(torch.bfloat16),
                           *mxfp4.quantize(torch.randn(20, 128, generator=g)), "plain", "plain", "aiter",
                           torch.float32)),
    ("shuffle_scales", lambda g: (mxfp4.quantize(torch.randn(20, 128, generator=g))[1],)),
    ("unshuffle_scales", lambda g: (torch.randint(0, 255, (256, 8), dtype=torch.uint8, generator=g), 20, 4)),
    ("shuffle_weight", lambda g: (torch.randint(0, 255, (32, 64), dtype=torch.uint8, generator=g),)),
    ("unshuffle_weight", lambda g: (torch.randint(0, 255, (32, 64), dtype=torch.uint8, generator=g),)),
])
def test_opcheck(gen, op, args):
    torch.library.opcheck(getattr(torch.ops.mxfp4, op).default, args(gen),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_compile_fullgraph_cpu(gen):
    w = torch.randn(48, 128, generator=gen)
    packed = mxfp4.prepack_dense(w)

    def f(x):
        codes, scales = mxfp4.quantize(x)
        y = mxfp4.gemm(x.to(torch.bfloat16), packed)
        return codes, scales, mxfp4.dequantize(codes, scales), y

    cf = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    for M in (4, 7, 33):
        x = torch.randn(M, 128, generator=gen)
        for got, want in zip(cf(x), f(x)):
            assert torch.equal(got, want)


# ---- MXFP4Linear -----------------------------------------------------------------------------


def _linear(gen, K=128, N=48, bias=True, dtype=torch.float32):
    lin = torch.nn.Linear(K, N, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(N, K, generator=gen) * 0.1)
        if bias:
            lin.bias.copy_(torch.randn(N, generator=gen))
    return lin.to(dtype)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_from_linear_vs_float_reference(gen, bias):
    lin = _linear(gen, bias=bias)
    q = MXFP4Linear.from_linear(lin)
    x = torch.randn(5, 128, generator=gen)
    y = q(x)
    assert y.dtype == torch.float32 and y.shape == (5, 48)
    # exactly the GEMM of the packed weights, plus the bias
    packed = mxfp4.prepack_dense(lin.weight.detach())
    assert torch.equal(q.weight_packed, packed.data)
    g = mxfp4.gemm(x.to(torch.bfloat16), packed).float()
    assert torch.equal(y, g + lin.bias.detach() if bias else g)
    # within spec §3's bound of the exact product of the quantized operands...
    codes, scales = mxfp4.unpack(packed)
    r, absum = ref.gemm_reference(_np_bf16(x.to(torch.bfloat16)), codes.numpy(), scales.numpy())
    ref.check_bound(g.numpy(), r, absum)
    # ...and close to the float layer (MXFP4 has ~1 significant bit after rounding: loose)
    with torch.no_grad():
        yf = lin(x)
    rel = (y - yf).norm() / yf.norm()
    assert rel < 0.25, rel
    # N-D inputs, bf16 inputs
    assert q(x.reshape(5, 1, 128)).shape == (5, 1, 48)
    assert q(x.to(torch.bfloat16)).dtype == torch.bfloat16


def test_linear_state_dict_round_trip(gen, tmp_path):
    q = MXFP4Linear.from_linear(_linear(gen), rule="floor")
    buf = io.BytesIO()
    torch.save(q.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, weights_only=True)
    assert set(sd) == {"weight_packed", "bias", "_extra_state"}
    fresh = MXFP4Linear(128, 48, bias=True)
    fresh.load_state_dict(sd)
    assert fresh.rule == "floor"
    x = torch.randn(3, 128, generator=gen)
    assert torch.equal(fresh(x), q(x))
    bad = dict(sd)
    bad["_extra_state"] = dict(sd["_extra_state"], version=99)
    with pytest.raises(TypeError, match="version 99"):
        MXFP4Linear(128, 48).load_state_dict(bad)


def test_linear_from_mxfp4_and_repr(gen):
    lin = _linear(gen, K=256, N=64)
    codes, scales = mxfp4.quantize(lin.weight.detach())
    a = MXFP4Linear.from_mxfp4(codes, scales, bias=lin.bias.detach())
    b = MXFP4Linear.from_mxfp4(mxfp4.shuffle_weight(codes).numpy(), mxfp4.shuffle_scales(scales).numpy(),
                               bias=lin.bias.detach(), code_layout="aiter_shuffled", scale_layout="aiter_shuffled")
    assert torch.equal(a.weight_packed, b.weight_packed)
    assert torch.equal(a.weight_packed, MXFP4Linear.from_linear(lin).weight_packed)
    r = repr(a)
    assert "in_features=256" in r and "out_features=64" in r and "path(M=1): path=" in r and "bias=True" in r
    assert torch.equal(a.dequantize_weight(), mxfp4.dequantize(codes, scales))
    with pytest.raises(ValueError, match="multiple of 32|K"):
        MXFP4Linear(100, 16)
    with pytest.raises(TypeError, match="nn.Linear"):
        MXFP4Linear.from_linear(torch.nn.Conv1d(1, 1, 1))
    with pytest.raises(TypeError, match="floating dtype"):  # session 60 review: came back truncated
        a(torch.ones(2, 256, dtype=torch.int64))


def test_linear_compile_fullgraph_cpu(gen):
    q = MXFP4Linear.from_linear(_linear(gen))
    cq = torch.compile(q, fullgraph=True, backend="aot_eager")
    x = torch.randn(6, 128, generator=gen)
    assert torch.equal(cq(x), q(x))


def test_weights_static_op_and_module(gen):
    # Plumbing (the CPU backend ignores the option; test_py_cuda.py checks the CUDA kernel):
    # torch.ops.mxfp4.gemm's weights_static argument and MXFP4Linear.weights_static reach the
    # library and give the default call's bits.
    N, K = 48, 256
    lin = torch.nn.Linear(K, N, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(N, K, generator=gen))
    m = MXFP4Linear.from_linear(lin)
    x = torch.randn(3, K, generator=gen).to(torch.bfloat16)
    y = m(x)
    m.weights_static = True
    assert torch.equal(m(x), y)
    p = m.packed()
    assert torch.equal(torch.ops.mxfp4.gemm(x, p.data, N, K, p.version, "aiter", None, None, True), y)
    assert torch.equal(mxfp4.gemm(x, p, weights_static=True), y)


def test_mixed_meta_and_real_tensors_are_value_errors(gen):
    # Session 60 review: a meta scales tensor routed dequantize/prepack to their fake
    # implementations, which returned uninitialised CPU tensors.
    codes, scales = mxfp4.quantize(torch.randn(16, 64, generator=gen))
    with pytest.raises(ValueError, match="same device"):
        torch.ops.mxfp4.dequantize(codes, scales.to("meta"), torch.float32)
    with pytest.raises(ValueError, match="same device"):
        mxfp4.prepack(codes, scales.to("meta"))
    with pytest.raises(ValueError, match="same device"):
        MXFP4Linear.from_mxfp4(codes, scales.to("meta"))


def test_linear_takes_any_strides_and_checks_sizes(gen):
    # Session 60 review: a transposed weight or input was a ValueError (nn.Linear takes it),
    # and float sizes were truncated.
    w = torch.randn(64, 48, generator=gen).t()  # [48, 64], stride (1, 48)
    lin = torch.nn.Linear(64, 48)
    lin.weight = torch.nn.Parameter(w)
    q = MXFP4Linear.from_linear(lin)
    lin_c = torch.nn.Linear(64, 48)
    lin_c.weight = torch.nn.Parameter(w.contiguous())
    lin_c.bias = lin.bias
    assert torch.equal(q.weight_packed, MXFP4Linear.from_linear(lin_c).weight_packed)
    x = torch.randn(64, 3, generator=gen).t()  # [3, 64], stride (1, 3)
    assert torch.equal(q(x), q(x.contiguous()))
    with pytest.raises(ValueError, match="scalar"):
        q(torch.tensor(1.0))
    with pytest.raises(TypeError, match="in_features must be an integer"):
        MXFP4Linear(32.5, 7)


def test_non_strict_load_without_extra_state_rebuilds_the_fp8_image(gen):
    # Session 60 review: the image was rebuilt only in set_extra_state, so a non-strict load
    # without _extra_state left the zero weights' image (path fp8 on CUDA would use it).
    lin = torch.nn.Linear(128, 64)
    q = MXFP4Linear.from_linear(lin, fp8=True)
    q2 = MXFP4Linear(128, 64, fp8=True)
    assert not torch.equal(q2.weight_fp8, q.weight_fp8)
    q2.load_state_dict({k: v for k, v in q.state_dict().items() if k != "_extra_state"}, strict=False)
    assert torch.equal(q2.weight_fp8, q.weight_fp8)
    copy.deepcopy(q2)  # the rebuild is a method, not a per-instance hook: the module pickles
    buf = io.BytesIO()
    torch.save(q2, buf)
    buf.seek(0)
    q3 = torch.load(buf, weights_only=False)  # an unpickled module (never constructed) rebuilds too
    q3.load_state_dict(MXFP4Linear.from_linear(torch.nn.Linear(128, 64), fp8=True).state_dict())
    assert torch.equal(q3.weight_fp8, torch.ops.mxfp4.prepack_fp8(q3.weight_packed, 64, 128))


def test_linear_copies_overlapping_bf16_rows(gen):
    # Review of session 60's fixes: an expanded bf16 x (row stride 0) was a ValueError.
    q = MXFP4Linear.from_linear(torch.nn.Linear(128, 32))
    x = torch.randn(1, 128, generator=gen).to(torch.bfloat16)
    assert torch.equal(q(x.expand(4, 128)), q(x.expand(4, 128).contiguous()))


def test_sizes_accept_symbolic_and_0d_integer_tensors(gen):
    # Review of session 60's fixes: the integer check refused SymInts (make_fx symbolic tracing)
    # and 0-d integer tensors, which worked before; floats and bools stay TypeErrors.
    from torch.fx.experimental.proxy_tensor import make_fx
    codes, scales = mxfp4.quantize(torch.randn(64, 128, generator=gen))
    sh = mxfp4.shuffle_scales(scales)
    g = make_fx(lambda s, r: mxfp4.unshuffle_scales(s, r.shape[0], r.shape[1]), tracing_mode="symbolic")(sh, scales)
    assert torch.equal(g(sh, scales), scales)
    assert torch.equal(mxfp4.unshuffle_scales(sh, torch.tensor(64), torch.tensor(4)), scales)
    assert MXFP4Linear(torch.tensor(128), torch.tensor(64)).in_features == 128
    with pytest.raises(TypeError, match="rows must be an integer"):
        mxfp4.unshuffle_scales(sh, torch.tensor(64.0), 4)
    with pytest.raises(TypeError, match="rows must be an integer"):
        mxfp4.unshuffle_scales(sh, torch.tensor(True), 4)
