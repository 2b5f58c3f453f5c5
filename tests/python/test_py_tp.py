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


# ---- the layers in one process (world_size 1, or shards built without torch.distributed) ------
# The multi-process tests are tests/python/test_py_tp_dist.py (torchrun + tests/python/tp_worker.py).


def _torch_layer(torch, rng, N=64, K=256):
    lin = torch.nn.Linear(K, N)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(rng.standard_normal((N, K)).astype(np.float32)))
        lin.bias.copy_(torch.from_numpy(rng.standard_normal(N).astype(np.float32)))
    x = torch.from_numpy(rng.standard_normal((2, 3, K)).astype(np.float32))
    return lin, x


def test_world_one_layers_equal_the_unsharded_layer(rng, torch):
    from mxfp4.nn import MXFP4Linear

    lin, x = _torch_layer(torch, rng)
    want = MXFP4Linear.from_linear(lin)(x)
    col = tp.ColumnParallelMXFP4Linear.from_linear(lin, rank=0, world_size=1)
    row = tp.RowParallelMXFP4Linear.from_linear(lin, rank=0, world_size=1)
    for m in (col, row):
        y = m(x)
        assert y.dtype == torch.float32 and y.shape == (2, 3, 64)
        assert torch.equal(y, want), type(m).__name__
    xb = x.to(torch.bfloat16)
    assert torch.equal(row(xb), MXFP4Linear.from_linear(lin)(xb))


def test_shards_built_without_a_process_group(rng, torch):
    lin, x = _torch_layer(torch, rng)
    packed = mxfp4.prepack_dense(lin.weight.detach())
    for r in range(2):
        col = tp.ColumnParallelMXFP4Linear.from_packed(packed, bias=lin.bias, rank=r, world_size=2,
                                                        gather_output=False)
        assert (col.local.out_features, col.shard_start, col.shard_stop) == (32, 32 * r, 32 * (r + 1))
        assert torch.equal(col.local.weight_packed, tp.shard_packed(packed, r, 2, "N").data)
        assert torch.equal(col.local.bias, lin.bias.detach()[32 * r:32 * (r + 1)])
        assert torch.equal(col(x), mxfp4.nn.MXFP4Linear.from_packed(packed, bias=lin.bias)(x)[..., 32 * r:32 * (r + 1)])
        row = tp.RowParallelMXFP4Linear.from_packed(packed, bias=lin.bias, rank=r, world_size=2)
        assert (row.local.in_features, row.shard_start) == (128, 128 * r)
        assert torch.equal(row.local.weight_packed, tp.shard_packed(packed, r, 2, "K").data)
        with pytest.raises(RuntimeError, match="needs an initialized torch.distributed process group"):
            row(x)


def test_layer_errors_name_the_values(rng, torch):
    lin, x = _torch_layer(torch, rng)
    with pytest.raises(ValueError, match="torch.distributed is not initialized: pass rank and world_size"):
        tp.ColumnParallelMXFP4Linear(256, 64)
    with pytest.raises(ValueError, match="process_group was given"):
        tp.RowParallelMXFP4Linear(256, 64, process_group=object())
    with pytest.raises(ValueError, match="K = 256 split over world = 16 gives 16 columns"):
        tp.RowParallelMXFP4Linear(256, 64, rank=0, world_size=16)
    with pytest.raises(ValueError, match="N = 64 is not divisible by world = 3"):
        tp.ColumnParallelMXFP4Linear(256, 64, rank=0, world_size=3)
    packed = mxfp4.prepack_dense(lin.weight.detach())
    with pytest.raises(ValueError, match=r"bias must have shape \(64,\)"):
        tp.RowParallelMXFP4Linear.from_packed(packed, bias=torch.zeros(32), rank=0, world_size=2)
    with pytest.raises(TypeError, match="PackedTensor"):
        tp.ColumnParallelMXFP4Linear.from_packed(lin.weight, rank=0, world_size=1)
    row = tp.RowParallelMXFP4Linear.from_packed(packed, rank=0, world_size=1)
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 256\] \(in_features\); got shape \(2, 128\)"):
        row(torch.zeros(2, 128))
    rowp = tp.RowParallelMXFP4Linear.from_packed(packed, rank=0, world_size=1, input_is_parallel=True)
    with pytest.raises(ValueError, match=r"input_is_parallel: x must be this rank's \[\.\.\., 256\] slice"):
        rowp(torch.zeros(2, 128))
    sd = row.state_dict()
    sd["_extra_state"] = dict(sd["_extra_state"], world_size=2)
    with pytest.raises(ValueError, match="state_dict is the shard"):
        tp.RowParallelMXFP4Linear(256, 64, rank=0, world_size=1).load_state_dict(sd)


