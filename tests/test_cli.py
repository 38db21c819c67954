"""qgcc and qgrun command lines: behaviour, every error path's message shape, exit codes, atomic outputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qgcc.spec import SPEC
from qgcc import engines, qgfile
from qgcc.asm import assemble
from qgcc.trace import ExitCode
from qsass_programs import FAULTS

ROOT = Path(__file__).resolve().parents[1]

VADD = """\
// hand-written vector add
.source "vadd.cu"
.kernel vadd
.param const int* a
.param const int* b
.param int* c
.param int n
    .loc 3    // int i = blockIdx.x * blockDim.x + threadIdx.x;
    S2R r0, %ctaid.x
    S2R r1, %ntid.x
    MUL r0, r0, r1
    S2R r1, %tid.x
    ADD r0, r0, r1
    .loc 4    // if (i < n) c[i] = a[i] + b[i];
    LDC r1, c[3]
    SLT r2, r0, r1
    BRZ r2, done
    LDC r3, c[0]
    ADD r3, r3, r0
    LD r3, [r3]
    LDC r4, c[1]
    ADD r4, r4, r0
    LD r4, [r4]
    ADD r3, r3, r4
    LDC r4, c[2]
    ADD r4, r4, r0
    ST [r4], r3
done:
    .loc 5    // }
    EXIT
.end
"""

KERNELS = FAULTS + """\
.kernel count
.param int* ctr
    .loc 12   // atomicAdd(ctr, 1); __syncthreads();
    LDC r0, c[0]
    MOV r1, #1
    ATOM.ADD r2, [r0], r1
    BAR
    EXIT
.end
.kernel params
.param int i
.param unsigned u
.param bool b
.param char ch
.param uchar uc
.param unsigned* out
    LDC r0, c[5]
    LDC r1, c[0]
    ST [r0], r1
    LDC r1, c[1]
    ST [r0+1], r1
    LDC r1, c[2]
    ST [r0+2], r1
    LDC r1, c[3]
    ST [r0+3], r1
    LDC r1, c[4]
    ST [r0+4], r1
    EXIT
.end
.kernel ptrs
.param char* s
.param uchar* us
.param bool* f
.param unsigned* w
    EXIT
