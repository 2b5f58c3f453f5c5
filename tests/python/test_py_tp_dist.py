"""Tensor-parallel layers across processes: launches tests/python/tp_worker.py with torchrun
(``python -m torch.distributed.run --standalone``) on 2 CPU processes with gloo, and, when 2
GPUs and a CUDA build are present, on 2 GPUs with nccl (scripts/tp-check.sh runs that one on a
GPU machine). The worker checks the distributed layers against the unsharded layer and the
exact reference; a fresh seed per run (printed on failure) draws the weights and inputs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mxfp4

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tp_worker.py")


def run_worker(backend, nproc=2, timeout=600):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    env = dict(os.environ)
    env["MXFP4_PYTHON_BUILD"] = os.path.dirname(os.path.abspath(mxfp4._C.__file__))  # the extension under test
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["NCCL_NVLS_ENABLE"] = "0"  # no NVLink SHARP in-switch reductions
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", WORKER,
           "--backend", backend, "--seed", str(seed)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode} (seed {seed}):\n{out[-6000:]}"
    assert f"checks passed on each of {nproc} ranks ({backend}" in out, out[-3000:]
    return out


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="torch without gloo")
def test_two_cpu_processes_gloo():
    run_worker("gloo")


@pytest.mark.skipif(not dist.is_available() or not dist.is_nccl_available(), reason="torch without nccl")
def test_two_gpus_nccl():
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 CUDA devices; torch sees {torch.cuda.device_count()}")
    if not mxfp4.built_with_cuda():
        pytest.skip("mxfp4 was built without the CUDA backend")
    run_worker("nccl")
