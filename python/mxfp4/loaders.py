"""Loaders of third-party MXFP4 weights into :class:`mxfp4.PackedTensor`.

* AITER tensors (:func:`from_aiter`): ``B_q uint8 [N, K/2]`` (plain, spec §1.1) or
  ``B_shuffle`` (``shuffle_weight(B_q, layout=(16, 16))``, spec §4.2), with scales
  ``uint8 [N, K/32]`` plain or ``B_scale_sh`` (``e8m0_shuffle``, spec §4.1).
* gpt-oss / openai MXFP4 checkpoints (:func:`from_gpt_oss`, :func:`load_gpt_oss`):
  ``<name>_blocks`` (or ``<name>.blocks``) ``uint8 [..., N, K/32, 16]`` and ``<name>_scales``
  (or ``.scales``) ``uint8 [..., N, K/32]``. Each byte of a block holds two e2m1 codes with
  the FIRST element in the LOW nibble (openai/gpt-oss ``gpt_oss/torch/weights.py`` decodes
  ``blk & 0x0F`` to the even and ``blk >> 4`` to the odd elements), and scales are E8M0 with
  bias 127: exactly our plain layout, so the blocks reshape to codes ``[..., N, K/2]``
  without any conversion (and without a copy). Leading dimensions (experts) give a list.
* A small safetensors reader and writer (:func:`read_safetensors`, :func:`write_safetensors`)
  with json + numpy only, so no extra package is needed.
"""

from __future__ import annotations

import json
import math
import os
import struct

import numpy as np

from . import _api
from ._api import PackedTensor
from ._core import _array, _is_torch, torch

__all__ = ["from_aiter", "from_gpt_oss", "load_gpt_oss", "read_safetensors", "write_safetensors"]


def from_aiter(w, w_scale, N: int | None = None, K: int | None = None, weight_layout: str = "plain",
               scale_layout: str = "plain") -> PackedTensor:
    """Packs AITER-format MXFP4 weights for :func:`mxfp4.gemm`.

    Args:
        w: ``B_q uint8 [N, K/2]`` (``weight_layout="plain"``) or ``B_shuffle``
            (``weight_layout="shuffled"``, needs N % 16 == 0 and K % 64 == 0); torch
            ``float4_e2m1fn_x2`` is read as bytes.
        w_scale: ``uint8 [N, K/32]`` (``scale_layout="plain"``) or ``B_scale_sh``, the
            ``e8m0_shuffle`` buffer ``[round_up(N, 256), round_up(K/32, 8)]``
            (``scale_layout="shuffled"``); torch ``float8_e8m0fnu`` is read as bytes.
        N, K: optional, checked against w's shape.

    Returns:
        :class:`mxfp4.PackedTensor` in w's framework and device.

    Raises:
        ValueError: sizes that do not match, unknown layout names. TypeError: dtypes.
    """
    return _api.prepack(w, w_scale, N=N, K=K, code_layout=_layout(weight_layout), scale_layout=_layout(scale_layout))


def _layout(name):
    return {"shuffled": "aiter_shuffled"}.get(name, name)


def from_gpt_oss(blocks, scales):
    """Packs gpt-oss MXFP4 weights: ``blocks uint8 [..., N, K/32, 16]`` and
    ``scales uint8 [..., N, K/32]`` (numpy or torch).

    Returns:
        A :class:`mxfp4.PackedTensor` for B [N, K] when there are no leading dimensions, else
        a flat list of them over the leading dimensions in row-major order (e.g. one per
        expert for ``[E, N, K/32, 16]``).

    Raises:
        ValueError: shapes that are not ``[..., N, G, 16]`` and ``[..., N, G]``.
        TypeError: dtypes other than uint8.
    """
    blocks, scales = _array(blocks, "blocks"), _array(scales, "scales")
    bs, ss = tuple(blocks.shape), tuple(scales.shape)
    if len(bs) < 3 or bs[-1] != 16 or bs[:-1] != ss:
        raise ValueError(f"gpt-oss weights need blocks [..., N, K/32, 16] and scales [..., N, K/32]; got blocks "
                         f"{bs} and scales {ss}")
    lead, N, G = bs[:-3], bs[-3], bs[-2]
    K = 32 * G
    codes = blocks.reshape(*lead, N, 16 * G)
    if not lead:
        return _api.prepack(codes, scales, N=N, K=K)
    n = int(np.prod(lead))
    codes = codes.reshape(n, N, 16 * G)
    scales = scales.reshape(n, N, G)
    return [_api.prepack(codes[i], scales[i], N=N, K=K) for i in range(n)]


