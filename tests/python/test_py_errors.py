"""Errors: wrong dtypes -> TypeError, bad sizes / strides / shapes / names -> ValueError, each
naming the constraint; backend failures -> RuntimeError; never a crash."""
import ml_dtypes
import numpy as np
import pytest

import mxfp4

BF16 = ml_dtypes.bfloat16


@pytest.fixture
def mx():
    w = np.random.default_rng(0).standard_normal((32, 128)).astype(np.float32)
    codes, scales = mxfp4.quantize(w)
    return codes, scales, mxfp4.prepack(codes, scales)


def test_quantize_errors():
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        mxfp4.quantize(np.zeros((2, 32), np.float64))
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        mxfp4.quantize(np.zeros((2, 32), np.int32))
    with pytest.raises(TypeError, match="numpy.ndarray or a torch.Tensor"):
        mxfp4.quantize([[0.0] * 32])
    with pytest.raises(ValueError, match="multiple of 32"):
        mxfp4.quantize(np.zeros((2, 48), np.float32))
    with pytest.raises(ValueError, match="K = 16"):
        mxfp4.quantize(np.zeros((2, 16), np.float32))
    with pytest.raises(ValueError, match="unit stride"):
        mxfp4.quantize(np.zeros((2, 64), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="unit stride"):
        mxfp4.quantize(np.zeros((64, 2), np.float32).T)
    with pytest.raises(ValueError):
        mxfp4.quantize(np.zeros((0, 32), np.float32))
    with pytest.raises(ValueError, match="scalar"):
        mxfp4.quantize(np.array(1.0, np.float32))
    with pytest.raises(ValueError, match="rule must be one of"):
        mxfp4.quantize(np.zeros((1, 32), np.float32), rule="nearest")
    with pytest.raises(ValueError, match="scale_layout must be one of"):
        mxfp4.quantize(np.zeros((1, 32), np.float32), scale_layout="swizzled")


def test_dequantize_errors(mx):
    codes, scales, _ = mx
    with pytest.raises(TypeError, match="uint8"):
        mxfp4.dequantize(codes.astype(np.int16), scales)
    with pytest.raises(TypeError, match="uint8"):
        mxfp4.dequantize(codes, scales.astype(np.float32))
    with pytest.raises(ValueError, match="scales has 96 bytes"):
        mxfp4.dequantize(codes, scales[:, :3].copy())
    with pytest.raises(ValueError, match="C-contiguous"):
        mxfp4.dequantize(codes[:, ::2], scales[:, ::2])
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        mxfp4.dequantize(codes, scales, dtype=np.float16)
    with pytest.raises(ValueError, match="code_layout must be one of"):
        mxfp4.dequantize(codes, scales, code_layout="nope")
    with pytest.raises(ValueError, match="shuffled"):
        mxfp4.dequantize(codes, scales, scale_layout="aiter_shuffled")  # plain-sized buffer


def test_gemm_errors(mx):
    codes, scales, packed = mx
    a = np.zeros((4, 128), BF16)
    with pytest.raises(TypeError, match="bfloat16"):
        mxfp4.gemm(a.astype(np.float32), packed)
    with pytest.raises(TypeError, match="bfloat16"):
        mxfp4.gemm(a.astype(np.float16), (codes, scales))
    with pytest.raises(ValueError, match="K = 64 columns but the packed weights have K = 128"):
        mxfp4.gemm(np.zeros((4, 64), BF16), packed)
    with pytest.raises(ValueError):
        mxfp4.gemm(np.zeros((4, 64), BF16), (codes, scales))
    with pytest.raises(ValueError, match="unit stride"):
        mxfp4.gemm(np.zeros((4, 256), BF16)[:, ::2], packed)
    with pytest.raises(TypeError, match="PackedTensor or a \\(codes, scales\\) tuple"):
        mxfp4.gemm(a, codes)
    with pytest.raises(ValueError, match="rule must be one of"):
        mxfp4.gemm(a, packed, rule="x")
    bad = mxfp4.PackedTensor(packed.data, packed.N, packed.K, version=mxfp4.PACKED_LAYOUT_VERSION + 1)
    with pytest.raises(TypeError, match="version"):
        mxfp4.gemm(a, bad)
    short = mxfp4.PackedTensor(packed.data[:-1], packed.N, packed.K)
    with pytest.raises(ValueError, match="packed has"):
        mxfp4.gemm(a, short)
    with pytest.raises(ValueError, match="codes must be 2-D"):
        mxfp4.gemm(a, (codes.reshape(-1), scales))


def test_prepack_and_layout_errors(mx):
    codes, scales, packed = mx
    with pytest.raises(ValueError, match="do not match N=16"):
        mxfp4.prepack(codes, scales, N=16)
    with pytest.raises(ValueError, match="pass N and K"):
        mxfp4.prepack(codes.reshape(-1), scales)
    with pytest.raises(ValueError, match="N % 16 == 0 and K % 64 == 0"):
        mxfp4.shuffle_weight(codes[:8])
    with pytest.raises(ValueError, match="% 16 == 0 and K % 64 == 0"):
        mxfp4.prepack(codes[:8], scales[:8], code_layout="aiter_shuffled")
    with pytest.raises(ValueError):
        mxfp4.unshuffle_scales(mxfp4.shuffle_scales(scales), 300, 4)  # buffer too small for 300 rows
    with pytest.raises(ValueError, match="2-D"):
        mxfp4.shuffle_scales(scales.reshape(-1))
    with pytest.raises(TypeError, match="PackedTensor"):
        mxfp4.unpack(packed.data)
    with pytest.raises(TypeError, match="version"):
        mxfp4.unpack(mxfp4.PackedTensor(packed.data, 32, 128, version=7))
    with pytest.raises(ValueError, match="2-D"):
        mxfp4.prepack_dense(np.zeros((2, 2, 32), np.float32))


def test_overlapping_buffers_rejected():
    # outputs are allocated by the package, so overlap only arises through _C directly
    buf = np.zeros(4096, np.uint8)
    with pytest.raises(ValueError):
        mxfp4._C.shuffle_weight(buf[:1024], 16, 128, buf[512:1536])


def test_low_level_binding_checks():
    x = np.zeros((2, 32), np.float32)
    codes, scales = np.zeros((2, 16), np.uint8), np.zeros((2, 1), np.uint8)
    with pytest.raises(TypeError, match="bfloat16"):
        mxfp4._C.quantize(x, mxfp4._C.DType.bf16, codes, scales, mxfp4._C.ScaleRule.aiter, mxfp4._C.ScaleLayout.plain)
    with pytest.raises(ValueError, match="codes has 16 bytes"):
        mxfp4._C.quantize(x, mxfp4._C.DType.fp32, codes[:1], scales, mxfp4._C.ScaleRule.aiter,
                          mxfp4._C.ScaleLayout.plain)
    with pytest.raises(ValueError, match="2-D"):
        mxfp4._C.quantize(x.reshape(-1), mxfp4._C.DType.fp32, codes, scales, mxfp4._C.ScaleRule.aiter,
                          mxfp4._C.ScaleLayout.plain)
    ro = codes.copy()
    ro.flags.writeable = False
    with pytest.raises(TypeError):  # outputs must be writable: nanobind refuses the argument
        mxfp4._C.quantize(x, mxfp4._C.DType.fp32, ro, scales, mxfp4._C.ScaleRule.aiter, mxfp4._C.ScaleLayout.plain)


def test_cuda_without_cuda_build_is_runtime_error():
    if mxfp4.built_with_cuda():
        pytest.skip("built with CUDA")
    assert mxfp4.cuda_device_count() == 0
    # (explain_gemm checks for a device first since e8b9c8b: either message names the cause)
    with pytest.raises(RuntimeError, match="without the CUDA backend|no CUDA device"):
        mxfp4.explain(1, 64, 64, device="cuda:0")


# ---------------------------------------------------------------------------------------
# Hardening (docs/hardening.md): alignment, layout versions, sizes, read-only inputs.
# ---------------------------------------------------------------------------------------


def _misaligned(dtype, shape, offset):
    """A numpy array of `dtype` whose data pointer sits `offset` bytes past an aligned one."""
    n = int(np.prod(shape))
    buf = np.zeros(n * np.dtype(dtype).itemsize + 64, np.uint8)
    base = (-buf.ctypes.data) % 16  # first 16-byte aligned byte of buf
    arr = np.frombuffer(buf.data, dtype=dtype, count=n, offset=base + offset).reshape(shape)
    assert np.dtype(dtype).itemsize == 1 or not arr.flags.aligned
    return arr


def test_misaligned_inputs_rejected():
    with pytest.raises(ValueError, match="not aligned to 4 bytes \\(fp32 elements\\)"):
        mxfp4.quantize(_misaligned(np.float32, (2, 64), 2))
    with pytest.raises(ValueError, match="not aligned to 2 bytes \\(bf16 elements\\)"):
        mxfp4.quantize(_misaligned(np.uint16, (2, 64), 1))
    with pytest.raises(ValueError, match="not aligned to 2 bytes \\(fp16 elements\\)"):
        mxfp4.quantize(_misaligned(np.float16, (2, 64), 1))
    with pytest.raises(ValueError, match="not aligned"):
        mxfp4.prepack_dense(_misaligned(np.float32, (16, 64), 1))
    packed = mxfp4.prepack_dense(np.ones((16, 64), np.float32))
    with pytest.raises(ValueError, match="A = 0x[0-9a-f]+ is not aligned to 2 bytes"):
        mxfp4.gemm(_misaligned(np.uint16, (2, 64), 1), packed)


def test_byte_buffers_may_sit_anywhere():
    # codes, scales and packed weights are bytes: any address works on the CPU.
    w = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    codes, scales = mxfp4.quantize(w)
    odd_codes = _misaligned(np.uint8, codes.shape, 1)
    odd_codes[...] = codes
    odd_scales = _misaligned(np.uint8, scales.shape, 3)
    odd_scales[...] = scales
    packed = mxfp4.prepack(codes, scales)
    odd_packed = _misaligned(np.uint8, packed.data.shape, 5)
    odd_packed[...] = packed.data
    a = np.random.default_rng(2).standard_normal((3, 64)).astype(BF16)
    want = mxfp4.gemm(a, packed)
    np.testing.assert_array_equal(mxfp4.gemm(a, mxfp4.PackedTensor(odd_packed, 16, 64)).view(np.uint16),
                                  want.view(np.uint16))
    np.testing.assert_array_equal(mxfp4.gemm(a, (odd_codes, odd_scales)).view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(mxfp4.dequantize(odd_codes, odd_scales), mxfp4.dequantize(codes, scales))


@pytest.mark.parametrize("version", [0, 1, 2, 4, -1, 2**31 - 1])
def test_other_packed_layout_versions_rejected(mx, version):
    _, _, packed = mx
    assert mxfp4.PACKED_LAYOUT_VERSION == 3
    bad = mxfp4.PackedTensor(packed.data, packed.N, packed.K, version=version)
    a = np.zeros((2, 128), BF16)
    with pytest.raises(TypeError, match=f"version = {version} is not the supported packed layout version 3"):
        mxfp4.gemm(a, bad)
    with pytest.raises(TypeError, match=f"version = {version}"):
        mxfp4.unpack(bad)
    with pytest.raises(TypeError, match=f"version = {version}"):
        bad.dequantize()


def test_packed_sizes_and_shapes(mx):
    _, _, packed = mx
    with pytest.raises(ValueError, match="K = 33"):
        mxfp4.unpack(mxfp4.PackedTensor(packed.data, 32, 33))
    with pytest.raises(ValueError, match="N = 0"):
        mxfp4.unpack(mxfp4.PackedTensor(packed.data, 0, 128))
    with pytest.raises(ValueError, match="packed has 2176 bytes"):
        mxfp4.unpack(mxfp4.PackedTensor(packed.data, 40, 128))  # needs 48 padded rows
    codes31, _ = mxfp4.unpack(mxfp4.PackedTensor(packed.data, 31, 128))  # 31 pads to 32: same buffer
    assert codes31.shape == (31, 64)
    with pytest.raises(TypeError, match="uint8"):
        mxfp4.unpack(mxfp4.PackedTensor(packed.data.view(np.int16), 32, 128))
    with pytest.raises(ValueError, match="too large"):
        mxfp4.packed_bytes(2**63 - 1, 64)
    with pytest.raises(ValueError, match="K = 48"):
        mxfp4.packed_bytes(16, 48)
    with pytest.raises(ValueError, match="K = 33"):
        mxfp4.explain(1, 16, 33)
    with pytest.raises(ValueError, match="M = 0"):
        mxfp4.explain(0, 16, 64)
    with pytest.raises(ValueError, match="too large"):
        mxfp4.explain(2**40, 2**40, 64)


def test_wrong_dtypes_everywhere(mx):
    codes, scales, packed = mx
    with pytest.raises(TypeError, match="scales must be uint8"):
        mxfp4.prepack(codes, scales.astype(np.float32))
    with pytest.raises(TypeError, match="codes must be uint8"):
        mxfp4.prepack(codes.astype(np.uint16), scales)
    with pytest.raises(TypeError, match="packed must be uint8"):
        mxfp4.gemm(np.zeros((2, 128), BF16), mxfp4.PackedTensor(packed.data.view(np.float32), 32, 128))
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        mxfp4.prepack_dense(np.zeros((16, 64), np.int8))
    with pytest.raises(TypeError, match="numpy.ndarray or a torch.Tensor"):
        mxfp4.dequantize(codes.tolist(), scales)
    with pytest.raises(TypeError):
        mxfp4.gemm([[0.0] * 128], packed)


def test_inputs_never_written(mx):
    codes, scales, packed = mx
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 128)).astype(np.float32)
    a = rng.standard_normal((5, 128)).astype(BF16)
    arrays = [x, a, codes, scales, packed.data]
    before = [arr.copy() for arr in arrays]
    for arr in arrays:
        arr.flags.writeable = False  # the bindings take inputs read-only
    try:
        mxfp4.quantize(x)
        mxfp4.quantize(x, scale_layout="aiter_shuffled")
        mxfp4.dequantize(codes, scales)
        mxfp4.prepack(codes, scales)
        mxfp4.prepack_dense(x[:, :128])
        mxfp4.unpack(packed)
        mxfp4.gemm(a, packed)
        mxfp4.gemm(a, (codes, scales))
        mxfp4.shuffle_scales(scales)
        mxfp4.shuffle_weight(codes)
    finally:
        for arr in arrays:
            arr.flags.writeable = True
    for arr, b in zip(arrays, before):
        np.testing.assert_array_equal(arr.view(np.uint8), b.view(np.uint8))


