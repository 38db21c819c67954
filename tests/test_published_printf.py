"""Device printf and assert as the CUDA samples use them (issue 27: simplePrintf,
simpleCooperativeGroups, simpleAssert), taken the way a user takes them (`qgcc -o k.qg`,
`qgrun k.qg`, the Python API).  printf's output is compared with g++ running the same kernel
text thread by thread (the C library's printf formats it), in qgcc's documented order: by
block, then thread, then call order.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

import qgcc as qg_api
from frontcheck import assert_error
from gxx import SHIM, need_gxx
from qgcc.runtime.printf import AssertionFault

F32 = np.float32

REPORT = r"""
__global__ void report(const int *a, const float *f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    printf("[%d, %d]:\t\tValue is:%d\n", blockIdx.x, threadIdx.x, a[i]);
    printf("%5.2f|%-10.3e|%g|%+d|% d|%u|%x|%#X|%08o|%#o|%c|%-5s|%%|%3c\n", f[i], f[i] * 1000.0f, f[i] / 3.0f,
           a[i], a[i], (unsigned)a[i], a[i], a[i] * 7, i, i + 8, 'a' + i, "lit", 'Z');
    long long big = (long long)a[i] * 1000000007LL;
    if (i % 2 == 0)
        printf("%lld %llu %llx %.10f %G %e\n", big, (unsigned long long)big, big, (double)f[i],
               (double)f[i] * 1e10, f[i] / 0.0f);
}
"""


def gxx_stdout(tmp_path, src: str, call: str, decls: str, grid: int, block: int) -> str:
    """The kernel compiled by g++ and run block by block, thread by thread: its stdout."""
    main = decls + f"""
int main() {{
    gridDim = {{{grid}, 1, 1}}; blockDim = {{{block}, 1, 1}};
    for (unsigned b = 0; b < {grid}; b++)
        for (unsigned t = 0; t < {block}; t++) {{ blockIdx = {{b, 0, 0}}; threadIdx = {{t, 0, 0}}; {call}; }}
    return 0;
}}
"""
    cpp = tmp_path / "model.cpp"
    cpp.write_text(SHIM + src + main)
    exe = tmp_path / "model"
    subprocess.run(["g++", "-O0", "-std=c++17", "-ffp-contract=off", "-w", "-o", str(exe), str(cpp)], check=True,
                   capture_output=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


@need_gxx
def test_device_printf_formats_like_the_c_library_in_block_thread_call_order(qgcc, qgrun, tmp_path):
    """Every conversion, flag, width and precision of the record formats as glibc's printf does
    for the same arguments; the records come out by block, then thread, then call order."""
    a = np.array([5, -7, 123456, 0, -2147483647, 42, 9], np.int32)
    f = np.array([1.5, -0.0, 3.14159, 1e-8, -2.5e7, 0.1, 65504.0], F32)
    n = a.size
    decls = (f"static int a[] = {{{', '.join(str(int(x)) for x in a)}}};\n"
             f"static float f[] = {{{', '.join(float(x).hex() + 'f' for x in f)}}};\n")
    want = gxx_stdout(tmp_path, REPORT, f"report(a, f, {n})", decls, 2, 4)
    (tmp_path / "k.cu").write_text(REPORT)
    assert qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "k.qg").exit_code == 0
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "f.npy", f)
    r = qgrun(tmp_path / "k.qg", "--engine", "ref", "--grid", "2", "--block", "4", "--arg", f"a=@{tmp_path / 'a.npy'}",
              "--arg", f"f=@{tmp_path / 'f.npy'}", "--arg", f"n={n}", "--trace", "none",
              "--json", tmp_path / "r.json")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == want
    assert "".join(json.loads((tmp_path / "r.json").read_text())["printf"]) == want


SPILL = r"""
__global__ void chatty(int *out) {
    int t = threadIdx.x;
    printf("thread %d says %d\n", t, t * t);    // 9 cells a record
    out[t] = t;
}
"""


def test_a_full_printf_buffer_drops_records_and_says_how_many_cells(qgcc, qgrun, tmp_path):
    """1,023 record cells fit 113 records of 9 cells; the launch still succeeds, the dropped
    cells are counted on stderr and in --json, and the kept records are the first in order."""
    (tmp_path / "k.cu").write_text(SPILL)
    r = qgrun(tmp_path / "k.cu", "--engine", "ref", "--grid", "1", "--block", "128", "--arg", "out=zeros:128",
              "--trace", "none", "--json", tmp_path / "r.json")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines == [f"thread {t} says {t * t}" for t in range(113)]
    assert "the printf buffer (1024 cells) was full: 135 cells of records were dropped" in r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["printf_dropped_cells"] == 128 * 9 - 113 * 9


def test_printf_through_the_python_api_prints_pointers_as_cell_addresses():
    prog = qg_api.compile(r"""
