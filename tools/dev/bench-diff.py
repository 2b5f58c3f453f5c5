#!/usr/bin/env python3
"""Per-shape comparison of the `ours_us` column of two or more `mxfp4 bench` markdown files
(bench/results/h200.md and variants' copies), with the change of each later file against the
first in us and percent, and the geomean row. A measurement aid.
Usage: tools/dev/bench-diff.py BASE.md OTHER.md [MORE.md ...]
"""
import sys


def read(path):
    rows = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 4 or cells[0] in ('M', '---'):
            continue
        key = 'geomean' if cells[0].startswith('geomean') else 'x'.join(cells[:3])
        try:
            rows[key] = float(cells[3])
        except ValueError:
            pass
    return rows


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    files = [read(p) for p in sys.argv[1:]]
    base = files[0]
    print('| shape | ' + ' | '.join(sys.argv[1:]) + ' |')
    print('|---' * (len(files) + 1) + '|')
    for key, b in base.items():
        cells = [f'{b:.2f}']
        for f in files[1:]:
            v = f.get(key)
            cells.append('-' if v is None else f'{v:.2f} ({v - b:+.2f}, {100 * (v - b) / b:+.1f}%)')
        print(f'| {key} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
