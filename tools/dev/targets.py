#!/usr/bin/env python3
"""Prints the issue 5 / issue 6 target table of docs/perf-notes.md from a `mxfp4 bench` markdown
file (default bench/results/h200.md): for every shape of issue 5 (M <= 64) the target is
min(cuBLAS bf16 / 2, cuBLASLt FP8 / 1.5, 1.5 x floor + 0.5 us); for issue 6 (M >= 256)
cuBLAS bf16 / 1.3, and at M >= 1024 also cuBLASLt FP8 / 0.85. Shapes with neither (M = 128)
are listed without a target.
Usage: tools/dev/targets.py [BENCH_MD]
"""
import sys


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200.md"
    rows = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not cells[0].isdigit():
            continue
        M, N, K = (int(c) for c in cells[:3])
        ours, bf16, fp8, floor = (float(c) for c in cells[3:7])
        rows.append((M, N, K, ours, bf16, fp8, floor))
    print("| M x N x K | ours | cuBLAS bf16 | cuBLASLt FP8 | target | ours / target |")
    print("|---|---|---|---|---|---|")
    for M, N, K, ours, bf16, fp8, floor in rows:
        if M <= 64:
            target = min(bf16 / 2, fp8 / 1.5, 1.5 * floor + 0.5)
        elif M >= 256:
            target = bf16 / 1.3 if M < 1024 else min(bf16 / 1.3, fp8 / 0.85)
        else:
            target = None
        t = f"{target:.2f}" if target else "-"
        r = f"{ours / target:.1f}x" if target else "-"
        print(f"| {M}x{N}x{K} | {ours:.2f} | {bf16:.2f} | {fp8:.2f} | {t} | {r} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
