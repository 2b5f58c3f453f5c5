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
    with pytest.raises(RuntimeError, match="without the CUDA backend"):
        mxfp4.explain(1, 64, 64, device="cuda:0")
