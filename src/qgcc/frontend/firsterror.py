"""The front end's stages in order, reporting the first problem in source order.

The stages see the file one after another: the preprocessor reads all of it (headers,
directives), the token passes and the parser read all of it, and only a file that parses is
checked by sema.  So a problem a later stage names can sit before one an earlier stage
names (`asm` on line 9 was reported before `__shfl_down` on line 3).  Each stage's error is
held against the earlier ones here:

- the preprocessor's that need not stop it (a rejected or missing header, an unknown
  directive, `#error`, a missing `#endif`) are kept while the file is read on, and the
  earliest error of all stages wins;
- when the token passes or the parser stop at an error, the complete top-level items before it
  are parsed and checked by themselves (a declaration, a function, a struct: each ends at a `;`
  or at the `}` of a function body, outside any brackets), and an error found there wins, since
  it is before the first;
- within the item the parse stopped in, an `asm` statement (the last token pass refuses it,
  after passes that read the whole file) or a call of a device built-in that sema always
  refuses by name (`__shfl_down`, `__ldg`, `__ballot`, ...; builtin_names.UNSUPPORTED_FUNCS)
  before the error is named by a look at the tokens, with the message and place they get;
- sema checks each function body on its own and reports the earliest (sema.Sema.run).

What cannot be ordered, because the stage that would name it never runs: any other problem sema
would name inside the same top-level item as a parse error after it (the item does not parse), and
what code generation names (registers, instructions, `__shared__` cells, the address of a
reference parameter) when sema found anything; nor anything before what stops the
preprocessor (a bad `#if` or `#define`, an unterminated comment).  docs/cli.md, "Which error
is reported", states the rule.
"""

from __future__ import annotations

import dataclasses

from lark.exceptions import LarkError

from ..diagnostics import CompileError
from . import ast as A
from .builtin_names import UNSUPPORTED_FUNCS
from .grammar import get_lark
from .parser import parse_pp
from .tokens import UNSUPPORTED_KEYWORDS
from .preprocess import Preprocessed, earliest, position
from .sema import analyse
from .symbols import SemaResult

MAX_REPLAYS = 8  # prefixes checked after a parse error (each finds an earlier error, or ends)
# What a later item may settle (sema lets a function call one defined further on): not reported
# from a prefix, where the later items are missing.
LATER_ITEMS_SETTLE = ("unknown function", "unknown identifier", "unknown type name", "is not a template")


def front_end(pp: Preprocessed, filename: str, source: str,
              instantiate: tuple[str, ...]) -> tuple[A.TranslationUnit, SemaResult]:
    """Parse and check a preprocessed file; raise its first error in source order."""
    try:
        tu = parse_pp(pp, filename)
    except CompileError as e:
        try:
            earlier = _earlier_items(pp, filename, source, e)
        except Exception:  # a look back that fails leaves the error the parse found (never an internal error)
            earlier = []
        raise earliest([e] + pp.deferred + earlier) from None
    try:
        result = analyse(tu, filename, source, instantiate)
    except CompileError as e:
        raise earliest([e] + pp.deferred) from None
    if pp.deferred:
        raise earliest(pp.deferred)
    return tu, result


def _earlier_items(pp: Preprocessed, filename: str, source: str, first: CompileError) -> list[CompileError]:
    """Errors in the complete top-level items before `first`, each before the last found."""
    found: list[CompileError] = []
    at = position(first)
    named = _named_in_item(pp, filename, source, at)
    if named is not None:
        found.append(named)
    for _ in range(MAX_REPLAYS):
        cut = _items_end_before(pp, at)
        if cut <= 0:
            break
        prefix = dataclasses.replace(pp, text=pp.text[:cut], deferred=[], launch_names=frozenset())
        try:
            analyse(parse_pp(prefix, filename), filename, source, (), prefix=True)
            break
        except CompileError as e:
            if position(e) >= at or "end of input" in e.message or "unterminated" in e.message \
                    or any(w in e.message for w in LATER_ITEMS_SETTLE):
                break  # (an artifact of the cut: a missing later item, or a bracket a macro hid from the scan)
            found.append(e)
            at = position(e)
    return found


