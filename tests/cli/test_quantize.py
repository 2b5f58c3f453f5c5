"""`mxfp4 quantize` through real .npy files: the spec's worked examples bit for bit, element
rounding against ml_dtypes, and every scale rule against an independent numpy model."""
import numpy as np
import pytest

from cli_helpers import bf16_bits, bits_to_f32, pack, quantize_ref, unpack


def as_input(values, kind):
    """values (float32-exact) as the CLI input dtype: bf16 bits, float16 or float32."""
    v = np.asarray(values, dtype=np.float32).reshape(1, -1)
    if kind == "bf16":
        return bf16_bits(v)
    if kind == "f16":
        return v.astype(np.float16)
    return v


E3 = [6, 5, 2.5, 1.25, 0.25, 0.75, -5, -0.25] * 4
E9 = [1.0] * 32
E13 = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6] + [-0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5, -6] + [0] * 16

WORKED = {
    "E3": (E3, 0x7F, "67 24 20 8E" * 4),
    "E9": (E9, 0x7D, "66" * 16),
    "E13": (E13, 0x7F, "20 42 64 76 A8 CA EC FE" + " 00" * 8),
    "E4": ([7, 3.5, 1.75, 0.875] * 8, 0x80, "46 12" * 8),
    "E10": ([0.4375, -0.21875, 0.109375, 0.0546875] * 8, 0x7C, "C6 12" * 8),
    "E1": ([0.0] * 32, 0x00, "00" * 16),
    "E2": ([-0.0] * 32, 0x00, "88" * 16),
}


def hexbytes(s):
    return np.frombuffer(bytes.fromhex(s.replace(" ", "")), dtype=np.uint8)


