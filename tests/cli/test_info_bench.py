"""`mxfp4 info`, `mxfp4 bench` (CPU backend, small shapes file) and `mxfp4 tune`."""
import json

import numpy as np

ROW_KEYS = {"M", "N", "K", "ours_us", "cublas_bf16_us", "cublas_fp8_us", "floor_us", "tbps", "tflops", "path",
            "correct", "max_err_ratio"}


def test_info(cli):
    r = cli.ok("info")
    assert "version" in r.stdout
    assert "built with CUDA" in r.stdout
    assert "backends: cpu" in r.stdout


def test_version_and_help(cli):
    assert cli.ok("--version").stdout.strip()
    assert "quantize" in cli.ok("--help").stdout
    assert "--shapes" in cli.ok("bench", "--help").stdout


def test_bench_cpu_small(cli, tmp_path):
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("# M N K\n4 64 64\n\n17 48 96   # a comment\n3 200 256\n1 16 32\n")
    out = tmp_path / "results"
    r = cli.ok("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", out, "--seed", 3)
    assert "correct" in r.stdout
    data = json.loads((out / "cpu.json").read_text())
    assert data["backend"] == "cpu"
    assert "gpu" in data
    assert [(row["M"], row["N"], row["K"]) for row in data["rows"]] == [(4, 64, 64), (17, 48, 96), (3, 200, 256),
                                                                        (1, 16, 32)]
    for row in data["rows"]:
        assert ROW_KEYS <= set(row), ROW_KEYS - set(row)
        assert row["correct"] is True
        assert 0 <= row["max_err_ratio"] <= 1
        assert row["ours_us"] > 0 and row["floor_us"] > 0.57
        assert row["cublas_bf16_us"] is None and row["cublas_fp8_us"] is None
        bytes_ = 2 * row["M"] * row["K"] + row["N"] * row["K"] / 2 + row["N"] * row["K"] / 32 + 2 * row["M"] * row["N"]
        flops = 2 * row["M"] * row["N"] * row["K"]
        assert np.isclose(row["floor_us"], max(bytes_ / 4.27e12, flops / 1410e12) * 1e6 + 0.57)
        assert np.isclose(row["tbps"], bytes_ / (row["ours_us"] * 1e-6) / 1e12)
    ours = [row["ours_us"] for row in data["rows"]]
    assert np.isclose(data["geomean_first8_us"], np.exp(np.mean(np.log(ours))))
    assert "geomean_first8_cublas_bf16_us" in data and "geomean_first8_cublas_fp8_us" in data
    assert (out / "cpu.md").read_text().count("\n| ") >= 5


def test_bench_is_deterministic(cli, tmp_path):
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("5 40 64\n")
    ratios = []
    for i in range(2):
        cli.ok("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", tmp_path / str(i), "--seed", 11)
        ratios.append(json.loads((tmp_path / str(i) / "cpu.json").read_text())["rows"][0]["max_err_ratio"])
    assert ratios[0] == ratios[1]


def test_bench_flagged_weight_rows(cli, tmp_path):
    """--flagged-weight-rows R: its own file stem (never the plain bench's), recorded in the
    JSON and the header, results still within the bound; R past N is capped at N, a negative R
    or K < 64 with R > 0 is an error."""
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("4 40 256\n3 8 128\n")
    out = tmp_path / "results"
    cli.ok("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", out, "--flagged-weight-rows", 16)
    assert not (out / "cpu.json").exists()
    data = json.loads((out / "cpu-flagged16.json").read_text())
    assert data["flagged_weight_rows"] == 16
    assert all(row["correct"] is True for row in data["rows"])
    assert "16 weight rows per shape (N if fewer) with a flagged FP8 group" in (out / "cpu-flagged16.md").read_text()
    assert "--flagged-weight-rows" in cli.fails("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", out,
                                                "--flagged-weight-rows", -1)
    short = tmp_path / "short.txt"
    short.write_text("2 8 32\n")
    assert "failed" in cli.fails("bench", "--shapes", short, "--backend", "cpu", "--out-dir", out,
                                 "--flagged-weight-rows", 1)
    assert "K >= 64" in json.loads((out / "cpu-flagged1.json").read_text())["rows"][0]["error"]


