"""Cooperative groups, lowered on the token stream onto the built-ins and warp intrinsics.

The part of `cooperative_groups.h` that kernels use has no state worth keeping at run
time: a thread block is the block, and a tile of N <= 4 threads is a segment of a warp.
So this pass (run after macro expansion, before parsing) rewrites:

* `namespace cg = cooperative_groups;` and `using namespace cooperative_groups;`:
  dropped, remembering the alias (or that names may come unqualified);
* a group declaration `cg::thread_block b = cg::this_thread_block();`,
  `cg::thread_block_tile<4> t = cg::tiled_partition<4>(b);`,
  `cg::thread_group t = cg::tiled_partition(b, 4);` or `auto t = ...;` into
  `const int b = 0;` / `const int t = (4);` (a tile is its size, a constant);
* member calls on a declared group into C: `b.sync()` -> `__syncthreads()`,
  `t.sync()` -> `__syncwarp()`, `thread_rank()`, `size()`/`num_threads()`,
  `meta_group_rank()`, `meta_group_size()`, `group_index()` -> `blockIdx`,
  `thread_index()` -> `threadIdx`, `group_dim()`/`dim_threads()` -> `blockDim`, and on
  tiles `shfl`, `shfl_up`, `shfl_down`, `shfl_xor` (the tile size is the width), `any`,
  `all` and `ballot` (over the tile's lanes; a ballot's bits are tile ranks);
* `cg::sync(g)` and `cg::reduce(t, v, cg::plus<T>())` / `cg::greater<T>()` /
  `cg::less<T>()` (a butterfly of SHFL.XOR and adds, maxima or minima);
* `grid.sync()`, `cg::sync(grid)` and `cg::this_grid().sync()` into `__qg_grid_sync()`: blocks
  run one after another here, so it is exact only in a one-block launch, where it is the block
  barrier; sema_printf.py makes it a check (an assert that stops a launch of more blocks) and
  `__syncthreads()`;
* tiles of 8, 16 and 32 threads through `coopwide`; the grid, coalesced groups,
  labeled/binary partitions and reduces on a group known only at run time through
  `coopparts` (their helpers are prepended as CUDA text when used).

Anything else named in the namespace is an error naming the construct.
"""

from __future__ import annotations

from lark import Token

from . import coopparts, coopwide

NS = "cooperative_groups"
LIN = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
SIZE = "(blockDim.x * blockDim.y * blockDim.z)"
GROUP_TYPES = {"thread_block": "block", "thread_block_tile": "tile", "thread_group": None, "grid_group": "grid",
               "coalesced_group": "coalesced"}
CG_FUNCS = ("this_thread_block", "tiled_partition", "this_grid", "coalesced_threads", "labeled_partition",
            "binary_partition", "block_tile_memory")
SCOPED = "__qg_scoped__"  # `::` inside a scoped enumerator's name while it is text
REDUCE_OPS = {"plus": "__qg_reduce_add", "greater": "__qg_reduce_max", "less": "__qg_reduce_min"}