.end
"""

VADD_ARGS = ["--grid", "3", "--block", "4", "--arg", "a=@a.npy", "--arg", "b=@b.npy",
             "--arg", "c=zeros:10", "--arg", "n=10"]


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):  # rich would colour a pipe
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("QGCC_DEBUG", raising=False)
    (tmp_path / "vadd.qsass").write_text(VADD)
    (tmp_path / "k.qsass").write_text(KERNELS)
    np.save(tmp_path / "a.npy", np.arange(10, dtype=np.int32))
    np.save(tmp_path / "b.npy", 100 * np.arange(10, dtype=np.int32))
    qgfile.save(assemble(VADD, "vadd.qsass"), tmp_path / "vadd.qg")
    qgfile.save(assemble(KERNELS, "k.qsass"), tmp_path / "k.qg")
    return tmp_path


@pytest.fixture(scope="session")
def qgrun(qgrun):
    """qgrun on the emulator unless a test names an engine: these tests are about the CLI."""
    return lambda *args: qgrun(*args, *(() if "--engine" in args else ("--engine", "ref")))


def one_line_error(r, tool: str, code: int) -> str:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    assert r.stderr.startswith(f"{tool}: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr[len(f"{tool}: error: "):].rstrip("\n")


# ============================================================================ qgcc

def test_qgcc_assembles_to_default_output(qgcc, work):
    (work / "vadd.qg").unlink()
    r = qgcc("vadd.qsass")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""
    q = qgfile.load(work / "vadd.qg")
    assert q.program.kernels[0].name == "vadd"
    assert q.program.source_line(4) == "if (i < n) c[i] = a[i] + b[i];"


def test_qgcc_output_option_and_subdirectory_input(qgcc, work):
    (work / "src").mkdir()
    shutil.copy(work / "vadd.qsass", work / "src" / "v.qsass")
    assert qgcc("src/v.qsass").exit_code == 0
    assert (work / "src" / "v.qg").exists()  # default output: beside the input
    assert qgcc("src/v.qsass", "-o", "out.qg").exit_code == 0
    assert qgfile.load("out.qg").program.kernels[0].name == "vadd"


def test_qgcc_S_and_d(qgcc, work):
    r = qgcc("-S", "vadd.qsass", "-o", "norm.qsass")
    assert r.exit_code == 0
    text = (work / "norm.qsass").read_text()
    assert "    .loc 4    // if (i < n) c[i] = a[i] + b[i];" in text
    assert "BRZ      r2, L18" in text
    r = qgcc("-S", "vadd.qsass", "-o", "-")
    assert r.exit_code == 0 and r.stdout == text
    r = qgcc("-d", "vadd.qg")
    assert r.exit_code == 0
    assert r.stdout.startswith("// disassembly of vadd.qg (source: vadd.cu)\n")
    assert r.stdout.split("\n", 1)[1] == text.split("\n", 1)[1]  # same body as -S
    r = qgcc("-d", "vadd.qg", "-o", "dis.qsass")
    assert r.exit_code == 0 and r.stdout == "" and (work / "dis.qsass").read_text().endswith(".end\n")
    # the disassembly assembles back to the same program
    assert qgcc("dis.qsass", "--no-link", "-o", "again.qg").exit_code == 0
    a, b = qgfile.load("vadd.qg"), qgfile.load("again.qg")
    assert a.meta["content_hash"] == b.meta["content_hash"]


def test_qgcc_compile_error_writes_nothing(qgcc, work):
    (work / "bad.qsass").write_text(".kernel k\n    MOV r1, #99999999999\n.end\n")
    (work / "bad.qg").write_bytes(b"precious")
    r = qgcc("bad.qsass")
    assert r.exit_code == ExitCode.COMPILE_ERROR
    assert r.stderr == ("bad.qsass:2:14: error: immediate 99999999999 is out of range "
                        "(-2147483648..4294967295)\n    MOV r1, #99999999999\n             ^\n")
    assert r.stdout == ""
    assert (work / "bad.qg").read_bytes() == b"precious"
    r = qgcc("bad.qsass", "-o", "fresh.qg")
    assert r.exit_code == 1 and not (work / "fresh.qg").exists()
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_qgcc_not_utf8(qgcc, work):
    (work / "bin.qsass").write_bytes(b".kernel k\nNOP \xff\n.end\n")
    r = qgcc("bin.qsass")
    assert r.exit_code == 1
    assert r.stderr == "bin.qsass:2:5: error: the file is not UTF-8 text (byte 0xff)\nNOP \ufffd\n    ^\n"


@pytest.mark.parametrize("argv,code,message", [
    (["foo.txt"], 2, "foo.txt: unknown input type '.txt' (expected .cu, .qsass, or .qg with -d)"),
    (["Makefile"], 2, "Makefile: unknown input type '(none)' (expected .cu, .qsass, or .qg with -d)"),
    (["missing.qsass"], 2, "missing.qsass: no such file"),
    (["vadd.qg"], 2, "vadd.qg is already compiled; use 'qgcc -d vadd.qg' to disassemble it or "
                     "'qgrun vadd.qg ...' to run it"),
    (["-S", "-d", "vadd.qg"], 2, "-S and -d cannot be combined"),
    (["-d", "vadd.qsass"], 2, "-d disassembles a .qg file; vadd.qsass is not one"),
    (["-S", "vadd.qsass"], 2, "the output vadd.qsass would overwrite the input; choose another with -o"),
    (["vadd.qsass", "-o", "nodir/x.qg"], 2, "-o nodir/x.qg: directory 'nodir' does not exist"),
    (["vadd.qsass", "-o", "-"], 2, "a .qg cannot be written to stdout; give -o FILE.qg"),
    (["-d", "missing.qg"], 3, "missing.qg: no such file; compile a kernel with 'qgcc KERNEL.cu -o missing.qg'"),
    (["-d", "vadd.qsass.bak.qg"], 3, None),
    ([], 2, "Missing argument 'INPUT'. (see 'qgcc --help')"),
    (["--bogus", "x.cu"], 2, None),  # click's wording varies between versions
])
def test_qgcc_usage_and_file_errors(qgcc, work, argv, code, message):
    (work / "vadd.qsass.bak.qg").write_bytes(b"\x00" * 100)
    r = qgcc(*argv)
    msg = one_line_error(r, "qgcc", code)
    if message is not None:
        assert msg == message
    elif "--bogus" in argv:
        assert "--bogus" in msg and msg.endswith("(see 'qgcc --help')")
    assert r.stdout == ""


def test_qgcc_internal_error_is_one_line(qgcc, work, monkeypatch):
    import qgcc.asm as asm_pkg

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(asm_pkg, "assemble", boom)
    r = qgcc("vadd.qsass", "-o", "x.qg")
    assert r.exit_code == ExitCode.INTERNAL
    assert r.stderr == ("qgcc: internal error: RuntimeError: kaboom (please report it; "
                        "set QGCC_DEBUG=1 for a traceback)\n")
    assert not (work / "x.qg").exists()


def test_qgcc_help_and_version(qgcc, work):
    r = qgcc("--help")
    assert r.exit_code == 0 and "-S" in r.stdout and "-d" in r.stdout
    r = qgcc("--version")
    assert r.exit_code == 0 and "0.1.0" in r.stdout


# ============================================================================ qgrun: success

def test_qgrun_vadd_out_and_json(qgrun, work):
    r = qgrun("vadd.qg", *VADD_ARGS, "--out", "c=c.npy", "--json", "s.json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    c = np.load(work / "c.npy")
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, 101 * np.arange(10))
    s = json.loads((work / "s.json").read_text())
    assert set(s) == {"kernel", "grid", "block", "steps", "warp_instructions", "divergent_steps",
                      "barrier_waits", "atomics", "loads", "stores", "engine", "device", "wall_time_s",
                      "status", "exit_code"}
    assert s["kernel"] == "vadd" and s["grid"] == [3, 1, 1] and s["block"] == [4, 1, 1]
    assert (s["steps"], s["warp_instructions"], s["divergent_steps"], s["loads"], s["stores"]) == (57, 57, 1, 20, 10)
    assert (s["barrier_waits"], s["atomics"]) == (0, 0)
    assert s["engine"] == "ref" and s["device"] == "cpu" and s["status"] == "ok" and s["exit_code"] == 0
    assert isinstance(s["wall_time_s"], float)
    # summary table on stdout, plain text
    assert "qgrun summary" in r.stdout and "divergent steps" in r.stdout and "\x1b[" not in r.stdout
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_qgrun_trace_none_and_summary(qgrun, work):
    r = qgrun("vadd.qg", *VADD_ARGS, "--trace", "none")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""
    r = qgrun("vadd.qg", *VADD_ARGS)
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "qgrun summary"
    assert any("steps" in ln and "57" in ln for ln in lines)


def test_qgrun_trace_full(qgrun, work):
    r = qgrun("vadd.qg", *VADD_ARGS, "--trace", "full")
    assert r.exit_code == 0
    out = r.stdout
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0].split() == ["step", "blk", "wrp", "pc", "lanes", "instruction", "source", "results"]
    rows = [ln for ln in lines[1:] if ln[:6].strip().isdigit()]
    assert len(rows) == 57
    assert rows[0].split()[:8] == ["0", "0", "0", "0", "●●●●", "S2R", "r0,", "%ctaid.x"]
    assert "3: int i = blockIdx.x * blockDi..." in rows[0]
    assert "L0 r0=0x00000000 (0)  L1 r0=0x00000000 (0)" in rows[0]
    assert "L3 r1=0x00000003 (3)" in rows[3]
    row45 = rows[45]
    assert row45.split()[:5] == ["45", "2", "0", "7", "●●●●"] and "BRZ r2, L18" in row45 and "DIVERGE" in row45
    assert rows[46].split()[4] == "●●○○"
    assert "L0 [28]=0x00000328 (808)  L1 [29]=0x0000038d (909)" in rows[55]
    assert "L1 r4=0x00000384 (900) <- [19]" in rows[51]
    assert "RECONVERGE" in rows[56] and "5: }" in rows[56]
    assert "qgrun summary" in out  # the summary follows the trace


def test_qgrun_trace_barrier_and_atomics(qgrun, work):
    r = qgrun("k.qg", "--kernel", "count", "--grid", "1", "--block", "8", "--arg", "ctr=zeros:1",
              "--out", "ctr=ctr.npy", "--trace", "full", "--json", "s.json")
    assert r.exit_code == 0, r.stderr
    assert np.load("ctr.npy").tolist() == [8]
    assert "BARRIER-WAIT" in r.stdout and "BARRIER-RELEASE" in r.stdout
    assert "L3 r2=0x00000003 (3) [0]=0x00000004 (4)" in r.stdout  # old value to rd, new value in memory
    s = json.loads(Path("s.json").read_text())
    assert s["atomics"] == 8 and s["barrier_waits"] == 2


def test_qgrun_scalar_params_encoding(qgrun, work):
    r = qgrun("k.qg", "--kernel", "params", "--grid", "1", "--block", "1", "--arg", "i=-5",
              "--arg", "u=0xFFFFFFFF", "--arg", "b=1", "--arg", "ch=-128", "--arg", "uc=255",
              "--arg", "out=zeros:5", "--out", "out=o.npy", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    o = np.load("o.npy")
    assert o.dtype == np.uint32
    assert o.tolist() == [0xFFFFFFFB, 0xFFFFFFFF, 1, 0xFFFFFF80, 255]


def test_qgrun_pointer_dtypes_accepted(qgrun, work):
    np.save("s.npy", np.array([[-1, 2], [3, 4]], dtype=np.int8))
    np.save("us.npy", np.array([255], dtype=np.uint8))
    np.save("f.npy", np.array([True, False]))
    np.save("w.npy", np.array(7, dtype=np.uint32))  # 0-d: one element
    r = qgrun("k.qg", "--kernel", "ptrs", "--grid", "1", "--block", "1", "--arg", "s=@s.npy",
              "--arg", "us=@us.npy", "--arg", "f=@f.npy", "--arg", "w=@w.npy",
              "--out", "s=so.npy", "--out", "f=fo.npy", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    so, fo = np.load("so.npy"), np.load("fo.npy")
    assert so.dtype == np.int8 and so.tolist() == [-1, 2, 3, 4]  # flattened C-order
    assert fo.dtype == np.bool_ and fo.tolist() == [True, False]


def test_qgrun_runs_qsass_directly(qgrun, work):
    r = qgrun("vadd.qsass", *VADD_ARGS, "--out", "c=c.npy", "--trace", "none")
    assert r.exit_code == 0
    (work / "bad.qsass").write_text("MOV r1, #1\n")
    r = qgrun("bad.qsass", "--grid", "1", "--block", "1")
    assert r.exit_code == 1
    assert r.stderr.startswith("bad.qsass:1:1: error: instruction outside a kernel")


def test_qgrun_device_cuda_with_ref_engine(qgrun, work):
    r = qgrun("vadd.qg", *VADD_ARGS, "--device", "cuda", "--json", "s.json", "--trace", "none")
    assert r.exit_code == 0
    assert r.stderr == "qgrun: note: the ref engine runs on the CPU only; --device cuda is ignored\n"
    assert json.loads(Path("s.json").read_text())["device"] == "cpu"


def test_qgrun_cuda_engine_without_cuda(qgrun, work, monkeypatch):
    import torch

    monkeypatch.setitem(engines.ENGINES, "fake",
                        engines.Engine("fake", "qgcc.engines.ref:RefEngine", ("cpu", "cuda")))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    r = qgrun("vadd.qg", *VADD_ARGS, "--engine", "fake", "--device", "cuda", "--out", "c=c.npy")
    assert one_line_error(r, "qgrun", 2) == ("--device cuda: CUDA is not available here "
                                             "(torch.cuda.is_available() is False); use --device cpu")
    assert not Path("c.npy").exists()


def test_engine_registry_is_lazy():
    code = ("import sys, qgcc.engines, qgcc.cli.qgrun_cmd; "
            "assert 'qgcc.ref.emulator' not in sys.modules; "
            "qgcc.engines.get('ref').load(); assert 'qgcc.ref.emulator' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ============================================================================ qgrun: faults

FAULTS = [
    ("oob", ["--arg", "c=zeros:4"], ExitCode.MEMORY_FAULT, "out-of-bounds",
     "qgrun: error: out-of-bounds: out-of-bounds store to cell 0x3e8 ",
     " (block 0, warp 0, lane 0, pc 2, line 2: c[1000] = 1;)\n"),
    ("divbar", [], ExitCode.BARRIER_FAULT, "barrier",
     "qgrun: error: barrier: barrier in divergent code",
     " (block 0, warp 0, lane 0, pc 6, line 7: if (threadIdx.x) __syncthreads();)\n"),
    ("spin", ["--max-steps", "50"], ExitCode.STEP_LIMIT, "step-limit",
     "qgrun: error: step-limit: the launch did not finish within 50 steps (raise --max-steps)",
     " (block 0, warp 0, pc 8, line 9: for (;;);)\n"),
]


@pytest.mark.parametrize("kernel,extra,code,kind,head,tail", FAULTS, ids=[f[0] for f in FAULTS])
def test_qgrun_faults(qgrun, work, kernel, extra, code, kind, head, tail):
    Path("s.json").write_text("old")
    outs = ["--out", "c=c.npy"] if kernel == "oob" else []
    Path("c.npy").write_bytes(b"precious")
    r = qgrun("k.qg", "--kernel", kernel, "--grid", "2", "--block", "4", *extra, *outs, "--json", "s.json")
    assert r.exit_code == code
    assert r.stderr.startswith(head) and r.stderr.endswith(tail), r.stderr
    assert r.stderr.count("\n") == 1
    assert Path("c.npy").read_bytes() == b"precious"  # no outputs after a fault
    s = json.loads(Path("s.json").read_text())  # but the summary is written
    assert s["status"] == kind and s["exit_code"] == code and s["kernel"] == kernel
    assert s["fault"]["kind"] == kind and isinstance(s["steps"], int)
    assert "qgrun summary" not in r.stdout
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_qgrun_fault_json_uses_stats_attached_by_engine(qgcc, qgrun, work, monkeypatch):
    from qgcc.trace import MemoryFault, Stats

    def engine_run(launch, max_steps, on_step=None):
        f = MemoryFault("boom", block=1, pc=3)
        f.stats = Stats(steps=7, warp_instructions=7, loads=2)
        raise f

    import qgcc.ref.emulator

    monkeypatch.setattr(qgcc.ref.emulator, "run", engine_run)
    r = qgrun("vadd.qg", *VADD_ARGS, "--json", "s.json")
    assert r.exit_code == ExitCode.MEMORY_FAULT
    assert r.stderr == "qgrun: error: out-of-bounds: boom (block 1, pc 3)\n"
    s = json.loads(Path("s.json").read_text())
    assert (s["steps"], s["loads"], s["stores"], s["status"]) == (7, 2, 0, "out-of-bounds")


def test_qgrun_fault_with_full_trace_keeps_rows(qgrun, work):
    r = qgrun("k.qg", "--kernel", "spin", "--grid", "1", "--block", "1", "--max-steps", "5", "--trace", "full")
    assert r.exit_code == ExitCode.STEP_LIMIT
    assert len([ln for ln in r.stdout.splitlines() if ln[:6].strip().isdigit()]) == 5


# ============================================================================ qgrun: usage errors

PARAMS = ["--kernel", "params", "--grid", "1", "--block", "1", "--arg", "out=zeros:5"]
SCALARS = {"i": "0", "u": "0", "b": "0", "ch": "0", "uc": "0"}


def params_args(**override):
    vals = dict(SCALARS, **override)
    out = list(PARAMS)
    for k, v in vals.items():
        if v is not None:
            out += ["--arg", f"{k}={v}"]
    return out


USAGE = [
    # launch shape
    (["vadd.qg", "--grid", "0", "--block", "4"], "--grid '0': expected X[,Y[,Z]] with positive integers"),
    (["vadd.qg", *VADD_ARGS[4:], "--grid", "1", "--block", f"8,{SPEC.max_block_threads // 8 + 1}"],
     f"--block 8,{SPEC.max_block_threads // 8 + 1},1 has {SPEC.max_block_threads + 8} threads; "
     f"the machine runs at most {SPEC.max_block_threads} threads per block"),
    (["vadd.qg", "--grid", "1"], "missing --block (or give the launches with --batch FILE.jsonl)"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--trace", "loud"],
     "Invalid value for '--trace': 'loud' is not one of 'full', 'summary', 'none'. (see 'qgrun --help')"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--max-steps", "0"], None),
    (["vadd.qg", "--grid", "1", "--block", "1", "--engine", "warp9"], "unknown engine 'warp9' (engines: neural, hf, ref)"),
    # kernels
    (["k.qg", "--grid", "1", "--block", "1"],
     "the program has several kernels (oob, divbar, spin, count, params, ptrs); choose one with --kernel"),
    (["k.qg", "--kernel", "nope", "--grid", "1", "--block", "1"],
     "no kernel named 'nope'; the program has: oob, divbar, spin, count, params, ptrs"),
    # arguments
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy"],
     "missing --arg for 'c' (int * c), 'n' (int n)"),
    (["vadd.qg", *VADD_ARGS, "--arg", "m=1"], "--arg 'm': kernel 'vadd' has no parameter 'm' (parameters: a, b, c, n)"),
    (["vadd.qg", *VADD_ARGS, "--arg", "n=5"], "--arg 'n' is given twice"),
    (["vadd.qg", *VADD_ARGS, "--arg", "n"], "--arg 'n': expected NAME=VALUE"),
    (["vadd.qg", *VADD_ARGS, "--arg", "=3"], "--arg '=3': expected NAME=VALUE"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=ten"], "--arg n=ten: expected a int (decimal or 0x hex)"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1.5"], "--arg n=1.5: expected a int (decimal or 0x hex)"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=@a.npy"], "--arg n=@a.npy: parameter 'n' is a scalar (int n); give a number"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=5", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], "--arg a=5: parameter 'a' is a pointer (const int * a); give @FILE.npy or zeros:N"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@f.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], "--arg a=@f.npy: f.npy has dtype float64, but parameter 'a' (const int * a) needs int32"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@u.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], "--arg a=@u.npy: u.npy has dtype uint32, but parameter 'a' (const int * a) needs int32"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@none.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], "--arg a=@none.npy: none.npy: no such file"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@junk.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], None),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@z.npz", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], "--arg a=@z.npz: z.npz is not a .npy array (an .npz archive?)"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@obj.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:3",
      "--arg", "n=1"], None),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:-1",
      "--arg", "n=1"], "--arg c=zeros:-1: expected zeros:N with a count N >= 0"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:99999",
      "--arg", "n=1"], "--arg c=zeros:99999: 99999 elements exceed the machine's global memory (65536 cells)"),
    (["vadd.qg", "--grid", "1", "--block", "1", "--arg", "a=@a.npy", "--arg", "b=@b.npy", "--arg", "c=zeros:65532",
      "--arg", "n=1"], "the buffers need 65552 cells of global memory; the machine has 65536 (256 KiB)"),
    # scalar ranges per type
    (["k.qg", *params_args(i="2147483648")], "--arg i=2147483648: 2147483648 is out of range for int (-2147483648..2147483647)"),
    (["k.qg", *params_args(i="-0x80000001")], "--arg i=-0x80000001: -2147483649 is out of range for int (-2147483648..2147483647)"),
    (["k.qg", *params_args(u="-1")], "--arg u=-1: -1 is out of range for unsigned (0..4294967295)"),
    (["k.qg", *params_args(u="0x100000000")], "--arg u=0x100000000: 4294967296 is out of range for unsigned (0..4294967295)"),
    (["k.qg", *params_args(b="2")], "--arg b=2: 2 is out of range for bool (0..1)"),
    (["k.qg", *params_args(ch="128")], "--arg ch=128: 128 is out of range for char (-128..127)"),
    (["k.qg", *params_args(ch="-129")], "--arg ch=-129: -129 is out of range for char (-128..127)"),
    (["k.qg", *params_args(uc="256")], "--arg uc=256: 256 is out of range for uchar (0..255)"),
    (["k.qg", *params_args(uc="-1")], "--arg uc=-1: -1 is out of range for uchar (0..255)"),
    # --out / --json
    (["vadd.qg", *VADD_ARGS, "--out", "n=n.npy"],
     "--out 'n': parameter 'n' is not a pointer (int n); only buffers can be written out"),
    (["vadd.qg", *VADD_ARGS, "--out", "zz=z.npy"], "--out 'zz': kernel 'vadd' has no parameter 'zz' (parameters: a, b, c, n)"),
    (["vadd.qg", *VADD_ARGS, "--out", "c=1.npy", "--out", "c=2.npy"], "--out 'c' is given twice"),
    (["vadd.qg", *VADD_ARGS, "--out", "c=same.npy", "--out", "a=same.npy"],
     "--out 'a' and --out 'c' write the same file same.npy"),
    (["vadd.qg", *VADD_ARGS, "--out", "c=nodir/c.npy"], "--out c=nodir/c.npy: directory 'nodir' does not exist"),
    (["vadd.qg", *VADD_ARGS, "--out", "c"], "--out 'c': expected NAME=VALUE"),
    (["vadd.qg", *VADD_ARGS, "--json", "nodir/s.json"], "--json nodir/s.json: directory 'nodir' does not exist"),
    (["vadd.qg", *VADD_ARGS, "--json", "c.npy", "--out", "c=c.npy"], "--json c.npy is also an --out file"),
]


@pytest.mark.parametrize("argv,message", USAGE)
def test_qgrun_usage_errors(qgrun, work, argv, message):
    np.save("f.npy", np.zeros(3))
    np.save("u.npy", np.zeros(3, dtype=np.uint32))
    np.save("obj.npy", np.array([{}, 1], dtype=object), allow_pickle=True)
    np.savez("z.npz", x=np.zeros(2))
    Path("junk.npy").write_bytes(b"not an npy file")
    Path("c.npy").write_bytes(b"precious")
    r = qgrun(*argv, "--out", "c=c.npy") if argv[0] == "vadd.qg" and "--out" not in argv else qgrun(*argv)
    msg = one_line_error(r, "qgrun", ExitCode.USAGE)
    if message is not None:
        assert msg == message
    assert r.stdout == ""
    assert Path("c.npy").read_bytes() == b"precious"
    assert not Path("s.json").exists()


def test_qgrun_bad_npy_messages(qgrun, work):
    Path("junk.npy").write_bytes(b"not an npy file")
    np.save("obj.npy", np.array([{}, 1], dtype=object), allow_pickle=True)
    base = ["vadd.qg", "--grid", "1", "--block", "1", "--arg", "b=@b.npy", "--arg", "c=zeros:3", "--arg", "n=1"]
    msg = one_line_error(qgrun(*base, "--arg", "a=@junk.npy"), "qgrun", 2)
    assert msg.startswith("--arg a=@junk.npy: junk.npy is not a readable .npy array (")
    msg = one_line_error(qgrun(*base, "--arg", "a=@obj.npy"), "qgrun", 2)
    assert msg.startswith("--arg a=@obj.npy: obj.npy is not a readable .npy array (")


@pytest.mark.parametrize("content,match", [
    (None, "nothing.qg: no such file; compile a kernel with 'qgcc KERNEL.cu -o nothing.qg'"),
    (b"", "nothing.qg: not a .qg file (truncated: too short for a safetensors header); recompile it with qgcc"),
    (b"\x05\x00\x00\x00\x00\x00\x00\x00{}}}}", None),
])
def test_qgrun_bad_qg_file(qgrun, work, content, match):
    if content is not None:
        Path("nothing.qg").write_bytes(content)
    r = qgrun("nothing.qg", "--grid", "1", "--block", "1")
    msg = one_line_error(r, "qgrun", ExitCode.BAD_FILE)
    if match:
        assert msg == match


def test_qgrun_unknown_extension_is_loaded_as_qg(qgrun, work):
    shutil.copy("vadd.qg", "vadd.bin")
    assert qgrun("vadd.bin", *VADD_ARGS, "--trace", "none").exit_code == 0
    Path("x.txt").write_text("hello")
    one_line_error(qgrun("x.txt", "--grid", "1", "--block", "1"), "qgrun", ExitCode.BAD_FILE)


def test_qgrun_output_write_failure_is_clean(qgrun, work, monkeypatch):
    Path("c.npy").write_bytes(b"precious")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    r = qgrun("vadd.qg", *VADD_ARGS, "--out", "c=c.npy", "--trace", "none")
    assert one_line_error(r, "qgrun", 2).startswith("cannot write ")
    assert Path("c.npy").read_bytes() == b"precious"
    assert [p for p in os.listdir(work) if p.endswith(".tmp")] == []


def test_qgrun_internal_error(qgcc, qgrun, work, monkeypatch):
    def broken(launch, max_steps, on_step=None):
        raise ZeroDivisionError("oops")

    import qgcc.ref.emulator

    monkeypatch.setattr(qgcc.ref.emulator, "run", broken)
    r = qgrun("vadd.qg", *VADD_ARGS, "--out", "c=c.npy")
    assert r.exit_code == ExitCode.INTERNAL
    assert r.stderr.startswith("qgrun: internal error: ZeroDivisionError: oops")
    assert not Path("c.npy").exists()


def test_qgrun_help(qgrun, work):
    r = qgrun("--help")
    assert r.exit_code == 0
    for opt in ("--grid", "--block", "--kernel", "--arg", "--out", "--engine", "--device", "--trace", "--json",
                "--max-steps"):
        assert opt in r.stdout


# ============================================================================ .cu inputs (front end)

def _frontend_ready() -> bool:
    try:
        from qgcc.frontend import compile_source  # noqa: F401
    except ImportError:
        return False
    return True


needs_frontend = pytest.mark.skipif(not _frontend_ready(), reason="front end (compile_source) not available yet")


@needs_frontend
def test_qgcc_cu_compile_S_and_run(qgcc, qgrun, work):
    shutil.copy(ROOT / "samples" / "vadd.cu", "vadd.cu")
    r = qgcc("-S", "vadd.cu")
    assert r.exit_code == 0, r.stderr
    text = Path("vadd.qsass").read_text()
    assert "c[i] = a[i] + b[i];" in text and ".loc " in text and ".kernel vadd" in text
    assert qgcc("vadd.cu", "-o", "v.qg").exit_code == 0
    assert qgcc("vadd.qsass", "-o", "v2.qg").exit_code == 0
    a, b = qgfile.load("v.qg"), qgfile.load("v2.qg")
    assert a.meta["content_hash"] == b.meta["content_hash"]  # -S output reassembles to the same program
    r = qgrun("v.qg", *VADD_ARGS, "--out", "c=c.npy", "--trace", "full")
    assert r.exit_code == 0, r.stderr
    np.testing.assert_array_equal(np.load("c.npy"), 101 * np.arange(10))
    assert "c[i] = a[i] + b[i];" in r.stdout


@needs_frontend
def test_qgcc_cu_compile_error(qgcc, work):
    Path("bad.cu").write_text("__global__ void k(int *a)\n{\n    a[0] = b;\n}\n")
    Path("bad.qg").write_bytes(b"precious")
    r = qgcc("bad.cu")
    assert r.exit_code == ExitCode.COMPILE_ERROR
    first, src, caret = r.stderr.rstrip("\n").split("\n")
    assert first.startswith("bad.cu:3:") and ": error: " in first
    assert src == "    a[0] = b;" and caret.strip() == "^"
    assert Path("bad.qg").read_bytes() == b"precious"


@needs_frontend
def test_cu_fault_names_the_source_line(qgcc, qgrun, work):
    Path("oob.cu").write_text("__global__ void oob(int *a, int n)\n{\n    a[threadIdx.x + n] = 7;\n}\n")
    assert qgcc("oob.cu").exit_code == 0
    r = qgrun("oob.qg", "--grid", "1", "--block", "4", "--arg", "a=zeros:4", "--arg", "n=2",
              "--out", "a=aout.npy")
    assert r.exit_code == ExitCode.MEMORY_FAULT
    assert r.stderr.startswith("qgrun: error: out-of-bounds: out-of-bounds store to cell 0x6 ")  # a: cells 2-5
    assert "(block 0, warp 0, lane 2, pc " in r.stderr
    assert r.stderr.endswith(", line 3: a[threadIdx.x + n] = 7;)\n")
    assert not Path("aout.npy").exists()
    d = qgcc("-d", "oob.qg")
    assert "    .loc 3    // a[threadIdx.x + n] = 7;" in d.stdout


# ============================================================================ installed entry points

def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else (shutil.which(name) or name)


def test_entry_points_subprocess(work):
    env = dict(os.environ)  # the work fixture removed the variables that force colour
    r = subprocess.run([_tool("qgcc"), "vadd.qsass", "-o", "sp.qg"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([_tool("qgrun"), "sp.qg", *VADD_ARGS, "--out", "c=sp.npy", "--trace", "full"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "●●○○" in r.stdout and "\x1b[" not in r.stdout
    np.testing.assert_array_equal(np.load("sp.npy"), 101 * np.arange(10))
    r = subprocess.run([_tool("qgrun"), "k.qg", "--kernel", "oob", "--grid", "1", "--block", "1",
                        "--arg", "c=zeros:1"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == ExitCode.MEMORY_FAULT
    assert r.stderr.startswith("qgrun: error: out-of-bounds: ") and "Traceback" not in r.stderr


def test_entry_point_compile_error_and_ascii_stdout(work):
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    Path("bad.qsass").write_text(".kernel k\nFOO\n.end\n")
    r = subprocess.run([_tool("qgcc"), "bad.qsass"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1
    assert r.stderr == "bad.qsass:2:1: error: unknown mnemonic 'FOO'\nFOO\n^\n"
    # a non-UTF-8 stdout gets an ASCII lane mask instead of a crash
    r = subprocess.run([_tool("qgrun"), "vadd.qg", *VADD_ARGS, "--trace", "full"], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "##.." in r.stdout


def test_progress_line_shows_instructions_rate_and_block_then_erases_itself():
    import io

    from qgcc.cli.qgrun_cmd import _Progress
    from qgcc.trace import StepRecord

    class Tty(io.StringIO):
        def isatty(self):
            return True

    seen = []
    out = Tty()
    p = _Progress(seen.append, stream=out, delay=0.0)
    for i in range(128):
        p(StepRecord(step=i, block=3, warp=0, pc=0, active=1))
    p.close()
    text = out.getvalue()
    assert len(seen) == 128  # the trace callback still sees every record
    assert "64 warp instructions" in text and "block 3" in text and "/s" in text
    assert text.endswith("\r\x1b[K")  # erased before the summary is printed



# ============================================================================ qgrun --batch

def _batch(work, lines) -> str:
    (work / "launches.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return "launches.jsonl"


def test_batch_results_equal_the_same_launches_run_one_by_one(qgrun, work):
    engine = "neural"
    specs = [(3, 10), (1, 4), (2, 7)]
    lines = [{"grid": g, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:10", "n": n},
              "outs": {"c": f"batch{i}.npy"}} for i, (g, n) in enumerate(specs)]
    r = qgrun("vadd.qg", "--batch", _batch(work, lines), "--engine", engine, "--json", "b.json")
    assert r.exit_code == 0, r.stderr
    for i, (g, n) in enumerate(specs):
        one = qgrun("vadd.qg", "--grid", str(g), "--block", "4", "--arg", "a=@a.npy", "--arg", "b=@b.npy",
                    "--arg", "c=zeros:10", "--arg", f"n={n}", "--out", f"c=one{i}.npy", "--engine", engine)
        assert one.exit_code == 0
        assert np.array_equal(np.load(work / f"batch{i}.npy"), np.load(work / f"one{i}.npy"))
    report = json.loads((work / "b.json").read_text())
    assert report["launches"] == 3 and report["ok"] == 3 and report["engine"] == engine
    assert [x["warp_instructions"] for x in report["results"]] == [57, 19, 38]


@pytest.mark.parametrize("overlap", [None, pytest.param(True, marks=pytest.mark.slow)])
def test_batch_width_steps_launches_together_and_changes_no_result(qgrun, work, monkeypatch, overlap):
    """--batch-width stacks launches as a batch dimension through the layers; each launch's
    buffers and statistics are the emulator's, launch by launch: with the runner's default
    here (no overlap on the CPU) and with the host's work overlapped with the next chunk (the
    default on CUDA, computed in the same order here)."""
    from qgcc.engines import batch

    init, made = batch.BatchRunner.__init__, []

    def with_overlap(self, *a, **k):
        init(self, *a, **dict(k, overlap=overlap))
        made.append(self.overlap)

    monkeypatch.setattr(batch.BatchRunner, "__init__", with_overlap)
    specs = [(1, 4), (1, 1)]
    lines = [{"grid": g, "block": 2, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:4", "n": n},
              "outs": {"c": f"out{i}.npy"}} for i, (g, n) in enumerate(specs)]
    _batch(work, lines)
    reports = {}
    for engine, width in (("neural", "2"), ("ref", "1")):
        r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--engine", engine, "--batch-width", width,
                  "--json", f"{engine}.json", "--trace", "none")
        assert r.exit_code == 0, r.stderr
        reports[engine] = json.loads((work / f"{engine}.json").read_text())
        for i, (g, n) in enumerate(specs):
            c = np.load(work / f"out{i}.npy")
            assert list(c) == [101 * k if k < min(n, 2 * g) else 0 for k in range(4)]
    assert reports["neural"]["batch_width"] == 2 and made == [bool(overlap)]
    keys = ("steps", "warp_instructions", "divergent_steps", "barrier_waits", "atomics", "loads", "stores")
    for a, b in zip(reports["neural"]["results"], reports["ref"]["results"]):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


def test_batch_width_is_the_neural_engines_and_needs_a_batch(qgrun, work):
    _batch(work, [{"grid": 1, "block": 2, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:4", "n": 2}}])
    r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--batch-width", "4", "--engine", "ref")
    assert "only the neural engine steps launches together" in one_line_error(r, "qgrun", int(ExitCode.USAGE))
    r = qgrun("vadd.qg", "--grid", "1", "--block", "2", "--batch-width", "4")
    assert "--batch-width needs --batch" in one_line_error(r, "qgrun", int(ExitCode.USAGE))


def test_batch_runs_every_launch_and_reports_the_first_fault(qgrun, work):
    good = {"grid": 1, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:10", "n": 4},
            "outs": {"c": "good.npy"}}
    oob = {"grid": 1, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:2", "n": 4},
           "outs": {"c": "bad.npy"}}
    r = qgrun("vadd.qg", "--batch", _batch(work, [oob, good]), "--trace", "none")
    assert r.exit_code == int(ExitCode.MEMORY_FAULT)
    assert r.stderr.startswith("qgrun: error: launches.jsonl:1: out-of-bounds")
    assert (work / "good.npy").exists() and not (work / "bad.npy").exists()
    assert list(np.load(work / "good.npy")[:4]) == [0, 101, 202, 303]


def _without_times(report: dict) -> dict:
    drop = ("wall_time_s", "launches_per_s")
    return {k: ([{a: b for a, b in r.items() if a not in drop} for r in v] if k == "results" else v)
            for k, v in report.items() if k not in drop}


@pytest.mark.parametrize("engine", [pytest.param("neural", marks=pytest.mark.slow), "ref"])
def test_batch_jobs_gives_the_same_outputs_json_messages_and_exit_code_as_one_process(qgrun, work, engine):
    """--jobs N spreads the launches over N forked workers; everything but the timings is
    byte for byte what one process gives: --out files, --json, stderr and the exit code
    (here the first fault's, a launch in the middle of the batch)."""
    lines = [{"grid": g, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": f"zeros:{c}", "n": n},
              "outs": {"c": f"c{i}.npy"}}
             for i, (g, n, c) in enumerate([(1, 4, 10), (2, 7, 10), (1, 4, 2), (1, 1, 10), (2, 8, 10)])]
    _batch(work, lines)
    seen = {}
    for jobs in ("1", "3"):
        r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--jobs", jobs, "--engine", engine, "--json",
                  f"r{jobs}.json", "--trace", "none")
        files = {p.name: p.read_bytes() for p in sorted(work.glob("c*.npy"))}
        for p in work.glob("c*.npy"):
            p.unlink()
        report = json.loads((work / f"r{jobs}.json").read_text())
        seen[jobs] = (r.exit_code, r.stdout, r.stderr, files, _without_times(report))
    assert seen["1"][0] == int(ExitCode.MEMORY_FAULT) and "launches.jsonl:3: out-of-bounds" in seen["1"][2]
    assert len(seen["1"][3]) == 4
    assert seen["3"] == seen["1"]


