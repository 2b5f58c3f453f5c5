"""Tensor-parallel MXFP4 linear layers over torch.distributed (requires torch).

Both modules are re-exported by :mod:`mxfp4.tp`. A linear layer ``y = x @ W^T + b`` with
W [N, K] (N = out_features, K = in_features) is split over the ``world_size`` ranks of a
process group (Megatron-LM's column/row-parallel scheme):

* :class:`ColumnParallelMXFP4Linear`: rank r holds rows ``[r N/world, (r+1) N/world)`` of W
  and of b and computes those output columns from the whole x; the slices are optionally
  all-gathered into the full ``[..., N]``. Each output element is the same bf16 GEMM result
  as in the unsharded layer (no sum crosses ranks).
* :class:`RowParallelMXFP4Linear`: rank r holds columns ``[r K/world, (r+1) K/world)`` of W
  (on 32-element block boundaries: one E8M0 scale covers 32 elements along K) and the
  matching slice of x, computes an fp32 partial product (``mxfp4.gemm(...,
  out_dtype=float32)``), and the partials are summed by an all-reduce in fp32; the sum is
  rounded to bf16 once, as the unsharded GEMM's C (spec §3), then b is added once.

Why fp32 partials: spec §3 bounds ``|C - ref| <= 2^-8 |ref| + 2^-12 sum_k |a_k b_k|`` with
one final bf16 rounding. Rounding each rank's partial to bf16 before the sum would add up to
world x 2^-9 |partial_r| of error, which is not bounded by 2^-8 |ref| when partials cancel
(|ref| << sum_r |partial_r|). With fp32 partials the only extra error is the all-reduce's
(world - 1) fp32 additions, at most (world - 1) 2^-24 sum_k |a_k b_k| (docs/tensor-parallel.md).

Collectives are torch.distributed's (``all_gather`` / ``all_reduce`` on the module's process
group, any backend: gloo for CPU tensors, nccl for CUDA). Inference only: no gradients flow.

FP8 image (opt-in, ``fp8=True`` on the constructors and ``from_*``): each rank's
``local`` MXFP4Linear holds the FP8 image of its own shard (see
:class:`mxfp4.nn.MXFP4Linear`; docs/fp8-path.md), so the CUDA GEMM takes path fp8 for more
than 64 tokens (more than 32 with N x K >= 10 Mi weights: explain() tells). A full PackedTensor
that carries an image gives shards with images too.

``weights_static``: both modules pass their ``local`` MXFP4Linear's ``weights_static``
attribute to the GEMM (set ``layer.local.weights_static = True`` once the shard is loaded and
synchronised; see :class:`mxfp4.nn.MXFP4Linear`).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from . import _api, _core
from ._api import PackedTensor
from ._core import PACKED_LAYOUT_VERSION
from .nn import MXFP4Linear, _as_torch, _bf16_unit_stride, _check_input
from .tp import shard_packed, shard_range

__all__ = ["ColumnParallelMXFP4Linear", "RowParallelMXFP4Linear"]


def _resolve_group(process_group, rank, world_size):
    """(group, rank, world_size): from the process group (default: the WORLD group) when
    torch.distributed is initialized, where explicit rank/world_size must agree with it;
    otherwise both must be given (a module built that way can run its forward only when
    world_size == 1)."""
    _core._size_args("tensor-parallel layer", **{k: v for k, v in (("rank", rank), ("world_size", world_size))
                                                 if v is not None})
    if dist.is_available() and dist.is_initialized():
        group = process_group if process_group is not None else dist.group.WORLD
        g_rank, g_world = dist.get_rank(group), dist.get_world_size(group)
        if g_rank < 0:
            raise ValueError("this process is not a member of the given process_group")
        if (rank is not None and int(rank) != g_rank) or (world_size is not None and int(world_size) != g_world):
            raise ValueError(f"rank = {rank} and world_size = {world_size} disagree with the process group "
                             f"(rank {g_rank} of {g_world})")
        return group, g_rank, g_world
    if process_group is not None:
        raise ValueError("process_group was given but torch.distributed is not initialized")
    if rank is None or world_size is None:
        raise ValueError("torch.distributed is not initialized: pass rank and world_size "
                         f"(got rank = {rank}, world_size = {world_size})")
    return None, int(rank), int(world_size)


def _no_bias_dtype(kw, fn):
    """The from_* constructors copy the bias with its own dtype, as MXFP4Linear's do (which
    take no bias_dtype either): refuse the keyword rather than ignore it."""
    if "bias_dtype" in kw:
        raise TypeError(f"{fn}() got an unexpected keyword argument 'bias_dtype' (the bias keeps its own dtype; "
                        "cast it before the call)")


def _bias_tensor(bias, n, device):
    if bias is None:
        return None
    b = _as_torch(bias, "bias").to(device)
    if tuple(b.shape) != (n,):
        raise ValueError(f"bias must have shape ({n},) (out_features of the full layer); got {tuple(b.shape)}")
    return b


def _full_packed(codes, scales, code_layout, scale_layout, N, K) -> PackedTensor:
    codes, scales = _as_torch(codes, "codes"), _as_torch(scales, "scales")
    return _api.prepack(codes, scales, N=N, K=K, code_layout=code_layout, scale_layout=scale_layout)


_WORLD = "mxfp4.tp:WORLD"  # a pickled module's record of the WORLD process group


class _ParallelLinear(nn.Module):
    """Process group handling and state shared by the two layouts (not public)."""

    _dim = "N"

    def __init__(self, in_features, out_features, rule, process_group, rank, world_size, fp8=False):
        super().__init__()
        _core._size_args(type(self).__name__, in_features=in_features, out_features=out_features)
        self.group, self.rank, self.world_size = _resolve_group(process_group, rank, world_size)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.fp8 = bool(fp8)
        full = self.out_features if self._dim == "N" else self.in_features
        self.shard_start, self.shard_stop = shard_range(full, self.rank, self.world_size, self._dim)

    def __getstate__(self):
        """Pickling and copy.deepcopy: a process group cannot be pickled, so the WORLD group is
        recorded by name and looked up again when the module is restored (__setstate__).

        Raises:
            TypeError: the module is bound to a group other than WORLD (save its state_dict and
                build the layer again under that group instead).
        """
        state = self.__dict__.copy()
        if state.get("group") is not None:
            if not (dist.is_available() and dist.is_initialized() and state["group"] == dist.group.WORLD):
                raise TypeError(f"{type(self).__name__} is bound to a process group other than WORLD, which "
                                "cannot be pickled or deep-copied; save its state_dict and build the layer "
                                "again under that group")
            state["group"] = _WORLD
        return state

    def __setstate__(self, state):
        """Restores a pickled module: the WORLD group of this process where one was recorded
        (its rank and world size must be the pickled ones), else no group."""
        state = dict(state)
        if state.get("group") == _WORLD:
            state["group"], _, _ = _resolve_group(None, state["rank"], state["world_size"])
        super().__setstate__(state)

    @property
    def rule(self) -> str:
        """The activations' scale rule: the local shard's, which a loaded state dict sets."""
        return self.local.rule

    @rule.setter
    def rule(self, value: str) -> None:
        _core._rule(value)  # ValueError for an unknown rule, as the constructor
        self.local.rule = value

    def _require_group(self):
        if self.world_size > 1 and self.group is None:
            raise RuntimeError(f"{type(self).__name__} with world_size = {self.world_size} needs an initialized "
                               "torch.distributed process group for its forward")

    def get_extra_state(self):
        return {"rank": self.rank, "world_size": self.world_size, "in_features": self.in_features,
                "out_features": self.out_features}

    def set_extra_state(self, state):
        got = tuple(state.get(k) for k in ("rank", "world_size", "in_features", "out_features"))
        want = (self.rank, self.world_size, self.in_features, self.out_features)
        if got != want:
            raise ValueError(f"state_dict is the shard (rank, world_size, in_features, out_features) = {got}; "
                             f"this module is {want}")

    @classmethod
    def _from_full_packed(cls, packed, rule, axis, kw):
        """A layer of shape ``packed``'s (K, N) without weights (on "meta") and this rank's
        shard of ``packed`` along ``axis`` ("N" or "K"); returns (layer, shard, device). The
        layer's fp8 option is on when asked for or when ``packed`` carries an FP8 image."""
        if not isinstance(packed, PackedTensor):
            raise TypeError(f"packed must be a mxfp4.PackedTensor; got {type(packed).__name__}")
        _no_bias_dtype(kw, "from_packed")
        device = kw.pop("device", None)  # where the shard goes (default: packed's device)
        m = cls(packed.K, packed.N, bias=False, rule=rule, device="meta", **kw)
        data = _as_torch(packed.data, "packed.data")
        if device is not None:
            data = data.to(device)
        # An FP8 image of the full weights is not sliced: shard_packed builds the shard's own.
        m.fp8 = m.fp8 or packed.fp8 is not None
        shard = shard_packed(PackedTensor(data, packed.N, packed.K, packed.version), m.rank, m.world_size, axis)
        return m, shard, data.device

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}, "
                f"world_size={self.world_size}, shard={self._dim}[{self.shard_start}:{self.shard_stop}]")