def test_overlapping_outputs_rejected_by_bindings():
    buf = np.zeros(8192, np.uint8)
    x = np.zeros((2, 64), np.float32)
    with pytest.raises(ValueError, match="overlaps"):  # codes and scales share bytes
        mxfp4._C.quantize(x, mxfp4._C.DType.fp32, buf[:64], buf[60:64], mxfp4._C.ScaleRule.aiter,
                          mxfp4._C.ScaleLayout.plain)
    with pytest.raises(ValueError, match="overlaps"):  # output inside the input
        xb = np.zeros(256, np.float32)
        mxfp4._C.quantize(xb[:128].reshape(2, 64), mxfp4._C.DType.fp32, xb.view(np.uint8)[:64],
                          np.zeros(4, np.uint8), mxfp4._C.ScaleRule.aiter, mxfp4._C.ScaleLayout.plain)


def test_shuffled_scales_shape_rejects_bad_sizes():
    with pytest.raises(ValueError):
        mxfp4.shuffled_scales_shape(-5, 3)


def test_packed_tensor_rejects_bad_n_and_types(mx):
    _, _, packed = mx
    with pytest.raises(ValueError, match="N = -16"):
        mxfp4.unpack(mxfp4.PackedTensor(packed.data, -16, 128))
    with pytest.raises(TypeError, match="N must be an integer"):
        mxfp4.PackedTensor(packed.data, "32", 128)
    with pytest.raises(TypeError, match="version must be an integer"):
        mxfp4.PackedTensor(packed.data, 32, 128, version="2")