def test_bench_out_dtype_f32(cli, tmp_path):
    """--out-dtype f32: ours writes fp32 C, checked after rounding to bf16, which gives the bf16
    run's bits (spec §3), so both runs find the same worst error; its own file stem and a note in
    the JSON and the header; another dtype is refused."""
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("5 40 96\n9 72 64\n")
    out = tmp_path / "results"
    cli.ok("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", out, "--seed", 5)
    cli.ok("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", out, "--seed", 5, "--out-dtype", "f32")
    bf16 = json.loads((out / "cpu.json").read_text())
    f32 = json.loads((out / "cpu-f32.json").read_text())
    assert bf16["out_dtype"] == "bf16" and f32["out_dtype"] == "f32"
    for a, b in zip(bf16["rows"], f32["rows"]):
        assert a["correct"] is True and b["correct"] is True
        assert 0 < b["max_err_ratio"] == a["max_err_ratio"]
    assert "ours writing fp32 C" in (out / "cpu-f32.md").read_text()
    assert "ours writing fp32 C" not in (out / "cpu.md").read_text()
    assert "f16" in cli.fails("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", out, "--out-dtype", "f16")


def test_bench_bad_shapes_file(cli, tmp_path):
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("4 64 64\n4 64 63\n")
    line = cli.fails("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", tmp_path)
    assert "shapes.txt:2" in line
    shapes.write_text("4 64\n")
    assert "M N K" in cli.fails("bench", "--shapes", shapes, "--backend", "cpu", "--out-dir", tmp_path)
    assert "cannot open" in cli.fails("bench", "--shapes", tmp_path / "none.txt", "--out-dir", tmp_path)
    assert "is a directory" in cli.fails("bench", "--shapes", tmp_path, "--out-dir", tmp_path)  # session 60 review


def test_cuda_backend_unavailable(cli, tmp_path):
    if "CUDA devices: 0" not in cli.ok("info").stdout:
        return  # a GPU is present: nothing to test here
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("4 64 64\n")
    assert "cuda" in cli.fails("bench", "--shapes", shapes, "--backend", "cuda", "--out-dir", tmp_path).lower()


def test_tune_without_cuda(cli):
    if "built with CUDA: no" not in cli.ok("info").stdout:
        return
    r = cli.run("tune")
    assert r.returncode == 2
    assert r.stderr.strip().startswith("mxfp4 tune: tune needs the CUDA backend")
    assert len(r.stderr.strip().splitlines()) == 1


def test_tune_paths_names_the_bad_path(cli):
    r = cli.run("tune", "--paths", "splitk,fp9")
    assert r.returncode != 0
    assert "fp9" in r.stderr


def test_bench_cuda_small(cli, tmp_path):
    info = cli.ok("info").stdout
    if "CUDA devices: 0" in info or "built with CUDA: no" in info:
        import pytest
        pytest.skip("no CUDA device")
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("4 2880 512\n16 256 1024\n1 64 64\n")
    out = tmp_path / "results"
    cli.ok("bench", "--shapes", shapes, "--backend", "cuda", "--out-dir", out, "--replays", 10, "--name", "gpu")
    data = json.loads((out / "gpu.json").read_text())
    assert data["backend"] == "cuda" and data["gpu"]
    for row in data["rows"]:
        assert ROW_KEYS <= set(row)
        assert row["correct"] is True
        assert row["ours_us"] > 0 and row["cublas_bf16_us"] > 0 and row["cublas_fp8_us"] > 0
        assert row["path"].startswith("path=")
    assert data["geomean_first8_cublas_fp8_us"] > 0
    # fp32 C on every path (256 x 2880 x 1024: path fp8 with a tile past N), same check.
    shapes.write_text("4 2880 512\n16 256 1024\n256 2880 1024\n")
    cli.ok("bench", "--shapes", shapes, "--backend", "cuda", "--out-dir", out, "--replays", 10, "--name", "gpu32",
           "--out-dtype", "f32", "--no-baselines")
    data = json.loads((out / "gpu32.json").read_text())
    assert data["out_dtype"] == "f32"
    for row in data["rows"]:
        assert row["correct"] is True and row["ours_us"] > 0, row
