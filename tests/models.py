"""Independent Python models of the samples in samples/*.cu.

Each model is written from the meaning of the C source (C 32-bit integer
semantics: wrap-around modulo 2^32, division truncating toward zero, remainder
with the dividend's sign, arithmetic right shift of negative ints, logical right
shift of unsigned) -- never from the compiler or the emulator.

Every model has the signature

    model(arrays, scalars, grid, block) -> dict[str, np.ndarray]

where `arrays` holds the host buffers passed to the launch (inputs and the
initial contents of outputs), `scalars` the scalar parameters, and grid/block
are (x, y, z) tuples.  It returns the expected final contents of *every*
buffer (inputs included, which must come back unchanged), in the numpy dtype
the launcher reads them back in (int32, uint32, int8, uint8, bool).
"""

from __future__ import annotations

import numpy as np

INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
U32 = 0xFFFFFFFF


# --- C 32-bit integer semantics ------------------------------------------------

def s32(v: int) -> int:
    """The int with the same low 32 bits as v (two's complement)."""
    v &= U32
    return v - (1 << 32) if v & 0x80000000 else v


def u32(v: int) -> int:
    """The unsigned int with the same low 32 bits as v."""
    return v & U32


def s8(v: int) -> int:
    """(char)v: the low byte, sign-extended."""
    v &= 0xFF
    return v - 256 if v & 0x80 else v


def u8(v: int) -> int:
    """(unsigned char)v: the low byte."""
    return v & 0xFF


def tdiv(a: int, b: int) -> int:
    """Mathematical quotient truncated toward zero (C99 `/`), unbounded ints."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def tmod(a: int, b: int) -> int:
    """C99 `%`: a - (a / b) * b, same sign as a."""
    return a - tdiv(a, b) * b


def sdiv(a: int, b: int) -> int:
    """int / int (b != 0, not INT_MIN / -1, which C leaves undefined)."""
    return s32(tdiv(s32(a), s32(b)))


def smod(a: int, b: int) -> int:
    return s32(tmod(s32(a), s32(b)))


def udiv(a: int, b: int) -> int:
    return u32(a) // u32(b)


def umod(a: int, b: int) -> int:
    return u32(a) % u32(b)


def sar(a: int, s: int) -> int:
    """int >> s: arithmetic shift (sign bits come in)."""
    return s32(a) >> s


def shr(a: int, s: int) -> int:
    """unsigned >> s: logical shift."""
    return u32(a) >> s


def shl(a: int, s: int) -> int:
    """<< s, with the result's 32 bits."""
    return u32(a) << s & U32


def _threads_x(grid, block) -> int:
    return grid[0] * block[0]


def _copy(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.array(v, copy=True) for k, v in arrays.items()}


# --- the samples ---------------------------------------------------------------

def vadd(arrays, scalars, grid, block):
    out = _copy(arrays)
    a, b, c = arrays["a"], arrays["b"], out["c"]
    n = scalars["n"]
    for i in range(min(n, _threads_x(grid, block))):
        c[i] = s32(int(a[i]) + int(b[i]))
    return out


def collatz(arrays, scalars, grid, block):
    out = _copy(arrays)
    x = arrays["x"]
    n, limit = scalars["n"], scalars["limit"]
    for i in range(min(n, _threads_x(grid, block))):
        v = u32(int(x[i]))
        hi = v
        s = 0
        odds = 0
        while True:
            if v <= 1:
                break
            if s >= limit:
                s = -1
                break
            s += 1
            if v & 1:
                v = u32(3 * v + 1)
                odds += 1
                if v > hi:
                    hi = v
                continue
            v >>= 1
        out["steps"][i] = s
        out["peak"][i] = hi
        out["odd"][i] = odds
    return out


def _iabs(v: int) -> int:
    return s32(-v) if v < 0 else v


def _clamp(v: int, lo: int, hi: int) -> int:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


def _gcd(x: int, y: int) -> int:
    x, y = _iabs(x), _iabs(y)
    while y != 0:
        x, y = y, smod(x, y)
    return x


def _lcm(x: int, y: int) -> int:
    if x == 0 or y == 0:
        return 0
    return s32(sdiv(_iabs(x), _gcd(x, y)) * _iabs(y))


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def devfunc(arrays, scalars, grid, block):
    out = _copy(arrays)
    a, b = arrays["a"], arrays["b"]
    n, cap = scalars["n"], s32(scalars["cap"])
    for i in range(min(n, _threads_x(grid, block))):
        x, y = int(a[i]), int(b[i])
        out["g"][i] = _gcd(x, y)
        out["l"][i] = _clamp(_lcm(x, y), 0, cap)
        out["s"][i] = _sign(s32(x - y))
    return out


