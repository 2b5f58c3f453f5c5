"""Sharding MXFP4 weights for tensor parallelism.

A linear layer ``y = x @ B^T`` with weights B [N, K] is split over ``world`` ranks either

* column-parallel (``dim="N"``): rank r holds rows ``[r*N/world, (r+1)*N/world)`` of B and
  computes that slice of the output columns, or
* row-parallel (``dim="K"``): rank r holds columns ``[r*K/world, (r+1)*K/world)`` of B (and
  of x) and computes a partial sum that the ranks add up (an all-reduce).

MXFP4 shares one E8M0 scale per 32 elements along K, so a K split must fall on a block
boundary (``K/world`` a multiple of 32); an N split has no constraint beyond N % world == 0.
Sharding works on the plain MXFP4 arrays (exactly a slice of codes and scales) and on a
:class:`~mxfp4.PackedTensor` (unpack, slice, prepack: byte-identical to prepacking the
sliced plain weights). Works on numpy arrays and torch tensors (CPU or CUDA) alike.

The distributed layers :class:`ColumnParallelMXFP4Linear` and :class:`RowParallelMXFP4Linear`
(torch.distributed collectives around these shards; defined in :mod:`mxfp4.tp_nn`, which needs
torch) are importable from here too. Guide: docs/tensor-parallel.md.
"""

from __future__ import annotations

from ._api import PackedTensor, prepack, unpack
from ._core import BLOCK_SIZE, _size_args

__all__ = ["shard_range", "shard", "shard_packed", "ColumnParallelMXFP4Linear", "RowParallelMXFP4Linear"]

_LAYERS = ("ColumnParallelMXFP4Linear", "RowParallelMXFP4Linear")


def __getattr__(name):
    # The layers need torch; import them on first use so that numpy-only installs can shard.
    if name in _LAYERS:
        from . import tp_nn

        return getattr(tp_nn, name)
    raise AttributeError(f"module 'mxfp4.tp' has no attribute {name!r}")


def shard_range(size: int, rank: int, world: int, dim: str) -> tuple:
    """``(start, stop)`` of rank ``rank``'s slice of a dimension of ``size`` elements.

    Raises:
        TypeError: size, rank or world not an integer (bool included; a float is not truncated).
        ValueError: world < 1, rank outside [0, world), size not divisible by world, or (for
            ``dim="K"``) a slice that does not end on a 32-element block boundary.
    """
    _size_args("shard_range", size=size, rank=rank, world=world)
    size, rank, world = int(size), int(rank), int(world)
    if dim not in ("N", "K"):
        raise ValueError(f"dim must be 'N' (column-parallel) or 'K' (row-parallel); got {dim!r}")
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank = {rank} and world = {world}: need world >= 1 and 0 <= rank < world")
    if size % world != 0:
        raise ValueError(f"{dim} = {size} is not divisible by world = {world}")
    part = size // world
    if dim == "K" and part % BLOCK_SIZE != 0:
        raise ValueError(f"K = {size} split over world = {world} gives {part} columns per rank, not a multiple of "
                         f"the {BLOCK_SIZE}-element block: a row-parallel split must fall on block boundaries")
    return rank * part, (rank + 1) * part


def shard(codes, scales, rank: int, world: int, dim: str):
    """Rank ``rank``'s shard of plain MXFP4 weights ``codes uint8 [N, K/2]``,
    ``scales uint8 [N, K/32]`` (views, no copy), for ``dim`` ``"N"`` or ``"K"``.

    Raises:
        ValueError: as :func:`shard_range`; codes/scales not 2-D or of mismatched shapes.
    """
    if codes.ndim != 2 or scales.ndim != 2 or codes.shape[0] != scales.shape[0] or \
            codes.shape[1] * 2 != scales.shape[1] * BLOCK_SIZE:
        raise ValueError(f"codes [N, K/2] and scales [N, K/32] expected; got shapes {tuple(codes.shape)} and "
                         f"{tuple(scales.shape)}")
    N, K = codes.shape[0], codes.shape[1] * 2
    if dim == "N":
        n0, n1 = shard_range(N, rank, world, "N")
        return codes[n0:n1], scales[n0:n1]
    k0, k1 = shard_range(K, rank, world, dim)
    return codes[:, k0 // 2:k1 // 2], scales[:, k0 // BLOCK_SIZE:k1 // BLOCK_SIZE]


def shard_packed(packed: PackedTensor, rank: int, world: int, dim: str) -> PackedTensor:
    """Rank ``rank``'s shard of packed weights, packed again: byte-identical to
    ``prepack(*shard(*unpack(packed), rank, world, dim))`` (same framework and device).
    When ``packed`` carries an FP8 image (:func:`mxfp4.prepack_fp8`) the shard gets its own,
    built from the shard (an image is not sliceable: its rows are padded to 128 and its
    groups span 128 K).

    Raises:
        TypeError: ``packed`` is not a PackedTensor. ValueError: as :func:`shard_range`.
    """
    if not isinstance(packed, PackedTensor):
        raise TypeError(f"packed must be a mxfp4.PackedTensor; got {type(packed).__name__}")
    shard_range(packed.N if dim == "N" else packed.K, rank, world, dim)  # validate before unpacking
    codes, scales = unpack(packed)
    c, s = shard(codes, scales, rank, world, dim)
    if hasattr(c, "contiguous"):  # torch: the bindings want unit stride along K and dense rows
        c, s = c.contiguous(), s.contiguous()
    else:
        import numpy as np

        c, s = np.ascontiguousarray(c), np.ascontiguousarray(s)
    return prepack(c, s, fp8=packed.fp8 is not None)