def test_batch_jobs_default_to_the_cores_this_process_may_use_for_launches_run_one_at_a_time_on_the_cpu(
        monkeypatch):
    """Without --jobs: every core of the process's affinity mask (not the machine's count), at
    most one worker a launch; one process on CUDA, for the hf engine (dense layers in every
    worker) and with --batch-width (the batched step runs in one process)."""
    import os

    from qgcc.cli import jobs
    from qgcc.cli.qgrun_batch import _batch_jobs

    if hasattr(os, "sched_getaffinity"):
        assert jobs.available_cores() == len(os.sched_getaffinity(0))
    if not jobs.can_fork():
        pytest.skip("no fork on this platform: every batch runs in one process")
    monkeypatch.setattr(jobs, "available_cores", lambda: 5)
    assert _batch_jobs(None, "neural", "cpu", 1, 10) == 5
    assert _batch_jobs(None, "ref", "cpu", 1, 10) == 5
    assert _batch_jobs(None, "neural", "cpu", 1, 3) == 3
    assert _batch_jobs(None, "hf", "cpu", 1, 10) == 1
    assert _batch_jobs(None, "neural", "cuda", 8, 10) == 1
    assert _batch_jobs(None, "neural", "cpu", 4, 10) == 1
    assert _batch_jobs(2, "neural", "cpu", 1, 10) == 2


