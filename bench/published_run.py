"""Published kernels, run: every output byte of qgcc's execution against g++ running the same text.

    python bench/published_run.py [--corpus /work/corpus] [--only SUBSTRING] [--from SUBSTRING]
                                  [--neural none|sample|all] [--max-net-steps N] [--jobs N] [--cache DIR]

For each corpus file that qgcc compiles and whose manifest entry has "runs" (launch specs taken
from the published host code, scaled to the machine; bench/published_spec.py), each run is
executed three ways and every buffer compared byte for byte (any NaN equals any NaN):

* the oracle: g++ on the file's own text with CUDA threads as coroutines (bench/published_oracle.py,
  on bench/fuzz/diffshim.py), run twice in opposite thread orders (a difference is a race in
  the published kernel: the run is reported, not compared);
* the emulator, through the user's path: `qgcc f.cu --no-link -o x.qg` + `qgrun x.qg --engine ref`
  (click's runner, in process);
* in the network: `qgcc f.cu -o x.qg` + `qgrun --engine neural` (the compiled C step on the CPU),
  compared with the emulator: with `--neural sample` (the default) the runs marked "neural" (a
  sample of small launches), with `--neural all` every runnable launch whose network step count
  (the emulator's step model, shown on each line) is at most --max-net-steps.  A launch too long
  for the network on the CPU may have a network-scale spec in bench/published_netscale.json (the
  same kernel and code path at a smaller size, as the manifest's specs scale the published host
  launches): that spec is then run by the oracle, the emulator and the network, and the network
  verdict is the scaled one's.  `--neural none` (or --no-neural) runs no network.

`--jobs N` checks N files at once in worker processes; the output is the same as with one, in
file order (each file's wall time goes to stderr).  `--from SUBSTRING` starts at the first file
whose path contains it.  Compiled programs are cached by the text of the file, its includes,
the options and qgcc's own source, oracles by their whole text, and each qgrun outcome by the
program's bytes, the launch, its inputs and the engine (--cache, default /tmp/qgpub-cache; ''
for none), so a rerun or a resumed run compiles and runs only what changed.  `--net-budget S`
stops starting network runs after S seconds of them in a process: later launches use the cached
network outcome when there is one and are otherwise reported (and counted) as not run.
`--alias-since COMMIT` also replays a network outcome cached (at or after COMMIT's time) for
another file of the same program identity (its content_hash and the source lines outcomes
quote: docs/qg-format.md), such as an earlier build's .qg whose header was in another order:
valid only where what runs a linked program is unchanged in effect since COMMIT, so the files
of that code changed since are printed for whoever passes it to review, and the replays counted.

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
import hashlib
import io
import json
import os
import shutil
import re
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, fields
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
            if not c.is_buffer:  # a scalar __constant__: its value is the spec's
                out.append(f"    {c.name} = {c_scalar(c)};")
                continue
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


def by_type(kernel: str, files: list) -> str:
    """`testKernel<uint8>` as qgrun can name it, `testKernel<unsigned char>`: a .qg keeps an
    instance by its types, not by the typedef the host code spelled it with (qgrun's error says
    so and names the fix; a user does what this does)."""
    m = re.fullmatch(r"(\w+)<(.*)>", kernel)
    if m is None:
        return kernel
    text = "\n".join(Path(f).read_text(encoding="latin-1") for f in files)
    named = dict((n, " ".join(t.split())) for t, n in re.findall(r"\btypedef\s+([A-Za-z_][\w ]*?)\s+(\w+)\s*;", text))
    args = []
    for a in (x.strip() for x in m.group(2).split(",")):
        seen = set()
        while a in named and a not in seen:
            seen.add(a)
            a = named[a]
        args.append(a)
    return f"{m.group(1)}<{', '.join(args)}>"


ASSERTED = "a device assert fails under the oracle"


@dataclass
class Side:
    """One execution's buffers, or why there are none."""
    bufs: dict[str, np.ndarray] | None
    why: str = ""
    printf: list[str] | None = None  # device printf, one string per call (None: not captured)
    warp_instructions: int | None = None
    network_steps: int | None = None  # the emulator's model of the network's steps (the network's own count)


