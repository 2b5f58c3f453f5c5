"""Tensor-parallel sharding (mxfp4.tp): shards are exact slices of the weights, packed shards
are byte-identical to packing the sliced weights, and sharded GEMMs reassemble the full one."""

import numpy as np
import pytest

import mxfp4
from mxfp4 import tp


@pytest.fixture
def weights():
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((96, 1536)) * np.exp2(rng.integers(-8, 8, (96, 1)))).astype(np.float32)
    return mxfp4.quantize(w)


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_column_parallel_shards_are_row_slices(weights, world):
    codes, scales = weights
    n = codes.shape[0] // world
    for r in range(world):
        c, s = tp.shard(codes, scales, r, world, "N")
        assert np.array_equal(c, codes[r * n:(r + 1) * n]) and np.array_equal(s, scales[r * n:(r + 1) * n])


@pytest.mark.parametrize("world", [1, 2, 4, 8, 16])
def test_row_parallel_shards_fall_on_blocks(weights, world):
    codes, scales = weights
    k = 1536 // world
    for r in range(world):
        c, s = tp.shard(codes, scales, r, world, "K")
        assert np.array_equal(c, codes[:, r * k // 2:(r + 1) * k // 2])
        assert np.array_equal(s, scales[:, r * k // 32:(r + 1) * k // 32])


@pytest.mark.parametrize("dim,world", [("N", 2), ("N", 3), ("K", 2), ("K", 3), ("K", 12)])
def test_packed_shards_equal_packing_the_sliced_weights(weights, dim, world):
    codes, scales = weights
    packed = mxfp4.prepack(codes, scales)
    for r in range(world):
        got = tp.shard_packed(packed, r, world, dim)
        want = mxfp4.prepack(*[np.ascontiguousarray(a) for a in tp.shard(codes, scales, r, world, dim)])
        assert (got.N, got.K) == (want.N, want.K)
        assert np.array_equal(got.data, want.data), f"{dim} rank {r}/{world}"


def test_column_parallel_gemm_reassembles_the_full_output(weights):
    codes, scales = weights
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 1536)).astype(np.float32)
    a16 = (a.view(np.uint32) >> 16).astype(np.uint16)  # bf16 bit patterns (truncated: any bf16 will do)
    full = mxfp4.gemm(a16, mxfp4.prepack(codes, scales))
    parts = [mxfp4.gemm(a16, tp.shard_packed(mxfp4.prepack(codes, scales), r, 4, "N")) for r in range(4)]
    assert np.array_equal(np.concatenate(parts, axis=1), full)


def test_invalid_splits_name_the_values(weights):
    codes, scales = weights
    with pytest.raises(ValueError, match="N = 96 is not divisible by world = 5"):
        tp.shard(codes, scales, 0, 5, "N")
    with pytest.raises(ValueError, match="K = 1536 split over world = 64 gives 24 columns"):
        tp.shard(codes, scales, 0, 64, "K")
    with pytest.raises(ValueError, match="rank = 2 and world = 2"):
        tp.shard(codes, scales, 2, 2, "N")
    with pytest.raises(ValueError, match="dim must be"):
        tp.shard(codes, scales, 0, 2, "M")
    with pytest.raises(TypeError, match="PackedTensor"):
        tp.shard_packed(codes, 0, 2, "N")
