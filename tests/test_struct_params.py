"""Kernel parameters that are structs passed by value (issue 27): the struct's cells are parameter
words, given to qgrun as `--arg p=@ONE.npy` (one record of a structured dtype) or `--arg p=zeros`,
to the Python API as a one-record structured array, and written to .qg and .qsass as
`.param struct S p` (no '*')."""

from __future__ import annotations

import numpy as np
import pytest

import qgcc

PARAMS = r"""
struct Params { int n; float scale; unsigned mask; int off[2]; long long big; };
__global__ void saxpy(Params p, float *y, const float *x, long long *o) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    y[i] = p.scale * x[i] + y[i];
    o[i] = (i & p.mask) + p.off[i % 2] + p.big;
    p.n = 0;   // a copy: the other threads still see their own p.n
}
"""
PDT = np.dtype([("n", np.int32), ("scale", np.float32), ("mask", np.uint32), ("off", np.int32, (2,)),
                ("big", np.int64)])


def model(p, x, y):
    """numpy, in the kernel's own operation order (one float multiply-add rounded twice)."""
    n = int(p["n"][0])
    i = np.arange(x.size)
    y2 = y.copy()
    y2[:n] = (np.float32(p["scale"][0]) * x[:n]).astype(np.float32) + y[:n]
    o = np.zeros(x.size, np.int64)
    # `i & p.mask` is unsigned, so `+ p.off[...]` wraps modulo 2**32 before the long long sum
    o[:n] = ((i[:n] & int(p["mask"][0])) + p["off"][0][i[:n] % 2].astype(np.int64)) % 2**32 + int(p["big"][0])
    return y2, o


@pytest.mark.parametrize("form, engine", [("qg", "ref"), ("qsass", "ref"),
                                          pytest.param("qg", "neural", marks=pytest.mark.slow)])
def test_a_struct_passed_by_value_fills_parameter_words_through_the_cli(qgcc, qgrun, tmp_path, form, engine):
    (tmp_path / "k.cu").write_text(PARAMS)
    out = tmp_path / f"k.{form}"
    r = qgcc(tmp_path / "k.cu", *(["-S"] if form == "qsass" else ["--no-link"]), "-o", out)
    assert r.exit_code == 0, r.stderr
    if form == "qsass":
        assert ".param struct Params p\n" in out.read_text()
    p = np.zeros(1, PDT)
    p["n"], p["scale"], p["mask"], p["off"], p["big"] = 6, 2.5, 3, [10, -20], 1 << 40
    x, y = np.linspace(-1, 3, 8).astype(np.float32), np.full(8, 0.25, np.float32)
    for n, v in {"p": p, "x": x, "y": y, "o": np.zeros(8, np.int64)}.items():
        np.save(tmp_path / f"{n}.npy", v)
    r = qgrun(out, "--engine", engine, "--grid", "2", "--block", "4", "--trace", "none",
              *[a for n in "pxyo" for a in ("--arg", f"{n}=@{tmp_path / (n + '.npy')}")],
              "--out", f"y={tmp_path / 'yo.npy'}", "--out", f"o={tmp_path / 'oo.npy'}")
    assert r.exit_code == 0, r.stderr
    want_y, want_o = model(p, x, y)
    assert np.load(tmp_path / "yo.npy").tobytes() == want_y.tobytes()
    assert np.load(tmp_path / "oo.npy").tolist() == want_o.tolist()


def test_the_python_api_takes_one_record_and_the_cli_names_wrong_forms(qgcc, qgrun, tmp_path):
    prog = qgcc_compile()
    p = np.zeros(1, PDT)
    p["n"], p["scale"], p["mask"] = 3, -1.0, 1
    x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    res = prog.launch(1, 4, kernel="saxpy", engine="ref", args={"p": p, "x": x, "y": y, "o": np.zeros(4, np.int64)})
    want_y, want_o = model(p, x, y)
    assert res.outputs["y"].tobytes() == want_y.tobytes() and res.outputs["o"].tolist() == want_o.tolist()
    assert "p" not in res.outputs  # a value, not a buffer
    (tmp_path / "k.cu").write_text(PARAMS)
    np.save(tmp_path / "two.npy", np.zeros(2, PDT))
    base = [tmp_path / "k.cu", "--engine", "ref", "--grid", "1", "--block", "4", "--arg", "x=zeros:4",
            "--arg", "y=zeros:4", "--arg", "o=zeros:4", "--trace", "none"]
    r = qgrun(*base, "--arg", "p=3")
    assert r.exit_code == 2 and "parameter 'p' is a struct passed by value (Params p); give @FILE.npy with one " \
        "record of a structured dtype with the members (n int32, scale float32, mask uint32, off[0] int32, " \
        "off[1] int32, big int64), or zeros" in r.stderr
    r = qgrun(*base, "--arg", f"p=@{tmp_path / 'two.npy'}")
    assert r.exit_code == 2 and "the .npy holds 2 records, give exactly one" in r.stderr
    assert qgrun(*base, "--arg", "p=zeros").exit_code == 0


def qgcc_compile():
    return qgcc.compile(PARAMS)


def test_a_struct_by_value_counts_one_parameter_word_per_cell():
    from frontcheck import assert_error

    assert_error("struct B { float v[70]; };\n__global__ void k(B b, int *o) { o[0] = b.v[0]; }\n", 2, 17,
                 "kernel 'k' has 2 parameters (71 words: a 64-bit one takes two, a struct by value one per "
                 "cell); the machine allows at most 64")