def _items_end_before(pp: Preprocessed, at: tuple[int, int]) -> int:
    """The text offset just after the last complete top-level item that ends before `at`,
    or 0.  An item ends at a `;` outside brackets, or at a `}` that closes a function body
    (its `{` follows a `)` or `const`) outside brackets; `struct S {...};` ends at its `;`."""
    cut = 0
    depth = 0
    opened_after: list[str] = []  # per open '{': the token before it
    prev = ""
    try:
        for t in get_lark().lex(pp.text):
            v = t.value if t.type not in ("STRLIT", "CHARLIT") else '""'
            end = t.end_pos
            if pp.srcmap.pos(max(end - 1, t.start_pos)) >= at:
                break
            if v in ("(", "["):
                depth += 1
            elif v in (")", "]"):
                depth -= 1
            elif v == "{":
                opened_after.append(prev)
                depth += 1
            elif v == "}":
                depth -= 1
                before = opened_after.pop() if opened_after else ""
                if depth == 0 and before in (")", "const"):
                    cut = end
            elif v == ";" and depth == 0:
                cut = end
            if depth < 0:
                return 0
            prev = v
    except LarkError:  # a character the lexer does not know: the scan ends there
        pass
    return cut


# Inline assembly, which the token stream refuses wherever it is (tokens.UNSUPPORTED_KEYWORDS), and
# device built-ins sema refuses wherever they are called (a host program has none of them).
_ASM = ("asm", "__asm__")
_REFUSED = {n: m for n, m in UNSUPPORTED_FUNCS.items() if n.startswith("__")}
# Tokens after which a name followed by '(' is a call, not a declaration of that name.
_BEFORE_CALL = {"=", "(", ",", ";", "{", "}", "return", "+", "-", "/", "%", "?", ":", "[", "!", "~", "|",
                "^", "<", "+=", "-=", "*=", "/=", "|=", "&=", "^=", "&&", "||", "==", "!=", "<=", ">="}


def _named_in_item(pp: Preprocessed, filename: str, source: str, at: tuple[int, int]) -> CompileError | None:
    """The first `asm` statement or call of a device built-in sema refuses by name, before `at`
    in the top-level item that holds `at`; None if there is none.  A call is not one if the file
    declares a function of that name (then sema calls it) or the item is a template (sema checks
    only its instances); a name a macro replaces is neither."""
    start = _items_end_before(pp, at)
    toks = []
    try:
        for t in get_lark().lex(pp.text):
            toks.append(t)
    except LarkError:
        pass
    declared = {t.value for i, t in enumerate(toks) if t.value in _REFUSED and i > 0
                and toks[i - 1].value not in _BEFORE_CALL and toks[i - 1].type not in ("STRLIT", "CHARLIT")}
    item = [t for t in toks if t.start_pos >= start]
    template = bool(item) and item[0].value == "template"
    lines = source.split("\n")
    for i in range(1, len(item) - 1):
        t = item[i]
        where = pp.srcmap.pos(t.start_pos)
        if where >= at:
            break
        if t.type != "NAME" or pp.lookup(t.value, where[0]) is not None:
            continue
        if t.value in _ASM and item[i + 1].value in ("(", "volatile", "__volatile__"):
            message = UNSUPPORTED_KEYWORDS[t.value]
        elif (not template and t.value in _REFUSED and t.value not in declared and item[i + 1].value == "("
                and item[i - 1].value in _BEFORE_CALL):
            message = _REFUSED[t.value]
        else:
            continue
        text = lines[where[0] - 1] if 0 < where[0] <= len(lines) else ""
        return CompileError(filename, where[0], where[1], message, text)
    return None