@pytest.mark.parametrize("kind", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("name", sorted(WORKED))
def test_worked_examples(cli, tmp_path, name, kind):
    values, scale, packed = WORKED[name]
    q, s = cli.quantize(tmp_path, as_input(values, kind))
    assert q.dtype == np.uint8 and q.shape == (1, 16)
    assert s.dtype == np.uint8 and s.shape == (1, 1)
    assert s[0, 0] == scale
    np.testing.assert_array_equal(q[0], hexbytes(packed))


def test_worked_examples_stacked_rows(cli, tmp_path):
    """E3, E9 and E13 as three rows of one [3, 64] matrix (each row twice the block)."""
    rows = [E3 * 2, E9 * 2, E13 * 2]
    q, s = cli.quantize(tmp_path, bf16_bits(np.array(rows, dtype=np.float32)))
    assert q.shape == (3, 32) and s.shape == (3, 2)
    for r, name in enumerate(["E3", "E9", "E13"]):
        _, scale, packed = WORKED[name]
        assert list(s[r]) == [scale, scale]
        np.testing.assert_array_equal(q[r], np.tile(hexbytes(packed), 2))


def test_e6_fp32_bits(cli, tmp_path):
    bits = ("3EB14E3C BD4C63F1 3EC240B8 C01816F0 3ECAC083 3F195183 BF200000 BED9096C "
            "BF1E83E4 3E8D5CFB BEBFCB92 3E15B574 3F058794 BF04F766 BF5985F0 BF52DE01 3F03B646 3EB39C0F "
            "3CF41F21 BEB14120 3EC88CE7 3DE075F7 3FB985F0 3FD9B717 BF0C1BDA C0057247 3FE7AACE 3EB7A787 "
            "3FBB295F C0141D7E 3EAEB1C4 BF64A234").split()
    x = bits_to_f32([int(b, 16) for b in bits]).reshape(1, 32)
    q, s = cli.quantize(tmp_path, x)
    assert s[0, 0] == 0x7E
    np.testing.assert_array_equal(q[0], hexbytes("81 E2 22 AA 1A 19 A2 BB 12 90 02 55 EA 16 E5 C1"))


E14_BITS = ("BFCB 3E9A BF31 3FFC BFAC 3F5A BD93 3F3F 3EE6 BF8B BFB2 3F50 3F56 BE4A BEB0 BF95 "
            "BEEF C07E 3EE8 3FCE BFC5 3E9E 3EC9 BED1 3E76 3F80 3F5E 3EAB BEE4 3E84 BD8E BFD9").split()


@pytest.mark.parametrize("rule,scale", [("aiter", 0x7F), ("floor", 0x7E), ("rceil", 0x7F)])
def test_e14_bf16_bits_per_rule(cli, tmp_path, rule, scale):
    x = np.array([int(b, 16) for b in E14_BITS], dtype=np.uint16).reshape(1, 32)
    q, s = cli.quantize(tmp_path, x, rule=rule)
    assert s[0, 0] == scale
    if rule == "aiter":
        np.testing.assert_array_equal(q[0], hexbytes("1B 49 2B 18 A1 2B 82 A9 E9 31 1B 91 20 12 19 B8"))


@pytest.mark.parametrize("rule,scale,packed", [
    ("floor", 0x7F, "67 24" * 8),  # E4 under floor: codes 7642 x8
    ("aiter", 0x80, "46 12" * 8),
    ("rceil", 0x80, "46 12" * 8),  # amax 7.0: rceil agrees with aiter
])
def test_e4_per_rule(cli, tmp_path, rule, scale, packed):
    q, s = cli.quantize(tmp_path, as_input([7, 3.5, 1.75, 0.875] * 8, "f32"), rule=rule)
    assert s[0, 0] == scale
    np.testing.assert_array_equal(q[0], hexbytes(packed))


def test_default_rule_is_aiter(cli, tmp_path):
    x = np.array([int(b, 16) for b in E14_BITS], dtype=np.uint16).reshape(1, 32)
    q1, s1 = cli.quantize(tmp_path, x, name="a")
    q2, s2 = cli.quantize(tmp_path, x, rule="aiter", name="b")
    np.testing.assert_array_equal(q1, q2)
    np.testing.assert_array_equal(s1, s2)


def test_non_finite_blocks(cli, tmp_path):
    """Spec §2.1 (bug kind K08): a block with NaN or Inf gets scale 0xFF and zero codes."""
    x = np.zeros((3, 64), dtype=np.float32)
    x[0, :4] = [1, 2, np.nan, 0.5]
    x[1, 32:34] = [1, np.inf]
    x[2, :] = 1.0
    x[2, 40] = -np.inf
    q, s = cli.quantize(tmp_path, x)
    np.testing.assert_array_equal(s, [[255, 0], [0, 255], [125, 255]])
    assert not q[0, :16].any() and not q[1, 16:].any() and not q[2, 16:].any()
    assert (q[2, :16] == 0x66).all()


def test_rounding_vs_ml_dtypes_scale_one(cli, tmp_path):
    """Blocks whose aiter scale is 2^0 (amax in [3.5, 7)): codes are ml_dtypes' float4_e2m1fn
    round-to-nearest-even cast of x itself, wherever |x| <= 6 (beyond, we saturate to 6)."""
    rng = np.random.default_rng(1)
    rows, K = 64, 256
    amax = rng.uniform(3.5, 7.0, size=(rows, K // 32)).astype(np.float32)
    x = (rng.uniform(-1, 1, size=(rows, K // 32, 32)) * amax[..., None]).astype(np.float32)
    x[:, :, 0] = amax  # make amax the block maximum exactly
    # Add exact ties and e2m1 values (0.25 steps up to 6, both signs).
    ties = np.arange(-24, 25, dtype=np.float32) / 4
    x[:, :, 1:1 + 20] = rng.choice(ties, size=(rows, K // 32, 20))
    x = x.reshape(rows, K)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    q, s = cli.quantize(tmp_path, x)
    assert (s == 127).all()
    ours = unpack(q)
    theirs = x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    small = np.abs(x) <= 6
    np.testing.assert_array_equal(ours[small], theirs[small])
    assert ((ours[~small] & 7) == 7).all()  # saturated to +-6


@pytest.mark.parametrize("kind", ["bf16", "f32"])
def test_rounding_vs_ml_dtypes_any_scale(cli, tmp_path, kind):
    """Any scale: y = x * 2^-s (s from our scale byte) cast by ml_dtypes equals our code."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(2)
    rows, K = 32, 512
    exps = rng.integers(-120, 120, size=(rows, K // 32, 1))
    x = np.ldexp(rng.standard_normal((rows, K // 32, 32)), exps).astype(np.float32).reshape(rows, K)
    if kind == "bf16":
        bits = bf16_bits(x)
        x = (bits.astype(np.uint32) << 16).view(np.float32)
        inp = bits
    else:
        inp = x
    q, s = cli.quantize(tmp_path, inp)
    sexp = np.repeat(s.astype(np.int64) - 127, 32, axis=1)
    y = np.ldexp(x.astype(np.float64), -sexp).astype(np.float32)
    ours = unpack(q)
    theirs = y.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    small = np.abs(y) <= 6
    assert small.mean() > 0.99
    np.testing.assert_array_equal(ours[small], theirs[small])


def random_matrix(rng, rows, K, lo=-140, hi=120):
    """Normal values with a random exponent per block, plus zeros, -0, ties and subnormals."""
    x = np.ldexp(rng.standard_normal((rows, K // 32, 32)), rng.integers(lo, hi, size=(rows, K // 32, 1)))
    x = x.astype(np.float32).reshape(rows, K)
    x[0, :32] = 0.0
    x[0, 32:64] = -0.0
    x[1, :16] = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, 7, 6.96875, 3.96875, 1.203125, 2.703125,
                          5.5, -7.5, 0.1875], dtype=np.float32)
    x[2, :8] = np.ldexp(np.float32(1.5), [-114, -126, -128, -128, -130, -133, -140, -149]).astype(np.float32)
    return x


@pytest.mark.parametrize("rule", ["aiter", "floor", "rceil"])
@pytest.mark.parametrize("kind", ["bf16", "f16", "f32"])
def test_rules_vs_numpy_model(cli, tmp_path, rule, kind):
    rng = np.random.default_rng(3)
    x = random_matrix(rng, 48, 320, *((-20, 12) if kind == "f16" else (-140, 120)))
    if kind == "bf16":
        inp = bf16_bits(x)
        x = (inp.astype(np.uint32) << 16).view(np.float32)
    elif kind == "f16":
        inp = x.astype(np.float16)
        x = inp.astype(np.float32)
    else:
        inp = x
    q, s = cli.quantize(tmp_path, inp, rule=rule)
    q_ref, s_ref = quantize_ref(x, rule)
    np.testing.assert_array_equal(s, s_ref)
    np.testing.assert_array_equal(q, q_ref)


def test_output_files_are_plain_npy(cli, tmp_path):
    """The outputs load with numpy as C-order uint8 of the documented shapes."""
    x = bf16_bits(np.ones((5, 96), dtype=np.float32))
    q, s = cli.quantize(tmp_path, x)
    assert q.shape == (5, 48) and s.shape == (5, 3)
    assert q.flags.c_contiguous and s.flags.c_contiguous
    assert (q == 0x66).all() and (s == 0x7D).all()
    np.testing.assert_array_equal(unpack(q)[:, :4], [[6, 6, 6, 6]] * 5)
    np.testing.assert_array_equal(pack(unpack(q)), q)


def test_codes_and_scales_must_be_different_files(cli, tmp_path):
    """Review, session 12: the same path for both outputs let the scales replace the codes."""
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 32), np.float32))
    out = tmp_path / "o.npy"
    line = cli.fails("quantize", "-i", x, "--codes", out, "--scales", tmp_path / "." / "o.npy")
    assert "same file" in line and not out.exists()