def test_cuda_packed_view_at_odd_offset_rejected():
    """On CUDA the kernels read packed weights with 16-byte loads: a view at an offset that is
    not a multiple of 16 is a ValueError, not a device fault (GPU machines only)."""
    torch = pytest.importorskip("torch")
    if not (mxfp4.built_with_cuda() and torch.cuda.is_available()):
        pytest.skip("needs a CUDA build of mxfp4 and a CUDA device")
    packed = mxfp4.prepack_dense(torch.randn(32, 128, device="cuda"))
    n = packed.data.numel()
    buf = torch.zeros(n + 32, dtype=torch.uint8, device="cuda")
    buf[4:4 + n] = packed.data
    odd = mxfp4.PackedTensor(buf[4:4 + n], 32, 128)
    a = torch.zeros(2, 128, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="not aligned to 16 bytes"):
        mxfp4.gemm(a, odd)
    with pytest.raises(ValueError, match="not aligned to 16 bytes"):
        mxfp4.unpack(odd)
    buf[16:16 + n] = packed.data  # a 16-byte aligned view works
    ok = mxfp4.PackedTensor(buf[16:16 + n], 32, 128)
    assert torch.equal(mxfp4.gemm(a, ok), mxfp4.gemm(a, packed))


def test_empty_batch_still_checks_the_operands(mx):
    # Review, session 12: with M = 0 no library call runs, so these checks are made in Python.
    codes, scales, p = mx  # N = 32, K = 128
    with pytest.raises(ValueError, match="K = 64 columns"):
        mxfp4.gemm(np.ones((0, 64), BF16), p)
    assert mxfp4.gemm(np.ones((0, 128), BF16), p).shape == (0, 32)
    with pytest.raises(ValueError, match=r"codes must be \[N, K/2\]"):
        mxfp4.gemm(np.ones((0, 128), BF16), (np.zeros((5, 7), np.uint8), np.zeros((5, 4), np.uint8)))
    with pytest.raises(TypeError, match="scales must be uint8"):
        mxfp4.gemm(np.ones((0, 128), BF16), (codes, scales.astype(np.float32)))
    assert mxfp4.gemm(np.ones((0, 128), BF16), (codes, scales)).shape == (0, 32)


