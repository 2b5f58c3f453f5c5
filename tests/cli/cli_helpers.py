"""Helpers of the CLI tests: running the binary, .npy crafting, and an independent numpy
model of the spec (docs/semantics.md = shared/spec/mxfp4-semantics.md) used as the oracle."""
import struct
import subprocess

import numpy as np

E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float64)


class Cli:
    def __init__(self, path):
        self.path = path

    def run(self, *args, timeout=600):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True, timeout=timeout)

    def ok(self, *args, timeout=600):
        r = self.run(*args, timeout=timeout)
        assert r.returncode == 0, f"mxfp4 {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}"
        return r

    def fails(self, *args):
        """Runs a command that must fail with exactly one line on stderr; returns that line."""
        r = self.run(*args)
        assert r.returncode != 0, f"expected failure, got rc 0; stdout: {r.stdout}"
        # A negative code is a signal (crash, abort): never an acceptable way to fail.
        assert r.returncode > 0, f"killed by signal {-r.returncode}: {r.stderr!r}"
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, f"expected one stderr line, got {len(lines)}: {r.stderr!r}"
        assert lines[0].strip(), "empty error line"
        return lines[0]

    def quantize(self, tmp, x, rule=None, name="x"):
        """Saves x, quantizes it through the CLI, returns (codes, scales) as loaded arrays."""
        xp, qp, sp = tmp / f"{name}.npy", tmp / f"{name}_q.npy", tmp / f"{name}_s.npy"
        np.save(xp, x)
        args = ["quantize", "--input", xp, "--codes", qp, "--scales", sp]
        if rule:
            args += ["--rule", rule]
        self.ok(*args)
        return np.load(qp), np.load(sp)


def bf16_bits(values):
    """bf16 bit patterns (uint16) of values (float32 first), rounded to nearest even; NaN stays
    a quiet NaN. Plain numpy so that only the ml_dtypes comparison tests need ml_dtypes."""
    u = np.ascontiguousarray(np.asarray(values, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def bits_to_f32(bits_u32):
    return np.asarray(bits_u32, dtype=np.uint32).view(np.float32)


def bf16_to_f32(bits_u16):
    return (np.asarray(bits_u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def pack(codes):
    """[rows, K] codes (0..15) -> [rows, K/2] bytes, element 2i in the low nibble."""
    codes = np.asarray(codes, dtype=np.uint8)
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def unpack(packed):
    packed = np.asarray(packed, dtype=np.uint8)
    out = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = packed & 0xF
    out[:, 1::2] = packed >> 4
    return out


def shared_exponents(x, rule):
    """Spec §2 steps 1-3 (and the floor / rceil rules) for x [rows, K] float32 -> s [rows, K/32]."""
    rows, K = x.shape
    mag = (np.ascontiguousarray(x).view(np.uint32) & 0x7FFFFFFF).reshape(rows, K // 32, 32)
    amax_bits = mag.max(axis=-1).astype(np.int64)  # finite magnitudes order like their bits
    if rule == "aiter":
        e = ((amax_bits + 0x00200000) >> 23) & 0xFF
        return np.where(e == 0, -127, np.where(e == 255, 127, np.clip(e - 129, -127, 127)))
    amax = amax_bits.astype(np.uint32).view(np.float32).astype(np.float64)
    m, ex = np.frexp(amax)  # amax = m * 2^ex, m in [0.5, 1): floor(log2 amax) = ex - 1, exact
    fl = ex - 1
    if rule == "floor":
        s = fl - 2
    elif rule == "rceil":
        s = np.where(2 * m <= 1.5, fl - 2, fl - 1)  # smallest s with amax <= 6 * 2^s
    else:
        raise ValueError(rule)
    return np.where(amax_bits == 0, -127, np.clip(s, -127, 127))


def round_e2m1(y):
    """Spec §2 steps 5-6: y float32 -> codes, nearest, ties to even code, saturating."""
    a = np.abs(y)
    mag = ((a > 0.25).astype(np.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5)
           + (a > 5.0))
    return (mag | (np.signbit(y).astype(np.uint8) << 3)).astype(np.uint8)


def quantize_ref(x, rule="aiter"):
    """Independent numpy model of spec §2 / §2.1: x [rows, K] float32 -> (packed codes, scales)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    rows, K = x.shape
    s = shared_exponents(x, rule)
    nonfinite = ~np.isfinite(x).reshape(rows, K // 32, 32).all(axis=-1)
    # x * 2^-s: exact in float64, then one rounding to float32 (= the fp32 product of the spec).
    y = np.ldexp(x.astype(np.float64), np.repeat(-s, 32, axis=1)).astype(np.float32)
    with np.errstate(invalid="ignore"):
        codes = round_e2m1(y)
    codes[np.repeat(nonfinite, 32, axis=1)] = 0
    scales = np.where(nonfinite, 255, s + 127).astype(np.uint8)
    return pack(codes), scales


def dequantize_ref(packed, scales):
    """Spec §1.3 in float64: e2m1(code) * 2^(b - 127); scale 255 -> NaN."""
    codes = unpack(packed)
    vals = E2M1_VALUES[codes]
    sc = np.repeat(scales.astype(np.int64), 32, axis=1)
    out = np.ldexp(vals, sc - 127)
    out[sc == 255] = np.nan
    return out


def npy_bytes(header, data=b"", version=(1, 0), header_len=None):
    """Hand-made .npy image: magic, version, header length (or an override), header, data."""
    h = header.encode("latin1")
    n = len(h) if header_len is None else header_len
    fmt = "<H" if version[0] == 1 else "<I"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, n) + h + data


def npy_header(descr, shape, fortran=False):
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, tuple(shape))
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    return h + " " * pad + "\n"