def test_jobs_needs_a_batch_on_the_cpu_without_batch_width(qgrun, work):
    _batch(work, 2 * [{"grid": 1, "block": 2, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:4", "n": 2}}])
    r = qgrun("vadd.qg", "--grid", "1", "--block", "2", "--jobs", "2")
    assert "--jobs needs --batch" in one_line_error(r, "qgrun", int(ExitCode.USAGE))
    r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--jobs", "2", "--batch-width", "2", "--engine", "neural")
    assert "the batched step runs in one process" in one_line_error(r, "qgrun", int(ExitCode.USAGE))


def test_a_bad_batch_line_is_one_error_and_nothing_runs(qgrun, work):
    ok = json.dumps({"grid": 1, "block": 4, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:10", "n": 4},
                     "outs": {"c": "first.npy"}})
    for line, message in [
        ('{"grid": 1', "launches.jsonl:2: not JSON"),
        ('{"grid": 1, "block": 4, "args": {"zz": 1}}', "launches.jsonl:2: --arg 'zz'"),
        ('{"block": 4}', 'launches.jsonl:2: missing "grid"'),
        ('{"grid": 1, "block": 4, "colour": 1}', "launches.jsonl:2: unknown key 'colour'"),
    ]:
        (work / "launches.jsonl").write_text(ok + "\n" + line + "\n")
        r = qgrun("vadd.qg", "--batch", "launches.jsonl")
        assert one_line_error(r, "qgrun", int(ExitCode.USAGE)).startswith(message)
        assert not (work / "first.npy").exists()
    r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--grid", "1")
    assert "--batch takes each launch's --grid" in one_line_error(r, "qgrun", int(ExitCode.USAGE))
    r = qgrun("vadd.qg", "--arg", "n=3")
    assert "missing --grid" in one_line_error(r, "qgrun", int(ExitCode.USAGE))


def test_a_batch_says_which_matrices_stay_float32_and_its_results_do_not_change(qgrun, work, monkeypatch):
    """Issue #26: where bfloat16 parts would not be exact the batched step keeps float32 "and says
    so". On the CPU the step runs float32 anyway, so the test asks for the device's precision
    (lowp) and makes every split fail, as a torch without the bfloat16 product on CUDA would."""
    from functools import partialmethod

    from qgcc.engines import batch, lowp

    monkeypatch.setattr(batch.BatchRunner, "__init__", partialmethod(batch.BatchRunner.__init__, lowp=True))
    monkeypatch.setattr(lowp, "bf16_parts", lambda W: (None, "forced by this test"))
    _batch(work, [{"grid": 1, "block": 2, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:4", "n": n},
                   "outs": {"c": f"out{n}.npy"}} for n in (1, 2)])
    r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--engine", "neural", "--batch-width", "2", "--trace", "none")
    assert r.exit_code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("qgrun: note: the batched step multiplies "), r.stderr
    assert "matrices in float32" in lines[0] and "(forced by this test)" in lines[0] and "layer 0 " in lines[0]
    for n in (1, 2):  # two threads, n of them in range
        assert list(np.load(work / f"out{n}.npy")) == [101 * k if k < n else 0 for k in range(4)]


def test_a_triton_step_that_cannot_run_says_why_and_writes_nothing(qgrun, work, monkeypatch):
    """qgrun --step fused|phased (issue #26): each conflict is one line naming the fix, before any
    launch runs.  Triton's presence is decided by find_spec, pinned here both ways so that the
    test means the same with and without the `fused` extra installed."""
    import importlib.util

    real = importlib.util.find_spec
    have = {"triton": None}
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: have[name] if name in have else real(name, *a))
    launch = ("vadd.qg", "--grid", "1", "--block", "4", "--arg", "a=@a.npy", "--arg", "b=@b.npy",
              "--arg", "c=zeros:4", "--arg", "n=4", "--out", "c=c.npy")
    r = qgrun(*launch, "--engine", "neural", "--step", "phased")
    assert one_line_error(r, "qgrun", int(ExitCode.USAGE)) == (
        "--step phased: its kernels need Triton, which is not installed here; pip install 'qgcc[fused]' "
        "(or drop --step)")
    have["triton"] = real("click")  # any spec: "installed"
    r = qgrun(*launch, "--engine", "ref", "--step", "fused")
    assert "only the neural engine has a batched step" in one_line_error(r, "qgrun", int(ExitCode.USAGE))
    r = qgrun(*launch, "--engine", "neural", "--step", "phased", "--dump-states", "s.npz")
    assert "states are dumped from the one-launch path, not from --step phased; drop --step" in \
        one_line_error(r, "qgrun", int(ExitCode.USAGE))
    _batch(work, [{"grid": 1, "block": 2, "args": {"a": "@a.npy", "b": "@b.npy", "c": "zeros:4", "n": 2},
                   "outs": {"c": f"out{i}.npy"}} for i in range(2)])
    r = qgrun("vadd.qg", "--batch", "launches.jsonl", "--engine", "neural", "--step", "fused", "--jobs", "2")
    assert "the Triton step runs in one process; use --batch-width" in one_line_error(r, "qgrun",
                                                                                       int(ExitCode.USAGE))
    assert not any((work / f).exists() for f in ("c.npy", "s.npz", "out0.npy", "out1.npy"))


@pytest.mark.slow
def test_the_triton_steps_run_a_compiled_kernel_through_qgrun_and_the_api_with_the_c_steps_results(
        qgcc, qgrun, work):
    """The path users take for --step (issue #26): `qgcc -o` then `qgrun --step phased` for one
    launch, `--batch --batch-width 2 --step fused` for a batch, and `Program.launch(step="fused")`,
    each with the buffers and statistics of the default C step.  On the CPU the kernels run in
    Triton's interpreter (a few minutes here, hence slow); skipped without triton, a third-party
    package (the `fused` extra)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    (work / "tri.cu").write_text("__global__ void tri(int *c, int n) {\n"
                                 "    int i = threadIdx.x;\n    if (i < n) c[i] = i * (i + 1) / 2;\n}\n")
    assert qgcc("tri.cu", "-o", "tri.qg").exit_code == 0
    one = ("tri.qg", "--engine", "neural", "--grid", "1", "--block", "3", "--arg", "c=zeros:3", "--arg", "n=2",
           "--trace", "none")
    assert qgrun(*one, "--out", "c=want.npy", "--json", "want.json").exit_code == 0
    r = qgrun(*one, "--step", "phased", "--out", "c=got.npy", "--json", "got.json")
    assert r.exit_code == 0, r.stderr
    assert "Triton's interpreter" in r.stderr
    stats = lambda f: {k: v for k, v in json.loads((work / f).read_text()).items() if k != "wall_time_s"}  # noqa: E731
    assert np.load(work / "got.npy").tolist() == np.load(work / "want.npy").tolist() == [0, 1, 0]
    assert stats("got.json") == stats("want.json")
    _batch(work, [{"grid": 1, "block": 3, "args": {"c": "zeros:3", "n": n}, "outs": {"c": f"b{n}.npy"}}
                  for n in (1, 3)])
    r = qgrun("tri.qg", "--engine", "neural", "--batch", "launches.jsonl", "--batch-width", "2", "--step", "fused",
              "--trace", "none")
    assert r.exit_code == 0, r.stderr
    assert np.load(work / "b1.npy").tolist() == [0, 0, 0] and np.load(work / "b3.npy").tolist() == [0, 1, 3]
    import qgcc as api

    prog = api.load(work / "tri.qg")
    with pytest.warns(UserWarning, match="Triton's interpreter"):
        got = prog.launch(1, 3, step="fused", c=np.zeros(3, np.int32), n=3)
    want = prog.launch(1, 3, c=np.zeros(3, np.int32), n=3)
    assert got["c"].tolist() == want["c"].tolist() == [0, 1, 3] and got.stats == want.stats