def load_gpt_oss(path, names=None, framework: str = "numpy", device=None) -> dict:
    """Loads the MXFP4 weights of a gpt-oss safetensors checkpoint.

    Args:
        path: a ``.safetensors`` file or a folder of them.
        names: weight names to load (without the ``_blocks`` / ``.blocks`` suffix); None
            loads every ``*_blocks``/``*_scales`` (or ``.blocks``/``.scales``) pair.
        framework: ``"numpy"`` (packing on the CPU) or ``"torch"`` (tensors on ``device``,
            default CPU; packing runs there).

    Returns:
        ``{name: PackedTensor or list of PackedTensor}`` (see :func:`from_gpt_oss`).

    Raises:
        KeyError: a requested name with no blocks/scales pair. ValueError: a malformed file
        or weight shapes. TypeError: weights that are not uint8; names given as one string
        (it would be read letter by letter).
    """
    if isinstance(names, (str, bytes)):
        raise TypeError(f"names must be a list of weight names, not one string ({names!r}): pass [{names!r}]")
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".safetensors"))
    tensors = {}
    for f in files:
        tensors.update(read_safetensors(f))
    pairs = {}
    for key in tensors:
        for sep in ("_", "."):
            if key.endswith(sep + "blocks") and key[: -len("blocks")] + "scales" in tensors:
                pairs[key[: -len(sep + "blocks")]] = (key, key[: -len("blocks")] + "scales")
    if names is None:
        names = sorted(pairs)
    out = {}
    for name in names:
        if name not in pairs:
            raise KeyError(f"no '{name}_blocks'/'{name}_scales' (or .blocks/.scales) pair in {path}")
        b, s = tensors[pairs[name][0]], tensors[pairs[name][1]]
        if framework == "torch":
            if torch is None:
                raise ValueError("framework='torch' needs torch")
            b = torch.from_numpy(np.array(b)).to(device or "cpu")
            s = torch.from_numpy(np.array(s)).to(device or "cpu")
        elif framework != "numpy":
            raise ValueError(f"framework must be 'numpy' or 'torch'; got {framework!r}")
        out[name] = from_gpt_oss(b, s)
    return out


# ---------------------------------------------------------------------------------------
# safetensors (https://github.com/huggingface/safetensors: 8-byte little-endian header
# length, a JSON header {name: {dtype, shape, data_offsets}}, then the data buffer)
# ---------------------------------------------------------------------------------------

