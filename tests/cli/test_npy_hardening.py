"""Hardening of the CLI's .npy input (docs/hardening.md): every malformed file given to every
input option of every subcommand exits non-zero (never by a signal) with exactly one stderr
line naming the file and the problem, and writes no output. Complements test_npy_errors.py
(which covers `quantize --input` case by case)."""
import numpy as np
import pytest

from cli_helpers import npy_bytes, npy_header

MAGIC = b"\x93NUMPY"


def malformed_images():
    """name -> (raw .npy bytes, keyword the error line must contain)."""
    good_hdr = npy_header("|u1", (4, 32))
    return {
        "magic_only": (MAGIC, "magic"),
        "prefix_without_length": (MAGIC + b"\x01\x00", "truncated"),
        "prefix_half_length": (MAGIC + b"\x01\x00\x10", "truncated"),
        "v2_prefix_truncated": (MAGIC + b"\x02\x00\x10\x00", "truncated"),
        "absurd_header_v3": (npy_bytes(good_hdr, b"\0" * 128, version=(3, 0), header_len=0x7FFFFFFF), "header size"),
        "header_len_past_eof_v1": (npy_bytes(good_hdr, b"", header_len=65535), "truncated"),
        "minor_version_1": (npy_bytes(good_hdr, b"\0" * 128, version=(1, 1)), "version"),
        "header_not_a_dict": (npy_bytes("[1, 2, 3]\n", b"\0" * 128), "malformed"),
        "header_with_nul": (npy_bytes("{'descr': '|u1',\0 'fortran_order': False, 'shape': (4, 32)}\n", b"\0" * 128),
                            "malformed"),
        "unterminated_string": (npy_bytes("{'descr': '|u1, 'fortran_order': False, 'shape': (4, 32)}\n",
                                          b"\0" * 128), "malformed"),
        "duplicate_key": (npy_bytes("{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (4, 32)}\n",
                                    b"\0" * 128), "duplicate"),
        "unknown_key": (npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 32), 'x': 1}\n",
                                  b"\0" * 128), "unexpected key"),
        "shape_is_a_list": (npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': [4, 32]}\n", b"\0" * 128),
                            "malformed"),
        "shape_float": (npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4.0, 32)}\n", b"\0" * 128),
                        "malformed"),
        "shape_dim_overflows_int64": (npy_bytes("{'descr': '|u1', 'fortran_order': False, "
                                                "'shape': (99999999999999999999, 32)}\n", b""), "too large"),
        "text_after_dict": (npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 32)} junk\n",
                                      b"\0" * 128), "after the header"),
        "escape_in_string": (npy_bytes("{'descr': '|u\\x31', 'fortran_order': False, 'shape': (4, 32)}\n",
                                       b"\0" * 128), "escape"),
        "descr_object": (npy_bytes(npy_header("|O", (4, 32)), b"\0" * 1024), "descr"),
        "descr_big_endian_u2": (npy_bytes(npy_header(">u2", (4, 32)), b"\0" * 256), "descr"),
        "descr_empty": (npy_bytes(npy_header("", (4, 32)), b"\0" * 128), "descr"),
        "fortran_order": (npy_bytes(npy_header("|u1", (4, 32), fortran=True), b"\0" * 128), "fortran"),
        "rank_0": (npy_bytes(npy_header("|u1", ()), b"\0"), "2-D"),
        "rank_3": (npy_bytes(npy_header("|u1", (1, 4, 32)), b"\0" * 128), "2-D"),
        "truncated_data": (npy_bytes(good_hdr, b"\0" * 127), "truncated"),
        "trailing_data": (npy_bytes(good_hdr, b"\0" * 129), "unexpected bytes"),
        # numpy's rule: the non-zero dimensions times the item size must fit in an int64 even
        # when another dimension is 0 (such files hold no data, but their sizes would overflow).
        "zero_dim_with_huge_product": (npy_bytes(npy_header("|u1", (2**40, 2**40, 0)), b""), "too large"),
        # product 2^63: fits a uint64 but not an int64 (Array::count() overflowed before)
        "zero_dim_product_overflows_int64": (npy_bytes(npy_header("|u1", (2**32, 2**31, 0)), b""), "too large"),
    }


CASES = malformed_images()


def run_with(cli, tmp_path, role, raw):
    """Runs the subcommand that reads `role` with the malformed file in that role and valid
    files elsewhere; returns the error line."""
    rng = np.random.default_rng(0)
    bad = tmp_path / "bad.npy"
    bad.write_bytes(raw)
    codes, scales = tmp_path / "q.npy", tmp_path / "s.npy"
    np.save(codes, rng.integers(0, 256, (4, 32), dtype=np.uint8))
    np.save(scales, np.full((4, 2), 127, np.uint8))
    a = tmp_path / "a.npy"
    np.save(a, np.full((3, 64), 0x3F80, np.uint16))
    out = tmp_path / "out.npy"
    if role == "quantize --input":
        args = ["quantize", "--input", bad, "--codes", tmp_path / "oq.npy", "--scales", tmp_path / "os.npy"]
    elif role == "dequantize --codes":
        args = ["dequantize", "--codes", bad, "--scales", scales, "--out", out]
    elif role == "dequantize --scales":
        args = ["dequantize", "--codes", codes, "--scales", bad, "--out", out]
    elif role == "gemm --a":
        args = ["gemm", "--a", bad, "--b-codes", codes, "--b-scales", scales, "--out", out]
    elif role == "gemm --b-codes":
        args = ["gemm", "--a", a, "--b-codes", bad, "--b-scales", scales, "--out", out]
    elif role == "gemm --b-scales":
        args = ["gemm", "--a", a, "--b-codes", codes, "--b-scales", bad, "--out", out]
    else:
        raise ValueError(role)
    line = cli.fails(*args)
    assert not out.exists() and not (tmp_path / "oq.npy").exists() and not (tmp_path / "os.npy").exists()
    return line


