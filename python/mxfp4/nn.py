"""torch.nn modules backed by the mxfp4 GEMM (requires torch)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import _api, _core
from ._api import PackedTensor
from ._core import PACKED_LAYOUT_VERSION

__all__ = ["MXFP4Linear"]


def _check_input(x, who):
    """The checks torch.nn.Linear's forward makes of x, with our errors: a tensor (TypeError)
    of a floating dtype (TypeError: an integer x would come back truncated) with at least one
    dimension (ValueError)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{who}: x must be a torch.Tensor; got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{who}: x must have a floating dtype; got {x.dtype}")
    if x.dim() == 0:
        raise ValueError(f"{who}: x must have at least one dimension [..., in_features]; got a scalar")


def _bf16_unit_stride(x):
    """x as bf16 whose rows [.., K] the GEMM can read: unit stride along K, rows not overlapping
    (torch.nn.Linear takes any strides, so a transposed or expanded view is copied, not
    rejected; a row-strided view, e.g. a K slice, is kept)."""
    xb = x if x.dtype == torch.bfloat16 else x.to(torch.bfloat16)
    x2 = xb.reshape(-1, xb.shape[-1])  # the [rows, K] the GEMM reads (a copy only where no view exists)
    if x2.stride(-1) != 1 or (x2.shape[0] > 1 and x2.stride(0) < x2.shape[1]):  # transposed or overlapping rows
        x2 = x2.contiguous()
    return x2.reshape(xb.shape)


def _as_torch(x, name):
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x)
    raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray; got {type(x).__name__}")


