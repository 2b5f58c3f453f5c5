"""mxfp4.quantize / mxfp4.dequantize on numpy arrays: spec §2.2 worked examples bit for bit,
bug kinds K01-K08, random inputs vs the numpy model of the spec (ref.py), all dtypes and
rules, N-D and strided inputs, and (with MXFP4_CLI) equality with the C++ CLI."""
import os
import subprocess

import ml_dtypes
import numpy as np
import pytest

import mxfp4
import ref

BF16 = ml_dtypes.bfloat16


def hexbytes(s):
    return bytes.fromhex(s.replace(" ", ""))


def f32bits(words):
    return np.array([int(w, 16) for w in words.split()], np.uint32).view(np.float32)


E6 = f32bits("""3EB14E3C BD4C63F1 3EC240B8 C01816F0 3ECAC083 3F195183 BF200000 BED9096C
BF1E83E4 3E8D5CFB BEBFCB92 3E15B574 3F058794 BF04F766 BF5985F0 BF52DE01 3F03B646 3EB39C0F
3CF41F21 BEB14120 3EC88CE7 3DE075F7 3FB985F0 3FD9B717 BF0C1BDA C0057247 3FE7AACE 3EB7A787
3FBB295F C0141D7E 3EAEB1C4 BF64A234""")
E14 = np.array([int(w, 16) for w in """BFCB 3E9A BF31 3FFC BFAC 3F5A BD93 3F3F 3EE6 BF8B BFB2 3F50 3F56
BE4A BEB0 BF95 BEEF C07E 3EE8 3FCE BFC5 3E9E 3EC9 BED1 3E76 3F80 3F5E 3EAB BEE4 3E84 BD8E BFD9""".split()],
               np.uint16)
E7 = np.array([8, 0.5, 0, -0.5, 1.5, 0, -0.0, 2.5] + [1.0] * 24, np.float32)
E7[2] = np.uint32(0x3F000003).view(np.float32)
E13 = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6]

# (name, fp32 block, scale byte, packed bytes hex) -- spec §2.2, "aiter" rule
EXAMPLES = [
    ("E1", np.zeros(32, np.float32), 0x00, "00" * 16),
    ("E2", np.full(32, -0.0, np.float32), 0x00, "88" * 16),
    ("E3", np.array([6, 5, 2.5, 1.25, 0.25, 0.75, -5, -0.25] * 4, np.float32), 0x7F, "6724208E" * 4),
    ("E4", np.array([7, 3.5, 1.75, 0.875] * 8, np.float32), 0x80, "4612" * 8),
    ("E5", np.array([6.96875, -6, 3, -2.75, 0.3125, 0.1875, -1, 4.5] * 4, np.float32), 0x7F, "F7D5016A" * 4),
    ("E6", E6, 0x7E, "81E222AA1A19A2BB12900255EA16E5C1"),
    ("E7", E7, 0x80, "06810228" + "11" * 12),
    ("E8", np.array([1, -0.5, 0, 6, -3, 2, 0.5, -1.5] + [0] * 24, np.float32), 0x7F, "92704DB1" + "00" * 12),
    ("E9", np.ones(32, np.float32), 0x7D, "66" * 16),
    ("E10", np.array([0.4375, -0.21875, 0.109375, 0.0546875] * 8, np.float32), 0x7C, "C612" * 8),
    ("E11", np.full(32, 2.0**-129, np.float32), 0x00, "00" * 16),
    ("E12", np.full(32, 2.0**-127, np.float32), 0x00, "22" * 16),
    ("E13", np.array(E13 + [-v for v in E13] + [0] * 16, np.float32), 0x7F, "20426476A8CAECFE" + "00" * 8),
    ("E14", ref.bf16_bits_to_f32(E14), 0x7F, "1B492B18A12B82A9E9311B912012 19B8".replace(" ", "")),
]

# spec §2.2: "Under floor: E4 -> 0x7F, codes 7642 x8; E10 -> 0x7B, codes 7E42 x8; E14 -> 0x7E"
FLOOR = {"E4": (0x7F, "6724" * 8), "E10": (0x7B, "E724" * 8), "E14": (0x7E, None)}