def test_loaded_row_layer_uses_the_saved_rule(rng, torch):
    # Session 60 review: the row-parallel forward passed its constructor's rule to the GEMM
    # while load_state_dict had set the saved one on its shard.
    lin, x = _torch_layer(torch, rng)
    x = x * 3
    for cls in (tp.RowParallelMXFP4Linear, tp.ColumnParallelMXFP4Linear):
        saved = cls.from_linear(lin, rule="floor", rank=0, world_size=1)
        loaded = cls(256, 64, rank=0, world_size=1)
        loaded.load_state_dict(saved.state_dict())
        assert loaded.rule == "floor"
        assert torch.equal(loaded(x), saved(x)), cls.__name__
        assert not torch.equal(cls.from_linear(lin, rank=0, world_size=1)(x), saved(x))  # the rule matters here
        loaded.rule = "aiter"  # settable: the shard's rule, checked
        assert loaded.local.rule == "aiter" and not torch.equal(loaded(x), saved(x))
        with pytest.raises(ValueError, match="rule"):
            loaded.rule = "bogus"


def test_layer_inputs_and_sizes_are_checked(rng, torch):
    # Session 60 review: an integer x came back truncated from the row-parallel layer, a 0-d x
    # raised IndexError, and float sizes, ranks and world sizes were truncated.
    lin, x = _torch_layer(torch, rng)
    for cls in (tp.RowParallelMXFP4Linear, tp.ColumnParallelMXFP4Linear):
        m = cls.from_linear(lin, rank=0, world_size=1)
        with pytest.raises(TypeError, match="floating dtype"):
            m(torch.ones(2, 256, dtype=torch.int64))
        with pytest.raises(ValueError, match="scalar"):
            m(torch.tensor(1.0))
        assert torch.equal(m(x.transpose(0, 1).contiguous().transpose(0, 1)), m(x))  # any strides, as nn.Linear
        with pytest.raises(TypeError, match="in_features must be an integer"):
            cls(256.5, 64, rank=0, world_size=1)
        with pytest.raises(TypeError, match="world_size must be an integer"):
            cls(256, 64, rank=0, world_size=2.5)
        with pytest.raises(TypeError, match="rank must be an integer"):
            cls(256, 64, rank=0.9, world_size=2)
    with pytest.raises(TypeError, match="size must be an integer"):
        tp.shard_range(64.0, 1, 2, "N")
    with pytest.raises(TypeError, match="world must be an integer"):
        tp.shard_range(64, 1, True, "N")


def test_from_packed_takes_a_device(rng, torch):
    # Session 60 review: device= clashed with the meta construction ("multiple values").
    lin, x = _torch_layer(torch, rng)
    packed = mxfp4.prepack_dense(lin.weight.detach())
    for cls in (tp.ColumnParallelMXFP4Linear, tp.RowParallelMXFP4Linear):
        m = cls.from_packed(packed, bias=lin.bias, rank=0, world_size=1, device="cpu")
        assert m.local.weight_packed.device.type == "cpu"
        assert torch.equal(m(x), cls.from_packed(packed, bias=lin.bias, rank=0, world_size=1)(x))


def test_from_constructors_refuse_bias_dtype(rng, torch):
    # Session 61: the from_* constructors took bias_dtype through **kw and ignored it (the bias
    # kept its own dtype); MXFP4Linear's refuse it, so these do too.
    lin, x = _torch_layer(torch, rng)
    packed = mxfp4.prepack_dense(lin.weight.detach())
    codes, scales = mxfp4.quantize(lin.weight.detach().numpy())
    for cls in (tp.ColumnParallelMXFP4Linear, tp.RowParallelMXFP4Linear):
        with pytest.raises(TypeError, match="bias_dtype"):
            cls.from_packed(packed, bias=lin.bias, rank=0, world_size=1, bias_dtype=torch.float64)
        with pytest.raises(TypeError, match="bias_dtype"):
            cls.from_linear(lin, rank=0, world_size=1, bias_dtype=torch.float64)
        with pytest.raises(TypeError, match="bias_dtype"):
            cls.from_mxfp4(codes, scales, bias=lin.bias, rank=0, world_size=1, bias_dtype=torch.float64)
        # The constructor itself keeps it.
        made = cls(64, 64, rank=0, world_size=1, bias_dtype=torch.float64)
        assert (made.bias if cls is tp.RowParallelMXFP4Linear else made.local.bias).dtype == torch.float64
        m = cls.from_packed(packed, bias=lin.bias, rank=0, world_size=1)
        assert torch.equal(m(x), cls.from_packed(packed, bias=lin.bias, rank=0, world_size=1)(x))


def test_layers_pickle_and_deep_copy(rng, torch):
    # Session 61: the layers record the WORLD group by name when pickled (tp_worker.py checks that
    # under torch.distributed); without a group they pickle as they are.
    import copy
    import pickle

    lin, x = _torch_layer(torch, rng)
    for cls in (tp.ColumnParallelMXFP4Linear, tp.RowParallelMXFP4Linear):
        m = cls.from_linear(lin, rule="floor", rank=0, world_size=1)
        for twin in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
            assert (twin.rank, twin.world_size, twin.group, twin.rule) == (0, 1, None, "floor")
            assert torch.equal(twin(x), m(x))
            assert torch.equal(twin.local.weight_packed, m.local.weight_packed)
