#!/usr/bin/env python3
"""Can a packed layout let the weight decode use fewer ALU operations per code word? (a design
aid for docs/packed-layout.md; docs/perf-notes.md, session 33; runs in about a minute).

A code word holds 8 e2m1 codes; the decode builds four bf16x2 registers whose code bits must sit
at P = {6,7,8,15, 22,23,24,31} (bf16 exponent LSBs, mantissa MSB and sign of each half). Layout
v3 takes register 0 as `w & mask` (1 ALU operation), registers 1 and 2 as a rotation and a mask
(2 each) and register 3 as two rotations, two masks and an OR (4): 9 per word. A register made
by one masking LOP3 from one or two shifted copies of the word costs 1-2 ALU operations
(funnel shifts and right shifts are ALU operations; left shifts can be IMADs on the FMA pipe),
so a layout where all four registers are of that kind would need 7 or fewer. This script
searches two families exhaustively and prints the cheapest tiling of the word's 32 bits, or
None when there is none:
  1. every register one rotation of its own word, or one funnel shift across the two words of
     a pair of K16 steps (the paired word supplies the bits that wrap);
  2. every register `((w >> a) | (w << b)) & mask` with the two copies never both landing on a
     bit of P (a rotation when a + b = 32), a pure shift or the word itself.
Both print None: register 3 keeps its two pieces in any such layout. (With a bit set that does
tile, e.g. P = {0-3, 16-19}, both find 7 operations per word: the search itself works.)
"""
import itertools

P = [6, 7, 8, 15, 22, 23, 24, 31]
FULL = (1 << 32) - 1


def mask(bits):
    r = 0
    for i in bits:
        r |= 1 << i
    return r


def rot(n):
    return mask((i + n) % 32 for i in P)


def family_pairs():
    """Rotations of the own word, or funnel shifts by n whose wrapped bits come from the partner."""
    ops = [("id", 0, rot(0), 0)] + [("rot", n, rot(n), 0) for n in range(1, 32)]
    ops += [("funnel", n, mask(i + n for i in P if i + n < 32), mask(i + n - 32 for i in P if i + n >= 32))
            for n in range(1, 32)]
    table = {}
    for combo in itertools.combinations(range(len(ops)), 4):
        own = part = 0
        ok = True
        for c in combo:
            _, _, o, p = ops[c]
            if own & o or part & p:
                ok = False
                break
            own |= o
            part |= p
        if ok:
            table.setdefault((own, part), []).append(combo)
    best = None
    # Word s is covered by its own registers' own bits and its partner's registers' wrapped bits.
    for (own, part), combos in table.items():
        for a in combos:
            for b in table.get((FULL & ~part, FULL & ~own), []):
                cost = sum(1 if ops[c][0] == "id" else 2 for c in a + b)
                if best is None or cost < best[0]:
                    best = (cost, [ops[c][:2] for c in a], [ops[c][:2] for c in b])
    return best


def family_shift_pairs():
    """((w >> a) | (w << b)) & mask with disjoint landing bits on P, pure shifts, the word itself."""
    cands = {}
    for a in [None] + list(range(32)):
        for b in [None] + list(range(1, 32)):
            if a is None and b is None:
                continue
            src, ok = 0, True
            for i in P:
                from_right = a is not None and i + a <= 31
                from_left = b is not None and i >= b
                if from_right == from_left:
                    ok = False
                    break
                src |= 1 << (i + a if from_right else i - b)
            if not ok:
                continue
            alu = 1 + (1 if a else 0)  # the LOP3, plus a right shift unless a is 0 or absent
            fma = 1 if b is not None else 0
            if src not in cands or (alu, fma) < cands[src][0]:
                cands[src] = ((alu, fma), (a, b))
    items = list(cands.items())
    best = None
    for combo in itertools.combinations(range(len(items)), 4):
        covered, ok = 0, True
        for c in combo:
            if covered & items[c][0]:
                ok = False
                break
            covered |= items[c][0]
        if ok and covered == FULL:
            cost = (sum(items[c][1][0][0] for c in combo), sum(items[c][1][0][1] for c in combo))
            if best is None or cost < best[0]:
                best = (cost, [items[c][1][1] for c in combo])
    return best


if __name__ == "__main__":
    print("rotations and paired funnel shifts:", family_pairs())
    print("two shifted copies per register:", family_shift_pairs())