class Lowering:
    def __init__(self, lex, error):
        self.lex = lex  # text -> tokens (the parser's lexer)
        self.error = error  # (token, message) -> exception
        self.aliases = {NS}
        self.unqualified = False
        self.kinds: dict[str, str] = {}  # group variable -> "block" or "tile"
        self.sizes: dict[str, int] = {}  # tile variable -> its size, when wider than a warp
        self.last_group: str | None = None  # the group variable being declared
        self.wide = False  # a wide tile is used: coopwide's helpers are prepended
        self.parts = False  # a coalesced group, a partition or a run-time reduce: coopparts' helpers too

    # -- helpers -------------------------------------------------------------------
    def emit(self, text: str, at: Token):
        """Tokens of `text`, all placed at `at` (diagnostics point at the construct)."""
        for t in self.lex(text):
            value = t.value.replace(SCOPED, "::") if t.type == "NAME" else t.value
            yield Token(t.type, value, start_pos=at.start_pos, line=at.line, column=at.column,
                        end_line=at.end_line, end_column=at.end_column, end_pos=at.end_pos)

    def cg_name(self, toks: list, i: int):
        """(name, next index) when toks[i:] starts a cooperative-groups name, else None."""
        t = toks[i]
        if t.type != "NAME":
            return None
        if t.value in self.aliases and i + 2 < len(toks) and toks[i + 1].value == ":" and \
                toks[i + 2].value == ":" and i + 3 < len(toks) and toks[i + 3].type == "NAME":
            return toks[i + 3].value, i + 4
        if self.unqualified and (t.value in GROUP_TYPES or t.value in CG_FUNCS):
            if i == 0 or toks[i - 1].value != ".":
                return t.value, i + 1
        return None

    @staticmethod
    def balanced(toks: list, i: int, open_: str, close: str) -> int:
        """Index just past the bracket that closes toks[i] (== open_)."""
        depth = 0
        for j in range(i, len(toks)):
            if toks[j].value == open_:
                depth += 1
            elif toks[j].value == close:
                depth -= 1
                if depth == 0:
                    return j + 1
        raise IndexError

    @staticmethod
    def text(toks) -> str:
        # a scoped enumerator is one NAME token `E::A` (enums.py): spelled so that it lexes as one again
        return " ".join(t.value.replace("::", SCOPED) if t.type == "NAME" else t.value for t in toks)

    @staticmethod
    def split_args(toks: list) -> list[list]:
        """Top-level comma-separated arguments of toks (without the outer parentheses)."""
        args, cur, depth = [], [], 0
        for t in toks:
            if t.value in ("(", "[", "{"):
                depth += 1
            elif t.value in (")", "]", "}"):
                depth -= 1
            if t.value == "," and depth == 0:
                args.append(cur)
                cur = []
            else:
                cur.append(t)
        if cur or args:
            args.append(cur)
        return args

    # -- the pass ------------------------------------------------------------------
    def run(self, tokens):
        toks = list(tokens)
        if not any(t.type == "NAME" and t.value == NS for t in toks):
            yield from toks
            return
        i = 0
        lowered = []
        while i < len(toks):
            try:
                out, i = self.step(toks, i)
            except IndexError:
                raise self.error(toks[min(i, len(toks) - 1)], "incomplete cooperative-groups construct") from None
            lowered.extend(out)
        if self.wide or self.parts:
            yield from self.emit(coopwide.HELPERS, toks[0])
        if self.parts:
            yield from self.emit(coopparts.HELPERS, toks[0])
        yield from lowered

    def step(self, toks: list, i: int):
        t = toks[i]
        v = t.value
        # namespace cg = cooperative_groups;   using namespace cooperative_groups;
        if t.type == "NAME" and v == "namespace" and toks[i + 2].value == "=" and toks[i + 3].value == NS:
            self.aliases.add(toks[i + 1].value)
            return [], i + 5
        if v == "using" and toks[i + 1].value == "namespace" and toks[i + 2].value == NS:
            self.unqualified = True
            return [], i + 4
        # auto g = cg::...;
        if v == "auto" and toks[i + 2].value == "=":
            kind = self.init_kind(toks, i + 3)
            if kind is not None:
                self.declare(toks[i + 1].value, *kind)
                return list(self.emit("const int", t)), i + 1
        # member calls on a group variable
        if t.type == "NAME" and v in self.kinds and i + 3 < len(toks) and toks[i + 1].value == "." \
                and toks[i + 2].type == "NAME" and toks[i + 3].value == "(" and (i == 0 or toks[i - 1].value != "."):
            end = self.balanced(toks, i + 3, "(", ")")
            args = self.split_args(toks[i + 4:end - 1])
            meth = toks[i + 2]
            return list(self.emit(self.member(t, v, meth.value, meth, [self.text(a) for a in args]), t)), end
        if t.type == "NAME" and self.kinds.get(v) == "part" and 0 < i < len(toks) - 1 and \
                toks[i - 1].value in ("(", ",") and toks[i + 1].value in (",", ")"):
            raise self.error(t, f"'{v}', a partition of a tile wider than a warp, cannot be passed to a function "
                                "(use it in the function that partitions)")
        nm = self.cg_name(toks, i)
        if nm is None:
            return [t], i + 1
        name, j = nm
        if name in GROUP_TYPES:
            kind = GROUP_TYPES[name]
            size = None
            if name == "thread_block_tile":
                if toks[j].value != "<":
                    raise self.error(t, "'thread_block_tile' needs its size: thread_block_tile<N>")
                k = self.balanced(toks, j, "<", ">")
                size = self.text(toks[j + 1:k - 1]).strip()
                j = k
            ref = j < len(toks) and toks[j].value == "&"  # a parameter `const cg::thread_block &cta`
            v = j + 1 if ref else j
            if v < len(toks) and toks[v].type == "NAME":
                var = toks[v].value
                init = self.init_kind(toks, v + 2) if v + 2 < len(toks) and toks[v + 1].value == "=" else None
                if init is not None and (kind is None or (kind, init[0]) == ("coalesced", "part")):
                    kind, size = init[0], (str(init[1]) if init[0] == "part" else size)  # what the call makes
                if kind is None and v + 2 < len(toks) and toks[v + 1].value == "=":
                    kind = "tile"
                elif kind is None and toks[v + 1].value in (",", ")"):
                    kind = "any"  # a thread_group parameter: a block (0) or a tile (its size) at run time
                    self.wide = True
                if kind == "tile" and size is not None and not size.isdigit():
                    kind = "any"  # a template's tile size: the tile is its size at run time
                    self.wide = True
                if kind is not None:
                    self.declare(var, kind, int(size) if kind == "part" else None)
                if size is not None and size.isdigit() and int(size) in coopwide.WIDE_SIZES:
                    self.sizes[var] = int(size)
                    self.wide = True
            return list(self.emit("const int", t)), j
        if name == "block_tile_memory":  # scratch for tiles wider than a warp: coopwide keeps its own
            if toks[j].value == "<":
                j = self.balanced(toks, j, "<", ">")
            return list(self.emit("int", t)), j
        if name == "this_grid":
            end = self.balanced(toks, j, "(", ")")
            if end + 3 < len(toks) and toks[end].value == "." and toks[end + 1].value == "sync" and \
                    toks[end + 2].value == "(" and toks[end + 3].value == ")":  # cg::this_grid().sync()
                return list(self.emit(coopparts.GRID_SYNC, t)), end + 4
            return list(self.emit(coopparts.this_grid(), t)), end
        if name == "coalesced_threads":
            end = self.balanced(toks, j, "(", ")")
            self.parts = True
            return list(self.emit(coopparts.coalesced_threads(), t)), end
        if name in ("labeled_partition", "binary_partition"):
            end = self.balanced(toks, j, "(", ")")
            args = self.split_args(toks[j + 1:end - 1])
            if len(args) != 2 or len(args[0]) != 1:
                raise self.error(t, f"'cg::{name}' expects (group, {'label' if name[0] == 'l' else 'predicate'})")
            return list(self.emit(self.partition(t, name, args[0][0].value, self.text(args[1])), t)), end
        if name == "this_thread_block":
            end = self.balanced(toks, j, "(", ")")
            return list(self.emit("0", t)), end
        if name == "tiled_partition":
            if toks[j].value == "<":
                k = self.balanced(toks, j, "<", ">")
                size = self.text(toks[j + 1:k - 1])
                end = self.balanced(toks, k, "(", ")")
            else:
                end = self.balanced(toks, j, "(", ")")
                args = self.split_args(toks[j + 1:end - 1])
                if len(args) != 2:
                    raise self.error(t, "'tiled_partition' expects (group, size)")
                size = self.text(args[1])
            popen = k if toks[j].value == "<" else j
            parent_kind = self.kinds.get(toks[popen + 1].value)
            if parent_kind in ("coalesced", "part", "grid"):
                raise self.error(t, f"'tiled_partition' of a {'grid' if parent_kind == 'grid' else 'coalesced group'}"
                                    " is not supported (tiles are taken from the thread block)")
            if not size.strip().isdigit():
                if len(size.split()) != 1 or not size.strip().isidentifier():
                    raise self.error(t, f"the size of a tile must be a number (1, 2, 4, 8, 16 or 32), a macro or "
                                        f"a template parameter, not '{size}'")
                self.wide = True  # a template parameter: the tile is its size at run time (kind "any")
                return list(self.emit(f"({size})", t)), end
            if int(size) in coopwide.WIDE_SIZES:
                self.wide = True
                if self.last_group is not None:
                    self.sizes[self.last_group] = int(size)
            elif size.strip() not in ("1", "2", "4"):
                raise self.error(t, f"tiles of {size} threads are not supported: a tile is 1, 2, 4, 8, 16 or 32 "
                                    "threads")
            return list(self.emit(f"({size})", t)), end
        if name == "sync":
            end = self.balanced(toks, j, "(", ")")
            return list(self.emit(self.member(t, toks[j + 1].value, "sync", t, []), t)), end
        if name == "reduce":
            end = self.balanced(toks, j, "(", ")")
            args = self.split_args(toks[j + 1:end - 1])
            if len(args) != 3:
                raise self.error(t, "'cg::reduce' expects (group, value, operation)")
            g = args[0][0].value
            op = self.cg_name(args[2], 0)
            if op is None or op[0] not in REDUCE_OPS:
                raise self.error(t, "'cg::reduce' supports cg::plus, cg::greater and cg::less")
            kind = self.kinds.get(g)
            if kind in ("block", "grid"):
                raise self.error(t, f"'cg::reduce' needs a tile or a coalesced group, not a {kind}")
            if kind != "tile":  # coalesced, a partition of a wide tile, or known only at run time
                self.parts = True
                return list(self.emit(coopparts.reduce(kind, g, self.sizes.get(g), op[0], self.text(args[1])),
                                      t)), end
            if g in self.sizes:
                return list(self.emit(coopwide.reduce(self.sizes[g], op[0], self.text(args[1])), t)), end
            self.wide = True  # a float reduce on a narrow tile calls coopwide's __qg_narrow_reduce
            return list(self.emit(f"{REDUCE_OPS[op[0]]}({self.text(args[1])}, {g})", t)), end
        raise self.error(t, f"'{name}' from cooperative groups is not supported (this_thread_block, this_grid, "
                            "tiled_partition, coalesced_threads, labeled_partition, binary_partition, sync and "
                            "reduce are)")

    def init_kind(self, toks: list, i: int):
        """(kind, partition size or None) of the group a cooperative-groups call at toks[i] makes."""
        nm = self.cg_name(toks, i)
        if nm is None:
            return None
        name, j = nm
        simple = {"this_thread_block": "block", "this_grid": "grid", "coalesced_threads": "coalesced"}
        if name in simple:
            return simple[name], None
        if name == "tiled_partition":
            if toks[j].value == "<":
                size = self.text(toks[j + 1:self.balanced(toks, j, "<", ">") - 1]).strip()
                return ("tile" if size.isdigit() else "any"), None
            return "tile", None
        if name in ("labeled_partition", "binary_partition") and toks[j].value == "(":
            parent = toks[j + 1].value
            if self.kinds.get(parent) == "tile" and parent in self.sizes:
                return "part", self.sizes[parent]
            return "coalesced", None
        return None

    def declare(self, var: str, kind: str, size: int | None = None):
        self.kinds[var] = kind
        self.last_group = var
        if kind == "part":
            self.sizes[var] = size
        if kind in ("coalesced", "part"):
            self.parts = True
        if kind == "any":
            self.wide = True

    def partition(self, at: Token, name: str, parent: str, label: str) -> str:
        """`cg::labeled_partition(parent, label)` / `cg::binary_partition(parent, pred)`."""
        if name == "binary_partition":
            label = f"(({label}) ? 1u : 0u)"
        kind = self.kinds.get(parent)
        self.parts = True
        if kind == "coalesced":
            return coopparts.narrow_partition(f"((unsigned)({parent}) & 15u)", label)
        if kind == "tile" and parent in self.sizes:
            return coopparts.wide_partition(self.sizes[parent], label)
        if kind == "tile":
            lane = f"({LIN} % warpSize)"
            tmask = f"(((((1u << {parent}) - 1u)) << ({lane} & ~({parent} - 1))) & __activemask())"
            return coopparts.narrow_partition(tmask, label)
        raise self.error(at, f"'cg::{name}' needs a coalesced group or a tile (cg::tiled_partition<N>) declared in "
                             f"this file, not '{parent}'")

    def member(self, at: Token, g: str, m: str, meth: Token, args: list[str]) -> str:
        kind = self.kinds.get(g)
        if kind is None:
            raise self.error(at, f"'{g}' is not a cooperative group declared in this file")
        lane = f"({LIN} % warpSize)"
        tmask = f"((((1u << {g}) - 1u)) << ({lane} & ~({g} - 1)))"
        want = {"sync": 0, "thread_rank": 0, "size": 0, "num_threads": 0, "meta_group_rank": 0,
                "meta_group_size": 0, "group_index": 0, "thread_index": 0, "group_dim": 0, "dim_threads": 0,
                "shfl": 2, "shfl_up": 2, "shfl_down": 2, "shfl_xor": 2, "any": 1, "all": 1, "ballot": 1,
                "num_blocks": 0, "block_rank": 0, "block_index": 0, "dim_blocks": 0, "is_valid": 0}
        if m not in want:
            raise self.error(meth, f"cooperative groups: '.{m}()' is not supported")
        if len(args) != want[m]:
            raise self.error(meth, f"'.{m}()' expects {want[m]} argument{'s' if want[m] != 1 else ''}")
        if kind == "grid":
            if m == "sync":
                return coopparts.GRID_SYNC
            text = coopparts.grid_member(m)
            if text is None:
                raise self.error(meth, f"'.{m}()' is not a member of grid_group here (thread_rank, size, "
                                       "num_threads, num_blocks, block_rank, block_index, dim_blocks and is_valid are)")
            return text
        if kind in ("coalesced", "part"):
            text = (coopparts.coalesced_member(g, m, args) if kind == "coalesced" else
                    coopparts.part_member(g, self.sizes[g], m, args))
            if text is None:
                raise self.error(meth, f"'.{m}()' on a {'coalesced group' if kind == 'coalesced' else 'partition'} "
                                       "is not supported (thread_rank, size, num_threads, sync, shfl, shfl_up and "
                                       "shfl_down are)")
            return text
        if kind == "any":
            text = coopwide.any_group(g, m)
            if text is None:
                raise self.error(meth, f"'.{m}()' on a thread_group parameter or a tile whose size is a template "
                                       "parameter is not supported (sync, "
                                       "thread_rank, size, num_threads, meta_group_rank and meta_group_size are)")
            return text
        if kind == "block":
            table = {"sync": "__syncthreads()", "thread_rank": LIN, "size": SIZE, "num_threads": SIZE,
                     "group_index": "blockIdx", "thread_index": "threadIdx", "group_dim": "blockDim",
                     "dim_threads": "blockDim"}
            if m not in table:
                raise self.error(meth, f"'.{m}()' needs a tile (cg::tiled_partition<N>), not a thread block")
            return table[m]
        a = args
        if g in self.sizes:
            wide = coopwide.member(g, self.sizes[g], m, a)
            if wide is not None:
                return wide
            if m in ("any", "all", "ballot"):
                raise self.error(meth, f"'.{m}()' on a tile of {self.sizes[g]} threads is not supported (a warp "
                                       "has 4 lanes here; tiles of 1, 2 or 4 threads have it)")
        table = {"sync": "__syncwarp()", "thread_rank": f"({LIN} % {g})", "size": f"((unsigned){g})",
                 "num_threads": f"((unsigned){g})", "meta_group_rank": f"({LIN} / {g})",
                 "meta_group_size": f"(({SIZE} + {g} - 1) / {g})"}
        if m in table:
            return table[m]
        if m.startswith("shfl"):
            intr = {"shfl": "__shfl_sync", "shfl_up": "__shfl_up_sync", "shfl_down": "__shfl_down_sync",
                    "shfl_xor": "__shfl_xor_sync"}[m]
            return f"{intr}(0xffffffff, {a[0]}, {a[1]}, {g})"
        if m == "ballot":
            return f"(__ballot_sync({tmask}, {a[0]}) >> ({lane} & ~({g} - 1)))"
        if m in ("any", "all"):
            return f"__{m}_sync({tmask}, {a[0]})"
        raise self.error(meth, f"'.{m}()' needs a thread block, not a tile")
