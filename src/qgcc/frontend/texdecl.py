"""Texture declarations and typed texture fetches, rewritten on the token stream.

There is no texture unit: a texture bound to linear memory with point sampling is a read-only
buffer, so the front end only has to see the texture's element type and dimensionality
(sema_textures.py does the rest).  Two spellings of CUDA's have no place in the grammar, and
this pass (after macro expansion, before parsing) turns them into ones that do:

* `texture<T, N, cudaReadModeElementType> name;` (N and the read mode optional) becomes
  `__qg_texture T name[N];`: a declaration whose storage class marks the texture and whose
  "array size" carries N (1 or 2).  `cudaReadModeNormalizedFloat` and N = 3 are errors here.
* `tex2D<T>(obj, x, y)` (and `tex1Dfetch<T>`, `tex1D<T>`: the texture-object fetches, whose
  element type is the template argument) becomes `tex2D((T *)0, obj, x, y)`: the null
  pointer's type carries T to sema, and is never evaluated.
"""

from __future__ import annotations

from lark import Token

FETCHES = ("tex1Dfetch", "tex1D", "tex2D", "tex3D")
DIMS = {"1": 1, "2": 2, "3": 3, "cudaTextureType1D": 1, "cudaTextureType2D": 2, "cudaTextureType3D": 3}


class Lowering:
    def __init__(self, lex, error):
        self.lex = lex  # text -> tokens (the parser's lexer)
        self.error = error  # (token, message) -> exception

    def emit(self, text: str, at: Token):
        for t in self.lex(text):
            yield Token(t.type, t.value, start_pos=at.start_pos, line=at.line, column=at.column,
                        end_line=at.end_line, end_column=at.end_column, end_pos=at.end_pos)

    def run(self, tokens):
        toks = list(tokens)
        if not any(t.value in ("texture",) + FETCHES for t in toks if t.type == "NAME"):
            yield from toks
            return
        i = 0
        while i < len(toks):
            t = toks[i]
            nxt = toks[i + 1].value if i + 1 < len(toks) else None
            if t.type == "NAME" and nxt == "<" and (i == 0 or toks[i - 1].value not in (".", "->")):
                # a declaration starts a statement; `texture < n` elsewhere is a comparison
                if t.value == "texture" and (i == 0 or toks[i - 1].value in (";", "}", "{", "static")):
                    i = yield from self.declaration(toks, i)
                    continue
                if t.value in FETCHES and self.closes_before_call(toks, i + 1):
                    i = yield from self.typed_fetch(toks, i)
                    continue
            yield t
            i += 1

    def closes_before_call(self, toks: list, i: int) -> bool:
        """`tex2D<float>(`: the '<' at toks[i] closes with a '>' followed by '('."""
        try:
            _, j = self.angle_args(toks, i)
        except Exception:  # not template arguments: a comparison, left to the parser
            return False
        return j < len(toks) and toks[j].value == "("

    def angle_args(self, toks: list, i: int) -> tuple[list[list[Token]], int]:
        """The comma-separated token lists between toks[i] == '<' and its '>', and the index after it."""
        args: list[list[Token]] = [[]]
        depth = 0
        j = i + 1
        while j < len(toks):
            v = toks[j].value
            if v in ("(", "<"):
                depth += 1
            elif v == ")" or (v == ">" and depth > 0):
                depth -= 1
            elif v == ">" and depth == 0:
                return args, j + 1
            elif v in (";", "{", "}"):
                break
            if v == "," and depth == 0:
                args.append([])
            else:
                args[-1].append(toks[j])
            j += 1
        raise self.error(toks[i], "expected '>' to close the template arguments")

    def declaration(self, toks: list, i: int):
        at = toks[i]
        args, j = self.angle_args(toks, i + 1)
        if not args[0] or len(args) > 3:
            raise self.error(at, "expected texture<TYPE, DIMENSIONS, cudaReadModeElementType>")
        dims = 1
        if len(args) > 1:
            text = " ".join(x.value for x in args[1])
            if text not in DIMS:
                raise self.error(args[1][0] if args[1] else at,
                                 f"texture dimensionality '{text}' is not supported: write 1 or 2")
            dims = DIMS[text]
            if dims == 3:
                raise self.error(args[1][0], "3-D textures are not supported; bind the data as a 1-D or "
                                             "2-D texture, or pass a pointer and index it")
        if len(args) > 2:
            mode = " ".join(x.value for x in args[2])
            if mode == "cudaReadModeNormalizedFloat":
                raise self.error(args[2][0], "cudaReadModeNormalizedFloat is not supported (textures are "
                                             "read as their element type); use cudaReadModeElementType "
                                             "and scale the value")
            if mode != "cudaReadModeElementType":
                raise self.error(args[2][0] if args[2] else at,
                                 f"unknown texture read mode '{mode}'; write cudaReadModeElementType")
        if j >= len(toks) or toks[j].type != "NAME" or j + 1 >= len(toks) or toks[j + 1].value != ";":
            raise self.error(at, "expected 'texture<...> NAME;' (one texture per declaration, at file scope)")
        yield from self.emit("__qg_texture", at)
        yield from args[0]
        yield toks[j]
        yield from self.emit(f"[{dims}]", toks[j])
        yield toks[j + 1]
        return j + 2

    def typed_fetch(self, toks: list, i: int):
        at = toks[i]
        args, j = self.angle_args(toks, i + 1)
        if len(args) != 1 or not args[0] or j >= len(toks) or toks[j].value != "(":
            raise self.error(at, f"expected {at.value}<TYPE>(texture, ...)")
        yield at
        yield toks[j]
        yield from self.emit("(", at)
        yield from args[0]
        yield from self.emit("*) 0 ,", at)
        return j + 1
