"""CUDA: CPU vs CUDA bit equality (quantizer, layouts, prepack, exact-sum GEMMs), GEMM within
the bound, torch's current stream, torch.compile(fullgraph=True), CUDA-graph capture and
replay, mixed-device errors. Skipped without a CUDA torch and a CUDA build of mxfp4."""
import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402

import mxfp4  # noqa: E402
import ref  # noqa: E402
from mxfp4.nn import MXFP4Linear  # noqa: E402


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def _np_bf16(t):
    import ml_dtypes

    return t.cpu().view(torch.int16).numpy().view(np.uint16).view(ml_dtypes.bfloat16)


def _hard(gen, shape):
    """Many binades, exact ties, zeros, a NaN block and an Inf block."""
    x = torch.randn(*shape, generator=gen) * torch.exp2(torch.randint(-40, 40, (*shape[:-1], 1), generator=gen).float())
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    m = torch.rand(*shape, generator=gen) < 0.1
    x[m] = ties[torch.randint(0, 7, (int(m.sum()),), generator=gen)]
    x[torch.rand(*shape, generator=gen) < 0.05] = 0
    x.view(-1)[3] = float("nan")
    x.view(-1)[100] = float("inf")
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
@pytest.mark.parametrize("layout", ["plain", "aiter_shuffled"])
def test_quantize_cpu_equals_cuda(cuda, gen, dtype, rule, layout):
    x = _hard(gen, (300, 320)).to(dtype)
    c_cpu, s_cpu = mxfp4.quantize(x, rule=rule, scale_layout=layout)
    c_gpu, s_gpu = mxfp4.quantize(x.to(cuda), rule=rule, scale_layout=layout)
    assert c_gpu.device.type == "cuda" and s_gpu.device.type == "cuda"
    assert torch.equal(c_gpu.cpu(), c_cpu)
    if layout == "plain":
        assert torch.equal(s_gpu.cpu(), s_cpu)
    else:  # padding is unspecified: compare the logical scales
        assert torch.equal(mxfp4.unshuffle_scales(s_gpu, 300, 10).cpu(), mxfp4.unshuffle_scales(s_cpu, 300, 10))
    d_cpu = mxfp4.dequantize(c_cpu, s_cpu if layout == "plain" else mxfp4.unshuffle_scales(s_cpu, 300, 10))
    d_gpu = mxfp4.dequantize(c_gpu, s_gpu, scale_layout=layout)
    assert torch.equal(d_gpu.cpu().view(torch.int32), d_cpu.view(torch.int32))