def _variants(x32):
    """The block in every dtype that holds it exactly (fp32 always)."""
    out = [("fp32", x32)]
    b = x32.astype(BF16)
    if np.array_equal(b.astype(np.float32).view(np.uint32), x32.view(np.uint32)):
        out += [("bf16", b), ("bf16-bits", b.view(np.uint16))]
    with np.errstate(all="ignore"):
        h = x32.astype(np.float16)
    if np.array_equal(h.astype(np.float32).view(np.uint32), x32.view(np.uint32)):
        out.append(("fp16", h))
    return out


@pytest.mark.parametrize("name,x32,scale,packed", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_worked_examples_bit_exact(name, x32, scale, packed):
    for dt, x in _variants(x32):
        codes, scales = mxfp4.quantize(x)
        assert codes.dtype == np.uint8 and codes.shape == (16,), dt
        assert scales.tolist() == [scale], f"{name} {dt}"
        assert codes.tobytes() == hexbytes(packed), f"{name} {dt}: {codes.tobytes().hex()}"
        # the numpy model agrees (so the model is right where it is used elsewhere)
        rc, rs = ref.quantize(x.reshape(1, 32))
        assert rs.tolist() == [[scale]] and rc.tobytes() == hexbytes(packed)


@pytest.mark.parametrize("name,x32,scale,packed", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_worked_examples_floor_rule(name, x32, scale, packed):
    codes, scales = mxfp4.quantize(x32, rule="floor")
    want_scale, want_packed = FLOOR.get(name, (scale, packed))
    assert scales.tolist() == [want_scale]
    if want_packed is not None:
        assert codes.tobytes() == hexbytes(want_packed)
    rc, rs = ref.quantize(x32.reshape(1, 32), "floor")
    assert codes.tobytes() == rc.tobytes() and scales.tobytes() == rs.tobytes()


def test_examples_as_one_matrix_and_shuffled():
    x = np.stack([e[1] for e in EXAMPLES])  # [14, 32]
    codes, scales = mxfp4.quantize(x)
    assert codes.shape == (14, 16) and scales.shape == (14, 1)
    for i, e in enumerate(EXAMPLES):
        assert scales[i, 0] == e[2] and codes[i].tobytes() == hexbytes(e[3])
    c2, sh = mxfp4.quantize(x, scale_layout="aiter_shuffled")
    assert np.array_equal(c2, codes)
    assert sh.shape == (256, 8)
    assert np.array_equal(mxfp4.unshuffle_scales(sh, 14, 1), scales)
    assert np.array_equal(sh, ref.shuffle_scales(scales))


# ---- bug kinds (spec/bug-kinds.md) -------------------------------------------------------------

K01 = [5, 1.25, 0.25, 2.5, -1.25, 0.75, 1.75, 3.5, 0.251953125, 1.2578125, 0.5, 0.50390625] + [0] * 20


def test_k01_ties_to_even():
    codes, scales = mxfp4.quantize(np.array(K01, np.float32).astype(BF16))
    assert scales.tolist() == [127]
    assert codes.tobytes() == hexbytes("26402A643111" + "00" * 10)


@pytest.mark.parametrize("factor,scale", [(1.0, 127), (2.0**-20, 107), (2.0**20, 147), (2.0**-120, 7)])
def test_k02_ties_at_every_scale(factor, scale):
    x = np.array(E13 + [-v for v in E13] + [0] * 16, np.float32) * np.float32(factor)
    for dt, xv in _variants(x):
        for layout in ("plain", "aiter_shuffled"):
            codes, scales = mxfp4.quantize(xv, scale_layout=layout)
            if layout == "aiter_shuffled":
                scales = mxfp4.unshuffle_scales(scales, 1, 1).reshape(1)
            assert scales.tolist() == [scale], (dt, layout)
            assert codes.tobytes() == hexbytes("20426476A8CAECFE" + "00" * 8), (dt, layout)


def test_k03_qdq_fixed_point():
    codes, scales = mxfp4.quantize(np.array([3.25, 0.5] + [0] * 30, np.float32))
    assert scales.tolist() == [126] and codes[0] == 0x27
    deq = mxfp4.dequantize(codes, scales)
    c2, s2 = mxfp4.quantize(deq)
    assert np.array_equal(c2, codes) and np.array_equal(s2, scales)


def test_k04_e2m1_values_and_sticky_bits():
    vals = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    x = np.array((vals + [-v if v else -0.0 for v in vals]) * 2, np.float32)
    codes, scales = mxfp4.quantize(x)
    assert scales.tolist() == [127]
    assert codes.tobytes() == hexbytes("1032547698BADCFE" * 2)
    assert np.array_equal(mxfp4.dequantize(codes, scales).view(np.uint32), x.view(np.uint32))
    y = np.zeros(32, np.float32)
    y[:6] = [6, 0.251953125, 0.2490234375, 1.2578125, 4.96875, 5.03125]
    codes, _ = mxfp4.quantize(y)
    full = ref.unpack(codes.reshape(1, 16))[0]
    assert full[1:6].tolist() == [1, 0, 3, 6, 7]


def test_k05_scale_binade():
    x = np.repeat(np.array([1.203125, 2.703125, 5.5, 7.0], np.float32), 32).reshape(4, 32)
    codes, scales = mxfp4.quantize(x)
    assert scales[:, 0].tolist() == [125, 126, 127, 128]
    deq = mxfp4.dequantize(codes, scales)
    assert deq.max(axis=1).tolist() == [1.0, 3.0, 6.0, 8.0]
    assert np.all(deq.max(axis=1) >= 0.75 * x.max(axis=1))


def test_k06_saturation_and_overflow_on_decode():
    x = np.zeros((3, 32), np.float32)
    x[0, :3] = [6.8125, -6.8125, 1.0]
    x[1, 0] = 7.5
    x[2, 0] = ref.bf16_bits_to_f32(np.uint16(0x7F7F))
    codes, scales = mxfp4.quantize(x.astype(BF16))
    assert scales[:, 0].tolist() == [127, 128, 254]
    full = ref.unpack(codes)
    assert full[0, :3].tolist() == [7, 0xF, 2] and full[1, 0] == 6 and full[2, 0] == 4
    deq = mxfp4.dequantize(codes, scales)
    assert deq[1, 0] == 8.0 and np.isposinf(deq[2, 0])  # 4 * 2^127 = 2^129 overflows fp32


def test_k07_tiny_and_subnormal_inputs():
    amaxes = [1.5 * 2.0**-114, 2.0**-126, 2.0**-128, 1.5 * 2.0**-128, 2.0**-130, 2.0**-133]
    x = np.zeros((6, 32), np.float32)
    x[:, 5] = amaxes
    codes, scales = mxfp4.quantize(x)
    assert scales[:, 0].tolist() == [11, 0, 0, 0, 0, 0]
    assert ref.unpack(codes)[:, 5].tolist() == [7, 4, 1, 2, 0, 0]
    assert not np.any(np.isnan(mxfp4.dequantize(codes, scales)))


def test_k08_non_finite_blocks():
    x = np.zeros((2, 32), np.float32)
    x[0, :4] = [1, 2, np.nan, 0.5]
    x[1, :2] = [1, np.inf]
    for dt, xv in [("fp32", x), ("bf16", x.astype(BF16)), ("fp16", x.astype(np.float16))]:
        codes, scales = mxfp4.quantize(xv)
        assert scales[:, 0].tolist() == [255, 255], dt
        assert not codes.any(), dt
        assert np.all(np.isnan(mxfp4.dequantize(codes, scales)))


# ---- random inputs vs the numpy model ------------------------------------------------------------


def _random(rng, shape):
    """Values over many binades with exact ties and zeros sprinkled in."""
    x = rng.standard_normal(shape).astype(np.float32) * np.exp2(rng.integers(-30, 30, shape[:-1] + (1,)))
    x = x.astype(np.float32)
    ties = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], np.float32)
    mask = rng.random(shape) < 0.1
    x[mask] = rng.choice(ties, mask.sum()) * np.sign(rng.standard_normal(mask.sum()))
    x[rng.random(shape) < 0.05] = 0
    return x


