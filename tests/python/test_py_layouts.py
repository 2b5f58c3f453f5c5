"""AITER layout converters and prepack/unpack on numpy arrays: spec §4 offset examples,
round trips, agreement with the numpy model, packed layout v3 size and inverse."""
import numpy as np
import pytest

import mxfp4
import ref


def test_shuffle_scales_offsets_spec_examples():
    # spec §4.1, sn = 8: row 0, c = 0..7 -> 0, 64, 128, 192, 2, 66, 130, 194
    rows, kb = 64, 8
    plain = np.zeros((rows, kb), np.uint8)
    sh_idx = {}
    for c in range(8):
        p = plain.copy()
        p[0, c] = 1
        sh_idx[(0, c)] = int(np.flatnonzero(mxfp4.shuffle_scales(p).reshape(-1))[0])
    assert [sh_idx[(0, c)] for c in range(8)] == [0, 64, 128, 192, 2, 66, 130, 194]
    for r, want in zip([0, 1, 15, 16, 17, 31, 32, 33, 48], [0, 4, 60, 1, 5, 61, 256, 260, 257]):
        p = plain.copy()
        p[r, 0] = 1
        assert int(np.flatnonzero(mxfp4.shuffle_scales(p).reshape(-1))[0]) == want, r


def test_shuffle_weight_offsets_spec_examples():
    # spec §4.2, Kb = 64: (0, 15) -> 15, (0, 16) -> 256, (1, 0) -> 16, (16, 0) -> 1024, (0, 32) -> 512
    N, kb = 32, 64
    for (n, c), want in [((0, 15), 15), ((0, 16), 256), ((1, 0), 16), ((16, 0), 1024), ((0, 32), 512)]:
        p = np.zeros((N, kb), np.uint8)
        p[n, c] = 1
        s = mxfp4.shuffle_weight(p)
        assert s.shape == (N, kb)
        assert int(np.flatnonzero(s.reshape(-1))[0]) == want


@pytest.mark.parametrize("rows,kb", [(1, 1), (5, 3), (256, 8), (300, 17), (33, 40)])
def test_scale_round_trip_and_model(rng, rows, kb):
    plain = rng.integers(0, 256, (rows, kb), dtype=np.uint8)
    sh = mxfp4.shuffle_scales(plain)
    assert sh.shape == mxfp4.shuffled_scales_shape(rows, kb) == (-(-rows // 256) * 256, -(-kb // 8) * 8)
    assert np.array_equal(sh, ref.shuffle_scales(plain))  # padding zero in both
    assert np.array_equal(mxfp4.unshuffle_scales(sh, rows, kb), plain)
    # padding is never read: poison it
    poisoned = sh.copy()
    mask = ref.shuffle_scales(np.ones_like(plain)) == 0
    poisoned[mask] = 0xFF
    assert np.array_equal(mxfp4.unshuffle_scales(poisoned, rows, kb), plain)
    # flat buffers are accepted too
    assert np.array_equal(mxfp4.unshuffle_scales(sh.reshape(-1), rows, kb), plain)


@pytest.mark.parametrize("N,K", [(16, 64), (48, 128), (32, 1024)])
def test_weight_round_trip_and_model(rng, N, K):
    plain = rng.integers(0, 256, (N, K // 2), dtype=np.uint8)
    sh = mxfp4.shuffle_weight(plain)
    assert np.array_equal(sh, ref.shuffle_weight(plain))
    assert np.array_equal(mxfp4.unshuffle_weight(sh), plain)


@pytest.mark.parametrize("N,K", [(1, 32), (16, 64), (17, 96), (100, 320), (64, 1024)])
def test_prepack_unpack_round_trip(rng, N, K):
    codes = rng.integers(0, 256, (N, K // 2), dtype=np.uint8)
    scales = rng.integers(0, 255, (N, K // 32), dtype=np.uint8)
    p = mxfp4.prepack(codes, scales)
    assert isinstance(p, mxfp4.PackedTensor)
    assert p.shape == (N, K) and p.version == mxfp4.PACKED_LAYOUT_VERSION
    assert p.data.dtype == np.uint8 and p.data.shape == (mxfp4.packed_bytes(N, K),)
    Np, Kp = -(-N // 16) * 16, -(-K // 64) * 64
    assert mxfp4.packed_bytes(N, K) == Np * Kp // 2 + Np * Kp // 32
    c2, s2 = p.unpack()
    assert np.array_equal(c2, codes) and np.array_equal(s2, scales)
    assert np.array_equal(p.dequantize(), mxfp4.dequantize(codes, scales), equal_nan=True)
    # flat codes with explicit N, K
    p2 = mxfp4.prepack(codes.reshape(-1), scales, N=N, K=K)
    assert np.array_equal(p2.data, p.data)
    assert "PackedTensor(N=" in repr(p)


def test_prepack_dense_equals_prepack_of_quantize(rng):
    w = rng.standard_normal((40, 256)).astype(np.float32)
    for rule in ("aiter", "floor", "rceil"):
        p = mxfp4.prepack_dense(w, rule=rule)
        q = mxfp4.prepack(*mxfp4.quantize(w, rule=rule))
        assert np.array_equal(p.data, q.data)


def test_packed_layout_example():
    # docs/packed-layout.md example, N = 16, K = 64: the codes of (row 9, k = 34) and
    # (row 9, k = 35) are register 1 of the word at byte 88 (bits 10, 11, 12, 19 and 26, 27,
    # 28, 3: codes 0xA and 0x5 give 0x14080800); the scale of (row 9, block 1) is at
    # 512 + 4 + 3 = 519.
    codes = np.zeros((16, 32), np.uint8)
    scales = np.zeros((16, 2), np.uint8)
    codes[9, 17] = 0x5A
    scales[9, 1] = 0x33
    data = mxfp4.prepack(codes, scales).data
    assert list(data[88:92]) == [0x00, 0x08, 0x08, 0x14] and np.count_nonzero(data[:512]) == 3
    assert data[519] == 0x33 and np.count_nonzero(data[512:]) == 1