def test_layouts_and_prepack_cpu_equals_cuda(cuda, gen):
    N, K = 96, 512
    codes, scales = mxfp4.quantize(torch.randn(N, K, generator=gen))
    gc, gs = codes.to(cuda), scales.to(cuda)
    assert torch.equal(mxfp4.shuffle_weight(gc).cpu(), mxfp4.shuffle_weight(codes))
    assert torch.equal(mxfp4.unshuffle_weight(mxfp4.shuffle_weight(gc)), gc)
    sh = mxfp4.shuffle_scales(gs)
    assert torch.equal(mxfp4.unshuffle_scales(sh, N, K // 32), gs)
    p_cpu = mxfp4.prepack(codes, scales)
    for cl, sl, c, s in [("plain", "plain", gc, gs), ("aiter_shuffled", "aiter_shuffled", mxfp4.shuffle_weight(gc), sh)]:
        p = mxfp4.prepack(c, s, code_layout=cl, scale_layout=sl)
        assert p.data.device.type == "cuda" and torch.equal(p.data.cpu(), p_cpu.data)
    u = mxfp4.unpack(mxfp4.prepack(gc, gs))
    assert torch.equal(u[0], gc) and torch.equal(u[1], gs)
    w = torch.randn(N, K, generator=gen).to(torch.bfloat16)
    assert torch.equal(mxfp4.prepack_dense(w.to(cuda)).data.cpu(), mxfp4.prepack_dense(w).data)


@pytest.mark.parametrize("M", [1, 3, 16, 33, 64, 65, 300])
@pytest.mark.parametrize("N,K", [(64, 128), (258, 1664), (1024, 512)])
def test_gemm_exact_sums_cpu_equals_cuda(cuda, M, N, K):
    # K09-style operands: every partial sum is exact, so any accumulation order gives the
    # same bits
    m, k = torch.meshgrid(torch.arange(M), torch.arange(K), indexing="ij")
    a = torch.exp2(((m + k // 32) % 5).float()).to(torch.bfloat16)
    n, kk = torch.meshgrid(torch.arange(N), torch.arange(K), indexing="ij")
    b = (((n + kk // 32) % 7) - 3).float()
    p = mxfp4.prepack_dense(b)
    c_cpu = mxfp4.gemm(a, p)
    c_gpu = mxfp4.gemm(a.to(cuda), p.to(cuda))
    assert c_gpu.device.type == "cuda"
    assert torch.equal(c_gpu.cpu().view(torch.int16), c_cpu.view(torch.int16))


@pytest.mark.parametrize("M", [1, 7, 64, 200])
def test_gemm_random_within_bound(cuda, gen, M):
    N, K = 384, 2048
    w = torch.randn(N, K, generator=gen)
    codes, scales = mxfp4.quantize(w)
    a = torch.randn(M, K, generator=gen).to(torch.bfloat16)
    c = mxfp4.gemm(a.to(cuda), mxfp4.prepack(codes.to(cuda), scales.to(cuda)))
    r, absum = ref.gemm_reference(_np_bf16(a), codes.numpy(), scales.numpy())
    ref.check_bound(c.float().cpu().numpy(), r, absum)
    # the (codes, scales) form on CUDA packs into a temporary: same bits
    c2 = mxfp4.gemm(a.to(cuda), (codes.to(cuda), scales.to(cuda)))
    assert torch.equal(c, c2)
    assert str(mxfp4.explain(M, N, K, cuda)).startswith("path=")


def test_gemm_on_current_stream(cuda, gen):
    N, K, M = 256, 1024, 8
    p = mxfp4.prepack_dense(torch.randn(N, K, generator=gen).to(cuda))
    a = torch.randn(M, K, generator=gen).to(torch.bfloat16).to(cuda)
    want = mxfp4.gemm(a, p)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        outs = [mxfp4.gemm(a, p) for _ in range(20)]
    torch.cuda.current_stream().wait_stream(s)
    for o in outs:
        assert torch.equal(o, want)  # deterministic (K14)


def test_mixed_devices_and_cpu_only_errors(cuda, gen):
    codes, scales = mxfp4.quantize(torch.randn(16, 64, generator=gen))
    p = mxfp4.prepack(codes, scales)
    a = torch.zeros(2, 64, dtype=torch.bfloat16, device=cuda)
    with pytest.raises(ValueError, match="same device"):
        mxfp4.gemm(a, p)
    with pytest.raises(ValueError, match="same device"):
        mxfp4.prepack(codes.to(cuda), scales)
    with pytest.raises(ValueError, match="same device"):
        mxfp4.dequantize(codes.to(cuda), scales)


def test_compile_fullgraph_cuda(cuda, gen):
    q = MXFP4Linear.from_linear(torch.nn.Linear(256, 128).to(cuda))

    def f(x):
        codes, scales = mxfp4.quantize(x)
        return q(x), codes, scales

    cf = torch.compile(f, fullgraph=True)
    for M in (1, 5, 64):
        x = torch.randn(M, 256, generator=gen).to(cuda)
        for got, want in zip(cf(x), f(x)):
            assert torch.equal(got, want)


def test_cuda_graph_capture(cuda, gen):
    q = MXFP4Linear.from_linear(torch.nn.Linear(512, 256).to(cuda))
    for M in (4, 128):  # fused/split-K and tiled paths
        x = torch.randn(M, 512, generator=gen).to(cuda)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside capture
            q(x)
            mxfp4.quantize(x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = q(x)
            codes, scales = mxfp4.quantize(x)
        for _ in range(3):
            x.copy_(torch.randn(M, 512, generator=gen).to(cuda))
            g.replay()
            torch.cuda.synchronize()
            assert torch.equal(y, q(x))
            c2, s2 = mxfp4.quantize(x)
            assert torch.equal(codes, c2) and torch.equal(scales, s2)


def test_compiled_module_in_cuda_graph(cuda, gen):
    q = MXFP4Linear.from_linear(torch.nn.Linear(256, 64).to(cuda))
    cq = torch.compile(q, fullgraph=True, mode="reduce-overhead")
    x = torch.randn(8, 256, generator=gen).to(cuda)
    for _ in range(3):
        y = cq(x)
    assert torch.equal(y, q(x))


def test_linear_state_dict_across_devices(cuda, gen):
    q = MXFP4Linear.from_linear(torch.nn.Linear(128, 32, bias=False))
    g = MXFP4Linear(128, 32, bias=False, device=cuda)
    g.load_state_dict(q.state_dict())
    assert torch.equal(g.weight_packed.cpu(), q.weight_packed)
    x = torch.randn(4, 128, generator=gen)
    y = g(x.to(cuda))
    assert y.device.type == "cuda" and y.dtype == torch.float32
    codes, scales = mxfp4.unpack(q.packed())
    r, absum = ref.gemm_reference(_np_bf16(x.to(torch.bfloat16)), codes.numpy(), scales.numpy())
    ref.check_bound(y.cpu().numpy(), r, absum)
    assert "cuda" in repr(g) and "path(M=1): path=" in repr(g)


@pytest.mark.parametrize("M,N,K", [(1, 7168, 2048), (1, 2880, 2880), (4, 2880, 512), (12, 7168, 1024),
                                   (4, 7168, 4096)])
def test_gemm_weights_static_bitwise_equal_on_cuda(cuda, gen, M, N, K):
    # GemmOptions::weights_static through mxfp4.gemm: path gemv (the dispatcher's choice for
    # these shapes; 12x7168x1024 runs the two-tile kernel, 4x7168x4096 copies only a prefix of
    # its chunks) reads B before its PDL wait; the bits stay those of the default call and of
    # the CPU backend.
    assert str(mxfp4.explain(M, N, K, cuda)).startswith("path=gemv")
    p = mxfp4.prepack_dense(torch.randn(N, K, generator=gen).to(cuda))
    a = torch.randn(M, K, generator=gen).to(torch.bfloat16).to(cuda)
    want = mxfp4.gemm(a, p)
    got = [mxfp4.gemm(a, p, weights_static=True) for _ in range(10)]
    for g in got:
        assert torch.equal(g, want)
    cpu = mxfp4.gemm(a.cpu(), mxfp4.PackedTensor(p.data.cpu(), N, K, p.version))
    assert torch.equal(want.cpu().view(torch.int16), cpu.view(torch.int16))
