"""A generated qsass program of exactly N instructions whose control flow spans the whole PC range,
and an independent per-thread model of it (for the program-size tests and bench/).

The program: a low subroutine at pc 1 that returns to a high address (JR), a call from pc ~10 to a
subroutine at the top of the program that returns to a low address, straight-line ALU code through
every ROM chunk, a divergent if/else every ~700 instructions (one of them straddling the middle), a
counted loop near the end, and a store of each thread's two accumulators as the instruction before
the last; the last instruction (pc N-1) is EXIT.  With `skip`, each stretch of straight code runs
its first few instructions and branches over the rest (never executed, but in the ROM): the text
is as long and its control flow as wide, the execution a few dozen steps per 700 instructions.
`model` runs the same text per thread in plain Python (a dozen opcodes, written from
docs/qsass.md), not through qgcc's emulator.
"""

from __future__ import annotations

import re

MASK = 0xFFFFFFFF
PAD = ["ADD r2, r2, #{k}", "XOR r3, r3, r2", "SHR r7, r2, #{s}", "SUB r3, r3, r7", "OR r8, r3, #{k}",
       "ADD r2, r2, r8", "SHL r7, r3, #{s}", "XOR r2, r2, r7"]


def _pad(count: int, seed: int) -> list[str]:
    return [PAD[(seed + i) % len(PAD)].format(k=(seed * 7919 + i * 104729) % 100003, s=1 + (seed + i) % 13)
            for i in range(count)]


def generate(n: int, threads: int = 8, skip: bool = False) -> str:
    """qsass text of kernel `longprog(int* out)`, exactly `n` instructions (n >= 256); with
    `skip`, straight code is mostly branched over."""
    skips = 0

    def straight_code(count: int, seed: int) -> list[str]:
        nonlocal skips
        if not skip or count < 16:
            return _pad(count, seed)
        skips += 1
        return _pad(4, seed) + [f"BRA skip{skips}"] + _pad(count - 5, seed + 1) + [f"skip{skips}:"]

    low = ["BRA main", "flow:"] + _pad(6, 1) + ["JR r11"]
    main = ["main:", "S2R r0, %tid.x", "LDC r1, c[0]", "MOV r2, #12345", "MOV r3, #-777",
            "MOV r10, #ret1", "BRA fhigh", "ret1:"]
    high = ["fhigh:"] + _pad(5, 2) + ["MOV r11, #retf", "BRA flow", "retf:"] + _pad(5, 3) + ["JR r10"]
    loop = ["MOV r5, #3", "loop:", "ADD r2, r2, r5", "XOR r3, r3, r2", "SUB r5, r5, #1", "BRNZ r5, loop"]
    epi = ["epi:", "ADD r6, r1, r0", "ST [r6], r2", f"ST [r6+{threads}], r3", "EXIT"]

    def diamond(i: int) -> list[str]:
        return ([f"AND r4, r0, #{1 + i % 3}", f"BRZ r4, even{i}"] + _pad(9, 10 + i) + [f"BRA join{i}", f"even{i}:"]
                + _pad(7, 20 + i) + [f"join{i}:"])

    def count(lines):
        return sum(1 for s in lines if not s.endswith(":"))

    fixed = count(low) + count(main) + count(high) + count(loop) + count(epi) + 1  # + "BRA epi"
    body: list[str] = []
    straight = n - fixed
    # Diamonds every ~700 instructions of straight code, the first at the middle of the program.
    marks = sorted({n // 2 - count(low) - count(main) - 3} | set(range(300, straight - 400, 700)))
    d = 0
    for m in marks:
        if count(body) < m:
            body += straight_code(m - count(body), 100 + d)
        dm = diamond(d)
        if count(body) + count(dm) > straight:
            break
        body += dm
        d += 1
    body += straight_code(straight - count(body), 999) + loop
    lines = low + main + body + ["BRA epi"] + high + epi
    assert count(lines) == n, (count(lines), n)
    # Resolve MOV #label (return addresses) to numbers.
    pcs, pc = {}, 0
    for s in lines:
        if s.endswith(":"):
            pcs[s[:-1]] = pc
        else:
            pc += 1
    lines = [re.sub(r"#(ret\w+)", lambda mm: f"#{pcs[mm.group(1)]}", s) for s in lines]
    text = [".kernel longprog", ".param int* out"]
    text += [s if s.endswith(":") else "    " + s for s in lines]
    return "\n".join(text + [".end", ""])


def model(text: str, threads: int) -> list[int]:
    """The output buffer (2 * threads cells) after every thread runs the program alone."""
    code, labels = [], {}
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("."):
            continue
        if s.endswith(":"):
            labels[s[:-1]] = len(code)
        else:
            op, _, rest = s.partition(" ")
            code.append((op, [a.strip() for a in rest.split(",")] if rest else []))
    out = [0] * (2 * threads)

    for tid in range(threads):
        r = [0] * 32
        pc = 0

        def val(a: str) -> int:
            return int(a[1:]) & MASK if a.startswith("#") else r[int(a[1:])]

        while True:
            op, a = code[pc]
            pc += 1
            if op in ("ADD", "SUB", "XOR", "OR", "AND", "SHL", "SHR"):
                x, y = r[int(a[1][1:])], val(a[2])
                r[int(a[0][1:])] = {"ADD": x + y, "SUB": x - y, "XOR": x ^ y, "OR": x | y, "AND": x & y,
                                    "SHL": x << (y & 31), "SHR": x >> (y & 31)}[op] & MASK
            elif op == "MOV":
                r[int(a[0][1:])] = val(a[1])
            elif op == "S2R":
                r[int(a[0][1:])] = tid
            elif op == "LDC":
                r[int(a[0][1:])] = 0  # the launcher places `out` at cell 0 (checked by the test)
            elif op == "BRA":
                pc = labels[a[0]]
            elif op in ("BRZ", "BRNZ"):
                if (r[int(a[0][1:])] == 0) == (op == "BRZ"):
                    pc = labels[a[1]]
            elif op == "JR":
                pc = r[int(a[0][1:])]
            elif op == "ST":
                m = re.fullmatch(r"\[r(\d+)(?:\+(\d+))?\]", a[0])
                out[r[int(m.group(1))] + int(m.group(2) or 0)] = r[int(a[1][1:])]
            elif op == "EXIT":
                break
            else:
                raise AssertionError(f"model: {op}")
    return out
