#!/usr/bin/env python3
"""Compares the SASS of two `cuobjdump -sass` dumps kernel by kernel (tools/dev/sass-diff.sh).

For each kernel: the instruction count of each dump and whether the opcode sequence up to the
last tensor-core instruction (IGMMA, QGMMA, HGMMA, HMMA, IMMA: the K loop and what precedes it)
is the same. Opcodes only (registers, predicates and addresses are ignored), so a changed
register allocation alone reads as identical. Session 49: path fp8's epilogue v1 changed no
K loop by more than one instruction yet cost full tiles 0.46-2.51 us, so "identical" here
does not mean "as fast"; a differing loop region is a reason to measure before landing.
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
    out, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = demangle(m.group(1))
            out[cur] = []
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m and cur:
            ins = re.sub(r"^@!?U?P\w+\s+", "", m.group(1))  # drop the predicate guard
            out[cur].append(ins.split()[0])
    return out


def loop_region(ops):
    last = [i for i, op in enumerate(ops) if op.startswith(MMA)]
    return ops[: last[-1] + 1] if last else ops


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
        print(f"{len(a):6d} -> {len(b):6d}  up to the last MMA: {same}  {name}")


if __name__ == "__main__":
    main()