def oracle_run(exe: Path, idx: int, run: Run, bufs: dict, consts: dict, work: Path) -> Side:
    blob = b"".join(bufs[a.name].tobytes() for a in run.args + run.textures if a.is_buffer)
    blob += b"".join(consts[c.name].tobytes() for c in run.consts if c.is_buffer)
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
    if r.returncode == 5:
        return Side(None, "a shuffle over a thread_block_tile wider than the oracle's 4-lane warp: it has no exchange across it")
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


CACHE: Path | None = None  # compiled programs by key (main's --cache); None: no cache


def tree_hash(root: Path, exts: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in exts):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


_QGCC_HASH: list[str] = []


def compile_key(corpus: Path, entry: dict, args: list[str]) -> str:
    """What a compile depends on: qgcc's source, the file with its includes, the options."""
    if not _QGCC_HASH:
        import qgcc
        _QGCC_HASH.append(tree_hash(Path(qgcc.__file__).parent, (".py", ".c", ".h", ".lark", ".json", ".cu")))
    h = hashlib.sha256(_QGCC_HASH[0].encode())
    for f in tu_files(corpus / entry["file"]):
        h.update(f.read_bytes())
    if (corpus / "include").is_dir():
        h.update(tree_hash(corpus / "include", (".h", ".hpp", ".cuh", ".cu", "")).encode())
    h.update(json.dumps(args).encode())
    return h.hexdigest()[:32]


def qgcc_compile(corpus: Path, entry: dict, out: Path, link: bool, extra: list[str] = ()) -> tuple[bool, str]:
    from qgcc.cli.qgcc_cmd import main as qgcc_main

    opts = [] if link else ["--no-link"]
    if (corpus / "include").is_dir():
        opts += ["-I", str(corpus / "include")]
    for d in entry.get("include", []):  # the published build's own -I (relative to the file), as bench/published.py
        opts += ["-I", str((corpus / entry["file"]).parent / d)]
    for inst in list(entry.get("instantiate", [])) + [i for i in extra if i not in entry.get("instantiate", [])]:
        opts += ["--instantiate", inst]
    args = [str(corpus / entry["file"]), "-o", str(out)] + opts
    if CACHE is None:
        return invoke(qgcc_main, args)
    key = compile_key(corpus, entry, [entry["file"]] + opts)
    qg, fail = CACHE / f"{key}.qg", CACHE / f"{key}.err"
    if qg.is_file():
        shutil.copyfile(qg, out)
        return True, ""
    if fail.is_file():
        return False, fail.read_text()
    ok, msg = invoke(qgcc_main, args)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = CACHE / f"{key}.{os.getpid()}.tmp"
    if ok:
        shutil.copyfile(out, tmp)
        os.replace(tmp, qg)
    elif not msg.startswith("exception"):  # a tool failure is not a verdict on the file: not cached
        tmp.write_text(msg)
        os.replace(tmp, fail)
    return ok, msg


def build_oracle(corpus: Path, src: Path, files: list[Path], text: str, work: Path, libm: str):
    """published_oracle.build, cached by everything the executable depends on."""
    include = [corpus / "include"]
    if CACHE is None:
        return build(src, files, text, work, include, libm)
    h = hashlib.sha256(text.encode() + libm.encode() + str(src).encode())
    for f in files:
        h.update(str(f).encode() + f.read_bytes())
    import published_oracle as po  # its texts as they are now (a test may patch them)

    h.update((po.PRELUDE + po.SHIM + po.EXTRA + po.HOST_LIBM + " ".join(po.GXX_FLAGS)).encode())
    for f in (HERE / "published_oracle.py", HERE / "fuzz" / "diffshim.py"):
        h.update(f.read_bytes())
    if (corpus / "include").is_dir():
        h.update(tree_hash(corpus / "include", (".h", ".hpp", ".cuh", ".cu", "")).encode())
    if libm != "host":  # the oracle is built on qgcc's math library text
        compile_key(corpus, {"file": str(src.relative_to(corpus))}, [])
        h.update(_QGCC_HASH[0].encode())
    cached = CACHE / f"oracle-{h.hexdigest()[:32]}"
    if cached.is_file():
        exe = work / "oracle"
        shutil.copyfile(cached, exe)
        exe.chmod(0o755)
        return exe, ""
    exe, err = build(src, files, text, work, include, libm)
    if exe is not None:
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = CACHE / f"oracle.{os.getpid()}.tmp"
        shutil.copyfile(exe, tmp)
        os.replace(tmp, cached)
    return exe, err


