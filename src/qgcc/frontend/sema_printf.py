"""Sema, device output: `printf(FORMAT, ...)` and `assert(cond)` (docs/subset.md, "printf and
assert").

As in CUDA, printf does no I/O on the device: each call stores a record (a format number, the
thread's block and thread indices, its arguments' raw bits) into a per-launch buffer with
ordinary stores, and the host formats the records after the launch (runtime/printf.py).  The
buffer is a `__device__` array the compiler adds (`__qg_printf`, PRINTF_CELLS cells, cleared
before every launch like every `__device__` variable); its cell 0 counts the cells that the
calls asked for, so the host also knows what did not fit.

A failing `assert` stores to a cell of a reserved, never valid address band (ASSERT_BAND + its
number), which every engine stops on as an out-of-bounds store; the runtime recognises the
band and reports the assertion instead (runtime/printf.py).  A passing one costs the compare
and a branch.

A mixin of `sema.Sema`; it imports only the shared types below the passes.
"""

from __future__ import annotations

import re

from .. import printfmt
from ..program import ASSERT_BAND, PRINTF_CELLS, PRINTF_NAME
from . import ast as A
from .symbols import VarSym
from .types import INT, UINT, VOID, ArrayType, Type, is_double, is_float, is_int, is_pair, is_ptr, is_wide

GRID_ONE_BLOCK = "gridDim.x * gridDim.y * gridDim.z == 1"
GRID_SYNC_FAULT = ("grid.sync() needs every block of the grid resident at once; this machine runs blocks one after "
                   "another: launch one block (--grid 1)")

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", "'": "'",
            '"': '"', "?": "?"}


def decode_string(text: str) -> str:
    """The characters of one or more adjacent C string literals, as the parser keeps them."""
    out: list[str] = []
    for m in re.finditer(r'"((?:[^"\\\n]|\\[^\n])*)"', text):
        body, i = m.group(1), 0
        while i < len(body):
            ch = body[i]
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
            elif nxt == "x":
                h = re.match(r"[0-9a-fA-F]+", body[i + 2:])
                out.append(chr(int(h.group(0), 16) & 0xFF) if h else "x")
                i += 2 + (len(h.group(0)) if h else 0)
            elif nxt in "01234567":
                o = re.match(r"[0-7]{1,3}", body[i + 1:]).group(0)
                out.append(chr(int(o, 8) & 0xFF))
                i += 1 + len(o)
            else:
                out.append(nxt)
                i += 2
    return "".join(out)


