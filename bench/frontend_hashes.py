"""Byte-identity check for front-end refactors: record every program the tests compile, then hash
what the compiler makes of each, before and after a change.

A refactor of `qgcc.frontend` must not change one instruction of any program.  The tests alone do
not show that (most check results, not the code), so this script keeps a corpus of compiler inputs
and compares the sha256 of each one's disassembled `.qsass` (or the exact error text of a failing
compile) between two versions of the tree.

    # 1. record: run frontend-heavy test files with the recorder plugin (appends to the corpus)
    QG_FRONT_CORPUS=/tmp/front-corpus PYTHONPATH=src:bench python -m pytest -q -p frontend_hashes \\
        tests/test_frontend_codegen.py tests/test_structs.py ...
    # 2. add the samples (plain and --soft-float) and one kernel per routine of the .cu libraries,
    #    the differential fuzzer's programs of some seeds, the published-CUDA corpus's files
    PYTHONPATH=src python bench/frontend_hashes.py extras /tmp/front-corpus
    PYTHONPATH=src python bench/frontend_hashes.py fuzz /tmp/front-corpus --seed 777 --count 200
    PYTHONPATH=src python bench/frontend_hashes.py published /tmp/front-corpus [--from /work/corpus]
    # 3. hash the corpus with the tree on PYTHONPATH; compare with an earlier hash file
    PYTHONPATH=src python bench/frontend_hashes.py hash /tmp/front-corpus -o before.json
    PYTHONPATH=src python bench/frontend_hashes.py hash /tmp/front-corpus --compare before.json [--times T.json]

The recorder also saves every file the preprocessor opened (#include), and `hash` writes them back
at their original paths first, so kernels whose headers lived in a test's tmp_path still compile.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ENV = "QG_FRONT_CORPUS"
ROOT = Path(__file__).resolve().parents[1]


def _entry_key(e: dict) -> str:
    blob = json.dumps([e["source"], e["filename"], e["include_dirs"], e["defines"], e["soft_float"],
                       e["instantiate"], sorted(e["files"].items())], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _write_entry(corpus: Path, e: dict) -> None:
    corpus.mkdir(parents=True, exist_ok=True)
    key = _entry_key(e)
    path = corpus / f"{key}.json"
    if not path.exists():
        tmp = corpus / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(e))
        os.replace(tmp, path)


# ---- recorder: a pytest plugin (-p frontend_hashes with bench/ on PYTHONPATH) -------------------

def _install_recorder(corpus: Path) -> None:
    import builtins

    import qgcc.frontend as F
    import qgcc.frontend.preprocess as PP

    real_compile = F.compile_source
    opened: list[dict] = []

    def recording_open(path, *a, **k):
        f = builtins.open(path, *a, **k)
        if opened:
            try:
                opened[-1][os.path.abspath(path)] = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                pass
        return f

    def compile_source(source, filename="<input>", include_dirs=(), defines=(), soft_float=False,
                       instantiate=()):
        opened.append({})
        try:
            return real_compile(source, filename, include_dirs, defines, soft_float, instantiate)
        finally:
            files = opened.pop()
            try:
                _write_entry(corpus, {"source": source, "filename": filename,
                                      "include_dirs": [os.path.abspath(d) for d in include_dirs],
                                      "defines": list(defines), "soft_float": bool(soft_float),
                                      "instantiate": list(instantiate), "files": files,
                                      "cwd": os.getcwd()})
            except Exception as exc:  # never disturb the test being recorded
                print(f"frontend_hashes: not recorded: {exc}", file=sys.stderr)

    PP.open = recording_open
    F.compile_source = compile_source


def pytest_configure(config):  # noqa: D103 - pytest hook
    corpus = os.environ.get(ENV)
    if corpus:
        _install_recorder(Path(corpus))


# ---- extras: samples and the routine libraries ------------------------------------------------------

def _library_kernels() -> list[tuple[str, str]]:
    """One kernel per function of the .cu libraries, calling it on values loaded from memory, so
    every routine is compiled at least once: the library text itself is the program (user code may
    not name the library's __qg_ routines), so its functions go through sema and codegen as user
    device functions, and the routines they call in turn (soft-float, double) are linked."""
    from qgcc.frontend.softfloat import SOURCES, library
    lib = "\n".join(p.read_text() for p in SOURCES)
    out = []
    for name, fs in sorted(library().items()):
        if fs.template or fs.method_of or any(r for r in fs.param_refs):
            continue
        params = [f"{t} *p{i}" for i, t in enumerate(fs.param_types)]
        args = ", ".join(f"p{i}[threadIdx.x]" for i in range(len(fs.param_types)))
        if str(fs.ret) == "void":
            body = f"{name}({args});"
        else:
            params.append(f"{fs.ret} *out")
            body = f"out[threadIdx.x] = {name}({args});"
        out.append((f"lib_{name}.cu", lib + f"\n__global__ void k({', '.join(params)}) {{ {body} }}\n"))
    return out


def add_extras(corpus: Path) -> int:
    n = 0
    for cu in sorted((ROOT / "samples").glob("*.cu")):
        for soft in (False, True):
            _write_entry(corpus, {"source": cu.read_text(), "filename": f"samples/{cu.name}", "include_dirs": [],
                                  "defines": [], "soft_float": soft, "instantiate": [], "files": {},
                                  "cwd": str(ROOT)})
            n += 1
    for fname, src in _library_kernels():
        for soft in (False, True):
            _write_entry(corpus, {"source": src, "filename": fname, "include_dirs": [], "defines": [],
                                  "soft_float": soft, "instantiate": [], "files": {}, "cwd": str(ROOT)})
            n += 1
    return n


def add_fuzz(corpus: Path, seed: int, count: int) -> int:
    """The differential fuzzer's programs (bench/fuzz/diffgen.py) of seeds seed..seed+count-1."""
    sys.path.insert(0, str(ROOT / "bench" / "fuzz"))
    from diffgen import generate
    for s in range(seed, seed + count):
        _write_entry(corpus, {"source": generate(s).source, "filename": "fuzz.cu", "include_dirs": [], "defines": [],
                              "soft_float": False, "instantiate": [], "files": {}, "cwd": str(ROOT)})
    return count


def add_published(corpus: Path, pub: Path) -> int:
    """Every file of the published-CUDA corpus (bench/published.py), as `qgcc` compiles it: its
    -I directories and template instances.  The entries hold the corpus's text: keep them outside
    the repository."""
    n = 0
    for e in json.loads((pub / "manifest.json").read_text()):
        f = pub / e["file"]
        inc = ([str(pub / "include")] if (pub / "include").is_dir() else []) + [str(f.parent / d) for d in
                                                                               e.get("include", [])]
        _write_entry(corpus, {"source": f.read_text(encoding="utf-8"), "filename": str(f), "include_dirs": inc,
                              "defines": [], "soft_float": False, "instantiate": list(e.get("instantiate", [])),
                              "files": {}, "cwd": str(ROOT)})
        n += 1
    return n


# ---- hash ---------------------------------------------------------------------------------------

def hash_corpus(corpus: Path, times: dict[str, float] | None = None) -> dict[str, str]:
    """Each entry's hash; `times`, if given, gets each entry's compile CPU seconds."""
    import time
    from qgcc.asm import disassemble
    from qgcc.diagnostics import CompileError
    from qgcc.frontend import compile_source

    entries = sorted(corpus.glob("*.json"))
    # Restore every header the recorded compiles read, at its original path.
    for p in entries:
        e = json.loads(p.read_text())
        for fpath, text in e["files"].items():
            fp = Path(fpath)
            if not fp.exists() or fp.read_text(encoding="utf-8") != text:
                fp.parent.mkdir(parents=True, exist_ok=True)
                fp.write_text(text, encoding="utf-8")
    out = {}
    here = os.getcwd()
    for p in entries:
        e = json.loads(p.read_text())
        for d in e["include_dirs"]:
            Path(d).mkdir(parents=True, exist_ok=True)
        t0 = time.process_time()
        try:
            os.chdir(e["cwd"] if os.path.isdir(e["cwd"]) else here)
            prog = compile_source(e["source"], e["filename"], e["include_dirs"], e["defines"], e["soft_float"],
                                  e["instantiate"])
            try:
                text = disassemble(prog)
            except ValueError as exc:  # a Program the .qsass form cannot express (checked by the tests)
                text = f"not disassemblable: {exc}"
            # The .qsass text, and the Program's own fields (stricter: every instruction's source line).
            text += "\n" + repr((prog.code, prog.kernels, prog.constants, prog.source_lines, prog.source_name))
            out[p.stem] = "ok " + hashlib.sha256(text.encode()).hexdigest()
        except CompileError as exc:
            out[p.stem] = "error " + str(exc)
        finally:
            os.chdir(here)
            if times is not None:
                times[p.stem] = time.process_time() - t0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    x = sub.add_parser("extras", help="add samples and routine-library kernels to the corpus")
    x.add_argument("corpus", type=Path)
    f = sub.add_parser("fuzz", help="add the differential fuzzer's programs of some seeds to the corpus")
    f.add_argument("corpus", type=Path)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--count", type=int, default=200)
    pb = sub.add_parser("published", help="add the published-CUDA corpus's files to the corpus")
    pb.add_argument("corpus", type=Path)
    pb.add_argument("--from", dest="pub", type=Path, default=Path("/work/corpus"))
    h = sub.add_parser("hash", help="compile the corpus and hash each result")
    h.add_argument("corpus", type=Path)
    h.add_argument("-o", "--out", type=Path)
    h.add_argument("--compare", type=Path)
    h.add_argument("--times", type=Path, help="write each entry's compile CPU seconds (and filename) here")
    a = ap.parse_args(argv)
    if a.cmd == "extras":
        print(f"{add_extras(a.corpus)} extra programs; corpus has {len(list(a.corpus.glob('*.json')))}")
        return 0
    if a.cmd in ("fuzz", "published"):
        n = add_fuzz(a.corpus, a.seed, a.count) if a.cmd == "fuzz" else add_published(a.corpus, a.pub)
        print(f"{n} {a.cmd} programs; corpus has {len(list(a.corpus.glob('*.json')))}")
        return 0
    import time
    t0 = time.process_time()
    times: dict[str, float] = {}
    got = hash_corpus(a.corpus, times)
    if a.times:
        names = {k: json.loads((a.corpus / f"{k}.json").read_text())["filename"] for k in times}
        a.times.write_text(json.dumps({k: [names[k], round(t, 3)] for k, t in times.items()}, indent=0))
    ok = sum(v.startswith("ok ") for v in got.values())
    print(f"{len(got)} programs hashed ({ok} compiled, {len(got) - ok} compile errors); "
          f"{time.process_time() - t0:.1f} CPU s")
    if a.out:
        a.out.write_text(json.dumps(got, indent=0, sort_keys=True))
    if a.compare:
        want = json.loads(a.compare.read_text())
        diff = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
        for k in diff[:20]:
            print(f"DIFFERS {k}: before {want.get(k, '-')[:100]!r} after {got.get(k, '-')[:100]!r}")
        print(f"{len(set(want) & set(got))} compared, {len(diff)} differ")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
