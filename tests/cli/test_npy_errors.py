"""Malformed or unsupported .npy inputs: non-zero exit and exactly one stderr line that names
the problem. Also the accepted variants (format 2.0, other key order, double quotes)."""
import numpy as np
import pytest

from cli_helpers import npy_bytes, npy_header

GOOD = np.ones((2, 64), dtype=np.float32)


def quantize_file(cli, tmp_path, raw):
    p = tmp_path / "in.npy"
    p.write_bytes(raw)
    return cli.fails("quantize", "--input", p, "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy")


CASES = {
    "truncated_data": (npy_bytes(npy_header("<f4", (2, 64)), b"\0" * 100), "truncated"),
    "trailing_data": (npy_bytes(npy_header("<f4", (2, 64)), b"\0" * 513), "unexpected bytes"),
    "wrong_descr_int": (npy_bytes(npy_header("<i4", (2, 64)), b"\0" * 512), "descr"),
    "wrong_descr_big_endian": (npy_bytes(npy_header(">f4", (2, 64)), b"\0" * 512), "descr"),
    "structured_descr": (npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 64), }\n",
                                   b"\0" * 512), "structured"),
    "fortran_order": (npy_bytes(npy_header("<f4", (2, 64), fortran=True), b"\0" * 512), "Fortran"),
    "rank_1": (npy_bytes(npy_header("<f4", (128,)), b"\0" * 512), "2-D"),
    "rank_3": (npy_bytes(npy_header("<f4", (2, 2, 32)), b"\0" * 512), "2-D"),
    "absurd_header_v2": (npy_bytes(npy_header("<f4", (2, 64)), b"\0" * 512, version=(2, 0),
                                   header_len=0xFFFFFF00), "header size"),
    "header_past_eof": (npy_bytes(npy_header("<f4", (2, 64)), b"", header_len=60000), "truncated"),
    "bad_magic": (b"PK\x03\x04" + b"\0" * 200, "magic"),
    "empty_file": (b"", "magic"),
    "version_9": (npy_bytes(npy_header("<f4", (2, 64)), b"\0" * 512, version=(9, 0)), "version"),
    "garbage_header": (npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 64)}\n", b"\0" * 512),
                       "fortran_order"),
    "missing_shape": (npy_bytes("{'descr': '<f4', 'fortran_order': False}\n", b"\0" * 512), "shape"),
    "negative_dim": (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 64)}\n", b"\0" * 512),
                     "shape"),
    "huge_shape": (npy_bytes(npy_header("<f4", (2**62, 2**62)), b""), "too large"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_input(cli, tmp_path, case):
    raw, keyword = CASES[case]
    line = quantize_file(cli, tmp_path, raw)
    assert keyword.lower() in line.lower(), line
    assert not (tmp_path / "q.npy").exists()


def test_fortran_order_from_numpy(cli, tmp_path):
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((4, 64), dtype=np.float32)))
    line = cli.fails("quantize", "--input", tmp_path / "f.npy", "--codes", tmp_path / "q.npy", "--scales",
                     tmp_path / "s.npy")
    assert "fortran" in line.lower()


def test_missing_file(cli, tmp_path):
    line = cli.fails("quantize", "--input", tmp_path / "nope.npy", "--codes", tmp_path / "q.npy", "--scales",
                     tmp_path / "s.npy")
    assert "nope.npy" in line


def test_float64_input_rejected_by_quantize(cli, tmp_path):
    np.save(tmp_path / "x.npy", GOOD.astype(np.float64))
    line = cli.fails("quantize", "--input", tmp_path / "x.npy", "--codes", tmp_path / "q.npy", "--scales",
                     tmp_path / "s.npy")
    assert "<f8" in line


@pytest.mark.parametrize("K", [16, 48, 0])
def test_bad_k(cli, tmp_path, K):
    np.save(tmp_path / "x.npy", np.ones((2, K), dtype=np.float32))
    line = cli.fails("quantize", "--input", tmp_path / "x.npy", "--codes", tmp_path / "q.npy", "--scales",
                     tmp_path / "s.npy")
    assert "multiple of 32" in line


def test_malformed_codes_file(cli, tmp_path):
    (tmp_path / "q.npy").write_bytes(npy_bytes(npy_header("|u1", (4, 32)), b"\0" * 10))
    np.save(tmp_path / "s.npy", np.zeros((4, 2), dtype=np.uint8))
    line = cli.fails("dequantize", "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy", "--out",
                     tmp_path / "x.npy")
    assert "truncated" in line and "q.npy" in line


def test_codes_wrong_dtype(cli, tmp_path):
    np.save(tmp_path / "q.npy", np.zeros((4, 32), dtype=np.uint16))
    np.save(tmp_path / "s.npy", np.zeros((4, 2), dtype=np.uint8))
    line = cli.fails("dequantize", "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy", "--out",
                     tmp_path / "x.npy")
    assert "<u2" in line


@pytest.mark.parametrize("variant", ["v2", "v3", "double_quotes_reordered", "no_trailing_comma"])
def test_accepted_variants(cli, tmp_path, variant):
    data = GOOD.tobytes()
    if variant in ("v2", "v3"):
        raw = npy_bytes(npy_header("<f4", (2, 64)), data, version=(2 if variant == "v2" else 3, 0))
    elif variant == "double_quotes_reordered":
        raw = npy_bytes('{"shape": (2, 64), "fortran_order": False, "descr": "<f4"}\n', data)
    else:
        raw = npy_bytes("{'descr':'<f4','fortran_order':False,'shape':(2,64)}", data)
    p = tmp_path / "in.npy"
    p.write_bytes(raw)
    cli.ok("quantize", "--input", p, "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy")
    assert (np.load(tmp_path / "s.npy") == 0x7D).all()


def test_numpy_format_2_file(cli, tmp_path):
    with open(tmp_path / "x.npy", "wb") as f:
        np.lib.format.write_array(f, GOOD, version=(2, 0))
    cli.ok("quantize", "--input", tmp_path / "x.npy", "--codes", tmp_path / "q.npy", "--scales", tmp_path / "s.npy")
    assert (np.load(tmp_path / "q.npy") == 0x66).all()


def test_cli_usage_errors(cli, tmp_path):
    assert "required" in cli.fails("quantize").lower() or "input" in cli.fails("quantize").lower()
    cli.fails("quantize", "--input", "x.npy", "--codes", "q.npy", "--scales", "s.npy", "--rule", "nearest")
    cli.fails("frobnicate")
    cli.fails()
    cli.fails("gemm", "--bogus")
