#!/usr/bin/env python3
"""The current dispatcher against logged tunes, without a GPU.

Usage (repository root): tools/dev/tune-regret.py [--sms N] [--min R] LOG...
e.g. tools/dev/tune-regret.py bench/results/logs/tune*session5[3-9]*h100.log

Reads every candidate line of `mxfp4 tune --verbose` logs ("M N K T us path=... block_n=...
block_m=... split_k=... warps=..."), asks the dispatcher of the tree for each shape
(tools/dev/dispatch-query.cpp, built here with g++), and prints the shapes where the logged
time of its choice is at least R (default 1.04) times the best logged candidate, worst first,
grouped by (choice -> winner). Where a shape was tuned in several logs, the last log given
wins. A tune is one run per candidate: confirm any class with an A/B (tools/dev/ab.sh) before
a rule changes. Shapes whose choice was never a candidate are counted and listed.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r'^\s{4,}(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+) us\s+(path=\S+ block_n=\d+ block_m=\d+ split_k=\d+ warps=\d+)')


def build_query(root):
    exe = os.path.join(tempfile.gettempdir(), 'mxfp4-dispatch-query')
    src = ['tools/dev/dispatch-query.cpp', 'src/dispatch/dispatch.cpp', 'src/dispatch/config.cpp',
           'src/dispatch/fp8_rules.cpp']
    subprocess.run(['g++', '-std=c++20', '-O2', '-Iinclude', '-Isrc', *src, '-o', exe], cwd=root, check=True)
    return exe


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sms', type=int, default=132)
    ap.add_argument('--min', type=float, default=1.04)
    ap.add_argument('logs', nargs='+')
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    times = collections.OrderedDict()  # shape -> {config: us}, the last log's value
    for f in a.logs:
        for line in open(f):
            m = LINE.match(line)
            if m:
                times.setdefault((int(m[1]), int(m[2]), int(m[3])), {})[m[5]] = float(m[4])
    if not times:
        sys.exit('no candidate lines in the logs')
    exe = build_query(root)
    out = subprocess.run([exe, str(a.sms)], input=''.join('%d %d %d\n' % s for s in times),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    groups = collections.defaultdict(list)
    untuned = []
    for shape, line in zip(times, out):
        choice = ' '.join(line.split()[3:])
        t = times[shape]
        best = min(t, key=t.get)
        if choice not in t:
            untuned.append((shape, choice))
        elif t[choice] >= a.min * t[best]:
            groups[(choice, best)].append((t[choice] / t[best], shape, t[choice], t[best]))
    print('%d shapes, %d with the choice 1x-%.2fx the best, %d whose choice was not a candidate' %
          (len(times), len(times) - len(untuned) - sum(map(len, groups.values())), a.min, len(untuned)))
    for (choice, best), rows in sorted(groups.items(), key=lambda kv: -max(r[0] for r in kv[1])):
        print('%s -> %s (%d)' % (choice, best, len(rows)))
        for r, s, tc, tb in sorted(rows, reverse=True):
            print('  %.3fx %dx%dx%d %.2f against %.2f us' % (r, *s, tc, tb))
    for s, c in untuned:
        print('not a candidate: %dx%dx%d %s' % (*s, c))


if __name__ == '__main__':
    main()
