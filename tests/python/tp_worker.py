"""Multi-process body of the tensor-parallel tests, run by torchrun on every rank:

    python -m torch.distributed.run --standalone --nproc_per_node=2 tests/python/tp_worker.py \\
        --backend gloo --seed 1234          # CPU tensors (tests/python/test_py_tp_dist.py, CI)
    ... --backend nccl ...                  # one GPU per rank (scripts/tp-check.sh)

Each rank builds mxfp4.tp's Column-/RowParallelMXFP4Linear from the same full weights (drawn
from --seed, identical on every rank) and compares the distributed result with the
single-process result of the unsharded layer (mxfp4.nn.MXFP4Linear) and with the exact fp64
reference of spec §3:

* column-parallel: the gathered output equals the unsharded layer's bit for bit on the CPU
  (no sum crosses ranks); on GPUs, where the kernel configuration depends on N, both are
  checked against the reference with spec §3's bound;
* row-parallel: within spec §3's bound plus (world - 1) 2^-24 sum|a_k b_k| for the fp32
  additions of the all-reduce; equal bit for bit to bf16(sum of the fp32 partials) in rank
  order with deterministic=True (and with all_reduce when world == 2);
* every rank returns identical bits; repeated forwards are identical; column -> row chains;
  input_is_parallel; bias and float32 inputs; state_dict round trip; shard construction from
  nn.Linear equals sharding the packed full weights.

The package under test is found as the pytest suite finds it (conftest.py, MXFP4_PYTHON_BUILD).
Exits non-zero on the first failed check (the message names rank, check, shape and seed).
"""
import argparse
import copy
import datetime
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import conftest  # noqa: E402,F401  (imports mxfp4 the way the test suite does)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import mxfp4  # noqa: E402
from mxfp4.nn import MXFP4Linear  # noqa: E402
from mxfp4.tp import ColumnParallelMXFP4Linear, RowParallelMXFP4Linear, shard_packed  # noqa: E402

# (M, N, K): decode and prefill batch sizes; K / world stays a multiple of 32 up to world 8.
SHAPES = [(1, 256, 1024), (5, 384, 512), (70, 512, 2048), (33, 1536, 4096)]


class Check:
    def __init__(self, rank, world, seed, backend):
        self.rank, self.world, self.seed, self.backend = rank, world, seed, backend
        self.count = 0

    def __call__(self, ok, what):
        self.count += 1
        if not ok:
            raise AssertionError(f"rank {self.rank}/{self.world} ({self.backend}, seed {self.seed}): {what}")


def reference(x, packed):
    """(ref, sum|a_k b_k|) float64 [M, N] on the CPU: exact products of the dequantized
    operands (spec §3), x quantized by the library's quantizer (bit-exact with spec §2)."""
    xc = x.detach().cpu().to(torch.bfloat16).reshape(-1, x.shape[-1])
    da = mxfp4.dequantize(*mxfp4.quantize(xc)).double()
    db = packed.cpu().dequantize().double()
    return da @ db.T, da.abs() @ db.abs().T


def within(c, ref, absum, extra_terms=0):
    """spec §3: |C - ref| <= 2^-8 |ref| + (2^-12 + extra_terms 2^-24) sum|ab| + 2^-134, NaN where ref is."""
    c = c.detach().cpu().double().reshape(ref.shape)
    if not torch.equal(torch.isnan(c), torch.isnan(ref)):
        return False, "NaN pattern differs from the reference"
    ok = ~torch.isnan(ref)
    tol = 2.0**-8 * ref.abs() + (2.0**-12 + extra_terms * 2.0**-24) * absum + 2.0**-134
    excess = ((c - ref).abs() - tol)[ok]
    worst = float(excess.max()) if excess.numel() else -1.0
    return worst <= 0, f"max excess over the bound {worst:.3g}"


def _bits(t):
    """t's bytes (NaN-safe comparisons; gloo has no int16 collectives)."""
    return t.contiguous().view(torch.uint8)


def same_on_all_ranks(t):
    """True when t has the same bits on every rank (all_gather and compare)."""
    t = _bits(t)
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t)
    return all(torch.equal(p, t) for p in parts)