ROLES = ["quantize --input", "dequantize --codes", "dequantize --scales", "gemm --a", "gemm --b-codes",
         "gemm --b-scales"]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("role", ROLES)
def test_malformed_file_in_every_role(cli, tmp_path, role, case):
    raw, keyword = CASES[case]
    line = run_with(cli, tmp_path, role, raw)
    assert "bad.npy" in line, line
    if keyword == "descr" and role != "quantize --input":
        # a valid descr of the wrong type is caught by the role check; either names the dtype
        assert "descr" in line.lower() or "dtype" in line.lower(), line
    else:
        assert keyword.lower() in line.lower(), line


@pytest.mark.parametrize("shape", [(0, 2**62), (0, 2**63 - 1), (0, 16), (2**62, 0)])
def test_zero_rows_with_huge_columns(cli, tmp_path, shape):
    # A zero-size array whose other dimension is huge: accepted by the .npy reader (numpy
    # writes such files), then rejected by the shape check without overflowing K = 2 * cols.
    raw = npy_bytes(npy_header("|u1", shape), b"")
    (tmp_path / "q.npy").write_bytes(raw)
    np.save(tmp_path / "s.npy", np.zeros((0, 1), np.uint8))
    line = cli.fails("dequantize", "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy", "--out",
                     tmp_path / "x.npy")
    assert "rows >= 1" in line or "multiple of 32" in line, line
    line = cli.fails("gemm", "--a", tmp_path / "q.npy", "--b-codes", tmp_path / "q.npy", "--b-scales",
                     tmp_path / "s.npy", "--out", tmp_path / "c.npy")
    assert line


def test_input_is_a_directory(cli, tmp_path):
    d = tmp_path / "dir.npy"
    d.mkdir()
    line = cli.fails("quantize", "--input", d, "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy")
    assert "dir.npy" in line


def test_unwritable_output(cli, tmp_path):
    np.save(tmp_path / "x.npy", np.ones((2, 64), np.float32))
    line = cli.fails("quantize", "--input", tmp_path / "x.npy", "--codes", tmp_path / "missing" / "q.npy",
                     "--scales", tmp_path / "s.npy")
    assert "q.npy" in line and "cannot open" in line


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8, np.int16])
def test_gemm_a_wrong_dtype(cli, tmp_path, dtype):
    np.save(tmp_path / "a.npy", np.zeros((2, 64), dtype))
    np.save(tmp_path / "q.npy", np.zeros((4, 32), np.uint8))
    np.save(tmp_path / "s.npy", np.zeros((4, 2), np.uint8))
    line = cli.fails("gemm", "--a", tmp_path / "a.npy", "--b-codes", tmp_path / "q.npy", "--b-scales",
                     tmp_path / "s.npy", "--out", tmp_path / "c.npy")
    assert "a.npy" in line and ("dtype" in line or "descr" in line)


def test_gemm_scales_shape_mismatch(cli, tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((2, 64), np.uint16))
    np.save(tmp_path / "q.npy", np.zeros((4, 32), np.uint8))
    np.save(tmp_path / "s.npy", np.zeros((4, 3), np.uint8))
    line = cli.fails("gemm", "--a", tmp_path / "a.npy", "--b-codes", tmp_path / "q.npy", "--b-scales",
                     tmp_path / "s.npy", "--out", tmp_path / "c.npy")
    assert "(4, 3)" in line and "(4, 2)" in line


def test_gemm_k_mismatch(cli, tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((2, 96), np.uint16))
    np.save(tmp_path / "q.npy", np.zeros((4, 32), np.uint8))
    np.save(tmp_path / "s.npy", np.zeros((4, 2), np.uint8))
    line = cli.fails("gemm", "--a", tmp_path / "a.npy", "--b-codes", tmp_path / "q.npy", "--b-scales",
                     tmp_path / "s.npy", "--out", tmp_path / "c.npy")
    assert "K = 64" in line


@pytest.mark.parametrize("line_text,keyword", [
    ("4 64 -64", "not a positive integer"),
    ("4 64 0x40", "not a positive integer"),
    ("99999999999999999999 64 64", "not a positive integer"),
    ("1099511627776 1099511627776 64", "too large"),
    ("1 16 9223372036854775776", "too large"),
])
def test_bench_shapes_rejected(cli, tmp_path, line_text, keyword):
    shapes = tmp_path / "shapes.txt"
    shapes.write_text(line_text + "\n")
    line = cli.fails("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", tmp_path)
    assert keyword in line and "shapes.txt:1" in line
