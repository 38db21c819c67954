"""Reliability (issue 6): bad input, corrupt files, runaway kernels, and nothing lost.

One section per promise, each through the command lines a user types:

1. Front end: every error is `file:line:col: error: message`, the source line and a
   caret, exit 1, no traceback.  (Every single diagnostic: test_frontend_errors.py;
   the fuzzing: test_frontend_fuzz.py and bench/fuzz/frontend.py.)
2. Files: a damaged .qg is one line and exit 3; an unknown kernel lists the kernels.
3. Launch: bad arguments and launches too large for the machine are refused, in one
   line, before any engine runs.
4. Runtime faults: out-of-bounds, a barrier in divergent code, a barrier deadlock and
   the step limit are located (block, warp, lane, PC, source line) identically by the
   emulator and by the compiled layers, with distinct documented exit codes.
5. Outputs: after any error no output is created and existing files are untouched.
6. Determinism: the same launch gives byte-identical outputs and traces every time.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

from qgcc.spec import SPEC
from qgcc import engines, qgfile
from qgcc.diagnostics import QgFileError
from qgcc.trace import ExitCode

ROOT = Path(__file__).resolve().parents[1]

# Tiny kernels: each neural run is a few dozen network steps.
KERNELS_CU = r"""
__global__ void oob(int *a) {
    a[threadIdx.x + 2] = 1;
}
__global__ void divbar(int *a) {
    if (threadIdx.x < 2) __syncthreads();
    a[0] = 1;
}
__global__ void spin(int *a) {
    while (a[0] == 0) { }
}
__global__ void deadlock(int *a) {
    if (threadIdx.x < 4) __syncthreads();
    else while (a[0] == 0) { }
}
__global__ void mix(const int *a, int *out) {
    int t = threadIdx.x;
    if (t & 1) out[t] = a[t] * 3;
    else out[t] = -a[t];
    atomicAdd(&out[4], t);
}
"""
MIX = ["--kernel", "mix", "--grid", "1", "--block", "4", "--arg", "a=@a.npy", "--arg", "out=zeros:5"]


@pytest.fixture(scope="module")
def linked(qgcc, tmp_path_factory):
    """k.cu compiled and linked once: the .qg every test of this module copies."""
    d = tmp_path_factory.mktemp("linked")
    (d / "k.cu").write_text(KERNELS_CU)
    r = qgcc(d / "k.cu", "-o", d / "k.qg")
    assert r.exit_code == 0, r.stderr
    r = qgcc(d / "k.cu", "--no-link", "-o", d / "small.qg")
    assert r.exit_code == 0, r.stderr
    return d


@pytest.fixture
def work(tmp_path, monkeypatch, linked):
    monkeypatch.chdir(tmp_path)
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "QGCC_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    for name in ("k.qg", "small.qg", "k.cu"):
        shutil.copy(linked / name, tmp_path / name)
    np.save("a.npy", np.array([5, -2, 7, 9], dtype=np.int32))
    return tmp_path


def one_line(r, code: int, tool: str = "qgrun") -> str:
    assert r.exit_code == code, (r.exit_code, r.stderr)
    assert r.stderr.startswith(f"{tool}: error: ") and r.stderr.count("\n") == 1, r.stderr
    return r.stderr[len(f"{tool}: error: "):-1]


def files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


# ================================================================== 1. front end

FRONT_END = [
    ("syntax error", "__global__ void k(int *a) {\n  a[0] = 1\n}\n", 3, 1, "expected ';' before '}'"),
    ("unknown name", "__global__ void k(int *a) {\n  a[0] = b;\n}\n", 2, 10, "unknown identifier 'b'"),
    ("type error", "__global__ void k(int *a) {\n  a = 3;\n}\n", 2, 7, "cannot convert 'int' to 'int *'"),
    ("long double", "__global__ void k(int *a) {\n  long double d = 1;\n}\n", 2, 8, "'long double' is not supported"),
    ("recursion", "__device__ int f(int x) { return f(x); }\n__global__ void k(int *a) { a[0] = f(1); }\n",
     1, 34, "recursion is not supported"),
    ("struct constructor", "struct P { int x; P() {} };\n__global__ void k(int *a) { P p; }\n", 2, 29,
     "constructor 'P::P' (line 1) is host code; make it __device__ to construct a 'P' on the device"),
    ("function pointer", "__global__ void k(int *a) {\n  int (*fp)(int);\n}\n", 2, 9,
     "function pointers are not supported"),
    ("asm", '__global__ void k(int *a) {\n  asm("mov.u32 %0, 1;" : "=r"(a[0]));\n}\n', 2, 3,
     "inline assembly ('asm') is not supported"),
    ("64-bit atomic", "__global__ void k(long long *a) {\n  atomicMax(a, 1);\n}\n", 2, 13,
     "'atomicMax' on 'long long *' is not supported (the high words decide only when they differ, so it "
     "cannot be done a half at a time; it needs a 64-bit compare-and-swap, which the machine does not have "
     "(its ATOM works on one 32-bit cell))"),
    ("instructions", "__global__ void big(int *a) {\n"
     + "".join(f"  a[{i}] = a[{i}] / a[{i + 1}];\n" for i in range(SPEC.max_instrs // 25)) + "}\n", 1, 17,
     f"the machine holds at most {SPEC.max_instrs}"),
    ("shared memory", f"__global__ void k(int *a) {{\n  __shared__ int s[{SPEC.shared_words + 1}];\n}}\n", 2, 18,
     f"the machine has {SPEC.shared_words} cells ({SPEC.shared_words // 256} KiB) per block"),
]


@pytest.mark.parametrize("what,src,line,col,message", FRONT_END, ids=[c[0] for c in FRONT_END])
def test_front_end_errors_are_gcc_style_with_caret_and_exit_1(qgcc, work, what, src, line, col, message):
    Path("bad.cu").write_text(src)
    Path("bad.qg").write_bytes(b"precious")
    r = qgcc("bad.cu")
    assert r.exit_code == ExitCode.COMPILE_ERROR, r.stderr
    head, quoted, caret = r.stderr.rstrip("\n").split("\n")
    assert head.startswith(f"bad.cu:{line}:{col}: error: ") and message in head, head
    assert quoted == src.split("\n")[line - 1] and caret == " " * (col - 1) + "^"
    assert Path("bad.qg").read_bytes() == b"precious"


# ================================================================== 2. files

def _rewrite(path: str, *, meta=None, drop=(), rehash=False) -> None:
    """Edit a .qg the way a damaged or foreign writer would, optionally with a valid hash."""
    t = safetensors.numpy.load_file(path)
    m = qgfile._read_header(path, Path(path).read_bytes())["__metadata__"]
    m.update(meta or {})
    for name in drop:
        t.pop(name)
    if rehash:
        code = t["program.code"]
        rest = {k: v for k, v in t.items() if k != "program.code"}
        described = qgfile._hashed_program(m["kernels"], m.get("constants"), m.get("device_io"))
        m["content_hash"] = qgfile.content_hash(code, described, rest, qgfile.extra_meta_of(m))
    safetensors.numpy.save_file(t, path, metadata=m)


def _truncate(p):
    Path(p).write_bytes(Path(p).read_bytes()[:-100])


def _flip_code(p):
    data = bytearray(Path(p).read_bytes())
    data[-8 * 3] ^= 0x10  # inside program.code, the last tensor of the small file
    Path(p).write_bytes(bytes(data))


DAMAGE = [
    ("truncated", "small.qg", _truncate, "not a .qg file (truncated or corrupt"),
    ("corrupt code", "small.qg", _flip_code, "content hash mismatch"),
    ("wrong version", "small.qg", lambda p: _rewrite(p, meta={"format_version": "1"}),
     "format version '1' is not supported (this qgcc reads version 2)"),
    ("hash mismatch", "small.qg", lambda p: _rewrite(p, meta={"kernels": qgfile.load(p).meta["kernels"]
                                                                .replace('"regs":', '"regs":1')}),
     "content hash mismatch"),
    ("missing code tensor", "small.qg", lambda p: _rewrite(p, drop=["program.code"]),
     "tensor 'program.code' is missing"),
    ("missing layer tensor", "k.qg", lambda p: _rewrite(p, drop=["layers.3.mlp.up_proj.weight.idx"], rehash=True),
     "the compiled layers are incomplete or corrupt"),
    ("not a .qg", "k.cu", None, "not a .qg file"),
]


@pytest.mark.parametrize("what,name,damage,message", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damaged_qg_files_are_one_line_errors_with_exit_3(qgrun, work, what, name, damage, message):
    target = "damaged.qg"
    shutil.copy(name, target)
    if damage is not None:
        damage(target)
    r = qgrun(target, *MIX, "--engine", "ref")
    assert message in one_line(r, ExitCode.BAD_FILE)


def test_random_corruption_of_a_qg_is_detected_or_harmless(work):
    good = Path("small.qg").read_bytes()
    want = qgfile.load("small.qg").meta["content_hash"]
    rnd = random.Random(6)
    for _ in range(150):
        data = bytearray(good)
        i = rnd.randrange(len(data))
        data[i] ^= 1 << rnd.randrange(8)
        Path("x.qg").write_bytes(bytes(data))
        try:
            loaded = qgfile.load("x.qg")
        except QgFileError as e:
            assert "\n" not in str(e)
            continue
        # Accepted: the flip hit an annotation or the JSON's layout, never what runs.
        assert loaded.meta["content_hash"] == want


def test_an_unknown_kernel_name_lists_the_kernels(qgrun, work):
    msg = one_line(qgrun("k.qg", "--kernel", "nope", "--grid", "1", "--block", "1"), ExitCode.USAGE)
    assert msg == "no kernel named 'nope'; the program has: oob, divbar, spin, deadlock, mix"


# ================================================================== 3. launch

BAD_LAUNCH = [
    ("missing argument", ["--arg", "a=@a.npy"], "missing --arg for 'out' (int * out)"),
    ("unknown argument", [*MIX[6:], "--arg", "b=1"], "--arg 'b': kernel 'mix' has no parameter 'b' (parameters: a, out)"),
    ("duplicate argument", [*MIX[6:], "--arg", "a=@a.npy"], "--arg 'a' is given twice"),
    ("wrong dtype", ["--arg", "a=@f.npy", "--arg", "out=zeros:5"],
     "--arg a=@f.npy: f.npy has dtype float32, but parameter 'a' (const int * a) needs int32"),
    ("malformed value", ["--arg", "a=@a.npy", "--arg", "out=zeros:five"],
     "--arg out=zeros:five: expected zeros:N with a count N >= 0"),
    ("grid beyond capacity", [*MIX[6:], "--grid", "70000"], "--grid x=70000 exceeds the limit 65535"),
    ("block beyond capacity", [*MIX[6:], "--block", str(SPEC.max_block_threads + 1)],
     f"--block {SPEC.max_block_threads + 1},1,1 has {SPEC.max_block_threads + 1} threads; the machine runs at most "
     f"{SPEC.max_block_threads} threads per block"),
    ("buffers beyond the memory map", ["--arg", "a=zeros:40000", "--arg", "out=zeros:40000"],
     "the buffers need 80000 cells of global memory; the machine has 65534 for them (65536, 256 KiB, less the "
     "null guard's 2)"),
]


@pytest.mark.parametrize("what,argv,message", BAD_LAUNCH, ids=[b[0] for b in BAD_LAUNCH])
def test_bad_launches_are_refused_before_anything_runs(qgrun, work, monkeypatch, what, argv, message):
    def must_not_run(*args, **kwargs):
        raise AssertionError("an engine ran")

    monkeypatch.setattr(engines.Engine, "run", must_not_run)
    np.save("f.npy", np.zeros(4, dtype=np.float32))
    r = qgrun("k.qg", "--kernel", "mix", "--grid", "1", "--block", "4", *argv)
    assert one_line(r, ExitCode.USAGE) == message


# ================================================================== 4. runtime faults

FAULTS = [
    ("oob", 4, [], ExitCode.MEMORY_FAULT, "out-of-bounds", "(block 0, warp 0, lane 2, pc "),
    ("divbar", 4, [], ExitCode.BARRIER_FAULT, "barrier", "(block 0, warp 0, lane 2, pc "),
    ("deadlock", 8, ["--max-steps", "20"], ExitCode.BARRIER_FAULT, "barrier",
     "barrier deadlock: after 20 steps warp 0 still waits at __syncthreads() for warp 1"),
    ("spin", 1, ["--max-steps", "20"], ExitCode.STEP_LIMIT, "step-limit",
     "the launch did not finish within 20 steps"),
]


def _fault_run(qgrun, kernel: str, block: int, extra: list[str], engine: str):
    r = qgrun("k.qg", "--kernel", kernel, "--grid", "1", "--block", str(block), "--arg", "a=zeros:4",
              *extra, "--engine", engine, "--json", f"{engine}.json", "--trace", "none")
    return r, json.loads(Path(f"{engine}.json").read_text())


@pytest.mark.parametrize("kernel,block,extra,code,kind,text", FAULTS, ids=[f[0] for f in FAULTS])
def test_runtime_faults_are_located_identically_by_the_emulator_and_the_layers(qgrun, work, kernel, block, extra,
                                                                               code, kind, text):
    ref, ref_json = _fault_run(qgrun, kernel, block, extra, "ref")
    net, net_json = _fault_run(qgrun, kernel, block, extra, "neural")
    msg = one_line(ref, code)
    assert msg.startswith(f"{kind}: ") and text in msg
    assert re.search(r", line \d+: .+\)$", msg), msg  # the source line is quoted
    assert net.stderr == ref.stderr
    assert net_json["fault"] == ref_json["fault"] and net_json["status"] == kind
    assert all(ref_json["fault"][k] is not None for k in ("block", "warp", "pc", "line", "step"))


@pytest.mark.slow
def test_transformers_own_layers_report_the_same_fault(qgrun, work):
    ref, _ = _fault_run(qgrun, "oob", 4, [], "ref")
    hf, _ = _fault_run(qgrun, "oob", 4, [], "hf")
    assert hf.exit_code == ExitCode.MEMORY_FAULT and hf.stderr == ref.stderr


def test_exit_codes_are_distinct_and_documented():
    codes = [int(c) for c in ExitCode]
    assert len(codes) == len(set(codes))
    table = (ROOT / "docs" / "cli.md").read_text()
    for c in ExitCode:
        assert re.search(rf"^\| {int(c)} \| {c.name} \|", table, re.M), c
    assert "barrier deadlock" in table


# ================================================================== 5. outputs are atomic

def _fail_second_rename(monkeypatch):
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)


# Each command gets (monkeypatch, qgcc, qgrun): the tools are fixtures (tests/conftest.py).
ERRORS = [
    ("compile error", lambda mp, qgcc, qgrun: qgcc("bad.cu", "-o", "old.npy"), ExitCode.COMPILE_ERROR),
    ("usage error", lambda mp, qgcc, qgrun: qgrun("k.qg", *MIX, "--arg", "zz=1", "--out", "out=old.npy",
                                                  "--engine", "ref"), ExitCode.USAGE),
    ("bad file", lambda mp, qgcc, qgrun: qgrun("k.cu.qg", *MIX, "--out", "out=old.npy", "--engine", "ref"),
     ExitCode.BAD_FILE),
    ("fault", lambda mp, qgcc, qgrun: qgrun("k.qg", "--kernel", "oob", "--grid", "1", "--block", "4",
                                            "--arg", "a=zeros:4", "--out", "a=old.npy", "--engine", "ref"),
     ExitCode.MEMORY_FAULT),
    ("disk full half-way", lambda mp, qgcc, qgrun: (_fail_second_rename(mp), qgrun(
        "k.qg", *MIX, "--out", "out=new.npy", "--json", "old.json", "--engine", "ref"))[1], ExitCode.USAGE),
]


@pytest.mark.parametrize("what,run,code", ERRORS, ids=[e[0] for e in ERRORS])
def test_after_any_error_no_output_exists_and_old_files_are_untouched(qgcc, qgrun, work, monkeypatch, what, run,
                                                                     code):
    Path("bad.cu").write_text("__global__ void k(int *a) { a[0] = b; }\n")
    Path("k.cu.qg").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken")
    Path("old.npy").write_bytes(b"precious")
    Path("old.json").write_bytes(b"precious too")
    before = files(work)
    r = run(monkeypatch, qgcc, qgrun)
    assert r.exit_code != 0 and (code is None or r.exit_code == code), r.stderr
    assert "Traceback" not in r.stderr
    assert files(work) == before  # nothing new, nothing half-written, nothing changed


# ================================================================== 6. determinism

@pytest.mark.parametrize("engine", ["ref", "neural"])
def test_the_same_launch_gives_byte_identical_outputs_and_traces(qgrun, work, engine):
    runs = []
    for i in range(2):
        r = qgrun("k.qg", *MIX, "--engine", engine, "--trace", "full", "--out", f"out=o{i}.npy",
                  "--json", f"s{i}.json")
        assert r.exit_code == 0, r.stderr
        summary = json.loads(Path(f"s{i}.json").read_text())
        summary.pop("wall_time_s")  # the one field that measures the machine, not the launch
        trace = [ln for ln in r.stdout.splitlines() if "wall" not in ln and "steps/s" not in ln]
        runs.append((Path(f"o{i}.npy").read_bytes(), trace, summary))
    assert any("ATOM.ADD" in row for row in runs[0][1])  # the trace rows are compared, not just a summary
    assert runs[0] == runs[1]
    assert list(np.load("o0.npy")) == [-5, -6, -7, 27, 6]