def reduce(arrays, scalars, grid, block):
    """partial[b] = sum of x[b*B .. b*B+B-1] restricted to indices < n (B a power of two)."""
    out = _copy(arrays)
    x = arrays["x"]
    n = scalars["n"]
    bs = block[0]
    for blk in range(grid[0]):
        total = sum(int(x[i]) for i in range(blk * bs, min((blk + 1) * bs, n)))
        out["partial"][blk] = s32(total)
    return out


def histogram(arrays, scalars, grid, block):
    out = _copy(arrays)
    text = arrays["text"]
    n = scalars["n"]
    counts = [0] * 17
    for i in range(n):
        c = s8(int(text[i]))
        counts[u8(c) >> 4] += 1
        if c < 0:
            counts[16] += 1
    bins = out["bins"]
    for k in range(17):
        bins[k] = s32(int(bins[k]) + counts[k])
    return out


def matmul(arrays, scalars, grid, block):
    """C[r][c] = sum_k A[r][k] * B[k][c] for rows/cols the 4x4-tiled grid covers."""
    assert block[:2] == (4, 4), "the kernel hard-codes 4x4 tiles"
    out = _copy(arrays)
    n = scalars["n"]
    A = arrays["A"].astype(np.int64).reshape(-1)
    B = arrays["B"].astype(np.int64).reshape(-1)
    C = out["C"]
    for row in range(min(n, grid[1] * 4)):
        for col in range(min(n, grid[0] * 4)):
            acc = 0
            for k in range(n):
                acc += int(A[row * n + k]) * int(B[k * n + col])
            C[row * n + col] = s32(acc)
    return out


def scan(arrays, scalars, grid, block):
    out = _copy(arrays)
    x = arrays["x"]
    n = scalars["n"]
    bs = block[0]
    for blk in range(grid[0]):
        run = 0
        for t in range(bs):
            i = blk * bs + t
            if i < n:
                run += int(x[i])
                out["y"][i] = s32(run)
        out["sums"][blk] = s32(run)
    return out


def atomics(arrays, scalars, grid, block):
    out = _copy(arrays)
    n = min(scalars["n"], _threads_x(grid, block))
    xs = [int(v) for v in arrays["x"][:n]]
    acc = [int(v) for v in arrays["acc"]]
    u = [int(v) for v in arrays["u"]]
    for v in xs:
        acc[0] = s32(acc[0] + v)
        acc[1] = s32(acc[1] - v)
        acc[2] = min(acc[2], v)
        acc[3] = max(acc[3], v)
        acc[4] = s32(acc[4] & v)
        acc[5] = s32(acc[5] | v)
        acc[6] = s32(acc[6] ^ v)
        acc[7] = max(acc[7], v)
        u[0] = min(u[0], u32(v))
        u[1] = max(u[1], u32(v))
    first = acc[8]
    acc[8] = s32(acc[8] + n)
    tickets = out["tickets"]
    for k in range(n):
        t = s32(first + k)
        tickets[t >> 5] = u32(int(tickets[t >> 5]) | (1 << (t & 31)))
    out["acc"][:] = np.array(acc, dtype=np.int64).astype(np.int32)
    out["u"][:] = np.array(u, dtype=np.uint32)
    for i in range(n):
        out["prev"][i] = arrays["slot"][i]
        out["slot"][i] = arrays["x"][i]
    return out


def divmod(arrays, scalars, grid, block):
    out = _copy(arrays)
    a, b = arrays["a"], arrays["b"]
    n = scalars["n"]
    for i in range(min(n, _threads_x(grid, block))):
        x, y = int(a[i]), int(b[i])
        s = (5 * i) & 31
        out["q"][i] = sdiv(x, y)
        out["r"][i] = smod(x, y)
        out["uq"][i] = udiv(x, y)
        out["ur"][i] = umod(x, y)
        out["sr"][i] = sar(x, s)
        out["ur2"][i] = shr(x, s)
        out["sl"][i] = s32(shl(x, s))
        out["c"][i] = s8(x)
        out["cw"][i] = s8(x)
        out["uc"][i] = u8(x)
        out["bz"][i] = smod(x, y) != 0
    return out


def _popcount(v: int) -> int:
    return bin(u32(v)).count("1")


def _reverse(v: int) -> int:
    return int(format(u32(v), "032b")[::-1], 2)


