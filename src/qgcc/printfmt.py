"""Device printf's format strings: parsed once by the compiler (which checks every argument
against its conversion and decides how many cells the record stores) and again by the host,
which formats the stored raw bits after the launch (runtime/printf.py).

The conversions are C's: %d %i %u %x %X %o %c %f %F %e %E %g %G %s %p and %% (not %a), with flags
(-+ #0), a width and a precision given as numbers (not `*`), and the length modifiers l and ll
on the integer conversions (64-bit arguments).  What each conversion stores:

    kind  conversions                    argument               cells
    i     d i c (no l)                   32-bit integer         1
    u     u x X o (no l)                 32-bit integer         1
    I     ld lld li lli                  64-bit integer         2 (low word first)
    U     lu llu lx llx lo llo ...       64-bit integer         2
    f     f F e E g G                    float                  1 (its bits; C promotes it to double,
                                                                   exactly, so the host widens the bits)
    d     f F e E g G                    double                 2
    s     s                              a string literal       0 (the text is in the format table)
    p     p                              a pointer              1 (a cell address)
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

SPEC_RE = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d*|\*))?(?P<len>hh|h|ll|l|L|z|j|t)?"
                     r"(?P<conv>[a-zA-Z%])?")
INT_SIGNED = "dic"
INT_UNSIGNED = "uxXo"
FLOATS = "fFeEgG"
CELLS = {"i": 1, "u": 1, "I": 2, "U": 2, "f": 1, "d": 2, "s": 0, "p": 1}


@dataclass(frozen=True)
class Conversion:
    text: str  # as written, e.g. '%08.3f'
    flags: str
    width: str
    prec: str | None
    length: str
    conv: str


def parse(fmt: str) -> list[str | Conversion]:
    """Literal text and conversions in order; ValueError names what is not supported."""
    out: list[str | Conversion] = []
    pos = 0
    for m in SPEC_RE.finditer(fmt):
        if m.start() > pos:
            out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group("conv")
        if conv == "%" and m.group(0) == "%%":
            out.append("%")
            continue
        if conv is None:
            raise ValueError(f"'{m.group(0)}' at the end of the format is not a conversion")
        if m.group("width") == "*" or m.group("prec") == "*":
            raise ValueError(f"'{m.group(0)}': a width or precision from an argument ('*') is not supported; "
                             "write the number")
        length = m.group("len") or ""
        if conv not in INT_SIGNED + INT_UNSIGNED + FLOATS + "sp":
            raise ValueError(f"'{m.group(0)}': the conversion '%{conv}' is not supported (use %d %i %u %x %X %o "
                             "%c %f %e %g %s %p)")
        if length and not (length in ("l", "ll") and conv in INT_SIGNED.replace("c", "") + INT_UNSIGNED) \
                and not (length == "l" and conv in FLOATS):
            raise ValueError(f"'{m.group(0)}': the length modifier '{length}' is not supported here (l and ll "
                             "go with the integer conversions)")
        out.append(Conversion(m.group(0), m.group("flags"), m.group("width") or "", m.group("prec"),
                              length, conv))
    if pos < len(fmt):
        out.append(fmt[pos:])
    return out


def conversions(fmt: str) -> list[Conversion]:
    return [p for p in parse(fmt) if isinstance(p, Conversion)]


def _c_format(c: Conversion, value) -> str:
    """One conversion with Python's %-formatting, which follows C's for these conversions
    except where the unsigned ones differ (handled first)."""
    flags = c.flags
    if c.conv in INT_UNSIGNED:
        flags = flags.replace("+", "").replace(" ", "")  # C ignores them on unsigned conversions
        if "#" in flags and (c.conv == "o" or value == 0):
            # C: %#o prefixes a single 0 (Python writes 0o); %#x of 0 is plain 0
            digits = ("%." + c.prec + c.conv if c.prec is not None else "%" + c.conv) % value
            if c.conv == "o" and not digits.startswith("0"):
                digits = "0" + digits
            width = int(c.width or 0)
            if "-" in flags:
                return digits.ljust(width)
            return digits.rjust(width, "0" if "0" in flags and c.prec is None else " ")
    spec = "%" + flags + c.width + ("." + c.prec if c.prec is not None else "") + c.conv
    return spec % value


def format_record(fmt: str, kinds: str, literals: tuple[str, ...], cells: list[int]) -> str:
    """The text one printf call printed, from its format, its argument kinds, its string
    literals (the %s arguments, in order) and the raw cells it stored."""
    out: list[str] = []
    ci = si = ki = 0
    for part in parse(fmt):
        if isinstance(part, str):
            out.append(part)
            continue
        kind = kinds[ki]
        ki += 1
        n = CELLS[kind]
        raw = cells[ci:ci + n]
        ci += n
        if kind == "s":
            out.append(_c_format(part, literals[si]))
            si += 1
        elif kind == "p":
            text = f"0x{raw[0]:x}" if raw[0] else "(nil)"
            out.append(("%" + part.flags.replace("0", "") + part.width + "s") % text)
        elif kind in "iu":
            v = raw[0] & 0xFFFFFFFF
            if kind == "i" and v >> 31:
                v -= 1 << 32
            if part.conv == "c":
                out.append(("%" + part.flags + part.width + "s") % chr(v & 0xFF))
            else:
                if part.conv in INT_UNSIGNED:
                    v &= 0xFFFFFFFF
                out.append(_c_format(part, v))
        elif kind in "IU":
            v = (raw[0] & 0xFFFFFFFF) | ((raw[1] & 0xFFFFFFFF) << 32)
            if part.conv in INT_SIGNED and v >> 63:
                v -= 1 << 64
            out.append(_c_format(part, v))
        elif kind == "f":
            out.append(_fmt_float(part, struct.unpack("<f", struct.pack("<I", raw[0] & 0xFFFFFFFF))[0]))
        else:  # "d"
            bits = (raw[0] & 0xFFFFFFFF) | ((raw[1] & 0xFFFFFFFF) << 32)
            out.append(_fmt_float(part, struct.unpack("<d", struct.pack("<Q", bits))[0]))
    return "".join(out)


def _fmt_float(c: Conversion, v: float) -> str:
    if v != v or v in (float("inf"), float("-inf")):  # C prints nan / inf (NAN / INF for upper case)
        text = "nan" if v != v else ("-inf" if v < 0 else "inf")
        if v == float("inf") and "+" in c.flags:
            text = "+inf"
        if c.conv.isupper():
            text = text.upper()
        return ("%" + c.flags.replace("0", "").replace("#", "") + c.width + "s") % text
    return _c_format(c, v)