class ColumnParallelMXFP4Linear(_ParallelLinear):
    """Column-parallel ``y = x @ W^T + b``: this rank holds output rows
    ``[rank N/world, (rank+1) N/world)`` of W [N, K] (and of b) as MXFP4 in ``self.local``
    (an :class:`mxfp4.nn.MXFP4Linear` of ``out_features / world_size`` outputs).

    Forward: ``x [..., K]`` (any float dtype; bf16 for the GEMM, as MXFP4Linear) ->
    ``[..., N]`` in x's dtype when ``gather_output`` (all ranks' slices all-gathered and
    concatenated in rank order), else this rank's ``[..., N/world]`` slice (e.g. to feed a
    :class:`RowParallelMXFP4Linear` with ``input_is_parallel=True``). Every element equals
    the unsharded layer's on the same backend and kernel configuration: no sum crosses ranks.

    Build from the full (unsharded) weights with :meth:`from_linear`, :meth:`from_mxfp4` or
    :meth:`from_packed`; the constructor makes zero shards for ``load_state_dict``
    (extra state: rank and world_size, checked on load).

    Args:
        in_features: K (a positive multiple of 32). out_features: N, divisible by world_size.
        bias: whether the layer has a bias. rule: scale rule for the activations.
        gather_output: all-gather the output slices (default) or return this rank's slice.
        process_group: torch.distributed group (default: the WORLD group); rank and
            world_size come from it. Without an initialized torch.distributed pass ``rank``
            and ``world_size`` (forward then needs world_size == 1).
        device, bias_dtype, fp8: as MXFP4Linear (``fp8``: this rank's shard holds its FP8
            image; also a keyword of every ``from_*``).

    Raises:
        ValueError: N not divisible by world_size, bad rank/world_size or process group,
            sizes the packed layout rejects, unknown rule.
    """

    _dim = "N"

    def __init__(self, in_features: int, out_features: int, bias: bool = True, rule: str = "aiter", *,
                 gather_output: bool = True, process_group=None, rank: int | None = None,
                 world_size: int | None = None, device=None, bias_dtype: torch.dtype | None = None,
                 fp8: bool = False):
        super().__init__(in_features, out_features, rule, process_group, rank, world_size, fp8)
        self.gather_output = bool(gather_output)
        self.local = MXFP4Linear(self.in_features, self.shard_stop - self.shard_start, bias=bias, rule=rule,
                                 device=device, bias_dtype=bias_dtype, fp8=fp8)

    @classmethod
    def from_packed(cls, packed: PackedTensor, bias=None, rule: str = "aiter", **kw) -> "ColumnParallelMXFP4Linear":
        """From the full packed weights W [N, K] (:class:`mxfp4.PackedTensor`, any device) and
        the full bias ``[N]`` (or None): keeps this rank's shard (``mxfp4.tp.shard_packed``,
        byte-identical to packing the sliced weights). ``kw``: gather_output, process_group,
        rank, world_size, fp8, device (where the shard goes; default: packed's device).

        Raises:
            TypeError: not a PackedTensor / another layout version / a bias_dtype keyword (the
            bias keeps its dtype). ValueError: as the class.
        """
        m, shard, device = cls._from_full_packed(packed, rule, "N", kw)
        b = _bias_tensor(bias, packed.N, device)
        b = None if b is None else b[m.shard_start:m.shard_stop]
        m.local = MXFP4Linear.from_packed(shard, bias=b, rule=rule, fp8=m.fp8)
        return m

    @classmethod
    def from_mxfp4(cls, codes, scales, bias=None, code_layout: str = "plain", scale_layout: str = "plain",
                   N: int | None = None, K: int | None = None, rule: str = "aiter",
                   **kw) -> "ColumnParallelMXFP4Linear":
        """From the full MXFP4 weights (codes ``uint8 [N, K/2]`` and scales, plain or AITER
        layouts as :func:`mxfp4.prepack`; torch tensors or numpy arrays) and the full bias."""
        return cls.from_packed(_full_packed(codes, scales, code_layout, scale_layout, N, K), bias=bias, rule=rule, **kw)

    @classmethod
    def from_linear(cls, linear: nn.Linear, rule: str = "aiter", device=None, **kw) -> "ColumnParallelMXFP4Linear":
        """Quantizes this rank's rows of ``linear.weight`` with :func:`mxfp4.prepack_dense`
        (identical to sharding the quantized full weight: blocks run along K) on ``device``
        (default: the weight's device); the bias slice is copied."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear; got {type(linear).__name__}")
        _no_bias_dtype(kw, "from_linear")
        m = cls(linear.in_features, linear.out_features, bias=False, rule=rule, device="meta", **kw)
        rows = nn.Linear(linear.in_features, m.shard_stop - m.shard_start, bias=linear.bias is not None,
                         device="meta")
        rows.weight = nn.Parameter(linear.weight.detach()[m.shard_start:m.shard_stop], requires_grad=False)
        if linear.bias is not None:
            rows.bias = nn.Parameter(linear.bias.detach()[m.shard_start:m.shard_stop], requires_grad=False)
        m.local = MXFP4Linear.from_linear(rows, rule=rule, device=device, fp8=m.fp8)
        return m

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., in_features]`` -> ``[..., out_features]`` (gathered) or this rank's
        ``[..., out_features / world_size]`` slice, in x's dtype."""
        y = self.local(x)
        if not self.gather_output or self.world_size == 1:
            return y
        self._require_group()
        y = y.contiguous()
        parts = [torch.empty_like(y) for _ in range(self.world_size)]
        dist.all_gather(parts, y, group=self.group)
        return torch.cat(parts, dim=-1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", gather_output={self.gather_output}"


class RowParallelMXFP4Linear(_ParallelLinear):
    """Row-parallel ``y = x @ W^T + b``: this rank holds input columns
    ``[rank K/world, (rank+1) K/world)`` of W [N, K] as MXFP4 in ``self.local`` (an
    :class:`mxfp4.nn.MXFP4Linear` of ``in_features / world_size`` inputs, no bias); K/world
    must be a multiple of 32 (the E8M0 block). The full bias ``[N]`` is held on every rank
    and added once, after the reduction.

    Forward: x is ``[..., K]`` (the slice is taken here) or, with ``input_is_parallel``,
    already this rank's ``[..., K/world]`` (e.g. a ColumnParallelMXFP4Linear's slice). The
    partial ``quantize(x_r) @ W_r^T`` is computed in fp32 (``mxfp4.gemm(...,
    out_dtype=float32)``), summed over ranks in fp32 (``all_reduce``, or, with
    ``deterministic``, ``all_gather`` and a sum in rank order), rounded once to bf16, cast
    to x's dtype, and the bias added: the unsharded layer's result up to the order of the
    fp32 additions. Within spec §3's bound plus (world - 1) 2^-24 sum_k |a_k b_k| for the
    cross-rank fp32 additions (docs/tensor-parallel.md). Every rank returns the same tensor.

    Args:
        in_features: K, with K / world_size a multiple of 32. out_features: N.
        bias, rule, process_group, rank, world_size, device, bias_dtype, fp8: as
            :class:`ColumnParallelMXFP4Linear`.
        input_is_parallel: x is already this rank's K slice.
        deterministic: sum the partials in rank order after an all_gather (bit-identical
            on every run whatever the collective's algorithm; world_size times the traffic)
            instead of all_reduce (whose fp32 summation order is the backend's choice; for
            world_size 2 both orders give the same bits, addition being commutative).

    Raises:
        ValueError: K / world_size not a multiple of 32, bad rank/world_size or group,
            an input whose last dimension is neither K nor (input_is_parallel) K / world_size.
    """

    _dim = "K"

    def __init__(self, in_features: int, out_features: int, bias: bool = True, rule: str = "aiter", *,
                 input_is_parallel: bool = False, deterministic: bool = False, process_group=None,
                 rank: int | None = None, world_size: int | None = None, device=None,
                 bias_dtype: torch.dtype | None = None, fp8: bool = False):
        super().__init__(in_features, out_features, rule, process_group, rank, world_size, fp8)
        self.input_is_parallel, self.deterministic = bool(input_is_parallel), bool(deterministic)
        self.local = MXFP4Linear(self.shard_stop - self.shard_start, self.out_features, bias=False, rule=rule,
                                 device=device, fp8=fp8)
        if bias:
            dt = bias_dtype if bias_dtype is not None else torch.get_default_dtype()
            self.bias = nn.Parameter(torch.zeros(self.out_features, dtype=dt, device=device), requires_grad=False)
        else:
            self.register_parameter("bias", None)

    @classmethod
    def from_packed(cls, packed: PackedTensor, bias=None, rule: str = "aiter", **kw) -> "RowParallelMXFP4Linear":
        """From the full packed weights W [N, K] and the full bias ``[N]`` (or None): keeps
        this rank's K shard (``mxfp4.tp.shard_packed``). ``kw``: input_is_parallel,
        deterministic, process_group, rank, world_size, fp8, device (as the column layer's).

        Raises:
            TypeError: not a PackedTensor / another layout version / a bias_dtype keyword (the
            bias keeps its dtype). ValueError: as the class.
        """
        m, shard, device = cls._from_full_packed(packed, rule, "K", kw)
        m.local = MXFP4Linear.from_packed(shard, rule=rule, fp8=m.fp8)
        b = _bias_tensor(bias, packed.N, device)
        if b is not None:
            m.bias = nn.Parameter(b.clone(), requires_grad=False)
        return m

    @classmethod
    def from_mxfp4(cls, codes, scales, bias=None, code_layout: str = "plain", scale_layout: str = "plain",
                   N: int | None = None, K: int | None = None, rule: str = "aiter", **kw) -> "RowParallelMXFP4Linear":
        """From the full MXFP4 weights (as :func:`mxfp4.prepack`) and the full bias."""
        return cls.from_packed(_full_packed(codes, scales, code_layout, scale_layout, N, K), bias=bias, rule=rule, **kw)

    @classmethod
    def from_linear(cls, linear: nn.Linear, rule: str = "aiter", device=None, **kw) -> "RowParallelMXFP4Linear":
        """Quantizes this rank's columns of ``linear.weight`` with :func:`mxfp4.prepack_dense`
        (identical to sharding the quantized full weight: the split falls on block
        boundaries) on ``device`` (default: the weight's device); the full bias is copied."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear; got {type(linear).__name__}")
        _no_bias_dtype(kw, "from_linear")
        m = cls(linear.in_features, linear.out_features, bias=False, rule=rule, device="meta", **kw)
        cols = nn.Linear(m.shard_stop - m.shard_start, linear.out_features, bias=False, device="meta")
        cols.weight = nn.Parameter(linear.weight.detach()[:, m.shard_start:m.shard_stop].contiguous(),
                                   requires_grad=False)
        m.local = MXFP4Linear.from_linear(cols, rule=rule, device=device, fp8=m.fp8)
        if linear.bias is not None:
            m.bias = nn.Parameter(linear.bias.detach().to(m.local.weight_packed.device).clone(), requires_grad=False)
        return m

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., in_features]`` (or ``[..., in_features / world_size]`` with
        input_is_parallel) -> ``[..., out_features]`` in x's dtype, the same on every rank."""
        _check_input(x, type(self).__name__)
        k_local = self.shard_stop - self.shard_start
        if self.input_is_parallel:
            if x.shape[-1] != k_local:
                raise ValueError(f"input_is_parallel: x must be this rank's [..., {k_local}] slice of K = "
                                 f"{self.in_features}; got shape {tuple(x.shape)}")
            xl = x
        else:
            if x.shape[-1] != self.in_features:
                raise ValueError(f"x must be [..., {self.in_features}] (in_features); got shape {tuple(x.shape)}")
            xl = x[..., self.shard_start:self.shard_stop]
        xb = _bf16_unit_stride(xl)
        part = torch.ops.mxfp4.gemm(xb, self.local.weight_packed, self.out_features, k_local, PACKED_LAYOUT_VERSION,
                                    self.local.rule, torch.float32, self.local.weight_fp8, self.local.weights_static)
        if self.world_size > 1:
            self._require_group()
            if self.deterministic:
                parts = [torch.empty_like(part) for _ in range(self.world_size)]
                dist.all_gather(parts, part, group=self.group)
                part = parts[0].clone()
                for p in parts[1:]:
                    part += p
            else:
                dist.all_reduce(part, op=dist.ReduceOp.SUM, group=self.group)
        y = part.to(torch.bfloat16)  # the one final rounding of spec §3's C
        if y.dtype != x.dtype:
            y = y.to(x.dtype)
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y

    def extra_repr(self) -> str:
        return (super().extra_repr() + f", bias={self.bias is not None}, input_is_parallel={self.input_is_parallel}, "
                f"deterministic={self.deterministic}")