class MXFP4Linear(nn.Module):
    """``y = x @ W^T + b`` with W held as MXFP4 (packed layout v3) and the product computed
    by :func:`mxfp4.gemm` (x quantized per 1x32 block to MXFP4, fp32 accumulation).

    Shapes and dtypes: ``x [..., in_features]`` of any floating dtype (cast to bfloat16 for
    the GEMM); ``y [..., out_features]`` in x's dtype (the bf16 GEMM result, cast), plus the
    bias (added in x's dtype). ``in_features`` must be a positive multiple of 32.

    State (``state_dict``): ``weight_packed`` (buffer, uint8 ``[packed_bytes(N, K)]``),
    ``bias`` (parameter, ``[out_features]``, ``requires_grad=False``, when present) and an
    extra state ``{"version", "in_features", "out_features", "rule"}`` checked on load
    (TypeError for another packed layout version, ValueError for other sizes).

    FP8 image (opt-in, ``fp8=True``; docs/fp8-path.md): the module also holds
    ``weight_fp8``, the weights' FP8 image (non-persistent buffer, uint8
    ``[fp8_weights_bytes(N, K)]``, about 1.065 more bytes per weight, on the weights' device;
    ``None`` without the option), built at construction and rebuilt after
    ``load_state_dict``; with it the CUDA GEMM takes path fp8 (8-bit tensor cores) for more
    than 64 tokens (more than 32 with N x K >= 10 Mi weights: explain() tells), without it those
    shapes run a bf16 path.
    It is not part of the state dict (it is derived from ``weight_packed``); after writing
    ``weight_packed`` in place, call :meth:`refresh_fp8`. CPU results are identical with and without it.

    ``weights_static`` (attribute, default False; not saved): set it once the weights are
    loaded, the device synchronised, and the weights will only be read, as in serving;
    forward then passes ``weights_static=True`` to :func:`mxfp4.gemm`, whose CUDA decode
    kernels read the weights while the previous kernel finishes (same results). Keep it False
    while anything may write ``weight_packed`` without a host synchronisation before the
    forward (e.g. ``load_state_dict`` then forward).

    Build one with :meth:`from_linear` (quantizes a ``nn.Linear``'s weight with our
    quantizer), :meth:`from_mxfp4` (codes + scales, plain or AITER layouts) or
    :meth:`from_packed`; the constructor makes zero weights (for ``load_state_dict``).
    This is an inference module: no gradients flow to the weights.

    Args:
        in_features: K. out_features: N.
        bias: whether the module has a bias.
        rule: scale rule used to quantize activations (``"aiter"``, ``"floor"``, ``"rceil"``).
        device: where the buffers live. bias_dtype: dtype of the bias (default: torch's
            default dtype, float32, as nn.Linear; a loaded state dict's bias is converted to it).
        fp8: hold the weights' FP8 image (see above).

    Raises:
        ValueError: sizes the packed layout does not accept, unknown rule.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, rule: str = "aiter", device=None,
                 bias_dtype: torch.dtype | None = None, fp8: bool = False):
        super().__init__()
        _core._rule(rule)
        _core._size_args("MXFP4Linear", in_features=in_features, out_features=out_features)
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.rule = rule
        self.fp8 = bool(fp8)
        self.weights_static = False  # see the class; set after loading, not saved
        nbytes = _api.packed_bytes(self.out_features, self.in_features)  # ValueError for bad sizes
        self.register_buffer("weight_packed", torch.zeros(nbytes, dtype=torch.uint8, device=device))
        self.register_buffer("weight_fp8", None, persistent=False)
        self.refresh_fp8()
        if bias:
            dt = bias_dtype if bias_dtype is not None else torch.get_default_dtype()
            self.bias = nn.Parameter(torch.zeros(self.out_features, dtype=dt, device=device),
                                     requires_grad=False)
        else:
            self.register_parameter("bias", None)

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def from_linear(cls, linear: nn.Linear, rule: str = "aiter", device=None, fp8: bool = False) -> "MXFP4Linear":
        """Quantizes ``linear.weight`` ``[N, K]`` (float32/float16/bfloat16; other float
        dtypes are cast to float32 first) with :func:`mxfp4.prepack_dense` under ``rule``,
        on ``device`` (default: the weight's device). The bias is copied as is. ``fp8``:
        also build the FP8 image (see the class).

        Raises:
            TypeError: not an nn.Linear. ValueError: K not a positive multiple of 32.
        """
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear; got {type(linear).__name__}")
        w = linear.weight.detach()
        if device is not None:
            w = w.to(device)
        if w.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            w = w.float()
        w = w.contiguous()  # prepack_dense reads rows with unit stride; nn.Linear allows any
        packed = _api.prepack_dense(w, rule, fp8=fp8)
        bias = None if linear.bias is None else linear.bias.detach().to(w.device)
        return cls.from_packed(packed, bias=bias, rule=rule)

    @classmethod
    def from_mxfp4(cls, codes, scales, bias=None, code_layout: str = "plain", scale_layout: str = "plain",
                   N: int | None = None, K: int | None = None, rule: str = "aiter",
                   fp8: bool = False) -> "MXFP4Linear":
        """From MXFP4 weights: ``codes uint8 [N, K/2]`` and E8M0 ``scales`` (``[N, K/32]``
        plain, or AITER layouts via ``code_layout`` / ``scale_layout``), torch tensors or
        numpy arrays (numpy goes to the CPU). See :func:`mxfp4.prepack`. ``fp8``: also build
        the FP8 image (see the class)."""
        codes, scales = _as_torch(codes, "codes"), _as_torch(scales, "scales")
        packed = _api.prepack(codes, scales, N=N, K=K, code_layout=code_layout, scale_layout=scale_layout, fp8=fp8)
        return cls.from_packed(packed, bias=bias, rule=rule)

    @classmethod
    def from_packed(cls, packed: PackedTensor, bias=None, rule: str = "aiter", fp8: bool = False) -> "MXFP4Linear":
        """From a :class:`mxfp4.PackedTensor` (its data is used as the buffer, not copied;
        numpy data becomes a CPU tensor). ``bias``: ``[N]`` tensor/array or None. An FP8
        image that ``packed`` carries becomes ``weight_fp8`` (not copied) and turns the
        option on; ``fp8=True`` builds one when it carries none.

        Raises:
            TypeError: not a PackedTensor, or another packed layout version.
            ValueError: data or FP8 image of the wrong size, a bias of the wrong shape.
        """
        if not isinstance(packed, PackedTensor):
            raise TypeError(f"packed must be a mxfp4.PackedTensor; got {type(packed).__name__}")
        if packed.version != PACKED_LAYOUT_VERSION:
            raise TypeError(f"packed layout version {packed.version} is not supported "
                            f"(this build reads version {PACKED_LAYOUT_VERSION})")
        data = _as_torch(packed.data, "packed.data")
        if bias is not None:
            bias = _as_torch(bias, "bias").to(data.device)
            if tuple(bias.shape) != (packed.N,):
                raise ValueError(f"bias must have shape ({packed.N},); got {tuple(bias.shape)}")
        m = cls(packed.K, packed.N, bias=bias is not None, rule=rule, device="meta",
                bias_dtype=bias.dtype if bias is not None else None)
        if data.numel() != m.weight_packed.numel():
            raise ValueError(f"packed data has {data.numel()} bytes; expected {m.weight_packed.numel()} = "
                             f"packed_bytes({packed.N}, {packed.K})")
        m.weight_packed = data.reshape(-1)
        m.fp8 = bool(fp8) or packed.fp8 is not None
        if packed.fp8 is not None:
            img = _as_torch(packed.fp8, "packed.fp8").reshape(-1)
            need = _api.fp8_weights_bytes(packed.N, packed.K)
            if img.dtype != torch.uint8:
                raise TypeError(f"packed.fp8 must be a uint8 FP8 image; got {img.dtype}")
            if img.numel() != need:
                raise ValueError(f"packed.fp8 has {img.numel()} bytes; expected {need} = "
                                 f"fp8_weights_bytes({packed.N}, {packed.K})")
            m.weight_fp8 = img
        else:
            m.refresh_fp8()
        if bias is not None:
            m.bias = nn.Parameter(bias.clone(), requires_grad=False)
        return m

    def refresh_fp8(self) -> None:
        """Rebuilds ``weight_fp8`` from ``weight_packed`` when the module holds an FP8 image
        (``fp8=True``; an empty tensor on the meta device), else sets it to None. Needed
        only after writing ``weight_packed`` in place (construction and ``load_state_dict``,
        strict or not, call it)."""
        if not self.fp8:
            self.weight_fp8 = None
            return
        w = self.weight_packed
        if w.device.type == "meta":
            self.weight_fp8 = torch.empty(_api.fp8_weights_bytes(self.out_features, self.in_features),
                                          dtype=torch.uint8, device="meta")
        else:
            self.weight_fp8 = torch.ops.mxfp4.prepack_fp8(w, self.out_features, self.in_features,
                                                          PACKED_LAYOUT_VERSION)

    # ---- use -------------------------------------------------------------------------------

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., in_features]`` -> ``[..., out_features]`` in x's dtype (see the class).

        Raises:
            TypeError: x not a tensor of a floating dtype (as torch.nn.Linear; an integer x
            would come back truncated). ValueError: a 0-d x, or a last dimension other than
            in_features.
        """
        _check_input(x, "MXFP4Linear")
        xb = _bf16_unit_stride(x)
        y = torch.ops.mxfp4.gemm(xb, self.weight_packed, self.out_features, self.in_features, PACKED_LAYOUT_VERSION,
                                 self.rule, None, self.weight_fp8, self.weights_static)
        if y.dtype != x.dtype:
            y = y.to(x.dtype)
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y

    def packed(self) -> PackedTensor:
        """The weights as a :class:`mxfp4.PackedTensor` (shares the buffers, FP8 image included)."""
        return PackedTensor(self.weight_packed, self.out_features, self.in_features, PACKED_LAYOUT_VERSION,
                            fp8=self.weight_fp8)

    def dequantize_weight(self, dtype=torch.float32) -> torch.Tensor:
        """The weights ``[out_features, in_features]`` dequantized (float32 or bfloat16)."""
        return self.packed().dequantize(dtype)

    # ---- state -----------------------------------------------------------------------------

    def get_extra_state(self):
        return {"version": PACKED_LAYOUT_VERSION, "in_features": self.in_features,
                "out_features": self.out_features, "rule": self.rule}

    def set_extra_state(self, state):
        version = state.get("version")
        if version != PACKED_LAYOUT_VERSION:
            raise TypeError(f"state_dict holds packed layout version {version}; this build reads version "
                            f"{PACKED_LAYOUT_VERSION}")
        if (state.get("in_features"), state.get("out_features")) != (self.in_features, self.out_features):
            raise ValueError(f"state_dict is for in_features={state.get('in_features')}, "
                             f"out_features={state.get('out_features')}; this module has "
                             f"in_features={self.in_features}, out_features={self.out_features}")
        rule = state.get("rule", "aiter")
        _core._rule(rule)
        self.rule = rule  # the FP8 image is rebuilt by _load_from_state_dict, after this

    def _load_from_state_dict(self, *args, **kwargs):
        # Class-level (not a per-instance hook): also runs for modules pickled before the hook
        # existed. Rebuilds the FP8 image after every load, strict or not, extra state or not.
        super()._load_from_state_dict(*args, **kwargs)
        self.refresh_fp8()

    def _path(self, M):
        dev = self.weight_packed.device
        if dev.type == "meta":
            return "n/a"
        try:
            cfg = _api.explain(M, self.out_features, self.in_features, dev if dev.type == "cuda" else "cpu")
        except (RuntimeError, ValueError) as e:
            return f"unavailable ({e})"
        if cfg.path == _core._C.GemmPath.fp8 and self.weight_fp8 is None:
            # gemm() then runs config_without_fp8: the small-M kernel (splitk) up to M = 128.
            return f"{cfg} (no FP8 image: runs path={'splitk' if M <= 128 else 'tiled'})"
        return str(cfg)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"rule='{self.rule}', weight_packed=uint8[{self.weight_packed.numel()}] "
                f"v{PACKED_LAYOUT_VERSION} on {self.weight_packed.device}, "
                f"fp8={'uint8[%d]' % self.weight_fp8.numel() if self.weight_fp8 is not None else None}, "
                f"path(M=1): {self._path(1)}, path(M=1024): {self._path(1024)}")