__global__ void where(int *a) { printf("%p %s:%d\n", a + threadIdx.x, "cell", a[threadIdx.x]); }
""")
    res = prog.launch(1, 2, engine="ref", a=np.array([7, 8], np.int32))
    base = res.launch.buffers["a"].base
    assert res.printf == [f"0x{base:x} cell:7\n", f"0x{base + 1:x} cell:8\n"]


def test_printf_and_assert_misuses_are_named():
    k = "__global__ void k(int *a, float x, long long w) {{ {} }}\n"
    cases = [
        ("printf(a);", 51, "the format of printf must be a string literal"),
        ('printf("%d\\n", x);', 66, "printf: '%d' needs an integer (write %f for a float); the argument is 'float'"),
        ('printf("%f\\n", a[0]);', 66, "printf: '%f' needs a float or double (write a cast, or an integer conversion "
                                       "such as %d); the argument is 'int'"),
        ('printf("%d\\n", w);', 66, "printf: '%d' needs a 32-bit integer (write '%lld' for a 64-bit one); the "
                                    "argument is 'long long'"),
        ('printf("%d %d\\n", a[0]);', 51, "printf: the format has 2 conversions and 1 argument follow it"),
        ('printf("%*d\\n", 3, a[0]);', 58, "printf format: '%*d': a width or precision from an argument ('*') is "
                                          "not supported; write the number"),
        ('printf("%n\\n", a);', 58, "printf format: '%n': the conversion '%n' is not supported (use %d %i %u %x %X "
                                    "%o %c %f %e %g %s %p)"),
        ('printf("%s\\n", a);', 66, "printf: '%s' takes a string literal here (device strings in memory are not "
                                    "supported)"),
        ("assert(a[0], 1);", 51, "'assert' expects 1 argument, got 2"),
    ]
    for body, col, message in cases:
        assert_error(k.format(body), 1, col, message)


ASSERTING = r"""
#include <assert.h>
__global__ void check(int *out, int n) {
    int gtid = blockIdx.x * blockDim.x + threadIdx.x;
    assert(gtid < n);
    out[gtid] = gtid * 3;
}
"""


def test_a_failing_assert_stops_the_launch_naming_file_line_thread_and_condition(qgcc, qgrun, tmp_path):
    """simpleAssert's pattern: with every thread inside the bound the launch runs and the
    asserts cost nothing visible; a thread outside it stops the launch with CUDA's message
    and exit code 7, and no --out file is written."""
    (tmp_path / "k.cu").write_text(ASSERTING)
    assert qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "k.qg").exit_code == 0
    base = [tmp_path / "k.qg", "--engine", "ref", "--grid", "2", "--block", "8", "--arg", "out=zeros:16",
            "--trace", "none", "--out", f"out={tmp_path / 'o.npy'}"]
    r = qgrun(*base, "--arg", "n=16")
    assert r.exit_code == 0, r.stderr
    assert np.load(tmp_path / "o.npy").tolist() == [3 * i for i in range(16)]
    (tmp_path / "o.npy").unlink()
    r = qgrun(*base, "--arg", "n=11", "--json", tmp_path / "r.json")
    assert r.exit_code == 7
    assert (f"qgrun: error: assert: {tmp_path / 'k.cu'}:5: check: block [1,0,0], thread [3,0,0]: "
            "Assertion `gtid < n` failed. (block 1, warp 0, lane 3, pc ") in r.stderr
    assert not (tmp_path / "o.npy").exists()
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "assert"
    prog = qg_api.compile(ASSERTING, name="k.cu")
    with pytest.raises(AssertionFault, match=re.escape("k.cu:5: check: block [0,0,0], thread [5,0,0]: "
                                                       "Assertion `gtid < n` failed.")):
        prog.launch(1, 8, engine="ref", out=np.zeros(8, np.int32), n=5)
    # C's rule: with NDEBUG defined before <assert.h>, assert(e) is nothing
    quiet = qg_api.compile("#define NDEBUG\n" + ASSERTING)
    assert quiet.launch(1, 8, engine="ref", out=np.zeros(8, np.int32), n=5)["out"][:5].tolist() == [0, 3, 6, 9, 12]


CHATTY_ASSERT = r"""
#include <assert.h>
__global__ void k(int n) {
    int i = threadIdx.x;
    printf("before %d\n", i);
    assert(i < n);
    printf("after %d\n", i);
}
"""


def test_printf_records_complete_before_a_failing_assert_are_still_printed(qgrun, tmp_path):
    """As CUDA flushes what was printed before the launch failed: the records stored before the
    fault are printed (each record's format number is stored last, so none is half there)."""
    (tmp_path / "k.cu").write_text(CHATTY_ASSERT)
    r = qgrun(tmp_path / "k.cu", "--engine", "ref", "--grid", "1", "--block", "8", "--arg", "n=6", "--trace", "none",
              "--json", tmp_path / "r.json")
    assert r.exit_code == 7
    # warp 1 (threads 4..7) reaches the assert before warp 0 prints again: min-PC scheduling
    assert r.stdout == "".join(f"before {i}\n" for i in range(8))
    assert json.loads((tmp_path / "r.json").read_text())["printf"] == [f"before {i}\n" for i in range(8)]
    with pytest.raises(AssertionFault) as info:
        qg_api.compile(CHATTY_ASSERT).launch(1, 8, engine="ref", n=6)
    assert info.value.printf.lines == [f"before {i}\n" for i in range(8)]


def test_batch_launches_list_their_printf_and_report_their_asserts(qgcc, qgrun, tmp_path):
    """With --batch each launch's --json result has its own printf list, and a failing assert is
    that launch's assert fault (exit code 7), the others unaffected."""
    src = ASSERTING.replace("    out[gtid] = gtid * 3;", '    out[gtid] = gtid * 3;\n    printf("%d\\n", out[gtid]);')
    (tmp_path / "k.cu").write_text(src)
    (tmp_path / "b.jsonl").write_text('{"grid": 1, "block": 2, "args": {"out": "zeros:2", "n": 2}}\n'
                                      '{"grid": 1, "block": 3, "args": {"out": "zeros:3", "n": 2}}\n')
    r = qgrun(tmp_path / "k.cu", "--engine", "ref", "--batch", tmp_path / "b.jsonl", "--trace", "none",
              "--json", tmp_path / "r.json")
    assert r.exit_code == 7
    res = json.loads((tmp_path / "r.json").read_text())["results"]
    assert res[0]["printf"] == ["0\n", "3\n"] and res[0]["status"] == "ok"
    assert res[1]["status"] == "assert" and "Assertion `gtid < n` failed." in res[1]["fault"]["message"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_printf_and_assert_run_inside_the_network(qgcc, qgrun, tmp_path):
    """The records are ordinary atomics and stores, the assert an ordinary store: the network
    prints what the emulator prints and stops where it stops."""
    (tmp_path / "k.cu").write_text(REPORT)
    assert qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "k.qg").exit_code == 0
    np.save(tmp_path / "a.npy", np.array([5, -7], np.int32))
    np.save(tmp_path / "f.npy", np.array([1.5, 0.25], F32))
    outs = [qgrun(tmp_path / "k.qg", "--engine", e, "--grid", "1", "--block", "2", "--arg", f"a=@{tmp_path / 'a.npy'}",
                  "--arg", f"f=@{tmp_path / 'f.npy'}", "--arg", "n=2", "--trace", "none") for e in ("ref", "neural")]
    assert outs[0].exit_code == outs[1].exit_code == 0
    assert outs[1].stdout == outs[0].stdout and outs[1].stdout.startswith("[0, 0]:\t\tValue is:5\n")
    (tmp_path / "c.cu").write_text(CHATTY_ASSERT)
    runs = [qgrun(tmp_path / "c.cu", "--engine", e, "--grid", "1", "--block", "8", "--arg", "n=6", "--trace", "none")
            for e in ("ref", "neural")]
    assert runs[0].exit_code == runs[1].exit_code == 7
    assert runs[1].stdout == runs[0].stdout == "".join(f"before {i}\n" for i in range(8))
    assert "k: block [0,0,0], thread [6,0,0]: Assertion `i < n` failed." in runs[1].stderr


def test_qsass_keeps_textures_printf_formats_and_asserts():
    """`qgcc -S` writes the formats, asserts and texture parameters, and assembling the text
    gives back the same program description (kernels, constants, formats, asserts)."""
    from qgcc.asm.assembler import assemble
    from qgcc.asm.disassembler import disassemble
    from qgcc.frontend import compile_source
    from qgcc.qgfile import program_description

    src = ASSERTING + REPORT + "texture<float, 2> img;\n__global__ void t(float *o) { o[0] = tex2D(img, 1.5f, 0); }\n"
    prog = compile_source(src, "k.cu")
    text = disassemble(prog)
    assert '.assert 5 "k.cu" "check" "gtid < n"' in text and ".param texture2 float img" in text
    again = assemble(text, "k.qsass")
    assert program_description(again) == program_description(prog)
    assert again.printf == prog.printf and again.asserts == prog.asserts