def _spread(gen, rows, K, lo, hi):
    """Per-block powers of two 2^[lo, hi) [rows, K]: realistic, varied E8M0 scales."""
    return torch.exp2(torch.randint(lo, hi, (rows, K // 32), generator=gen).float()).repeat_interleave(32, 1)


def full_weights(gen, N, K, device):
    w = torch.randn(N, K, generator=gen) * _spread(gen, N, K, -6, 6)
    bias = torch.randn(N, generator=gen)
    return w.to(device), bias.to(device)


def activations(gen, M, K, device):
    a = torch.randn(M, K, generator=gen) * _spread(gen, M, K, -4, 4)
    return a.to(torch.bfloat16).to(device)


def check_column(chk, gen, M, N, K, device):
    w, bias = full_weights(gen, N, K, device)
    x = activations(gen, M, K, device)
    packed = mxfp4.prepack_dense(w)
    full = MXFP4Linear.from_packed(packed)
    tag = f"column M={M} N={N} K={K}"
    col = ColumnParallelMXFP4Linear.from_packed(packed)
    y, y_full = col(x), full(x)
    chk(y.shape == (M, N) and y.dtype == torch.bfloat16, f"{tag}: shape/dtype {tuple(y.shape)} {y.dtype}")
    ref, absum = reference(x, packed)
    for name, t in (("sharded", y), ("unsharded", y_full)):
        ok, msg = within(t, ref, absum)
        chk(ok, f"{tag}: {name} result outside spec §3's bound: {msg}")
    if device.type == "cpu":
        chk(torch.equal(y, y_full), f"{tag}: gathered output differs from the unsharded layer's bits")
    chk(same_on_all_ranks(y), f"{tag}: ranks disagree")
    chk(torch.equal(col(x), y), f"{tag}: a second forward differs")
    # this rank's slice without the gather is the same columns
    local = ColumnParallelMXFP4Linear.from_packed(packed, gather_output=False)
    n0, n1 = local.shard_start, local.shard_stop
    chk(torch.equal(local(x), y[:, n0:n1]), f"{tag}: gather_output=False slice != columns [{n0}, {n1})")
    # from nn.Linear (rows quantized here) == sharding the packed full weight, bias sliced
    lin = torch.nn.Linear(K, N, device=device)
    with torch.no_grad():
        lin.weight.copy_(w)
        lin.bias.copy_(bias)
    cl = ColumnParallelMXFP4Linear.from_linear(lin)
    want = shard_packed(packed, chk.rank, chk.world, "N")
    chk(torch.equal(cl.local.weight_packed, want.data), f"{tag}: from_linear shard != shard_packed bytes")
    yb = cl(x.float())
    chk(yb.dtype == torch.float32 and torch.equal(yb, y.float() + bias), f"{tag}: float32 input with bias")


def check_row(chk, gen, M, N, K, device):
    w, bias = full_weights(gen, N, K, device)
    x = activations(gen, M, K, device)
    packed = mxfp4.prepack_dense(w)
    tag = f"row M={M} N={N} K={K}"
    ref, absum = reference(x, packed)
    shards = [shard_packed(packed, r, chk.world, "K") for r in range(chk.world)]
    kl = K // chk.world
    # fp32 partials of every rank computed here, summed in rank order
    partials = [mxfp4.gemm(x[:, r * kl:(r + 1) * kl].contiguous(), shards[r], out_dtype=torch.float32)
                for r in range(chk.world)]
    ordered = partials[0].clone()
    for p in partials[1:]:
        ordered += p
    ordered = ordered.to(torch.bfloat16)
    for det in (False, True):
        row = RowParallelMXFP4Linear.from_packed(packed, deterministic=det)
        y = row(x)
        t = f"{tag} deterministic={det}"
        chk(y.shape == (M, N) and y.dtype == torch.bfloat16, f"{t}: shape/dtype {tuple(y.shape)} {y.dtype}")
        ok, msg = within(y, ref, absum, extra_terms=chk.world - 1)
        chk(ok, f"{t}: outside spec §3's bound (+ all-reduce additions): {msg}")
        chk(same_on_all_ranks(y), f"{t}: ranks disagree")
        chk(torch.equal(row(x), y), f"{t}: a second forward differs")
        if det or chk.world == 2:
            chk(torch.equal(y, ordered), f"{t}: != bf16(sum of the fp32 partials in rank order)")
        k0, k1 = row.shard_start, row.shard_stop
        rp = RowParallelMXFP4Linear.from_packed(packed, deterministic=det, input_is_parallel=True)
        chk(torch.equal(rp(x[:, k0:k1]), y), f"{t}: input_is_parallel differs from slicing here")
    full = MXFP4Linear.from_packed(packed)
    ok, msg = within(full(x), ref, absum)
    chk(ok, f"{tag}: unsharded layer outside the bound: {msg}")
    # from nn.Linear, bias added once after the reduction, float32 input
    lin = torch.nn.Linear(K, N, device=device)
    with torch.no_grad():
        lin.weight.copy_(w)
        lin.bias.copy_(bias)
    rl = RowParallelMXFP4Linear.from_linear(lin, deterministic=True)
    want = shard_packed(packed, chk.rank, chk.world, "K")
    chk(torch.equal(rl.local.weight_packed, want.data), f"{tag}: from_linear shard != shard_packed bytes")
    yb = rl(x.float())
    chk(yb.dtype == torch.float32 and torch.equal(yb, ordered.float() + bias), f"{tag}: float32 input with bias")
    # state_dict round trip into a zero module built by the constructor
    fresh = RowParallelMXFP4Linear(K, N, deterministic=True, device=device)
    fresh.load_state_dict(rl.state_dict())
    chk(torch.equal(fresh(x.float()), yb), f"{tag}: state_dict round trip")
    sd = rl.state_dict()
    sd["_extra_state"] = dict(sd["_extra_state"], rank=(chk.rank + 1) % chk.world)
    try:
        fresh.load_state_dict(sd)
        chk(chk.world == 1, f"{tag}: loading another rank's shard was accepted")
    except ValueError as e:
        chk("state_dict is the shard" in str(e), f"{tag}: wrong message {e}")


def check_mlp(chk, gen, M, K, H, device):
    """x -> column-parallel (no gather) -> row-parallel (input_is_parallel): each rank's
    hidden slice never leaves it; the output is checked against the exact reference of the
    second layer on the gathered hidden activations."""
    w1, _ = full_weights(gen, H, K, device)
    w2, _ = full_weights(gen, K, H, device)
    p1, p2 = mxfp4.prepack_dense(w1), mxfp4.prepack_dense(w2)
    x = activations(gen, M, K, device)
    up = ColumnParallelMXFP4Linear.from_packed(p1, gather_output=False)
    down = RowParallelMXFP4Linear.from_packed(p2, input_is_parallel=True)
    h_local = up(x)
    y = down(h_local)
    h = ColumnParallelMXFP4Linear.from_packed(p1)(x)
    chk(torch.equal(h[:, up.shard_start:up.shard_stop], h_local), "mlp: hidden slice != gathered columns")
    ref, absum = reference(h, p2)
    ok, msg = within(y, ref, absum, extra_terms=chk.world - 1)
    chk(ok, f"mlp M={M} K={K} H={H}: outside the bound: {msg}")
    chk(same_on_all_ranks(y), "mlp: ranks disagree")


def check_pickle(chk, gen, device):
    """Pickled and deep-copied layers of the WORLD group run as the originals; a layer of another
    group refuses to pickle (TypeError)."""
    w, bias = full_weights(gen, 256, 1024, device)
    x = activations(gen, 5, 1024, device)
    packed = mxfp4.prepack_dense(w)
    for cls in (ColumnParallelMXFP4Linear, RowParallelMXFP4Linear):
        m = cls.from_packed(packed, bias=bias)
        for how, twin in (("pickle", pickle.loads(pickle.dumps(m))), ("deepcopy", copy.deepcopy(m))):
            chk(twin.group == dist.group.WORLD and (twin.rank, twin.world_size) == (m.rank, m.world_size),
                f"{cls.__name__} {how}: group/rank/world_size not restored")
            chk(torch.equal(twin(x), m(x)), f"{cls.__name__} {how}: output differs from the original's")
    group = dist.new_group(list(range(chk.world)))  # every rank creates it, in the same order
    other = ColumnParallelMXFP4Linear.from_packed(packed, process_group=group)
    try:
        pickle.dumps(other)
        chk(False, "a layer of a non-WORLD group pickled")
    except TypeError as e:
        chk("other than WORLD" in str(e), f"message {e!r}")


def check_errors(chk):
    cases = [
        (lambda: RowParallelMXFP4Linear(48 * chk.world, 64), "block"),  # 48 columns per rank
        (lambda: ColumnParallelMXFP4Linear(64, 16 * chk.world + 1), "not divisible"),
        (lambda: ColumnParallelMXFP4Linear(64, 16 * chk.world, rank=(chk.rank + 1) % chk.world,
                                           world_size=chk.world), "disagree with the process group"),
    ]
    for make, needle in cases:
        try:
            make()
            chk(False, f"no ValueError (expected one mentioning {needle!r})")
        except ValueError as e:
            chk(needle in str(e), f"message {e!r} does not mention {needle!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["gloo", "nccl"], required=True)
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.backend == "nccl":
        if not mxfp4.built_with_cuda():
            raise SystemExit("tp_worker: --backend nccl needs mxfp4 built with the CUDA backend")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=300), device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    if world < 2:
        raise SystemExit("tp_worker: run it with torchrun --nproc_per_node >= 2")
    chk = Check(rank, world, args.seed, args.backend)
    gen = torch.Generator().manual_seed(args.seed)  # same weights and inputs on every rank
    passed = False
    try:
        check_errors(chk)
        for M, N, K in SHAPES:
            check_column(chk, gen, M, N, K, device)
            check_row(chk, gen, M, N, K, device)
        check_mlp(chk, gen, 9, 512, 1024, device)
        check_pickle(chk, gen, device)
        # every rank must have run the same checks: a rank that skipped one would deadlock above
        counts = torch.tensor([chk.count], device=device)
        dist.all_reduce(counts, op=dist.ReduceOp.MAX)
        chk(int(counts) == chk.count, f"ranks ran different numbers of checks ({chk.count} vs {int(counts)})")
        if rank == 0:
            print(f"tp_worker: {chk.count} checks passed on each of {world} ranks ({args.backend}, {device.type}, "
                  f"seed {args.seed})", flush=True)
        passed = True
    finally:
        dist.destroy_process_group()
    if passed:
        # Skip the interpreter's teardown after a clean run: on the CPU runner gloo's threads
        # intermittently abort it ("terminate called without an active exception", SIGABRT on
        # one rank after every check passed; 1 run in 5 under pytest, session 3).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
