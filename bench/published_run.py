"""Published kernels, run: every output byte of qgcc's execution against g++ running the same text.

    python bench/published_run.py [--corpus /work/corpus] [--only SUBSTRING] [--no-neural] [--verbose]

For each corpus file that qgcc compiles and whose manifest entry has "runs" (launch specs taken
from the published host code, scaled to the machine; bench/published_spec.py), each run is
executed three ways and every buffer compared byte for byte (any NaN equals any NaN):

* the oracle: g++ on the file's own text with CUDA threads as coroutines (bench/published_oracle.py,
  on bench/fuzz/diffshim.py), run twice in opposite thread orders (a difference is a race in
  the published kernel: the run is reported, not compared);
* the emulator, through the user's path: `qgcc f.cu --no-link -o x.qg` + `qgrun x.qg --engine ref`
  (click's runner, in process);
* for runs marked "neural" (a sample of small launches): `qgcc f.cu -o x.qg` + `qgrun --engine
  neural`, compared with the emulator.

Kernels calling approximate math functions (expf, __logf, sinf, ...) are "libm-dependent": no
independent library computes qgcc's bits, so their oracle is built on qgcc's own math library
text instead and they are reported and counted apart.
The last line: `N runnable, E exact on the emulator, K exact in the network, M mismatches`
(libm-dependent runs are in N and E only through their own figures on the line before); exit 0
only when M is 0.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "fuzz"))

from diffshim import equal_bits  # noqa: E402
from published_oracle import build, uses_libm  # noqa: E402
from published_spec import Run, c_scalar, inputs, parse_run, qgrun_scalar  # noqa: E402


# ------------------------------------------------------------------ the oracle's launcher

def launcher(runs: list[Run]) -> str:
    """main(argc, argv): run argv[1] reads its inputs from argv[2], writes status and buffers, twice."""
    out = []
    for i, r in enumerate(runs):
        ns = f"qgr{i}"
        out.append(f"namespace {ns} {{")
        for a in r.args + r.consts:
            if a.lanes:  # the spec's member list must be the type's layout
                out.append(f"static_assert(sizeof({a.ctype}) == {a.np_dtype.itemsize}, \"{a.name}: the spec's members "
                           f"are not {a.ctype}'s layout\");")
        for a in r.args + r.textures:
            if a.is_buffer:
                out.append(f"static {a.ctype} *b_{a.name};")
        objs = [a.name for a in r.args if a.texobj]  # texture objects: handles into the shim's table
        params = [f"b_{a.name}" if a.is_buffer else f"(cudaTextureObject_t){objs.index(a.name)}" if a.texobj
                  else c_scalar(a) for a in r.args]
        out.append(f"static void body() {{ {r.kernel}({', '.join(params)}); }}")
        out.append("static void run(FILE *in, int reverse) {")
        out.append("    rewind(in);")
        for a in r.args:
            if a.is_buffer:
                out.append(f"    if (!b_{a.name}) b_{a.name} = new {a.ctype}[{a.count} + 1]();")
                out.append(f"    if (fread(b_{a.name}, sizeof({a.ctype}), {a.count}, in) != {a.count}) __builtin_trap();")
        for t in r.textures:  # after the buffers in the input file, as inputs() draws them
            out.append(f"    if (!b_{t.name}) b_{t.name} = new {t.ctype}[{t.count} + 1]();")
            out.append(f"    if (fread(b_{t.name}, sizeof({t.ctype}), {t.count}, in) != {t.count}) __builtin_trap();")
            h, w = t.shape or (1, t.count)
            if t.name in objs:
                out.append(f"    qg_texobjs[{objs.index(t.name)}] = {{b_{t.name}, {w}, {h}}};")
            else:
                out.append(f"    {t.name}.qg_bind(b_{t.name}, {w}, {h});")
        for c in r.consts:
            out.append(f"    if (fread((void *)&{c.name}, {c.np_dtype.itemsize}, {c.count}, in) != {c.count}) __builtin_trap();")
        out.append("    qg_printf_reset();")
        gx, gy, gz = r.grid
        bx, by, bz = r.block
        out.append(f"    int status = 0; gridDim = {{{gx}u, {gy}u, {gz}u}}; blockDim = {{{bx}u, {by}u, {bz}u}};")
        out.append(f"    qg_nthreads = {bx * by * bz}; qg_body = body;")
        out.append(f"    for (unsigned z = 0; z < {gz}u && !status; z++) for (unsigned y = 0; y < {gy}u && !status; y++)"
                   f" for (unsigned x = 0; x < {gx}u && !status; x++) {{ blockIdx = {{x, y, z}}; "
                   f"status = qg_run_block(reverse); }}")
        out.append("    qg_dump(&status, 4);")
        for a in r.args:
            if a.is_buffer:
                out.append(f"    qg_dump(b_{a.name}, {a.count} * sizeof({a.ctype}));")
        out.append("    qg_printf_dump();")
        out.append("}\n}")
    out.append("int main(int argc, char **argv) {\n    FILE *in = fopen(argv[2], \"rb\"); int k = 0;\n    for (const char *c = argv[1]; *c; c++) k = 10 * k + (*c - '0');")
    for i in range(len(runs)):
        out.append(f"    if (k == {i}) {{ qgr{i}::run(in, 0); qgr{i}::run(in, 1); }}")
    out.append("    return 0;\n}")
    return "\n".join(out) + "\n"


def bare(kernel: str) -> str:
    """A kernel named with its namespace (`dwt_cuda::fdwt53Kernel<64, 8>`, as the oracle's C++ calls it)
    as qgcc names it: namespaces are the file's (docs/subset.md)."""
    return re.sub(r"^(\w+::)+", "", kernel)


ASSERTED = "a device assert fails under the oracle"


@dataclass
class Side:
    """One execution's buffers, or why there are none."""
    bufs: dict[str, np.ndarray] | None
    why: str = ""
    printf: list[str] | None = None  # device printf, one string per call (None: not captured)


def oracle_run(exe: Path, idx: int, run: Run, bufs: dict, consts: dict, work: Path) -> Side:
    blob = b"".join(bufs[a.name].tobytes() for a in run.args + run.textures if a.is_buffer)
    blob += b"".join(consts[c.name].tobytes() for c in run.consts)
    inp = work / f"in{idx}.bin"
    inp.write_bytes(blob)
    try:
        r = subprocess.run([str(exe), str(idx), str(inp)], capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        return Side(None, "the g++ oracle ran over 300 s")
    if r.returncode == 3:
        return Side(None, "grid.sync(): the oracle runs blocks one after another, a grid-wide barrier cannot hold")
    if r.returncode == 4:
        return Side(None, ASSERTED)
    if r.returncode != 0:
        return Side(None, f"the g++ oracle failed (exit {r.returncode})")
    size = 4 + sum(a.count * a.np_dtype.itemsize for a in run.args if a.is_buffer)
    runs, prints, pos, out = [], [], 0, r.stdout
    for _ in range(2):
        if len(out) < pos + size + 4:
            return Side(None, "the g++ oracle wrote a short output")
        status = int.from_bytes(out[pos:pos + 4], "little", signed=True)
        if status:
            return Side(None, "the kernel deadlocks under the oracle (a barrier not reached by all threads)")
        pos, got = pos + 4, {}
        for a in run.args:
            if a.is_buffer:
                n = a.count * a.np_dtype.itemsize
                got[a.name] = np.frombuffer(out[pos:pos + n], a.dtype).copy()  # vector types: flat
                pos += n
        lines, pos = printf_records(out, pos)
        runs.append(got)
        prints.append(lines)
    for got in runs:  # slots handed out by atomics: their order is open in CUDA, their contents are not
        for k in run.unordered:
            got[k] = np.sort(got[k])
    if any(not equal_bits(runs[0][k], runs[1][k]) for k in runs[0]):
        bad = [k for k in runs[0] if not equal_bits(runs[0][k], runs[1][k])]
        return Side(None, f"the result depends on thread order (a race in the kernel as run: {', '.join(bad)})")
    if sorted(prints[0]) != sorted(prints[1]):
        return Side(None, "the printf output depends on thread order (a race in the kernel as run)")
    return Side(runs[0], printf=prints[0])


def printf_records(out: bytes, pos: int) -> tuple[list[str], int]:
    """The oracle's printf calls: a count, then each call's text with its length."""
    n, pos, lines = int.from_bytes(out[pos:pos + 4], "little"), pos + 4, []
    for _ in range(n):
        k = int.from_bytes(out[pos:pos + 4], "little")
        lines.append(out[pos + 4:pos + 4 + k].decode(errors="replace"))
        pos += 4 + k
    return lines, pos


# ------------------------------------------------------------------ qgcc's side, through its CLIs

def invoke(main, args: list[str]) -> tuple[bool, str]:
    from click.testing import CliRunner

    with contextlib.redirect_stderr(io.StringIO()):
        r = CliRunner().invoke(main, args, catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        return False, f"exception {type(r.exception).__name__}: {r.exception}"
    if r.exit_code != 0:
        lines = [ln for ln in r.output.splitlines() if "error" in ln] or r.output.strip().splitlines() or ["?"]
        return False, lines[0].strip()
    return True, r.output


def qgcc_compile(corpus: Path, entry: dict, out: Path, link: bool, extra: list[str] = ()) -> tuple[bool, str]:
    from qgcc.cli.qgcc_cmd import main as qgcc_main

    args = [str(corpus / entry["file"]), "-o", str(out)] + ([] if link else ["--no-link"])
    if (corpus / "include").is_dir():
        args += ["-I", str(corpus / "include")]
    for inst in list(entry.get("instantiate", [])) + [i for i in extra if i not in entry.get("instantiate", [])]:
        args += ["--instantiate", inst]
    return invoke(qgcc_main, args)


def qgrun(program: Path, run: Run, bufs: dict, consts: dict, engine: str, work: Path, tag: str) -> Side:
    from qgcc.cli.qgrun_cmd import main as qgrun_main

    args = [str(program), "--kernel", bare(run.kernel), "--grid", ",".join(map(str, run.grid)),
            "--block", ",".join(map(str, run.block)), "--engine", engine, "--trace", "none",
            "--max-steps", "20000000"]
    if run.shared:
        args += ["--shared", str(run.shared)]
    for a in run.args:
        if a.is_buffer:
            np.save(work / f"{tag}_{a.name}.npy", bufs[a.name])
            args += ["--arg", f"{a.name}=@{work / f'{tag}_{a.name}.npy'}",
                     "--out", f"{a.name}={work / f'{tag}_o_{a.name}.npy'}"]
        elif not a.texobj:  # a texture object is bound with the textures below
            args += ["--arg", f"{a.name}={qgrun_scalar(a)}"]
    for t in run.textures:  # bound by name; a 2-D texture's array is (rows, columns)
        np.save(work / f"{tag}_t_{t.name}.npy", bufs[t.name].reshape(t.shape) if t.shape else bufs[t.name])
        args += ["--arg", f"{t.name}=@{work / f'{tag}_t_{t.name}.npy'}"]
    for c in run.consts:
        np.save(work / f"{tag}_c_{c.name}.npy", consts[c.name])
        args += ["--const", f"{c.name}=@{work / f'{tag}_c_{c.name}.npy'}"]
    args += ["--json", str(work / f"{tag}.json")]
    ok, msg = invoke(qgrun_main, args)
    if not ok:
        return Side(None, msg)
    summary = json.loads((work / f"{tag}.json").read_text())
    got = {a.name: flat(np.load(work / f"{tag}_o_{a.name}.npy"), a.dtype) for a in run.args if a.is_buffer}
    for k in run.unordered:
        got[k] = np.sort(got[k])
    return Side(got, printf=summary.get("printf", []))


def flat(arr: np.ndarray, dtype: str) -> np.ndarray:
    """The buffer as one array of its scalars (a vector type's components in memory order)."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.names:
        arr = np.stack([arr[f] for f in arr.dtype.names], axis=-1)
    return arr.reshape(-1).view(dtype) if arr.dtype.itemsize == np.dtype(dtype).itemsize else arr.reshape(-1)


def differences(want: dict, have: dict) -> list[str]:
    out = []
    for k, w in want.items():
        h = have[k]
        if h.dtype != w.dtype or h.shape != w.shape:
            out.append(f"{k}: shape/type {h.dtype}{h.shape} vs {w.dtype}{w.shape}")
            continue
        if not equal_bits(w, h):
            bad = [i for i in range(len(w)) if not equal_bits(w[i:i + 1], h[i:i + 1])]
            out.append(f"{k}[{bad[0]}]: want {w[bad[0]]!r} got {h[bad[0]]!r} ({len(bad)} of {len(w)} differ)")
    return out


def printf_difference(want: list[str], have: list[str]) -> str:
    """The first printf line one side has and the other lacks (as multisets: the order between threads is open)."""
    from collections import Counter

    a, b = Counter(want), Counter(have)
    extra, missing = list((b - a).elements()), list((a - b).elements())
    return (f"{len(want)} vs {len(have)} lines; missing {missing[:1]!r}, unexpected {extra[:1]!r}"
            if extra or missing else "same lines, other order")


# ------------------------------------------------------------------ one file

@dataclass
class Tally:
    runnable: int = 0
    exact: int = 0
    neural_runs: int = 0
    neural_exact: int = 0
    libm_runnable: int = 0
    libm_exact: int = 0
    mismatches: int = 0
    no_spec: int = 0
    cannot: int = 0


def tu_files(src: Path) -> list[Path]:
    """The file and the local headers it includes (transitively): where libm calls may hide."""
    seen, todo = [], [src]
    while todo:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.append(f)
        for inc in re.findall(r'#\s*include\s*"([^"]+)"', f.read_text(errors="replace")):
            todo.append((f.parent / inc).resolve())
    return seen


def check_file(corpus: Path, entry: dict, tally: Tally, neural: bool, say) -> None:
    name = entry["file"]
    specs = entry.get("runs", [])
    with tempfile.TemporaryDirectory(prefix="qgpub") as d:
        work = Path(d)
        # kernel-template instances a run launches beyond those the file's compile names
        extra = [i for sp in specs for i in sp.get("instantiate", [])]
        ok, msg = qgcc_compile(corpus, entry, work / "k.qg", link=False, extra=extra)
        if not ok:
            say(f"does not compile  {name}: {msg}")
            return
        if not specs:
            tally.no_spec += 1
            say(f"no spec           {name}")
            return
        skips = [s["skip"] for s in specs if "skip" in s]
        for why in skips:
            tally.cannot += 1
            say(f"cannot run        {name}: {why}")
        specs = [s for s in specs if "skip" not in s]
        if not specs:
            return
        try:
            runs = [parse_run(s) for s in specs]
        except (ValueError, KeyError) as e:
            tally.cannot += 1
            say(f"cannot run        {name}: bad spec: {e}")
            return
        src = corpus / name
        files = tu_files(src)
        file_libm = uses_libm(files)
        exe, err = build(src, files, launcher(runs), work, [corpus / "include"], "qgcc" if file_libm else "host")
        if exe is None:
            tally.cannot += len(runs)
            say(f"cannot run        {name}: the oracle does not build: {err}")
            return
        linked = None
        for i, run in enumerate(runs):
            label = f"{name} {run.label}"
            libm = uses_libm(files, bare(run.kernel)) if file_libm else []
            bufs, consts = inputs(name, run, i)
            want = oracle_run(exe, i, run, bufs, consts, work)
            if want.why == ASSERTED:  # CUDA stops the launch: qgrun must report the assertion too
                got = qgrun(work / "k.qg", run, bufs, consts, "ref", work, f"r{i}")
                tally.runnable += 1
                if got.bufs is None and "Assertion" in got.why:
                    tally.exact += 1
                    say(f"{'exact':<17} {label} (both stop on the failing assert: {got.why})")
                else:
                    tally.mismatches += 1
                    say(f"MISMATCH          {label}: the oracle's assert fails, the emulator: {got.why or 'ran on'}")
                continue
            if want.bufs is None:
                tally.cannot += 1
                say(f"cannot run        {label}: {want.why}")
                continue
            got = qgrun(work / "k.qg", run, bufs, consts, "ref", work, f"r{i}")
            if got.bufs is None:
                tally.mismatches += 1
                say(f"MISMATCH          {label}: the emulator failed: {got.why}")
                continue
            tally.runnable += 1
            tally.libm_runnable += bool(libm)
            for k in run.ignore:
                want.bufs.pop(k, None)
                got.bufs.pop(k, None)
            diff = differences(want.bufs, got.bufs)
            if sorted(want.printf) != sorted(got.printf):  # CUDA leaves the order between threads open
                diff.append(f"printf: {printf_difference(want.printf, got.printf)}")
            if diff:
                tally.mismatches += 1
                say(f"MISMATCH          {label}: emulator vs g++: {'; '.join(diff)}")
                continue
            tally.exact += 1
            tally.libm_exact += bool(libm)
            if want.printf:
                verdict_printf = f", {len(want.printf)} printf lines equal"
            else:
                verdict_printf = ""
            verdict = f"exact (libm-dependent: {', '.join(libm)}; vs qgcc's mathlib)" if libm else "exact"
            verdict += verdict_printf
            if all(equal_bits(want.bufs[k], flat(bufs[k], want.bufs[k].dtype.str)) for k in want.bufs):
                verdict += " (but the launch changed no buffer)"
            if neural and run.neural:
                if linked is None:
                    linked, lmsg = qgcc_compile(corpus, entry, work / "n.qg", link=True, extra=extra)
                    if not linked:
                        tally.mismatches += 1
                        say(f"MISMATCH          {label}: linking failed: {lmsg}")
                        continue
                tally.neural_runs += 1
                net = qgrun(work / "n.qg", run, bufs, consts, "neural", work, f"n{i}")
                if net.bufs is None:
                    tally.mismatches += 1
                    say(f"MISMATCH          {label}: the network failed: {net.why}")
                    continue
                ndiff = differences(got.bufs, net.bufs)
                if got.printf != net.printf:
                    ndiff.append(f"printf: {printf_difference(got.printf, net.printf)}")
                if ndiff:
                    tally.mismatches += 1
                    say(f"MISMATCH          {label}: network vs emulator: {'; '.join(ndiff)}")
                    continue
                tally.neural_exact += 1
                verdict += ", network exact"
            say(f"{verdict:<17} {label}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="/work/corpus")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-neural", action="store_true", help="skip the network sample")
    a = ap.parse_args(argv)
    corpus = Path(a.corpus)
    entries = [e for e in json.loads((corpus / "manifest.json").read_text()) if a.only in e["file"]]
    tally = Tally()
    for e in entries:
        try:
            check_file(corpus, e, tally, not a.no_neural, lambda s: print(s, flush=True))
        except Exception as ex:  # noqa: BLE001 - the tool reports and goes on
            tally.mismatches += 1
            print(f"MISMATCH          {e['file']}: the tool failed: {type(ex).__name__}: {ex}\n"
                  + traceback.format_exc(), flush=True)
    t = tally
    print(f"\nlibm-dependent (checked against qgcc's own math library, not independently): "
          f"{t.libm_runnable} runnable, {t.libm_exact} exact")
    print(f"no spec: {t.no_spec} files; cannot run: {t.cannot}")
    print(f"{t.runnable} runnable, {t.exact} exact on the emulator, {t.neural_exact} exact in the network "
          f"(of {t.neural_runs}), {t.mismatches} mismatches")
    return 0 if t.mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
