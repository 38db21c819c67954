"""Mutations of valid sources: the near-misses a user (or a bad editor save) produces.

Generated programs test what the grammar allows; mutated real kernels test what
it almost allows: a flipped byte, a deleted or doubled token, two tokens
swapped, a file cut short, half of one file glued to half of another.  Each
mutation works on bytes, so the results include invalid UTF-8 as well.
"""

from __future__ import annotations

import random
import re

# A C-ish tokenisation, good enough to cut sources at token boundaries.
_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|0[xX][0-9A-Fa-f]+|[0-9]+[uU]?|'(?:\\.|[^'\\])*'|"
                    rb"<<=|>>=|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|<<|>>|->|//|/\*|\*/|\s+|.", re.S)

# Tokens worth inserting: keywords of the subset, rejected keywords, odd characters.
VOCAB = [b"__global__", b"__device__", b"__shared__", b"int", b"unsigned", b"char", b"bool", b"void",
         b"const", b"if", b"else", b"for", b"while", b"do", b"return", b"break", b"continue",
         b"__syncthreads()", b"atomicAdd", b"threadIdx.x", b"(", b")", b"{", b"}", b"[", b"]", b";",
         b",", b"=", b"*", b"&", b"-", b"<<", b"?", b":", b"0", b"1", b"0x80000000", b"4294967296",
         b"'\\", b'"', b"/*", b"//", b"#define", b"#if", b"#endif", b"\n#", b"\\\n", b"double",
         b"float", b"1.0f", b"printf", b"template", b"class", b"switch", b"sizeof", b"extern",
         b"@", b"$", b"`", b"\x00", b"\xff", b"\xc3\xa9", b"\t", b"\r", b"\x0c"]


def tokens(data: bytes) -> list[bytes]:
    return _TOKEN.findall(data)


def mutate(rnd: random.Random, data: bytes, other: bytes) -> tuple[str, bytes]:
    """One to three mutations of `data` (`other` is the splice partner); returns (name, result)."""
    names = []
    for _ in range(rnd.choice([1, 1, 1, 2, 3])):
        name, data = _one(rnd, data, other)
        names.append(name)
    return "+".join(names), data


def _one(rnd: random.Random, data: bytes, other: bytes) -> tuple[str, bytes]:
    kind = rnd.choice(["flip", "delete", "duplicate", "swap", "insert", "truncate", "splice", "replace"])
    if kind == "flip":
        if not data:
            return kind, bytes([rnd.randrange(256)])
        i = rnd.randrange(len(data))
        b = data[i] ^ (1 << rnd.randrange(8)) if rnd.random() < 0.7 else rnd.randrange(256)
        return kind, data[:i] + bytes([b]) + data[i + 1:]
    if kind == "truncate":
        return kind, data[:rnd.randrange(len(data) + 1)]
    if kind == "splice":
        i, j = rnd.randrange(len(data) + 1), rnd.randrange(len(other) + 1)
        return kind, data[:i] + other[j:]
    toks = tokens(data)
    significant = [i for i, t in enumerate(toks) if not t.isspace()]
    if not significant:
        return kind, data + rnd.choice(VOCAB)
    i = rnd.choice(significant)
    if kind == "delete":
        del toks[i]
    elif kind == "duplicate":
        toks.insert(i, toks[i])
    elif kind == "swap":
        j = rnd.choice(significant)
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == "insert":
        toks.insert(i, b" " + rnd.choice(VOCAB) + b" ")
    else:  # replace
        toks[i] = rnd.choice(VOCAB)
    return kind, b"".join(toks)