@pytest.mark.parametrize("M", [0, 1])
def test_empty_batch_rejects_what_one_row_rejects(mx, M):
    # Session 60 review: M = 0 returned an empty C for a wrong layout version, packed data of
    # another dtype and scales of the wrong size, which M = 1 rejects (library checks).
    codes, scales, p = mx  # N = 32, K = 128
    a = np.ones((M, 128), BF16)
    with pytest.raises(TypeError, match="version = 7"):
        mxfp4.gemm(a, mxfp4.PackedTensor(p.data, 32, 128, version=7))
    with pytest.raises(TypeError, match="packed must be uint8"):
        mxfp4.gemm(a, mxfp4.PackedTensor(p.data.view(np.float32), 32, 128))
    with pytest.raises(ValueError, match="scales has 127 bytes"):
        mxfp4.gemm(a, (codes, scales.ravel()[:127]))
    with pytest.raises(ValueError, match="scales has 128 bytes"):  # shuffled needs 256 x 8
        mxfp4.gemm(a, (codes, scales), scale_layout="aiter_shuffled")
    with pytest.raises(TypeError, match="codes must be uint8"):
        mxfp4.gemm(a, (codes.astype(np.int16), scales))
    assert mxfp4.gemm(a, (codes, mxfp4.shuffle_scales(scales)), scale_layout="aiter_shuffled").shape == (M, 32)
    with pytest.raises(ValueError, match="C-contiguous"):  # review of session 60's fixes: M = 0 let it pass
        mxfp4.gemm(a, (np.asfortranarray(codes), scales))


