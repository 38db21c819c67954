"""Random CUDA-C programs drawn from the subset's grammar (grammars/cuda.lark).

Pure random text would almost never get past the parser, so this generator
walks the grammar with a little knowledge of scopes and types: it declares
variables before using them and mostly combines operands of compatible types,
so that a good share of its programs compile and reach semantic analysis, code
generation, inlining and register allocation.  A small share of choices is
deliberately wrong (an unknown name, a pointer where an int belongs, an
unsupported construct) so that the diagnostics of the later phases are
exercised too.

Everything is driven by one `random.Random`, so a program is reproducible from
its seed, and hypothesis can drive it through `st.randoms()`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SCALARS = ["int", "unsigned", "char", "unsigned char", "bool"]
ATOM_TYPES = ["int", "unsigned"]
BINOPS = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", ">", "<=", ">=", "==", "!=",
          "&&", "||"]
ASSIGN_OPS = ["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
BUILTINS = ["threadIdx.x", "threadIdx.y", "blockIdx.x", "blockDim.x", "gridDim.x", "warpSize"]
ATOMICS = ["atomicAdd", "atomicSub", "atomicMin", "atomicMax", "atomicExch", "atomicAnd", "atomicOr",
           "atomicXor"]
# Constructs the subset rejects by name; one of them is planted now and then.
UNSUPPORTED = ["double d = 1;", 'printf("%d", 1);', "long q = 2;", "switch (1) { }", "goto end;",
               "int loc[4];", "int **pp;", "extern __shared__ int dyn[];", "int (*fp)(int);",
               "struct S { int x; };", "int z = sizeof(int);", "short h;", "auto w = 1;",
               "int *m = (int *)malloc(4);", "__syncwarp();", "int s = __shfl_sync(1, 2, 3);"]


@dataclass
class Var:
    name: str
    ctype: str
    pointer: bool = False
    const: bool = False  # a const pointee (pointers) or a const variable (scalars)
    shared_dims: tuple[int, ...] = ()  # a __shared__ array


@dataclass
class Func:
    name: str
    ret: str  # "void" or a scalar type
    params: list[Var]


@dataclass
class _Scope:
    vars: list[Var] = field(default_factory=list)


class ProgramGenerator:
    """One random program per call of `program()`; `rnd` decides everything."""

    def __init__(self, rnd: random.Random, wrong: float = 0.03, max_depth: int = 4):
        self.rnd = rnd
        self.wrong = wrong  # chance of a deliberately ill-formed choice
        self.max_depth = max_depth
        self.counter = 0
        self.funcs: list[Func] = []
        self.consts: list[str] = []
        self.scopes: list[_Scope] = []
        self.loop_depth = 0
        self.ret = "void"

    # ---------------------------------------------------------------- helpers
    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.rnd.random() < p

    def visible(self) -> list[Var]:
        return [v for s in self.scopes for v in s.vars]

    def declare(self, v: Var) -> None:
        self.scopes[-1].vars.append(v)

    # ---------------------------------------------------------------- expressions
    def literal(self) -> str:
        r = self.rnd.random()
        if r < 0.5:
            return str(self.rnd.randint(0, 9))
        if r < 0.7:
            return str(self.rnd.choice([16, 31, 32, 100, 255, 1000, 2147483647]))
        if r < 0.8:
            return hex(self.rnd.choice([0xFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]))
        if r < 0.88:
            return f"{self.rnd.randint(0, 40)}u"
        if r < 0.94:
            return self.rnd.choice(["'a'", "'\\n'", "'\\x41'", "true", "false"])
        return self.rnd.choice(self.consts) if self.consts else "7"

    def scalar_vars(self) -> list[Var]:
        return [v for v in self.visible() if not v.pointer and not v.shared_dims]

    def pointer_like(self) -> list[Var]:
        return [v for v in self.visible() if v.pointer or v.shared_dims]

    def element(self, depth: int, writable: bool = False) -> str | None:
        """An array element or *p: `a[i]`, `s[i][j]`, `*(p + i)`."""
        cands = [v for v in self.pointer_like() if not (writable and v.const)]
        if not cands:
            return None
        v = self.rnd.choice(cands)
        idx = self.index(depth)
        if len(v.shared_dims) == 2:
            return f"{v.name}[{idx}][{self.index(depth)}]"
        if v.pointer and self.chance(0.15):
            return f"*({v.name} + ({idx}))"
        return f"{v.name}[{idx}]"

    def index(self, depth: int) -> str:
        """Mostly in-range-looking indices; the compiler must not care whether they are."""
        base = self.rnd.choice(["threadIdx.x", "i0", str(self.rnd.randint(0, 3))])
        if base == "i0" and not any(v.name == "i0" for v in self.scalar_vars()):
            base = "threadIdx.x"
        if depth < self.max_depth and self.chance(0.3):
            return f"({base} + {self.expr(depth + 1)}) & 3"
        return base if base.isdigit() else f"{base} & 3"

    def expr(self, depth: int = 0) -> str:
        if self.chance(self.wrong / 3):
            return self.rnd.choice(["nosuch", "a_ptr_as_int", "1.5", '"str"', "f_undefined(1)"])
        if depth >= self.max_depth or self.chance(0.25):
            return self.atom(depth)
        r = self.rnd.random()
        if r < 0.45:
            return f"({self.expr(depth + 1)} {self.rnd.choice(BINOPS)} {self.expr(depth + 1)})"
        if r < 0.55:
            return f"{self.rnd.choice(['-', '~', '!', '+'])}{self.expr(depth + 1)}"
        if r < 0.62:
            return f"({self.expr(depth + 1)} ? {self.expr(depth + 1)} : {self.expr(depth + 1)})"
        if r < 0.70:
            return f"(({self.rnd.choice(SCALARS)}){self.expr(depth + 1)})"
        if r < 0.76:
            f = self.rnd.choice(["min", "max", "abs"])
            args = [self.expr(depth + 1)] if f == "abs" else [self.expr(depth + 1), self.expr(depth + 1)]
            return f"{f}({', '.join(args)})"
        if r < 0.84 and self.funcs:
            fn = self.rnd.choice(self.funcs)
            if fn.ret != "void" or self.chance(self.wrong):
                return self.call(fn, depth)
        if r < 0.90:
            lv = self.lvalue(depth)
            if lv:
                op = self.rnd.choice(["++", "--"])
                return f"{lv}{op}" if self.chance(0.5) else f"{op}{lv}"
        if r < 0.94:
            lv = self.lvalue(depth)
            if lv:
                return f"({lv} {self.rnd.choice(ASSIGN_OPS)} {self.expr(depth + 1)})"
        return self.atom(depth)

    def atom(self, depth: int) -> str:
        r = self.rnd.random()
        scal = self.scalar_vars()
        if r < 0.4 and scal:
            return self.rnd.choice(scal).name
        if r < 0.6:
            el = self.element(depth)
            if el:
                return el
        if r < 0.75:
            return self.rnd.choice(BUILTINS)
        return self.literal()

    def call(self, fn: Func, depth: int) -> str:
        args = []
        for p in fn.params:
            if p.pointer:
                cands = [v.name for v in self.visible() if v.pointer and v.ctype == p.ctype
                         and (p.const or not v.const)]
                cands += [v.name for v in self.visible() if len(v.shared_dims) == 1 and v.ctype == p.ctype]
                args.append(self.rnd.choice(cands) if cands else "0")
            else:
                args.append(self.expr(depth + 1))
        if self.chance(self.wrong):
            args = args[:-1] if args else ["1"]
        return f"{fn.name}({', '.join(args)})"

    def lvalue(self, depth: int) -> str | None:
        scal = [v for v in self.scalar_vars() if not v.const and v.ctype != "bool"]
        if scal and self.chance(0.6):
            return self.rnd.choice(scal).name
        return self.element(depth, writable=True)

    # ---------------------------------------------------------------- statements
    def block(self, depth: int, n: int | None = None) -> list[str]:
        self.scopes.append(_Scope())
        out = []
        for _ in range(n if n is not None else self.rnd.randint(1, 4)):
            out.extend(self.statement(depth))
        self.scopes.pop()
        return out

    def indent(self, lines: list[str]) -> list[str]:
        return ["    " + ln for ln in lines]

    def statement(self, depth: int) -> list[str]:
        if self.chance(self.wrong / 2):
            return [self.rnd.choice(UNSUPPORTED)]
        r = self.rnd.random()
        if r < 0.22:
            return [self.declaration(depth)]
        if r < 0.42 or depth >= self.max_depth:
            lv = self.lvalue(depth)
            if lv is None:
                return [self.declaration(depth)]
            return [f"{lv} {self.rnd.choice(ASSIGN_OPS)} {self.expr(depth)};"]
        if r < 0.55:
            out = [f"if ({self.expr(depth + 1)}) {{", *self.indent(self.block(depth + 1)), "}"]
            if self.chance(0.4):
                out[-1] = "} else {"
                out += [*self.indent(self.block(depth + 1)), "}"]
            return out
        if r < 0.65:
            i = self.fresh("i")
            self.scopes.append(_Scope([Var(i, "int")]))
            self.loop_depth += 1
            body = self.block(depth + 1)
            self.loop_depth -= 1
            self.scopes.pop()
            bound = self.rnd.choice(["4", "n0", str(self.rnd.randint(0, 6)), "blockDim.x"])
            if bound == "n0" and not any(v.name == "n0" for v in self.visible()):
                bound = "3"
            step = self.rnd.choice([f"{i}++", f"++{i}", f"{i} += 2", f"{i} = {i} + 1"])
            return [f"for (int {i} = 0; {i} < {bound}; {step}) {{", *self.indent(body), "}"]
        if r < 0.70:
            self.loop_depth += 1
            body = self.block(depth + 1)
            self.loop_depth -= 1
            if self.chance(0.5):
                return [f"while ({self.expr(depth + 1)}) {{", *self.indent(body), "    break;", "}"]
            return ["do {", *self.indent(body), f"}} while (({self.expr(depth + 1)}) && 0);"]
        if r < 0.75 and self.loop_depth:
            return [self.rnd.choice(["break;", "continue;"])]
        if r < 0.79:
            return ["__syncthreads();"]
        if r < 0.86:
            return [self.atomic(depth) + ";"]
        if r < 0.90:
            return ["{", *self.indent(self.block(depth + 1)), "}"]
        if r < 0.93:
            if self.ret == "void":
                return ["return;"] if self.chance(0.5) else [f"if ({self.expr(depth + 1)}) return;"]
            return [f"return {self.expr(depth)};"]
        return [f"{self.expr(depth)};"]

    def atomic(self, depth: int) -> str:
        cands = [v for v in self.pointer_like() if v.ctype in ATOM_TYPES and not v.const
                 and len(v.shared_dims) <= 1]
        if not cands:
            return f"(void){self.expr(depth)}"
        v = self.rnd.choice(cands)
        addr = self.rnd.choice([f"&{v.name}[{self.index(depth)}]", f"{v.name} + ({self.index(depth)})"])
        if self.chance(0.15):
            return f"atomicCAS({addr}, {self.expr(depth + 1)}, {self.expr(depth + 1)})"
        return f"{self.rnd.choice(ATOMICS)}({addr}, {self.expr(depth + 1)})"

    def declaration(self, depth: int) -> str:
        r = self.rnd.random()
        if r < 0.15 and depth <= 1:
            name = self.fresh("s")
            t = self.rnd.choice(["int", "unsigned", "char"])
            if self.chance(0.3):
                self.declare(Var(name, t, shared_dims=(4, 4)))
                return f"__shared__ {t} {name}[4][4];"
            self.declare(Var(name, t, shared_dims=(self.rnd.choice([4, 8, 64]),)))
            return f"__shared__ {t} {name}[{self.scopes[-1].vars[-1].shared_dims[0]}];"
        if r < 0.25:
            ptrs = [v for v in self.visible() if v.pointer]
            if ptrs:
                src = self.rnd.choice(ptrs)
                name = self.fresh("p")
                const = "const " if src.const else ""
                self.declare(Var(name, src.ctype, pointer=True, const=src.const))
                return f"{const}{src.ctype} *{name} = {src.name} + ({self.expr(depth + 1)});"
        t = self.rnd.choice(SCALARS)
        name = self.fresh()
        const = self.chance(0.1)
        init = self.expr(depth)
        self.declare(Var(name, t, const=const))
        return f"{'const ' if const else ''}{t} {name} = {init};"

    # ---------------------------------------------------------------- functions, files
    def params(self, kernel: bool) -> list[Var]:
        out = []
        if kernel:
            out.append(Var("a", self.rnd.choice(ATOM_TYPES), pointer=True))
        for _ in range(self.rnd.randint(0, 3)):
            t = self.rnd.choice(SCALARS)
            if self.chance(0.5):
                out.append(Var(self.fresh("q"), t, pointer=True, const=self.chance(0.4)))
            else:
                out.append(Var(self.fresh("x"), t))
        if kernel and self.chance(0.5):
            out.append(Var("n0", "int"))
        return out

    @staticmethod
    def param_text(p: Var) -> str:
        if p.pointer:
            return f"{'const ' if p.const else ''}{p.ctype} *{p.name}"
        return f"{p.ctype} {p.name}"

    def function(self, kind: str) -> list[str]:
        kernel = kind == "kernel"
        name = self.fresh("kern" if kernel else "dev")
        params = self.params(kernel)
        ret = "void" if kernel or self.chance(0.3) else self.rnd.choice(SCALARS)
        self.ret = ret
        self.scopes = [_Scope(list(params))]
        prelude = ["int i0 = threadIdx.x;"] if kernel else []
        if prelude:
            self.declare(Var("i0", "int"))
        body = prelude + self.block(1, self.rnd.randint(1, 6))
        if ret != "void":
            body.append(f"return {self.expr(1)};")
        head = "__global__ void" if kernel else f"__device__ {ret}"
        if not kernel:
            # Only earlier functions are callable, so there is no recursion unless planted.
            self.funcs.append(Func(name, ret, params))
        self.scopes = []
        return [f"{head} {name}({', '.join(self.param_text(p) for p in params)})", "{",
                *self.indent(body), "}"]

    def program(self) -> str:
        self.counter, self.funcs, self.consts = 0, [], []
        lines = []
        if self.chance(0.3):
            lines.append(f"#define M{self.rnd.randint(0, 9)} {self.rnd.randint(1, 64)}")
            self.consts.append(lines[-1].split()[1])
        if self.chance(0.3):
            c = self.fresh("C")
            lines.append(f"const int {c} = {self.rnd.randint(1, 16)};")
            self.consts.append(c)
        for _ in range(self.rnd.randint(0, 2)):
            lines += self.function("device")
        for _ in range(self.rnd.randint(1, 2)):
            lines += self.function("kernel")
        return "\n".join(lines) + "\n"


def random_program(seed: int | random.Random) -> str:
    """Three programs in four are meant to be valid; the fourth has a few planted errors."""
    rnd = seed if isinstance(seed, random.Random) else random.Random(seed)
    wrong = 0.0 if rnd.random() < 0.75 else 0.05
    return ProgramGenerator(rnd, wrong=wrong).program()
