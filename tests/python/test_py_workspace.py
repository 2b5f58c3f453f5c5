"""The CUDA GEMM's per-call workspace from Python (python/mxfp4/_core.py ``_workspace_bytes``):
sized for the configuration gemm() runs (src/cuda/gemm.cu), which for weights without an FP8
image is ``config_without_fp8`` wherever the dispatcher or a tune cache entry says path fp8.
CPU tests check the ``config_without_fp8`` and ``config_for_weights`` bindings against the
dispatcher, and the sizing with a stand-in for the device's explain_gemm; CUDA tests (skipped
without a CUDA torch and a CUDA build) run gemm() with and without the image, with poisoned
outputs and workspaces, and read the workspace size the package allocates."""
import json

import ml_dtypes
import numpy as np
import pytest

import mxfp4
import ref
from mxfp4 import _C, _core

BF16 = ml_dtypes.bfloat16
FP8, FUSED, SPLITK, TILED, GEMV = (_C.GemmPath.fp8, _C.GemmPath.fused, _C.GemmPath.splitk, _C.GemmPath.tiled,
                                  _C.GemmPath.gemv)


def _cfg(path, block_n, block_m, split_k, warps):
    c = _C.GemmConfig()
    c.path, c.block_n, c.block_m, c.split_k, c.warps = path, block_n, block_m, split_k, warps
    return c