def test_unshuffle_scales_checks_sizes_before_allocating(mx):
    # Session 60 review: the output [rows, kblocks] was allocated first (MemoryError for 2^40
    # rows, numpy's error for -4) and float sizes were truncated (4.9 -> 4).
    _, scales, _ = mx  # [32, 4]
    sh = mxfp4.shuffle_scales(scales)
    assert np.array_equal(mxfp4.unshuffle_scales(sh, 32, 4), scales)
    with pytest.raises(ValueError, match="bytes"):
        mxfp4.unshuffle_scales(sh, 2**40, 8)
    with pytest.raises(ValueError, match="rows = -4"):
        mxfp4.unshuffle_scales(sh, -4, 2)
    with pytest.raises(TypeError, match="rows must be an integer"):
        mxfp4.unshuffle_scales(sh, 4.9, 2)
    with pytest.raises(TypeError, match="kblocks must be an integer"):
        mxfp4.unshuffle_scales(sh, 32, 2.9)


def test_float_sizes_are_type_errors_not_truncated(mx):
    codes, scales, _ = mx
    with pytest.raises(TypeError, match="N must be an integer"):
        mxfp4.prepack(codes.ravel(), scales.ravel(), N=32.9, K=128)
    with pytest.raises(TypeError, match="K must be an integer"):
        mxfp4.prepack(codes.ravel(), scales.ravel(), N=32, K="128")
    with pytest.raises(TypeError, match="rows must be an integer"):
        mxfp4.shuffled_scales_shape(1.5, 1)
    assert mxfp4.shuffled_scales_shape(np.int64(300), 9) == (512, 16)
    assert mxfp4.prepack(codes.ravel(), scales.ravel(), N=np.int64(32), K=128).N == 32


def test_absurd_sizes_are_value_errors_before_any_allocation(mx):
    _, _, p = mx
    with pytest.raises(ValueError, match="packed_bytes"):
        mxfp4.unpack(mxfp4.PackedTensor(p.data, 2**40, 2**20))
    # rows * kblocks = 2^64 wrapped to 0 in the binding and let an empty buffer pass.
    with pytest.raises(ValueError):
        mxfp4._C.shuffle_scales(np.zeros(0, np.uint8), 2**32, 2**32, np.zeros(0, np.uint8))


def test_size_functions_reject_out_of_range_integers():
    with pytest.raises(ValueError, match="out of range"):
        mxfp4.explain(2**64, 1, 32)
    with pytest.raises(TypeError, match="must be an integer"):
        mxfp4.explain(True, 1, 32)
    with pytest.raises(ValueError, match=r"\[1, 2\^40\]"):
        mxfp4.shuffled_scales_shape(2**70, 1)
    assert mxfp4.shuffled_scales_shape(300, 3) == (512, 8)