@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "bf16-bits"])
def test_random_vs_model(rng, rule, dtype):
    x = _random(rng, (37, 256))
    if dtype == "fp16":
        x = np.clip(x, -60000, 60000).astype(np.float16)
    elif dtype == "bf16":
        x = x.astype(BF16)
    elif dtype == "bf16-bits":
        x = x.astype(BF16).view(np.uint16)
    codes, scales = mxfp4.quantize(x, rule=rule)
    rc, rs = ref.quantize(x, rule)
    assert np.array_equal(scales, rs)
    assert np.array_equal(codes, rc)
    deq = mxfp4.dequantize(codes, scales)
    assert np.array_equal(deq, ref.dequantize(rc, rs).astype(np.float32), equal_nan=True)


def test_rules_differ_where_the_spec_says():
    x = np.full((1, 32), 7.0, np.float32)
    assert [int(mxfp4.quantize(x, rule=r)[1][0, 0]) for r in ("aiter", "floor", "rceil")] == [128, 127, 128]


def test_nd_and_strided_inputs(rng):
    x = _random(rng, (3, 5, 128))
    codes, scales = mxfp4.quantize(x)
    assert codes.shape == (3, 5, 64) and scales.shape == (3, 5, 4)
    rc, rs = ref.quantize(x.reshape(15, 128))
    assert np.array_equal(codes.reshape(15, 64), rc) and np.array_equal(scales.reshape(15, 4), rs)
    # rows with a stride larger than K: a column slice of a wider matrix, no copy
    wide = _random(rng, (9, 320))
    view = wide[:, 32:288]
    assert not view.flags.c_contiguous
    c2, s2 = mxfp4.quantize(view)
    rc, rs = ref.quantize(np.ascontiguousarray(view))
    assert np.array_equal(c2, rc) and np.array_equal(s2, rs)
    # 1-D input: one row
    c1, s1 = mxfp4.quantize(x[0, 0])
    assert c1.shape == (64,) and np.array_equal(c1, codes[0, 0]) and np.array_equal(s1, scales[0, 0])
    # read-only input
    ro = x.copy()
    ro.flags.writeable = False
    assert np.array_equal(mxfp4.quantize(ro)[0], codes)