def _fragments(M, K):
    """Bytes of A's bf16 fragments, round_up(M, 8) x round_up(K, 64) x 2: the workspace of paths
    splitk and tiled (without path splitk's split-K scratch, which needs M <= 16)."""
    return -(-M // 8) * 8 * (-(-K // 64) * 64) * 2


# ---- CPU: the binding and the sizing rule ----------------------------------------------------


# The shapes of perf-notes plan item d: path fp8 by the dispatcher, a smaller bf16 workspace.
FP8_SHAPES = [(33, 7168, 7168), (64, 7168, 2048), (100, 4096, 1024)]


@pytest.mark.parametrize("M,N,K", FP8_SHAPES)
def test_config_without_fp8_needs_less_workspace_where_fp8_is_chosen(M, N, K):
    dev = _C.DeviceInfo()  # the H200's 132 SMs
    fp8 = _C.choose_gemm_config(M, N, K, dev)
    assert fp8.path == FP8, f"{M}x{N}x{K}: the dispatcher no longer picks path fp8 here ({fp8})"
    nb = _C.config_without_fp8(M, N, K, dev)
    assert nb.path == SPLITK
    assert _C.gemm_workspace_bytes(M, N, K, nb) == _fragments(M, K) < _C.gemm_workspace_bytes(M, N, K, fp8)
    if (M, N, K) == (33, 7168, 7168):  # the example of the plan item: 0.57 MB instead of 1.95 MB
        assert _C.gemm_workspace_bytes(M, N, K, nb) == 573440
        assert _C.gemm_workspace_bytes(M, N, K, fp8) == 1954176


@pytest.mark.parametrize("sm_count", [132, 78])
def test_config_without_fp8_is_never_fp8_and_agrees_with_the_dispatcher(sm_count):
    dev = _C.DeviceInfo()
    dev.sm_count = sm_count
    any_fp8 = _cfg(FP8, 128, 128, 1, 12)  # path fp8's workspace depends on M and K only
    for N, K in [(7168, 7168), (7168, 2048), (4096, 1024), (2112, 7168), (2880, 512), (272, 4096)]:
        for M in (1, 8, 16, 17, 32, 33, 48, 64, 65, 100, 128, 129, 300):
            nb = _C.config_without_fp8(M, N, K, dev)
            where = f"{M}x{N}x{K} on {sm_count} SMs: {nb}"
            if M <= 128:
                assert nb.path in (FUSED, SPLITK), where
            else:
                assert str(nb) == "path=tiled block_n=128 block_m=128 split_k=1 warps=8", where
            # The (M, K) size never exceeds path fp8's, whichever fp8 configuration was chosen.
            assert _C.gemm_workspace_bytes(M, K, nb) <= _C.gemm_workspace_bytes(M, K, any_fp8), where
            if M > 16:  # no split-K scratch: just A's fragments
                assert _C.gemm_workspace_bytes(M, N, K, nb) == (0 if nb.path == FUSED else _fragments(M, K)), where
            # Where the dispatcher picks neither fp8 nor gemv, it picks this same small-M
            # configuration up to M = 128; past it only for few 64 x 64 tiles (small_m_kernel_wins,
            # e.g. 129x272x4096), the small-M kernel with or without an image, while
            # config_without_fp8 (consulted only for a path fp8 choice) stays tiled.
            chosen = _C.choose_gemm_config(M, N, K, dev)
            if chosen.path not in (FP8, GEMV):
                if M <= 128:
                    assert str(chosen) == str(nb), where
                else:
                    assert chosen.path == SPLITK and M <= 512 and ((M + 63) // 64) * ((N + 63) // 64) <= 64, where


def test_config_without_fp8_rejects_bad_sizes():
    dev = _C.DeviceInfo()
    for M, N, K in [(0, 8, 64), (1, 0, 64), (1, 8, 0), (2**40 + 1, 8, 64)]:
        with pytest.raises(ValueError, match=r"config_without_fp8: .*must each be in \[1, 2\^40\]"):
            _C.config_without_fp8(M, N, K, dev)


class _FakeDevice:
    """Stands in for the extension in _core: explain_gemm answers what the C++ one does on a
    device (a default DeviceInfo, 132 SMs) whose tune cache or dispatcher chose `cfg`:
    config_for_weights of it for the weights' image or its absence; every other name is the
    real extension's."""

    def __init__(self, cfg):
        self.cfg, self.images = cfg, []

    def explain_gemm(self, M, N, K, backend, device=0, fp8_image=True):
        assert backend == _C.Backend.cuda and device == 3
        self.images.append(fp8_image)
        return _C.config_for_weights(self.cfg, fp8_image, M, N, K, _C.DeviceInfo())

    def __getattr__(self, name):
        return getattr(_C, name)


@pytest.fixture
def fake_device(monkeypatch):
    """Installs a _FakeDevice (call it with the configuration the device would choose)."""

    def install(cfg):
        fake = _FakeDevice(cfg)
        monkeypatch.setattr(_core, "_C", fake)
        return fake

    return install


def test_config_for_weights_substitutes_only_path_fp8_without_an_image():
    dev = _C.DeviceInfo()
    fp8 = _cfg(FP8, 64, 64, 1, 8)
    for M, N, K in FP8_SHAPES + [(16, 4096, 4096), (300, 7168, 2048)]:
        assert str(_C.config_for_weights(fp8, True, M, N, K, dev)) == str(fp8)
        assert str(_C.config_for_weights(fp8, False, M, N, K, dev)) == str(_C.config_without_fp8(M, N, K, dev))
    others = [_cfg(SPLITK, 64, 8, 2, 8), _cfg(TILED, 128, 128, 1, 8), _cfg(FUSED, 64, 8, 4, 8), _cfg(GEMV, 64, 8, 1, 16)]
    for cfg in others:
        for image in (True, False):
            assert str(_C.config_for_weights(cfg, image, 64, 7168, 2048, dev)) == str(cfg)
    with pytest.raises(ValueError, match=r"config_without_fp8: .*must each be in \[1, 2\^40\]"):
        _C.config_for_weights(fp8, False, 0, 8, 64, dev)


def test_workspace_bytes_follows_the_configuration_gemm_runs(fake_device):
    dev = _C.DeviceInfo()
    # Path fp8 (the dispatcher's, or a tune cache entry's): with the image its own size,
    # without it config_without_fp8's.
    for M, N, K in FP8_SHAPES + [(32, 7168, 2048), (16, 272, 4096), (300, 7168, 2048)]:
        fp8 = _cfg(FP8, 64, 64, 1, 8)
        fake = fake_device(fp8)
        assert _core._workspace_bytes(M, N, K, 3, True) == _C.gemm_workspace_bytes(M, N, K, fp8)
        want = _C.gemm_workspace_bytes(M, N, K, _C.config_without_fp8(M, N, K, dev))
        assert _core._workspace_bytes(M, N, K, 3, False) == want
        assert fake.images == [True, False]  # the weights' image (or its absence) reaches explain_gemm
    # 16x272x4096 without the image runs splitk split 8, whose split-K scratch follows A's fragments.
    assert _C.gemm_workspace_bytes(16, 272, 4096, _C.config_without_fp8(16, 272, 4096, dev)) > _fragments(16, 4096)
    # With that scratch the bf16 configuration can need more than the fp8 one (a tune cache
    # entry of path fp8 at M <= 16): the package allocates the larger size, so gemm() reduces
    # through the workspace as with its cached one (not through clusters). Without N the fp8
    # size still covers it (mxfp4.hpp config_without_fp8).
    fp8 = _cfg(FP8, 64, 64, 1, 8)
    nb = _C.config_without_fp8(16, 4096, 4096, dev)
    assert str(nb) == "path=splitk block_n=64 block_m=16 split_k=8 warps=4"
    fake_device(fp8)
    assert _core._workspace_bytes(16, 4096, 4096, 3, True) == _C.gemm_workspace_bytes(16, 4096, 4096, fp8) == 1116672
    assert _core._workspace_bytes(16, 4096, 4096, 3, False) == _C.gemm_workspace_bytes(16, 4096, 4096, nb) == 2228480
    assert _C.gemm_workspace_bytes(16, 4096, nb) <= _C.gemm_workspace_bytes(16, 4096, fp8)
    # Any other configuration (a tune cache entry where the dispatcher would say fp8, included)
    # runs as it is, image or not: split-K scratch included, nothing for fused and gemv.
    for M, N, K, cfg in [(64, 7168, 2048, _cfg(SPLITK, 64, 8, 2, 8)), (16, 272, 4096, _cfg(SPLITK, 64, 16, 8, 4)),
                         (33, 7168, 7168, _cfg(TILED, 128, 128, 1, 8)), (8, 7168, 2048, _cfg(FUSED, 64, 8, 4, 8)),
                         (4, 7168, 2048, _cfg(GEMV, 64, 8, 1, 16))]:
        fake = fake_device(cfg)
        for has_fp8 in (True, False):
            assert _core._workspace_bytes(M, N, K, 3, has_fp8) == _C.gemm_workspace_bytes(M, N, K, cfg), str(cfg)
        assert fake.images == [True, False]
    assert _C.gemm_workspace_bytes(16, 272, 4096, _cfg(SPLITK, 64, 16, 8, 4)) > _fragments(16, 4096)
    assert _C.gemm_workspace_bytes(8, 7168, 2048, _cfg(FUSED, 64, 8, 4, 8)) == 0


# ---- CUDA: gemm() with and without the image -------------------------------------------------


@pytest.fixture
def allocations(cuda, monkeypatch):
    """Poisons every CUDA tensor torch.empty returns while the test runs (NaN for floats, 0xFF
    bytes otherwise) and records the sizes of the 1-D uint8 ones (the package's workspaces; a
    list to clear between calls)."""
    import torch

    real_empty, sizes = torch.empty, []

    def empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.device.type == "cuda":
            t.fill_(float("nan") if t.is_floating_point() else 0xFF)
            if t.dtype == torch.uint8 and t.dim() == 1:
                sizes.append(t.numel())
        return t

    monkeypatch.setattr(torch, "empty", empty)
    return sizes


def _operands(cuda, rng, M, N, K):
    """(a bf16 numpy [M, K], a on the device, codes, scales, PackedTensor on the device without an
    image)."""
    import torch

    codes, scales = mxfp4.quantize(rng.standard_normal((N, K)).astype(np.float32))
    p = mxfp4.prepack(torch.from_numpy(codes).to(cuda), torch.from_numpy(scales).to(cuda))
    a = rng.standard_normal((M, K)).astype(np.float32).astype(BF16)
    at = torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(cuda)
    return a, at, codes, scales, p


def _check(c, c32, r, absum):
    ref.check_bound(c.float().cpu().numpy(), r, absum)
    c32 = c32.cpu().numpy().astype(np.float64)
    assert (np.abs(c32 - r) <= 2.0**-12 * absum + 2.0**-133).all()


@pytest.mark.parametrize("M", [33, 64, 100])
def test_cuda_gemm_without_image_allocates_the_bf16_paths_workspace(cuda, rng, monkeypatch, tmp_path, allocations, M):
    import torch

    monkeypatch.setenv("MXFP4_TUNE_CACHE", str(tmp_path / "none.json"))  # the dispatcher's choice only
    N, K = 7168, 2048
    a, at, codes, scales, p = _operands(cuda, rng, M, N, K)
    p8 = mxfp4.prepack_fp8(p)
    index = at.device.index
    fp8 = mxfp4.explain(M, N, K, at.device)
    assert fp8.path == FP8, f"{M}x{N}x{K}: the dispatcher no longer picks path fp8 here ({fp8})"
    nb = _C.config_without_fp8(M, N, K, _C.cuda_device_info(index))
    want, want8 = _C.gemm_workspace_bytes(M, N, K, nb), _C.gemm_workspace_bytes(M, N, K, fp8)
    assert want == _fragments(M, K) < want8
    assert _core._workspace_bytes(M, N, K, index, False) == want
    assert _core._workspace_bytes(M, N, K, index, True) == want8
    r, absum = ref.gemm_reference(a, codes, scales)
    for b, size in ((p, want), (p8, want8)):
        allocations.clear()
        c = mxfp4.gemm(at, b)
        c32 = mxfp4.gemm(at, b, out_dtype=torch.float32)
        assert allocations == [size, size], "image" if b.fp8 is not None else "no image"
        _check(c, c32, r, absum)


def test_cuda_gemm_without_image_under_tune_cache_entries(cuda, rng, monkeypatch, tmp_path, allocations):
    """A tune cache entry of path fp8 (here where the dispatcher would not choose it) runs as
    config_without_fp8 without the image; an entry of another path runs as it is."""
    import torch

    N, K = 7168, 2048
    index = torch.cuda.current_device()
    info = _C.cuda_device_info(index)
    tuned_fp8 = _cfg(FP8, 64, 64, 1, 8)
    tuned_splitk = _C.config_without_fp8(64, N, K, info)
    tuned_splitk.block_m = 8  # informational for splitk: tells the entry from the dispatcher's choice

    def entry(c):  # the tune cache's JSON form (src/dispatch/tune_cache.hpp)
        return {"path": c.path.name, "block_n": c.block_n, "block_m": c.block_m, "split_k": c.split_k,
                "warps": c.warps}

    cache = tmp_path / "tune.json"
    cache.write_text(json.dumps({info.name: {f"32x{N}x{K}": entry(tuned_fp8), f"64x{N}x{K}": entry(tuned_splitk)}}))
    monkeypatch.setenv("MXFP4_TUNE_CACHE", str(cache))
    assert _C.choose_gemm_config(32, N, K, info).path != FP8
    for M, tuned, runs in ((32, tuned_fp8, _C.config_without_fp8(32, N, K, info)), (64, tuned_splitk, tuned_splitk)):
        assert str(mxfp4.explain(M, N, K, cuda)) == str(tuned)
        want = _C.gemm_workspace_bytes(M, N, K, runs)
        assert want == _fragments(M, K) <= _C.gemm_workspace_bytes(M, N, K, tuned)
        assert _core._workspace_bytes(M, N, K, index, False) == want
        a, at, codes, scales, p = _operands(cuda, rng, M, N, K)
        allocations.clear()
        c = mxfp4.gemm(at, p)
        c32 = mxfp4.gemm(at, p, out_dtype=torch.float32)
        assert allocations == [want, want]
        _check(c, c32, *ref.gemm_reference(a, codes, scales))