_LAST: dict = {}


def capture_stats() -> None:
    """Keep the last launch's instruction and network step counts (qgrun's --json has only the former)."""
    import qgcc.api as api

    if getattr(api.run_launch, "qgpub", False):
        return
    real = api.run_launch

    def run_launch(*a, **k):
        result, bufs = real(*a, **k)
        _LAST["warp_instructions"] = int(result.stats.warp_instructions)
        _LAST["network_steps"] = int(getattr(result, "network_steps", 0) or 0) or None
        return result, bufs

    run_launch.qgpub = True
    api.run_launch = run_launch


_PROGRAM_HASH: dict = {}
ALIAS_SINCE: list = [0.0]  # --alias-since as a time stamp (0: outcomes of other files' bytes are not used)
REPLAYED: list = [0]  # network outcomes this process took from a program of the same identity
NET_BUDGET: list = [None, 0.0]  # (--net-budget seconds or None, seconds this process has spent in the network)
NOT_RUN = "not run in the network: this process's --net-budget is spent"


def program_identity(data: bytes) -> str | None:
    """What a linked program runs as: its `content_hash` (code, kernels, constants, layers and the
    linker's metadata: docs/qg-format.md, "two files with the same hash run identically") and the
    annotations that outcomes quote (assert and fault messages show source lines).  None for a
    file without a content hash."""
    (n,) = struct.unpack("<Q", data[:8])
    meta = json.loads(data[8:8 + n]).get("__metadata__", {})
    if "content_hash" not in meta:
        return None
    shown = json.dumps([meta.get(k) for k in ("lines", "source", "source_name")]).encode()
    return "id:" + hashlib.sha256(meta["content_hash"].encode() + b"\0" + shown).hexdigest()


_ALIASES: dict[str, list[str]] = {}  # program identity -> sha256 of the bytes of every cached file that has it


def aliases(identity: str) -> list[str]:
    """The byte hashes of the cached compiled programs with this identity.  Network outcomes were
    once keyed by a file's bytes, and a .qg's bytes changed with every build (its header order was
    a hash map's until qgfile sorted it) even where the program did not: an outcome of a program
    with the same identity is the same computation, as long as the code that runs a linked program
    (RUNNER) has not changed in effect since, which whoever passes --alias-since reviews."""
    if not _ALIASES and CACHE is not None:
        index = CACHE / "identity-index.json"
        known = json.loads(index.read_text()) if index.is_file() else {}
        for f in sorted(CACHE.glob("*.qg")):
            if f.name not in known:
                data = f.read_bytes()
                known[f.name] = [hashlib.sha256(data).hexdigest(), program_identity(data)]
        tmp = CACHE / f"identity-index.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(known))
        os.replace(tmp, index)
        _ALIASES["built"] = []
        for raw, ident in known.values():
            if ident is not None:
                _ALIASES.setdefault(ident, []).append(raw)
    return _ALIASES.get(identity, [])


RUNNER = ("engines", "runtime", "cli/qgrun_cmd.py", "cli/qgrun_batch.py", "cli/args.py", "cli/jobs.py", "loader.py", "qgfile.py",
          "link/linker.py", "link/layout.py", "link/weights.py", "program.py", "inputs.py", "printfmt.py",
          "qwen35.py", "trace.py", "isa.py", "spec.py", "api.py")  # what `qgrun --engine neural` of a linked .qg runs


