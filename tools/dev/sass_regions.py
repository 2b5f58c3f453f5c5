#!/usr/bin/env python3
"""Compares the SASS of two `cuobjdump -sass` dumps kernel by kernel (tools/dev/sass-diff.sh).

For each kernel: the instruction count of each dump, whether the opcode sequence up to the
last tensor-core instruction (IGMMA, QGMMA, HGMMA, HMMA, IMMA: the K loop and what precedes it)
is the same, and where the innermost loops holding its first and its last tensor-core
instruction start, in bytes mod 128 (an instruction-cache line; .text sections are 128-byte
aligned). Opcodes only (registers, predicates and addresses are ignored), so a changed register
allocation alone reads as identical. Session 49: path fp8's epilogue v1 changed no K loop by
more than one instruction yet cost full tiles 0.46-2.51 us, so "identical" here does not mean
"as fast"; a differing loop region is a reason to measure before landing. Session 50: v2 of it
moved the slice loops of the 128 x 128 and 192 x 128 kernels (48 -> 64 and 80 -> 0 bytes mod
128) and the full-tile stores ~9 KB further on, and cost full tiles 1.0-7.7 us. Session 51
(H100): HEAD's code at v2's loop offsets ran as HEAD, v2's code at HEAD's offsets lost as v2:
the cost came with the code, not the loops' position (docs/perf-notes.md).
Usage: sass_regions.py BASE.sass NEW.sass
"""
import re
import subprocess
import sys

MMA = ("IGMMA", "QGMMA", "HGMMA", "HMMA", "IMMA")


def demangle(name):
    """The demangled name (anonymous namespaces mangle with a hash of the file's path, which
    differs between the two builds; demangled they read "(anonymous namespace)")."""
    try:
        return subprocess.run(["c++filt", name], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return re.sub(r"_GLOBAL__N__[0-9a-f]+_", "_GLOBAL__N_", name)


def kernels(path):
    """{demangled kernel name: [(address, opcode, instruction text)]}."""
    out, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = demangle(m.group(1))
            out[cur] = []
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and cur:
            ins = re.sub(r"^@!?U?P\w+\s+", "", m.group(2))  # drop the predicate guard
            out[cur].append((int(m.group(1), 16), ins.split()[0], ins))
    return out


def loop_region(code):
    ops = [op for _, op, _ in code]
    last = [i for i, op in enumerate(ops) if op.startswith(MMA)]
    return ops[: last[-1] + 1] if last else ops


def mma_loop_offsets(code):
    """(first, last): the first address mod 128 of the innermost loop (a backward branch's span)
    that holds the kernel's first and its last tensor-core instruction, None where there is none.
    In path fp8's kernels the first is the slice loop (chained narrow slices: what the benchmark
    shapes run), the last the wide path's k32 loop inside it (session 50's review)."""
    mma = [a for a, op, _ in code if op.startswith(MMA)]
    loops = []  # (span, start) of every backward branch
    for a, op, ins in code:
        m = re.search(r"0x([0-9a-f]+)", ins) if op == "BRA" else None
        if m and int(m.group(1), 16) < a:
            loops.append((a - int(m.group(1), 16), int(m.group(1), 16)))

    def innermost(x):
        spans = [(span, t) for span, t in loops if t <= x <= t + span]
        return min(spans)[1] % 128 if spans else None

    return (innermost(mma[0]), innermost(mma[-1])) if mma else (None, None)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base, new = kernels(sys.argv[1]), kernels(sys.argv[2])
    for name in sorted(set(base) | set(new)):
        a, b = base.get(name), new.get(name)
        if a is None or b is None:
            print(f"{'only in new' if a is None else 'only in base'}: {name}")
            continue
        ra, rb = loop_region(a), loop_region(b)
        same = "identical" if ra == rb else f"DIFFERS ({len(ra)} -> {len(rb)} instructions)"
        oa, ob = mma_loop_offsets(a), mma_loop_offsets(b)
        where = "" if oa == ob == (None, None) else f"  MMA loops (first, last) at {oa} -> {ob} mod 128"
        print(f"{len(a):6d} -> {len(b):6d}  up to the last MMA: {same}{where}  {name}")


if __name__ == "__main__":
    main()
