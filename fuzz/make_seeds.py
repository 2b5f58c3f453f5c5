#!/usr/bin/env python3
"""Writes the hand-made seeds of the fuzz corpora (fuzz/corpus/<target>/seed_*).

The committed corpora hold these seeds plus inputs that libFuzzer found and `-merge=1` kept
(named by their SHA-1). Re-run this script after changing a target's input layout; it only
rewrites seed_* files. Input layouts (see each fuzz_*.cpp): integers drawn with Input::range
are 2 little-endian bytes (value = lo + u16 % (hi - lo + 1)), flags and selectors 1 byte.
"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def u16(v):
    return struct.pack("<H", v)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(data)


def npy_image(header, data=b"", version=(1, 0), header_len=None):
    h = header.encode("latin1")
    n = len(h) if header_len is None else header_len
    return b"\x93NUMPY" + bytes(version) + struct.pack("<H" if version[0] == 1 else "<I", n) + h + data


def npy_seeds():
    import io

    def saved(arr, version=None):
        b = io.BytesIO()
        if version:
            np.lib.format.write_array(b, arr, version=version)
        else:
            np.save(b, arr)
        return b.getvalue()

    rng = np.random.default_rng(0)
    write("fuzz_npy", "f4_2x32", saved(rng.standard_normal((2, 32)).astype(np.float32)))
    write("fuzz_npy", "u2_1x64", saved(rng.integers(0, 65536, (1, 64), dtype=np.uint16)))
    write("fuzz_npy", "f2_1x32", saved(rng.standard_normal((1, 32)).astype(np.float16)))
    write("fuzz_npy", "u1_4x16", saved(rng.integers(0, 256, (4, 16), dtype=np.uint8)))
    write("fuzz_npy", "f8_3", saved(np.arange(3, dtype=np.float64)))
    write("fuzz_npy", "u1_0x0", saved(np.zeros((0, 0), np.uint8)))
    write("fuzz_npy", "u1_scalar", saved(np.array(7, np.uint8)))
    write("fuzz_npy", "v2_f4", saved(np.ones((1, 32), np.float32), version=(2, 0)))
    write("fuzz_npy", "fortran", saved(np.asfortranarray(np.ones((2, 32), np.float32))))
    write("fuzz_npy", "big_endian", saved(np.ones((1, 32), ">f4")))
    write("fuzz_npy", "i4", saved(np.ones((1, 32), np.int32)))
    write("fuzz_npy", "dq_reordered",
          npy_image('{"shape": (1, 32), "fortran_order": False, "descr": "<f4"}\n', b"\0" * 128))
    write("fuzz_npy", "py2_long", npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (1L, 32L), }\n",
                                             b"\0" * 128))
    write("fuzz_npy", "structured", npy_image("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n",
                                              b"\0" * 8))
    # Regression: Array::count() overflowed int64 before numpy's size rule (commit 6248cf9).
    write("fuzz_npy", "zero_dim_product_overflow", npy_image("{'descr': '|u1', 'fortran_order': False, "
                                                             "'shape': (4294967296, 2147483648, 0), }\n"))
    write("fuzz_npy", "zero_dim_huge", npy_image("{'descr': '|u1', 'fortran_order': False, "
                                                 "'shape': (0, 9223372036854775807), }\n"))
    write("fuzz_npy", "header_past_eof", npy_image("{'descr': '<f4'", header_len=4000))
    write("fuzz_npy", "absurd_v3", npy_image("{}", version=(3, 0), header_len=0xFFFFFFF0))


def quantize_seeds():
    def head(dtype, rule, rows, kblocks, pad=0, threads=0):
        return bytes([dtype, rule]) + u16(rows - 1) + u16(kblocks - 1) + u16(pad) + u16(threads)

    e3 = np.array([6, 5, 2.5, 1.25, 0.25, 0.75, -5, -0.25] * 4, np.float32)
    e14 = [0xBFCB, 0x3E9A, 0xBF31, 0x3FFC, 0xBFAC, 0x3F5A, 0xBD93, 0x3F3F, 0x3EE6, 0xBF8B, 0xBFB2, 0x3F50, 0x3F56,
           0xBE4A, 0xBEB0, 0xBF95, 0xBEEF, 0xC07E, 0x3EE8, 0x3FCE, 0xBFC5, 0x3E9E, 0x3EC9, 0xBED1, 0x3E76, 0x3F80,
           0x3F5E, 0x3EAB, 0xBEE4, 0x3E84, 0xBD8E, 0xBFD9]
    k07 = np.zeros(32, np.float32)
    k07[[0, 5, 9]] = [2.0**-126, 1.5 * 2.0**-128, -(2.0**-133)]
    k08 = np.zeros(32, np.float32)
    k08[:4] = [1, 2, np.nan, 0.5]
    big = np.full(32, np.finfo(np.float32).max, np.float32)
    big[1] = -np.inf
    for rule in range(3):
        write("fuzz_quantize", f"e3_fp32_rule{rule}", head(2, rule, 1, 1) + e3.tobytes())
        write("fuzz_quantize", f"e14_bf16_rule{rule}", head(0, rule, 1, 1) + struct.pack("<32H", *e14))
    write("fuzz_quantize", "k07_subnormal", head(2, 0, 1, 1) + k07.tobytes())
    write("fuzz_quantize", "k08_nan_2rows", head(2, 0, 2, 2, pad=3, threads=2) + k08.tobytes() * 4)
    write("fuzz_quantize", "max_and_inf", head(2, 2, 1, 2) + np.full(32, 3.4e38, np.float32).tobytes() + big.tobytes())
    write("fuzz_quantize", "fp16_mix", head(1, 1, 3, 3, pad=5, threads=3) +
          np.array([65504, -0.0, 6.0e-8, 1.0, np.inf, 0.25, 5.0, -3.5], np.float16).tobytes() * 4)


def layouts_seeds():
    rng = np.random.default_rng(1)
    noise = rng.integers(0, 256, 512, dtype=np.uint8).tobytes()
    write("fuzz_layouts", "scales_300x9", bytes([0]) + u16(1) + u16(299) + u16(8) + noise)
    write("fuzz_layouts", "scales_1x1", bytes([0]) + u16(0) + u16(0) + u16(0) + noise[:8])
    write("fuzz_layouts", "weights_32x128", bytes([1]) + u16(2) + u16(1) + u16(1) + noise)

    def packed(N, kblocks, code_sh, scale_sh, M, ldc_pad, lda_pad, rule, raw, base, threads=0):
        return (bytes([2]) + u16(threads) + u16(N - 1) + u16(kblocks - 1) + bytes([code_sh, scale_sh]) + u16(M - 1) +
                u16(ldc_pad) + u16(lda_pad) + bytes([rule, 0 if raw else 255]) + u16(base - 60) + noise)

    write("fuzz_layouts", "packed_16x64_shuffled", packed(16, 2, 1, 1, 2, 3, 5, 0, False, 120, threads=1))
    write("fuzz_layouts", "packed_37x96_plain", packed(37, 3, 0, 0, 3, 0, 0, 1, False, 100))
    write("fuzz_layouts", "packed_48x256_raw_scales", packed(48, 8, 1, 0, 4, 5, 40, 2, True, 60, threads=3))
    write("fuzz_layouts", "packed_1x32", packed(1, 1, 0, 1, 1, 1, 1, 0, False, 127))


def api_seeds():
    for which in range(16):
        for mode in range(3):
            write("fuzz_api_args", f"call{which}_ptr{mode}", bytes([mode, which]) + bytes(range(40)))
    # Regressions: sizes whose arithmetic overflowed int64 (UBSan) or that were accepted before
    # the checks of commit 6248cf9. size_arg: a byte < 224 picks kTable[byte % 33]
    # (2: -1, 3: 2, 6: 16, 9: 32, 13: 64, 20: 2^31, 26: 2^62, 28: INT64_MAX, 29: INT64_MAX/32*32),
    # 224 then 8 bytes is a raw int64.
    def raw(v):
        return bytes([224]) + struct.pack("<q", v)
    regress = {
        "shuffled_scales_bytes_rows_max": bytes([0, 12, 28, 1]),
        "shuffled_scales_bytes_kblocks_max": bytes([0, 12, 1, 28]),
        "packed_bytes_n_max": bytes([0, 13, 28, 13]),
        "packed_bytes_k_max": bytes([0, 13, 1, 29]),
        # quantize bf16 rows 2, K 2^62, stride 2^62: (rows - 1) * stride + K overflowed
        "quantize_strided_bytes_sum": bytes([0, 0, 0, 3, 26, 26, 0, 0, 0, 1, 0]),
        # explain_gemm(INT64_MAX, 16, 64) on the CPU was accepted
        "explain_gemm_huge_m": bytes([0, 14, 28, 6, 13, 0, 0, 1]),
        # gemm_reference A, B 2^30 rows, K 32, ldc 2^30, out_f64: M*N*8 overflowed
        "gemm_reference_f64_bytes": bytes([0, 11]) + raw(2**30) + bytes([9, 0, 0]) + raw(2**30) + bytes([9, 0, 0]) +
                                    raw(2**30) + bytes([1, 0]),
    }
    for name, data in regress.items():
        d = os.path.join(HERE, "corpus", "fuzz_api_args")
        with open(os.path.join(d, "regress_" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    npy_seeds()
    quantize_seeds()
    layouts_seeds()
    api_seeds()
