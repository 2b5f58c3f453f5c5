"""Loaders: AITER-format tensors and gpt-oss safetensors entries into PackedTensor, on small
files the tests write (our own safetensors writer; the `safetensors` package too if present)."""
import ml_dtypes
import numpy as np
import pytest

import mxfp4
from mxfp4 import loaders

FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def gpt_oss_decode(blocks, scales):
    """The gpt-oss reference decoder (openai/gpt-oss gpt_oss/torch/weights.py, in numpy): low
    nibble -> even element, high nibble -> odd element, times 2^(scale - 127)."""
    lut = np.array(FP4_VALUES, np.float64)
    *prefix, G, B = blocks.shape
    out = np.empty((*prefix, G, 2 * B))
    out[..., 0::2] = lut[blocks & 0x0F]
    out[..., 1::2] = lut[blocks >> 4]
    out = np.ldexp(out, scales.astype(np.int64)[..., None] - 127)
    return out.reshape(*prefix, G * 2 * B)


def _gpt_oss_weights(rng, lead, N, K):
    blocks = rng.integers(0, 256, (*lead, N, K // 32, 16), dtype=np.uint8)
    scales = rng.integers(100, 150, (*lead, N, K // 32), dtype=np.uint8)
    return blocks, scales


def test_from_gpt_oss_matches_gpt_oss_decoder(rng):
    blocks, scales = _gpt_oss_weights(rng, (), 48, 256)
    p = loaders.from_gpt_oss(blocks, scales)
    assert isinstance(p, mxfp4.PackedTensor) and p.shape == (48, 256)
    assert np.array_equal(p.dequantize().astype(np.float64), gpt_oss_decode(blocks, scales))
    codes, sc = p.unpack()
    assert np.array_equal(codes, blocks.reshape(48, 128)) and np.array_equal(sc, scales)  # same layout, no conversion


def test_from_gpt_oss_experts(rng):
    blocks, scales = _gpt_oss_weights(rng, (3,), 32, 128)
    ps = loaders.from_gpt_oss(blocks, scales)
    assert isinstance(ps, list) and len(ps) == 3
    want = gpt_oss_decode(blocks, scales)
    for e, p in enumerate(ps):
        assert np.array_equal(p.dequantize().astype(np.float64), want[e])


def test_from_gpt_oss_shape_errors(rng):
    blocks, scales = _gpt_oss_weights(rng, (), 16, 64)
    with pytest.raises(ValueError, match=r"\[..., N, K/32, 16\]"):
        loaders.from_gpt_oss(blocks.reshape(16, 32), scales)
    with pytest.raises(ValueError, match="scales"):
        loaders.from_gpt_oss(blocks, scales[:8])
    with pytest.raises(TypeError, match="uint8"):
        loaders.from_gpt_oss(blocks.astype(np.int16), scales)


def test_load_gpt_oss_safetensors(tmp_path, rng):
    b1, s1 = _gpt_oss_weights(rng, (2,), 32, 128)
    b2, s2 = _gpt_oss_weights(rng, (), 16, 64)
    bias = rng.standard_normal(32).astype(ml_dtypes.bfloat16)
    path = tmp_path / "model.safetensors"
    loaders.write_safetensors(path, {
        "model.layers.0.mlp.experts.gate_up_proj_blocks": b1,
        "model.layers.0.mlp.experts.gate_up_proj_scales": s1,
        "block.0.mlp.mlp2_weight.blocks": b2,
        "block.0.mlp.mlp2_weight.scales": s2,
        "model.layers.0.mlp.experts.gate_up_proj_bias": bias,
    }, metadata={"format": "pt"})
    raw = loaders.read_safetensors(path)
    assert raw["model.layers.0.mlp.experts.gate_up_proj_bias"].dtype == ml_dtypes.bfloat16
    assert np.array_equal(raw["model.layers.0.mlp.experts.gate_up_proj_bias"].view(np.uint16), bias.view(np.uint16))
    assert np.array_equal(raw["block.0.mlp.mlp2_weight.blocks"], b2)
    got = loaders.load_gpt_oss(path)
    assert sorted(got) == ["block.0.mlp.mlp2_weight", "model.layers.0.mlp.experts.gate_up_proj"]
    experts = got["model.layers.0.mlp.experts.gate_up_proj"]
    assert len(experts) == 2
    for e in range(2):
        assert np.array_equal(experts[e].dequantize().astype(np.float64), gpt_oss_decode(b1, s1)[e])
    assert np.array_equal(got["block.0.mlp.mlp2_weight"].dequantize().astype(np.float64), gpt_oss_decode(b2, s2))
    # a folder of files, and a name filter
    only = loaders.load_gpt_oss(tmp_path, names=["block.0.mlp.mlp2_weight"])
    assert list(only) == ["block.0.mlp.mlp2_weight"]
    with pytest.raises(KeyError, match="nope"):
        loaders.load_gpt_oss(path, names=["nope"])
    # the packed weights feed the GEMM directly
    a = rng.standard_normal((3, 64)).astype(ml_dtypes.bfloat16)
    c = mxfp4.gemm(a, got["block.0.mlp.mlp2_weight"])
    assert c.shape == (3, 16)


def test_safetensors_malformed(tmp_path):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(ValueError, match="malformed"):
        loaders.read_safetensors(p)
    p.write_bytes(b"\xff" * 8)
    with pytest.raises(ValueError, match="exceeds"):
        loaders.read_safetensors(p)
    p.write_bytes(b"\x40\x00\x00\x00\x00\x00\x00\x00" +
                  b'{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,8]}}'.ljust(64) + b"\x00" * 8)
    with pytest.raises(ValueError, match="data_offsets"):
        loaders.read_safetensors(p)


@pytest.mark.parametrize("header, match", [
    (b'[1]', "JSON object expected"),
    (b'{"w":{"dtype":"U8"}}', "no 'shape'"),
    (b'{"w":7}', "not a JSON object"),
    (b'{"w":{"dtype":["U8"],"shape":[4],"data_offsets":[0,4]}}', "unsupported dtype"),
    (b'{"w":{"dtype":"U8","shape":[-1,4],"data_offsets":[8,4]}}', "non-negative integers"),
    (b'{"w":{"dtype":"U8","shape":[4,4],"data_offsets":[8,4]}}', "begin <= end"),
    (b'{"w":{"dtype":"U8","shape":"44","data_offsets":[0,16]}}', "non-negative integers"),
    (b'{"w":{"dtype":"U8","shape":[2.5,2],"data_offsets":[0,4]}}', "non-negative integers"),
    (b'{"w":{"dtype":"U8","shape":[4,4],"data_offsets":[0]}}', "begin <= end"),
    (b'{"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,16]}}', "do not fit"),
])
def test_safetensors_header_entries_are_checked(tmp_path, header, match):
    # Session 60 review: these raised AttributeError/KeyError/TypeError or were read as other
    # shapes; the docstring promises ValueError for a malformed file.
    p = tmp_path / "bad.safetensors"
    p.write_bytes(len(header).to_bytes(8, "little") + header + bytes(range(16)))
    with pytest.raises(ValueError, match=match):
        loaders.read_safetensors(p)
    good = b'{"w":{"dtype":"U8","shape":[4,4],"data_offsets":[0,16]}}'
    p.write_bytes(len(good).to_bytes(8, "little") + good + bytes(range(16)))
    assert loaders.read_safetensors(p)["w"].tolist() == np.arange(16, dtype=np.uint8).reshape(4, 4).tolist()


def test_safetensors_package_interop(tmp_path, rng):
    st = pytest.importorskip("safetensors.numpy")
    blocks, scales = _gpt_oss_weights(rng, (), 16, 64)
    f1 = tmp_path / "theirs.safetensors"
    st.save_file({"w_blocks": blocks, "w_scales": scales, "f": np.arange(5, dtype=np.float32)}, str(f1))
    mine = loaders.read_safetensors(f1)
    assert np.array_equal(mine["w_blocks"], blocks) and np.array_equal(mine["f"], np.arange(5, dtype=np.float32))
    f2 = tmp_path / "mine.safetensors"
    loaders.write_safetensors(f2, {"w_blocks": blocks, "w_scales": scales})
    theirs = st.load_file(str(f2))
    assert np.array_equal(theirs["w_blocks"], blocks) and np.array_equal(theirs["w_scales"], scales)


@pytest.mark.parametrize("wl,sl", [("plain", "plain"), ("shuffled", "plain"), ("plain", "shuffled"),
                                   ("shuffled", "shuffled")])
def test_from_aiter(rng, wl, sl):
    N, K = 32, 256
    w = rng.standard_normal((N, K)).astype(np.float32)
    b_q, b_scale = mxfp4.quantize(w)
    want = mxfp4.prepack(b_q, b_scale)
    wq = mxfp4.shuffle_weight(b_q) if wl == "shuffled" else b_q
    ws = mxfp4.shuffle_scales(b_scale) if sl == "shuffled" else b_scale
    p = loaders.from_aiter(wq, ws, weight_layout=wl, scale_layout=sl)
    assert np.array_equal(p.data, want.data)
    # AITER hands out e8m0 scales as float8_e8m0fnu; the loader reads them as bytes
    if hasattr(ml_dtypes, "float8_e8m0fnu"):
        p2 = loaders.from_aiter(wq, ws.view(ml_dtypes.float8_e8m0fnu), weight_layout=wl, scale_layout=sl)
        assert np.array_equal(p2.data, want.data)


def test_safetensors_keeps_0d_shapes_and_refuses_the_metadata_name(tmp_path):
    # Session 60 review: 0-d tensors were written as shape [1]; a tensor named __metadata__
    # was written and then dropped on read.
    p = tmp_path / "s.safetensors"
    loaders.write_safetensors(p, {"step": np.array(7, np.int64), "scale": np.float32(0.5)})
    got = loaders.read_safetensors(p)
    assert got["step"].shape == () and int(got["step"]) == 7
    assert got["scale"].shape == () and float(got["scale"]) == 0.5
    with pytest.raises(ValueError, match="__metadata__"):
        loaders.write_safetensors(p, {"__metadata__": np.zeros(2, np.uint8)})
    e8m0 = np.array([0, 127, 254], np.uint8)
    loaders.write_safetensors(p, {"s": e8m0.view(ml_dtypes.float8_e8m0fnu)})  # the scales' own dtype
    assert np.array_equal(loaders.read_safetensors(p)["s"], e8m0)
    assert b'"F8_E8M0"' in p.read_bytes()[:200]


def test_load_gpt_oss_refuses_one_string_of_names(tmp_path):
    with pytest.raises(TypeError, match="list of weight names"):
        loaders.load_gpt_oss(tmp_path, names="block.0.mlp.mlp2_weight")