def _rotl(v: int, k: int) -> int:
    v = u32(v)
    return u32((v << k) | (v >> (32 - k))) if k else v


def _clz(v: int) -> int:
    return 32 - u32(v).bit_length()


def bitops(arrays, scalars, grid, block):
    out = _copy(arrays)
    x, r = arrays["x"], arrays["r"]
    n = scalars["n"]
    for i in range(min(n, _threads_x(grid, block))):
        v = u32(int(x[i]))
        p = _popcount(v)
        out["pop"][i] = p
        out["par"][i] = bool(p & 1)
        out["rev"][i] = _reverse(v)
        out["rot"][i] = _rotl(v, int(r[i]) & 31)
        out["low"][i] = v & u32(-v)
        out["clz"][i] = _clz(v)
    return out


MODELS = {
    "vadd": vadd,
    "collatz": collatz,
    "devfunc": devfunc,
    "reduce": reduce,
    "histogram": histogram,
    "matmul": matmul,
    "scan": scan,
    "atomics": atomics,
    "divmod": divmod,
    "bitops": bitops,
}


# --- float samples (numpy float32: one IEEE rounding per operation, in source order) ---

def _f(v) -> np.float32:
    return np.float32(v)


def saxpy(arrays, scalars, grid, block):
    out = _copy(arrays)
    a = np.array([scalars["a"]], np.uint32).view(np.float32)[0]
    x, y = arrays["x"], out["y"]
    for i in range(min(scalars["n"], _threads_x(grid, block))):
        y[i] = _f(_f(a * x[i]) + y[i])
    return out


def dot(arrays, scalars, grid, block):
    out = _copy(arrays)
    x, y, n = arrays["x"], arrays["y"], scalars["n"]
    bs, nb = block[0], grid[0]
    with np.errstate(all="ignore"):
        for b in range(nb):
            part = []
            for t in range(bs):
                s = _f(0)
                for i in range(b * bs + t, n, bs * nb):
                    s = _f(s + _f(x[i] * y[i]))
                part.append(s)
            s_ = bs // 2
            while s_ > 0:
                for t in range(s_):
                    part[t] = _f(part[t] + part[t + s_])
                s_ //= 2
            out["result"][0] = _f(out["result"][0] + part[0])
    return out


def _bits_to_f(v: int) -> np.float32:
    return np.array([v & 0xFFFFFFFF], np.uint32).view(np.float32)[0]


def mandelbrot(arrays, scalars, grid, block):
    out = _copy(arrays)
    w, h, m = scalars["width"], scalars["height"], scalars["max_iter"]
    x0, y0, dx, dy = (_bits_to_f(scalars[k]) for k in ("x0", "y0", "dx", "dy"))
    with np.errstate(all="ignore"):
        for py in range(min(h, grid[1] * block[1])):
            for px in range(min(w, grid[0] * block[0])):
                cr, ci = _f(x0 + _f(_f(px) * dx)), _f(y0 + _f(_f(py) * dy))
                zr = zi = zr2 = zi2 = _f(0)
                k = 0
                while k < m and _f(zr2 + zi2) <= _f(4):
                    zi = _f(_f(_f(2) * zr) * zi + ci)
                    zr = _f(_f(zr2 - zi2) + cr)
                    zr2, zi2 = _f(zr * zr), _f(zi * zi)
                    k += 1
                out["iters"][py * w + px] = k
    return out


MODELS.update({"saxpy": saxpy, "dot": dot, "mandelbrot": mandelbrot})


def warpreduce(arrays, scalars, grid, block):
    """partial[b] = sum of x over block b's indices below n (blockDim a multiple of 4)."""
    out = _copy(arrays)
    x, n, bs = arrays["x"], scalars["n"], block[0]
    for blk in range(grid[0]):
        out["partial"][blk] = s32(sum(int(x[i]) for i in range(blk * bs, min((blk + 1) * bs, n))))
    return out


def compact(arrays, scalars, grid, block):
    """Block b writes its elements above the threshold, in order, to out[b*B ...]; counts[b] = how many."""
    out = _copy(arrays)
    x, n, thr, bs = arrays["x"], scalars["n"], scalars["threshold"], block[0]
    for blk in range(grid[0]):
        kept = [int(x[i]) for i in range(blk * bs, min((blk + 1) * bs, n)) if int(x[i]) > thr]
        out["out"][blk * bs:blk * bs + len(kept)] = kept
        out["counts"][blk] = len(kept)
    return out


MODELS.update({"warpreduce": warpreduce, "compact": compact})