def runner_changed_since(commit: str) -> list[str]:
    """The files among RUNNER (under src/qgcc) that differ between COMMIT and the working tree."""
    paths = [str(HERE.parent / "src" / "qgcc" / r) for r in RUNNER]
    out = subprocess.run(["git", "-C", str(HERE.parent), "diff", "--name-only", commit, "--", *paths],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def run_key(program: Path, run: Run, bufs: dict, consts: dict, engine: str, program_hash: str | None = None) -> str:
    """What a launch's outcome depends on: the program (its bytes for the emulator, whose code
    changes between builds; its identity in the network), the launch, its inputs, the engine."""
    st = program.stat()
    pk = (str(program), st.st_size, st.st_mtime_ns)
    if pk not in _PROGRAM_HASH:
        _PROGRAM_HASH.clear()
        data = program.read_bytes()
        _PROGRAM_HASH[pk] = (hashlib.sha256(data).hexdigest(), program_identity(data))
    raw, ident = _PROGRAM_HASH[pk]
    if program_hash is None:
        program_hash = ident if engine == "neural" and ident is not None else raw
    qgname = getattr(run, "qgname", bare(run.kernel))
    named = "" if qgname == bare(run.kernel) else f"|{qgname}"  # keys of typedef-free runs unchanged
    h = hashlib.sha256(f"{program_hash}|{engine}|{run!r}{named}".encode())
    for k in sorted(bufs):
        h.update(k.encode() + bufs[k].tobytes())
    for k in sorted(consts):
        h.update(k.encode() + consts[k].tobytes())
    return h.hexdigest()[:32]


def qgrun(program: Path, run: Run, bufs: dict, consts: dict, engine: str, work: Path, tag: str) -> Side:
    """qgrun's outcome, kept in the cache by run_key: a rerun replays a launch it has already run."""
    import pickle

    path = CACHE / f"run-{run_key(program, run, bufs, consts, engine)}.pkl" if CACHE is not None else None
    if path is not None and path.is_file():
        return pickle.loads(path.read_bytes())
    if path is not None and engine == "neural" and ALIAS_SINCE[0]:
        ident = next(iter(_PROGRAM_HASH.values()))[1]
        for raw in aliases(ident) if ident else ():
            old = CACHE / f"run-{run_key(program, run, bufs, consts, engine, raw)}.pkl"
            if old.is_file() and old.stat().st_mtime >= ALIAS_SINCE[0]:
                side = pickle.loads(old.read_bytes())
                REPLAYED[0] += 1
                tmp = CACHE / f"run.{os.getpid()}.tmp"
                tmp.write_bytes(pickle.dumps(side))
                os.replace(tmp, path)
                return side
    if engine == "neural" and NET_BUDGET[0] is not None and NET_BUDGET[1] >= NET_BUDGET[0]:
        return Side(None, NOT_RUN)
    t0 = time.monotonic()
    side = qgrun_now(program, run, bufs, consts, engine, work, tag)
    if engine == "neural":
        NET_BUDGET[1] += time.monotonic() - t0
    if path is None:
        return side
    if not side.why.startswith("exception"):  # a tool failure is not an outcome
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = CACHE / f"run.{os.getpid()}.tmp"
        tmp.write_bytes(pickle.dumps(side))
        os.replace(tmp, path)
    return side


def qgrun_now(program: Path, run: Run, bufs: dict, consts: dict, engine: str, work: Path, tag: str) -> Side:
    from qgcc.cli.qgrun_cmd import main as qgrun_main

    args = [str(program), "--kernel", getattr(run, "qgname", bare(run.kernel)), "--grid", ",".join(map(str, run.grid)),
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
        if not c.is_buffer:
            args += ["--const", f"{c.name}={qgrun_scalar(c)}"]
            continue
        np.save(work / f"{tag}_c_{c.name}.npy", consts[c.name])
        args += ["--const", f"{c.name}=@{work / f'{tag}_c_{c.name}.npy'}"]
    args += ["--json", str(work / f"{tag}.json")]
    capture_stats()
    _LAST.clear()
    ok, msg = invoke(qgrun_main, args)
    if not ok:
        return Side(None, msg)
    summary = json.loads((work / f"{tag}.json").read_text())
    got = {a.name: flat(np.load(work / f"{tag}_o_{a.name}.npy"), a.dtype) for a in run.args if a.is_buffer}
    for k in run.unordered:
        got[k] = np.sort(got[k])
    return Side(got, printf=summary.get("printf", []), warp_instructions=_LAST.get("warp_instructions"),
                network_steps=_LAST.get("network_steps"))


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
    neural_scaled: int = 0  # of neural_exact: run at their network-scale spec
    neural_too_long: int = 0  # runnable launches over --max-net-steps with no network-scale spec
    neural_not_run: int = 0  # launches left out of the network when --net-budget was spent
    neural_replayed: int = 0  # network outcomes taken from an earlier build's identical program
    libm_runnable: int = 0
    libm_exact: int = 0
    mismatches: int = 0
    no_spec: int = 0
    cannot: int = 0

    def add(self, other: "Tally") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


NETSCALE = HERE / "published_netscale.json"


def with_scaled(specs: list[dict], index: list[int], scaled_specs: dict) -> tuple[list[Run], dict[int, int]]:
    """The runs of a file's specs (those not skipped; `index` their places in the manifest),
    followed by the network-scale runs of those that have one, and where each of those lies:
    {position of a run: position of its network-scale run}.  Positions seed the runs' inputs."""
    runs, scaled_at = [parse_run(s) for s in specs], {}
    for pos, i in enumerate(index):
        if str(i) in scaled_specs:
            over = {k: v for k, v in scaled_specs[str(i)].items() if k not in ("why", "max_net_steps")}
            scaled_at[pos] = len(runs)
            runs.append(parse_run({**specs[pos], **over}))
    return runs, scaled_at


def netscale() -> dict:
    """Network-scale specs: {file: {run index in the manifest: {spec keys to replace..., "why": ...}}}.

    An entry's "max_net_steps" raises --max-net-steps for it: a launch that cannot be made smaller
    without changing the kernel's code path (one block of a fixed shape) runs at its own length."""
    return json.loads(NETSCALE.read_text()) if NETSCALE.is_file() else {}


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


def steps_note(side: Side) -> str:
    if side.warp_instructions is None:
        return ""
    net = f", {side.network_steps:,} network steps" if side.network_steps else ""
    return f" [{side.warp_instructions:,} warp instructions{net}]"


@dataclass
class Options:
    neural: str = "sample"  # none | sample | all
    max_net_steps: int = 200_000


def check_file(corpus: Path, entry: dict, tally: Tally, opts: Options | bool, say) -> None:
    if isinstance(opts, bool):  # the older signature: neural sample or none
        opts = Options("sample" if opts else "none")
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
        index = [i for i, s in enumerate(specs) if "skip" not in s]  # each run's index in the manifest
        specs = [specs[i] for i in index]
        if not specs:
            return
        scaled_specs = netscale().get(name, {}) if opts.neural == "all" else {}
        try:
            runs, scaled_at = with_scaled(specs, index, scaled_specs)
        except (ValueError, KeyError) as e:
            tally.cannot += 1
            say(f"cannot run        {name}: bad spec: {e}")
            return
        src = corpus / name
        files = tu_files(src)
        file_libm = uses_libm(files)
        exe, err = build_oracle(corpus, src, files, launcher(runs), work, "qgcc" if file_libm else "host")
        if exe is None:
            tally.cannot += len(specs)
            say(f"cannot run        {name}: the oracle does not build: {err}")
            return
        ctx = FileCtx(corpus, entry, extra, work, exe, opts)
        for run in runs:
            run.qgname = by_type(bare(run.kernel), files)
        for i, run in enumerate(runs[:len(specs)]):
            over = scaled_specs.get(str(index[i]), {})
            check_run(ctx, i, run, runs[scaled_at[i]] if i in scaled_at else None, scaled_at.get(i),
                      over.get("why", ""), files, file_libm, tally, say, over.get("max_net_steps", 0))


@dataclass
class FileCtx:
    corpus: Path
    entry: dict
    extra: list
    work: Path
    exe: Path
    opts: Options
    linked: bool | None = None


def emulate(ctx: FileCtx, i: int, run: Run, tally: Tally, say, label: str):
    """The oracle and the emulator on run i: (the emulator's side, inputs) when they agree, else None."""
    name = ctx.entry["file"]
    bufs, consts = inputs(name, run, i)
    want = oracle_run(ctx.exe, i, run, bufs, consts, ctx.work)
    if want.why == ASSERTED:  # CUDA stops the launch: qgrun must report the assertion too
        got = qgrun(ctx.work / "k.qg", run, bufs, consts, "ref", ctx.work, f"r{i}")
        tally.runnable += 1
        if got.bufs is None and "Assertion" in got.why:
            tally.exact += 1
            net = ""
            if ctx.opts.neural == "all":  # the network must stop on it as well
                tally.neural_runs += 1
                ok, why = network_stops(ctx, i, run, bufs, consts)
                if not ok:
                    tally.mismatches += 1
                    say(f"MISMATCH          {label}: the oracle's assert fails, the network: {why}")
                    return None
                tally.neural_exact += 1
                net = ", network exact"
            say(f"{'exact' + net:<17} {label} (both stop on the failing assert: {got.why})")
        else:
            tally.mismatches += 1
            say(f"MISMATCH          {label}: the oracle's assert fails, the emulator: {got.why or 'ran on'}")
        return None
    if want.bufs is None:
        tally.cannot += 1
        say(f"cannot run        {label}: {want.why}")
        return None
    got = qgrun(ctx.work / "k.qg", run, bufs, consts, "ref", ctx.work, f"r{i}")
    if got.bufs is None:
        tally.mismatches += 1
        say(f"MISMATCH          {label}: the emulator failed: {got.why}")
        return None
    for k in run.ignore:
        want.bufs.pop(k, None)
        got.bufs.pop(k, None)
    diff = differences(want.bufs, got.bufs)
    if sorted(want.printf) != sorted(got.printf):  # CUDA leaves the order between threads open
        diff.append(f"printf: {printf_difference(want.printf, got.printf)}")
    if diff:
        tally.mismatches += 1
        say(f"MISMATCH          {label}: emulator vs g++: {'; '.join(diff)}")
        return None
    return got, want, bufs, consts


def link(ctx: FileCtx) -> str | None:
    """The linked program of the file (once per file): None when it is there, else why not."""
    if ctx.linked is None:
        ctx.linked, lmsg = qgcc_compile(ctx.corpus, ctx.entry, ctx.work / "n.qg", link=True, extra=ctx.extra)
        if not ctx.linked:
            ctx.linked = lmsg or "?"
    return None if ctx.linked is True else f"linking failed: {ctx.linked}"


def network_stops(ctx: FileCtx, i: int, run: Run, bufs: dict, consts: dict) -> tuple[bool, str]:
    """A launch whose assert fails: the network must stop with qgrun's assertion message."""
    bad = link(ctx)
    if bad:
        return False, bad
    net = qgrun(ctx.work / "n.qg", run, bufs, consts, "neural", ctx.work, f"n{i}")
    return net.bufs is None and "Assertion" in net.why, net.why or "ran on"


def network(ctx: FileCtx, i: int, run: Run, got: Side, bufs: dict, consts: dict) -> str | None:
    """The network on run i against the emulator's side: None when exact, else what differs."""
    bad = link(ctx)
    if bad:
        return bad
    net = qgrun(ctx.work / "n.qg", run, bufs, consts, "neural", ctx.work, f"n{i}")
    if net.why == NOT_RUN:
        return NOT_RUN
    if net.bufs is None:
        return f"the network failed: {net.why}"
    for k in run.ignore:
        net.bufs.pop(k, None)
    ndiff = differences(got.bufs, net.bufs)
    if got.printf != net.printf:
        ndiff.append(f"printf: {printf_difference(got.printf, net.printf)}")
    return f"network vs emulator: {'; '.join(ndiff)}" if ndiff else None


def network_failed(bad: str, tally: Tally, say, verdict: str, label: str, got: Side, where: str) -> bool:
    """Count and say a network run that did not end exact (its process's budget spent, or a
    mismatch at `where`); False when it was exact."""
    if bad == NOT_RUN:
        tally.neural_runs -= 1
        tally.neural_not_run += 1
        say(f"{verdict + ', not run in the network (--net-budget spent)':<17} {label}{steps_note(got)}")
        return True
    if bad:
        tally.mismatches += 1
        say(f"MISMATCH          {where}: {bad}")
        return True
    return False


def check_run(ctx: FileCtx, i: int, run: Run, scaled: Run | None, si: int | None, why: str,
              files: list[Path], file_libm: bool, tally: Tally, say, scaled_limit: int = 0) -> None:
    label = f"{ctx.entry['file']} {run.label}"
    libm = uses_libm(files, bare(run.kernel)) if file_libm else []
    res = emulate(ctx, i, run, tally, say, label)
    if res is None:
        return
    got, want, bufs, consts = res
    tally.runnable += 1
    tally.libm_runnable += bool(libm)
    tally.exact += 1
    tally.libm_exact += bool(libm)
    verdict = f"exact (libm-dependent: {', '.join(libm)}; vs qgcc's mathlib)" if libm else "exact"
    if want.printf:
        verdict += f", {len(want.printf)} printf lines equal"
    if all(equal_bits(want.bufs[k], flat(bufs[k], want.bufs[k].dtype.str)) for k in want.bufs):
        verdict += " (but the launch changed no buffer)"
    mode = ctx.opts.neural
    if mode == "sample" and run.neural or mode == "all" and scaled is None and (
            got.network_steps or 0) <= ctx.opts.max_net_steps:
        tally.neural_runs += 1
        if network_failed(network(ctx, i, run, got, bufs, consts), tally, say, verdict, label, got, label):
            return
        tally.neural_exact += 1
        verdict += ", network exact"
    elif mode == "all" and scaled is not None:
        slabel = f"{scaled.label} ({why})" if why else scaled.label
        sres = emulate(ctx, si, scaled, Tally(), say, f"{label} at network scale {slabel}")
        tally.neural_runs += 1
        if sres is None:  # said why; the scaled spec's own failure counts once, here
            tally.mismatches += 1
            return
        sgot, _, sbufs, sconsts = sres
        if (sgot.network_steps or 0) > max(ctx.opts.max_net_steps, scaled_limit):
            tally.neural_runs -= 1
            tally.neural_too_long += 1
            verdict += f", network-scale spec still too long ({sgot.network_steps:,} network steps)"
        else:
            if network_failed(network(ctx, si, scaled, sgot, sbufs, sconsts), tally, say, verdict, label, got,
                              f"{label} at network scale {scaled.label}"):
                return
            tally.neural_exact += 1
            tally.neural_scaled += 1
            verdict += f", network exact at {slabel}{steps_note(sgot)}"
    elif mode == "all":
        tally.neural_too_long += 1
        verdict += f", too long for the network here (over {ctx.opts.max_net_steps:,} steps)"
    say(f"{verdict:<17} {label}{steps_note(got)}")


def check_one(corpus: Path, entry: dict, opts: Options) -> tuple[list[str], Tally, float]:
    """One file, its lines and counts (a worker's unit)."""
    lines, tally, t0 = [], Tally(), time.monotonic()
    REPLAYED[0] = 0
    try:
        check_file(corpus, entry, tally, opts, lines.append)
    except Exception as ex:  # noqa: BLE001 - the tool reports and goes on
        tally.mismatches += 1
        lines.append(f"MISMATCH          {entry['file']}: the tool failed: {type(ex).__name__}: {ex}\n"
                     + traceback.format_exc())
    tally.neural_replayed = REPLAYED[0]
    return lines, tally, time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    global CACHE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="/work/corpus")
    ap.add_argument("--only", default="")
    ap.add_argument("--from", dest="start", default="", help="start at the first file whose path contains this")
    ap.add_argument("--neural", choices=("none", "sample", "all"), default="sample")
    ap.add_argument("--no-neural", action="store_true", help="the same as --neural none")
    ap.add_argument("--max-net-steps", type=int, default=200_000,
                    help="with --neural all: launches longer than this (network steps) are not run in the network")
    ap.add_argument("--jobs", type=int, default=1, help="files checked at once (worker processes)")
    ap.add_argument("--net-budget", type=float, default=None,
                    help="seconds of network runs per process; then only outcomes in the cache are used "
                         "and the others are reported as not run")
    ap.add_argument("--cache", default="/tmp/qgpub-cache", help="compiled programs ('' for none)")
    ap.add_argument("--alias-since", default="", metavar="COMMIT",
                    help="replay network outcomes of cached programs with the same identity as this build's, "
                         "run at or after COMMIT's time; valid only where the code that runs a linked "
                         "program is unchanged in effect since COMMIT: the files changed are printed, "
                         "for whoever passes it to have reviewed")
    a = ap.parse_args(argv)
    CACHE = Path(a.cache) if a.cache else None
    if a.alias_since:
        stamp = subprocess.run(["git", "-C", str(HERE), "show", "-s", "--format=%ct", a.alias_since],
                               capture_output=True, text=True)
        if stamp.returncode != 0:
            ap.error(f"--alias-since {a.alias_since}: not a commit of this repository ({stamp.stderr.strip().splitlines()[0] if stamp.stderr.strip() else 'git failed'})")
        changed = runner_changed_since(a.alias_since)
        print(f"--alias-since {a.alias_since}: files that run a linked program changed since: "
              f"{', '.join(changed) or 'none'}", file=sys.stderr)
        ALIAS_SINCE[0] = float(stamp.stdout)
        aliases("")  # the index, once, before the workers fork
    NET_BUDGET[0] = a.net_budget
    opts = Options("none" if a.no_neural else a.neural, a.max_net_steps)
    corpus = Path(a.corpus)
    entries = [e for e in json.loads((corpus / "manifest.json").read_text()) if a.only in e["file"]]
    if a.start:
        first = next((k for k, e in enumerate(entries) if a.start in e["file"]), None)
        if first is None:
            ap.error(f"--from {a.start}: no file of the manifest contains it")
        entries = entries[first:]
    tally, t0 = Tally(), time.monotonic()

    def report(e: dict, lines: list[str], t: Tally, secs: float) -> None:
        for ln in lines:
            print(ln, flush=True)
        tally.add(t)
        print(f"[{secs:7.1f} s] {e['file']}", file=sys.stderr, flush=True)

    if a.jobs <= 1:
        for e in entries:
            report(e, *check_one(corpus, e, opts))
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(a.jobs, mp_context=mp.get_context("fork")) as pool:
            futures = [pool.submit(check_one, corpus, e, opts) for e in entries]
            for e, f in zip(entries, futures):
                report(e, *f.result())
    t = tally
    print(f"\nlibm-dependent (checked against qgcc's own math library, not independently): "
          f"{t.libm_runnable} runnable, {t.libm_exact} exact")
    print(f"no spec: {t.no_spec} files; cannot run: {t.cannot}")
    if opts.neural == "all":
        print(f"network: {t.neural_exact} exact of {t.neural_runs} run ({t.neural_scaled} at a network-scale spec); "
              f"{t.neural_too_long} runnable launches too long for the network here"
              + (f"; {t.neural_not_run} not run (--net-budget spent)" if t.neural_not_run else ""))
        if ALIAS_SINCE[0]:
            print(f"network outcomes replayed by program identity from runs since {a.alias_since} (--alias-since): "
                  f"{t.neural_replayed}")
    print(f"wall time {time.monotonic() - t0:.0f} s", file=sys.stderr)
    print(f"{t.runnable} runnable, {t.exact} exact on the emulator, {t.neural_exact} exact in the network "
          f"(of {t.neural_runs}), {t.mismatches} mismatches")
    return 0 if t.mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