def test_dequantize_bf16_output(rng):
    x = _random(rng, (8, 64))
    codes, scales = mxfp4.quantize(x)
    f32 = mxfp4.dequantize(codes, scales)
    for dt in ("bfloat16", "bf16", BF16, np.dtype(BF16)):
        b = mxfp4.dequantize(codes, scales, dtype=dt)
        assert b.dtype == BF16 and b.shape == (8, 64)
        assert np.array_equal(b.astype(np.float32), f32)  # exact: e2m1 * 2^k fits bf16
    for dt in ("float32", np.float32, "fp32"):
        assert mxfp4.dequantize(codes, scales, dtype=dt).dtype == np.float32


def test_dequantize_shuffled_layouts(rng):
    x = _random(rng, (32, 128))
    codes, scales = mxfp4.quantize(x)
    want = mxfp4.dequantize(codes, scales)
    got = mxfp4.dequantize(mxfp4.shuffle_weight(codes), mxfp4.shuffle_scales(scales), code_layout="aiter_shuffled",
                           scale_layout="aiter_shuffled")
    assert np.array_equal(got, want, equal_nan=True)


# ---- Python == C++ CLI -------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
def test_matches_cli(cli_path, tmp_path, rng, rule):
    x = _random(rng, (19, 96))
    for tag, arr in [("f4", x), ("f2", np.clip(x, -6e4, 6e4).astype(np.float16)), ("u2", x.astype(BF16).view(np.uint16))]:
        xin = tmp_path / f"x_{tag}.npy"
        np.save(xin, arr)
        q, s = tmp_path / "q.npy", tmp_path / "s.npy"
        subprocess.run([cli_path, "quantize", "--input", str(xin), "--codes", str(q), "--scales", str(s), "--rule", rule],
                       check=True, capture_output=True)
        codes, scales = mxfp4.quantize(arr, rule=rule)
        assert np.array_equal(np.load(q), codes), tag
        assert np.array_equal(np.load(s), scales), tag
        out = tmp_path / "d.npy"
        subprocess.run([cli_path, "dequantize", "--codes", str(q), "--scales", str(s), "--out", str(out)], check=True,
                       capture_output=True)
        assert np.array_equal(np.load(out), mxfp4.dequantize(codes, scales), equal_nan=True)


def test_cli_env_is_optional():
    # documents the fallback: without MXFP4_CLI the model in ref.py is the oracle
    assert os.environ.get("MXFP4_CLI") is None or os.path.exists(os.environ["MXFP4_CLI"])