class PrintfSema:
    """printf and assert (a mixin of `sema.Sema`)."""

    def printf_buffer(self) -> VarSym:
        """The per-launch record buffer, a __device__ array added on the first printf."""
        sym = self.globals.get(PRINTF_NAME)
        if sym is None:
            sym = VarSym(PRINTF_NAME, ArrayType(UINT, (PRINTF_CELLS,)), "shared", 0, 0, space="constant",
                         address=self.constant_cells, init=[0] * PRINTF_CELLS)
            self.constant_cells += PRINTF_CELLS
            self.constants.append(sym)
            self.globals[PRINTF_NAME] = sym
        return sym

    def device_io(self) -> tuple[list, list]:
        """(printf formats, asserts) of the translation unit, in order of their numbers."""
        d = self.__dict__
        return d.setdefault("printf_formats", []), d.setdefault("device_asserts", [])

    def printf_call(self, e: A.Call) -> Type:
        if not e.args or not isinstance(e.args[0], A.StringLit):
            raise self.error(e, "the format of printf must be a string literal")
        fmt = decode_string(e.args[0].text)
        try:
            convs = printfmt.conversions(fmt)
        except ValueError as x:
            raise self.error(e.args[0], f"printf format: {x}") from None
        args = e.args[1:]
        if len(args) != len(convs):
            raise self.error(e, f"printf: the format has {len(convs)} conversion{'s' if len(convs) != 1 else ''} "
                                f"and {len(args)} argument{'s' if len(args) != 1 else ''} follow it")
        kinds: list[str] = []
        literals: list[str] = []
        for c, a in zip(convs, args):
            if c.conv == "s":
                if not isinstance(a, A.StringLit):
                    raise self.error(a, f"printf: '{c.text}' takes a string literal here (device strings "
                                        "in memory are not supported)")
                literals.append(decode_string(a.text))
                kinds.append("s")
                continue
            t = self.rvalue(a)
            kinds.append(self.printf_kind(c, t, a))
        formats, _ = self.device_io()
        e.callee = "printf"
        e.fmt = (len(formats), kinds, self.printf_buffer().address)
        formats.append((fmt, "".join(kinds), tuple(literals), e.line))
        e.args = args
        return INT

    def printf_kind(self, c, t: Type, a: A.Expr) -> str:
        def wrong(need: str) -> Exception:
            return self.error(a, f"printf: '{c.text}' needs {need}; the argument is '{t}'")
        if c.conv == "p":
            if not is_ptr(t):
                raise wrong("a pointer")
            return "p"
        if c.conv in printfmt.FLOATS:
            if is_double(t):
                return "d"
            if is_float(t):
                return "f"
            raise wrong("a float or double (write a cast, or an integer conversion such as %d)")
        if not is_int(t):
            raise wrong("an integer (write %f for a float)")
        if c.length in ("l", "ll"):
            if not is_wide(t):
                raise wrong(f"a 64-bit integer (write '%{c.conv}' for a 32-bit one)")
            return "I" if c.conv in printfmt.INT_SIGNED else "U"
        if is_pair(t):
            raise wrong(f"a 32-bit integer (write '%ll{c.conv}' for a 64-bit one)")
        return "i" if c.conv in printfmt.INT_SIGNED else "u"

    def assert_call(self, e: A.Call) -> Type:
        if len(e.args) != 1:
            raise self.error(e, f"'assert' expects 1 argument, got {len(e.args)}")
        t = self.rvalue(e.args[0])
        if not (is_int(t) or is_float(t) or is_ptr(t) or is_double(t)):
            raise self.error(e.args[0], f"assert needs a scalar condition; the argument is '{t}'")
        _, asserts = self.device_io()
        if len(asserts) >= 0x10000:
            raise self.error(e, "too many assert calls (at most 65536)")
        e.callee = "assert"
        e.fmt = (len(asserts), ASSERT_BAND + len(asserts))
        asserts.append((e.line, self.condition_text(e), self.func.name if self.func is not None else "?"))
        return INT

    def grid_sync_call(self, e: A.Call) -> Type:
        """`__qg_grid_sync()`, what coopgroups makes of grid.sync(): blocks run one after another
        here, so a grid-wide barrier is exact only in a launch of one block, where it is the block
        barrier.  The check that the grid is one block is an assert with its own report."""
        self.nargs(e, "grid.sync", 0)
        _, asserts = self.device_io()
        if len(asserts) >= 0x10000:
            raise self.error(e, "too many assert calls (at most 65536)")
        e.callee = "__qg_grid_sync"
        e.fmt = (len(asserts), ASSERT_BAND + len(asserts))
        asserts.append((e.line, GRID_ONE_BLOCK, self.func.name if self.func is not None else "?", GRID_SYNC_FAULT))
        return VOID

    def condition_text(self, e: A.Call) -> str:
        """The condition as written, from the (virtual) source line: `assert(gtid < N)` -> 'gtid < N'."""
        line = self.lines[e.line - 1] if 0 < e.line <= len(self.lines) else ""
        start = line.find("(", e.col - 1)
        depth, out = 0, []
        for ch in line[start:] if start >= 0 else "":
            if ch == "(":
                depth += 1
                if depth == 1:
                    continue
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return "".join(out).strip()
            out.append(ch)
        return "".join(out).strip() or "condition"

