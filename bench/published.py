"""How much published CUDA compiles unchanged: `qgcc --no-link` over a held-out corpus, file by file.

    python bench/published.py [--corpus /work/corpus] [--only SUBSTRING] [--verbose]

The corpus is kept outside this repository (third-party text is never committed): a directory
with `manifest.json`, a list of {"file": relative path, "source": where it came from,
"instantiate": ["kernel<args>", ...]} and an `include/` directory passed as `-I` (headers such as
PolyBench's `polybench.h` that the kernels include as published).  Each file is compiled through
qgcc's own command line, in process (the same code path as the shell command; a fresh process
per file would spend most of the time importing), to a .qg in a temporary directory, with the
kernel-template instances its host code launches (`--instantiate`) and the include directories
its published build passes (`"include"`, relative to the file: rodinia heartwall's `-I./AVI`).  Prints one line per file
(OK, or the first error line), the rate, and a histogram of first errors, grouped by message with
names and numbers blanked, most frequent first.  An "internal error" is counted separately: none
may exist.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from qgcc.cli.qgcc_cmd import main as qgcc_main


def first_error(stderr: str) -> str:
    for line in stderr.splitlines():
        if "error" in line:
            return line.strip()
    return stderr.strip().splitlines()[0] if stderr.strip() else "(no message)"


def blocker(line: str) -> str:
    """The message with its place, quoted names and numbers blanked, so equal causes group."""
    msg = re.sub(r"^.*?error:\s*", "", line)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"\"[^\"]*\"", "\"…\"", msg)
    msg = re.sub(r"\b\d+\b", "N", msg)
    return msg[:110]


def compile_one(corpus: Path, entry: dict, outdir: Path) -> tuple[bool, str]:
    args = [str(corpus / entry["file"]), "--no-link", "-o", str(outdir / "k.qg")]
    inc = corpus / "include"
    if inc.is_dir():
        args += ["-I", str(inc)]
    for d in entry.get("include", []):  # the published build's own -I (relative to the file)
        args += ["-I", str((corpus / entry["file"]).parent / d)]
    for inst in entry.get("instantiate", []):
        args += ["--instantiate", inst]
    res = CliRunner().invoke(qgcc_main, args, catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return False, f"internal error (escaped the CLI): {type(res.exception).__name__}: {res.exception}"
    if res.exit_code == 0:
        return True, "OK"
    return False, first_error(res.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="/work/corpus")
    ap.add_argument("--only", default="")
    ap.add_argument("--verbose", action="store_true", help="print the OK files too")
    a = ap.parse_args()
    corpus = Path(a.corpus)
    entries = [e for e in json.loads((corpus / "manifest.json").read_text()) if a.only in e["file"]]
    ok, hist, internal = 0, Counter(), 0
    examples: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for e in entries:
            good, line = compile_one(corpus, e, Path(tmp))
            ok += good
            if not good:
                b = blocker(line)
                hist[b] += 1
                examples.setdefault(b, line)
                internal += "internal error" in line
            if not good or a.verbose:
                print(f"{'OK  ' if good else 'FAIL'} {e['file']}" + ("" if good else f"\n     {line}"))
    n = len(entries)
    print(f"\n{ok} of {n} files compile ({100 * ok / max(n, 1):.0f}%); internal errors: {internal}")
    print("\nfirst errors, most frequent first:")
    for b, c in hist.most_common():
        print(f"{c:4d}  {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
