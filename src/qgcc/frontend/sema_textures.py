"""Sema, textures: `texture<T, N>` references, `cudaTextureObject_t` parameters and the fetches
tex1Dfetch, tex1D and tex2D (docs/subset.md, "Textures").

There is no texture unit.  A texture bound to linear memory and read with point sampling is a
read-only buffer, so a texture's value is a 64-bit handle (as CUDA's cudaTextureObject_t is):
its buffer's first cell and its width and height, written by the launcher.  A texture object is
a kernel parameter of that type; a file-scope texture reference becomes a hidden parameter,
named like it, of every kernel that fetches from it (directly or through the device functions
it calls), so `qgrun --arg NAME=@a.npy` binds either the same way.

A mixin of `sema.Sema`; it imports only the shared types below the passes.
"""

from __future__ import annotations

from ..spec import SPEC
from . import ast as A
from .structs import cells, is_struct
from .symbols import FuncSym, SpecInfo, TexInfo, VarSym
from .types import FLOAT, INT, PtrType, Type, ULLONG, is_arith, is_int, is_pair, is_ptr, words

# fetch -> (coordinate count, coordinate type)
FETCHES = {"tex1Dfetch": (1, INT), "tex1D": (1, FLOAT), "tex2D": (2, FLOAT)}
OBJECT_TYPE = "cudaTextureObject_t"


