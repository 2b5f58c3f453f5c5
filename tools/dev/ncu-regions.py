#!/usr/bin/env python3
"""Warp-stall samples of one kernel by SASS region (a measurement aid): reads the
PREFIX-source.csv that tools/dev/ncu-kernel.sh writes and prints, per block of 200 SASS
instructions, the samples, the instructions executed and which marker instructions the block
holds (HMMA / LDGSTS / SYNCS = mbarrier waits / UCGABAR = cluster barrier / ...), plus the
total per stall reason. Usage: tools/dev/ncu-regions.py PREFIX-source.csv [BLOCK]
"""
import csv
import sys

MARKS = ['HMMA', 'HGMMA', 'QGMMA', 'LDGSTS', 'SYNCS', 'BAR.SYNC', 'UCGABAR', 'UBLKCP', 'LDS', 'STS', 'STG', 'FMNMX', 'ERRBAR',
         'HMUL2']


def main() -> int:
    rows = list(csv.reader(open(sys.argv[1])))
    block = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    print(' '.join(rows[0])[:160])
    hdr, data = rows[1], rows[2:]
    i_s, i_e = hdr.index('Warp Stall Sampling (All Samples)'), hdr.index('Instructions Executed')
    reasons = [i for i, h in enumerate(hdr) if h.startswith('stall_') and 'Not Issued' not in h]
    num = lambda r, i: int(r[i]) if r[i].isdigit() else 0
    total = sum(num(r, i_s) for r in data)
    print(f'samples {total}, warp instructions executed {sum(num(r, i_e) for r in data)}, SASS lines {len(data)}')
    by_reason = sorted(((sum(num(r, i) for r in data), hdr[i]) for i in reasons), reverse=True)
    print('stall reasons:', ', '.join(f'{h[6:]} {n}' for n, h in by_reason[:10]))
    for s in range(0, len(data), block):
        seg = data[s:s + block]
        n = sum(num(r, i_s) for r in seg)
        marks = sorted({m for r in seg for m in MARKS if m in r[1]})
        print(f'  {s:5d}-{s + len(seg) - 1:5d}  samples {n:5d} ({100.0 * n / max(total, 1):4.1f}%)  '
              f'executed {sum(num(r, i_e) for r in seg):9d}  {" ".join(marks)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