_ST_DTYPES = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "F16": np.dtype("<f2"),
    "U32": np.dtype("<u4"), "I32": np.dtype("<i4"), "F32": np.dtype("<f4"),
    "U64": np.dtype("<u8"), "I64": np.dtype("<i8"), "F64": np.dtype("<f8"),
    "BF16": np.dtype("<u2"),  # bit patterns (ml_dtypes.bfloat16 view when installed)
    "F8_E8M0": np.dtype(np.uint8),  # E8M0 scale bytes
}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry_fields(path, name, info):
    """(numpy dtype, shape, begin, end) of one header entry of a safetensors file, checked: a JSON object
    with a supported "dtype", a "shape" list of non-negative integers and "data_offsets" of two
    integers, begin <= end (ValueError naming the tensor otherwise)."""
    if not isinstance(info, dict):
        raise ValueError(f"{path}: tensor {name!r}: header entry is not a JSON object ({info!r})")
    for key in ("dtype", "shape", "data_offsets"):
        if key not in info:
            raise ValueError(f"{path}: tensor {name!r}: header entry has no {key!r}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in _ST_DTYPES:
        raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ValueError(f"{path}: tensor {name!r} has shape {shape!r}: a list of non-negative integers expected")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_int(v) for v in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise ValueError(f"{path}: tensor {name!r} has data_offsets {offsets!r}: [begin, end] with "
                         "0 <= begin <= end expected")
    return _ST_DTYPES[dtype], tuple(shape), offsets[0], offsets[1]


def read_safetensors(path) -> dict:
    """Reads every tensor of a ``.safetensors`` file as numpy arrays (memory-mapped,
    read-only). BF16 tensors come back as ``ml_dtypes.bfloat16`` (uint16 bits without
    ml_dtypes); F8_E8M0 as uint8.

    Raises:
        ValueError: a truncated or malformed file, or an unsupported dtype.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise ValueError(f"{path}: header length {n} exceeds the file size {size}")
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise ValueError(f"{path}: malformed safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: malformed safetensors header (a JSON object expected, got {type(header).__name__})")
    base = 8 + n
    mm = np.memmap(path, dtype=np.uint8, mode="r") if size > base else np.zeros(0, np.uint8)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt, shape, begin, end = _entry_fields(path, name, info)
        count = math.prod(shape)  # exact (Python ints): a huge shape cannot wrap to fit
        if end - begin != count * dt.itemsize or base + end > size:
            raise ValueError(f"{path}: tensor {name!r} has data_offsets {info['data_offsets']} that do not fit "
                             f"shape {list(shape)} x {info['dtype']} in a file of {size} bytes")
        arr = mm[base + begin: base + end].view(dt).reshape(shape)
        if info["dtype"] == "BF16":
            from ._core import _NP_BF16

            if _NP_BF16 is not None:
                arr = arr.view(_NP_BF16)
        out[name] = arr
    return out


def write_safetensors(path, tensors: dict, metadata: dict | None = None) -> None:
    """Writes ``{name: array}`` (numpy arrays or CPU torch tensors of the dtypes above, 0-d
    included; torch bfloat16 and ml_dtypes.bfloat16 as BF16, torch and ml_dtypes float8_e8m0fnu
    as F8_E8M0) to a ``.safetensors`` file.

    Raises:
        TypeError: a dtype with no safetensors code here. ValueError: a tensor named
        ``__metadata__`` (the format's key for ``metadata``).
    """
    if "__metadata__" in tensors:
        raise ValueError("a tensor may not be named '__metadata__': the safetensors header keeps that key for metadata")
    entries, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        st = None
        if _is_torch(t):
            if t.dtype == torch.bfloat16:
                t, st = t.detach().cpu().view(torch.int16).numpy().view(np.uint16), "BF16"
            elif t.dtype == getattr(torch, "float8_e8m0fnu", None):
                t, st = t.detach().cpu().view(torch.uint8).numpy(), "F8_E8M0"
            else:
                t = t.detach().cpu().numpy()
        t = np.ascontiguousarray(t).reshape(np.shape(t))  # ascontiguousarray makes a 0-d array 1-d
        if st is None:
            if t.dtype.name == "bfloat16":
                st, t = "BF16", t.view(np.uint16)
            elif t.dtype.name == "float8_e8m0fnu":  # ml_dtypes' E8M0: the scale bytes
                st, t = "F8_E8M0", t.view(np.uint8)
            else:
                st = next((k for k, v in _ST_DTYPES.items() if v == t.dtype.newbyteorder("<") and k not in
                           ("BF16", "F8_E8M0")), None)
                if st is None:
                    raise TypeError(f"tensor {name!r}: dtype {t.dtype} has no safetensors code here")
        data = t.astype(t.dtype.newbyteorder("<"), copy=False).tobytes()
        entries[name] = {"dtype": st, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        entries["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    header = json.dumps(entries, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for b in blobs:
            f.write(b)