class TextureSema:
    """Textures (a mixin of `sema.Sema`)."""

    def texture_declaration(self, info: SpecInfo, it: A.InitDeclarator) -> VarSym:
        """`__qg_texture T name[N];`, which texdecl.py made of `texture<T, N> name;`."""
        decl = it.decl
        if self.scopes:
            raise self.error(decl, "texture references must be declared at file scope")
        if set(info.storage) != {"__qg_texture"} or decl.pointers or it.init is not None:
            raise self.error(decl, "expected 'texture<TYPE, DIMENSIONS> NAME;'")
        elem = info.base
        self.texture_element(elem, decl)
        dims = int(decl.arrays[0].text)  # texdecl.py wrote 1 or 2 there
        return VarSym(decl.name, ULLONG, "texture", decl.line, decl.col, readonly=True,
                      texture=TexInfo(elem, dims))

    def texture_element(self, elem: Type, at: A.Node) -> None:
        if is_struct(elem):
            if not all(is_arith(f.ty) and not is_pair(f.ty) for f in elem.fields):
                raise self.error(at, f"textures of '{elem}' are not supported: a texel is a number or a "
                                     "struct (float2, float4, ...) of 32-bit numbers")
            return
        if not is_arith(elem) or is_pair(elem):
            raise self.error(at, f"textures of '{elem}' are not supported: a texel is a 32-bit number "
                                 "(int, unsigned, float, char) or a struct (float2, float4, ...) of them")

    def texture_object_param(self, specs: list[A.Spec], sym: VarSym) -> None:
        """A `cudaTextureObject_t` parameter of a kernel is a texture (its element type and
        dimensions come from the fetches that name it)."""
        if any(s.typename and s.text == OBJECT_TYPE for s in specs):
            sym.texture = TexInfo(None, 0)

    def texture_used(self, sym: VarSym) -> None:
        """A texture reference named in the function being checked (its kernels get its handle)."""
        if self.func is not None:
            self.__dict__.setdefault("tex_uses", {}).setdefault(id(self.func), []).append(sym)

    def texture_call(self, e: A.Call, name: str) -> Type:
        if name == "tex3D":
            raise self.error(e, "tex3D is not supported (3-D textures are not); use a 1-D or 2-D texture, or "
                                "pass a pointer and index it")
        args = list(e.args)
        elem: Type | None = None
        if args and isinstance(args[0], A.Cast) and isinstance(args[0].operand, A.IntLit):
            # `tex2D<T>(obj, ...)`, written `tex2D((T *)0, obj, ...)` by texdecl.py
            self.rvalue(args[0])
            elem = args[0].ty.elem if is_ptr(args[0].ty) else None
            args = args[1:]
        ncoord, cty = FETCHES[name]
        if len(args) != ncoord + 1:
            raise self.error(e, f"'{name}' expects {ncoord + 1} arguments (a texture and {ncoord} "
                                f"coordinate{'s' if ncoord > 1 else ''}), got {len(args)}")
        tex = args[0]
        self.rvalue(tex)
        sym = tex.sym if isinstance(tex, A.Name) else None
        info = sym.texture if sym is not None else None
        if info is None and tex.ty != ULLONG:
            raise self.error(tex, f"the first argument of '{name}' must be a texture (a texture<...> "
                                  f"reference or a {OBJECT_TYPE})")
        if info is not None and sym.kind == "texture":  # a reference: its element type is declared
            if elem is not None and elem != info.elem:
                raise self.error(e, f"texture '{sym.name}' holds '{info.elem}', not '{elem}'")
            elem = info.elem
            if (name == "tex1Dfetch" and info.dims != 1) or (name != "tex1Dfetch" and ncoord != info.dims):
                raise self.error(e, f"'{name}' on the {info.dims}-D texture '{sym.name}'; use "
                                    f"{'tex1D or tex1Dfetch' if info.dims == 1 else 'tex2D'}")
        elif elem is None:
            raise self.error(e, f"a texture object's element type is its template argument: write "
                                f"{name}<float>(...)")
        else:
            self.texture_element(elem, e)
            if info is not None:  # a kernel's texture-object parameter: record what it holds
                dims = 2 if name == "tex2D" else 1
                if info.elem is not None and (info.elem != elem or info.dims != dims):
                    raise self.error(e, f"texture object '{sym.name}' is read as {info.dims}-D '{info.elem}' "
                                        f"and as {dims}-D '{elem}'; one texture holds one kind of texel")
                info.elem, info.dims = elem, dims
        for a in args[1:]:
            t = self.rvalue(a)
            if not is_arith(t) or (cty == INT and not is_int(t)):
                raise self.error(a, f"a coordinate of '{name}' must be {'an integer' if cty == INT else 'a number'}")
            if is_pair(t):
                raise self.error(a, f"a coordinate of '{name}' must be a 32-bit number")
        e.args = args
        e.callee = name
        if is_struct(elem):
            e.tmp = self.temp(elem, e)
        return elem

    def texture_params(self, kernels: list[FuncSym]) -> None:
        """Give every kernel a hidden parameter for each texture reference it uses, in order of
        declaration, after its own parameters."""
        uses: dict[int, list[VarSym]] = self.__dict__.get("tex_uses", {})
        if not uses:
            return
        order = [s for s in self.globals.values() if s.kind == "texture"]
        for k in kernels:
            seen: set[int] = set()
            found: set[int] = set()
            stack = [k]
            while stack:
                f = stack.pop()
                if id(f) in seen:
                    continue
                seen.add(id(f))
                found.update(id(s) for s in uses.get(id(f), []))
                stack.extend(c for c, _ in f.calls)
            word = sum(cells(p.ty) if is_struct(p.ty) else 1 if isinstance(p.ty, PtrType) else words(p.ty)
                       for p in k.params)
            for t in order:
                if id(t) not in found:
                    continue
                if any(p.name == t.name for p in k.params):
                    raise self.error(k.line, k.col, f"kernel '{k.name}' has a parameter named like the "
                                                    f"texture '{t.name}' it reads; rename one")
                k.params.append(VarSym(t.name, ULLONG, "param", t.line, t.col, readonly=True, index=word,
                                       texture=TexInfo(t.texture.elem, t.texture.dims, ref=t)))
                word += 2
            if word > SPEC.max_params:
                raise self.error(k.line, k.col, f"kernel '{k.name}' needs {word} parameter words with the "
                                                f"handles of its textures (two each); the machine allows "
                                                f"at most {SPEC.max_params}")
