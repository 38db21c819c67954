"""The samples in samples/*.cu: compiled, run on the reference emulator with seeded
random inputs, and compared bit for bit with the independent models in
tests/models.py.  The launch commands and expected values documented in each
sample's header comment are checked too (against the model, and through the
qgcc/qgrun command lines), so the documentation cannot rot.

Header conventions (see samples/README.md):
  //   $ <shell command>          a step of the documented launch, run in order
  //   name = [v0, v1, ...]       the expected final contents of buffer `name`
                                  (may continue over several comment lines)
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402
from sample_cases import CASES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES_DIR = ROOT / "samples"
SAMPLE_NAMES = sorted(p.stem for p in SAMPLES_DIR.glob("*.cu"))

# A documented launch must stay small: these samples will later run inside a
# neural network at perhaps 100 steps per second.
STEP_BUDGET = 50_000
MAX_STEPS = 400_000

DTYPES = {"int": np.int32, "unsigned": np.uint32, "bool": np.bool_,
          "char": np.int8, "uchar": np.uint8, "float": np.float32}


def _value(tok: str):
    """A header value: an integer (decimal or 0x) or a float32 written as numpy prints it."""
    try:
        return int(tok, 0)
    except ValueError:
        return float(np.float32(tok))


def _as_array(values: list, dtype) -> np.ndarray:
    if dtype == np.float32:
        return np.array(values, dtype=np.float32)
    return np.array(values, dtype=np.int64).astype(dtype)


# --- header parsing ------------------------------------------------------------------

@dataclass
class Header:
    commands: list[str]
    expected: dict[str, list[int]]


def parse_header(path: Path) -> Header:
    comment = []
    for line in path.read_text().splitlines():
        if not line.startswith("//"):
            break
        comment.append(line[2:])
    commands = [ln.strip()[2:] for ln in comment if ln.strip().startswith("$ ")]
    expected: dict[str, list[int]] = {}
    text = "\n".join(comment)
    for m in re.finditer(r"^\s+(\w+) = \[([^\]]*)\]", text, re.M):
        body = re.sub(r"\s+", " ", m.group(2)).strip()
        expected[m.group(1)] = [_value(tok.strip()) for tok in body.split(",") if tok.strip()]
    return Header(commands, expected)


@dataclass
class RunLine:
    qg: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    kernel: str | None = None
    args: dict[str, str] = field(default_factory=dict)
    outs: dict[str, str] = field(default_factory=dict)


def _dim3(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.split(",")]
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


def parse_qgrun(cmd: str) -> RunLine:
    toks = shlex.split(cmd)
    assert toks[0] == "qgrun", cmd
    run = RunLine(qg=toks[1], grid=(1, 1, 1), block=(1, 1, 1))
    it = iter(toks[2:])
    for tok in it:
        if tok == "--grid":
            run.grid = _dim3(next(it))
        elif tok == "--block":
            run.block = _dim3(next(it))
        elif tok == "--kernel":
            run.kernel = next(it)
        elif tok == "--arg":
            k, _, v = next(it).partition("=")
            run.args[k] = v
        elif tok == "--out":
            k, _, v = next(it).partition("=")
            run.outs[k] = v
        else:
            raise AssertionError(f"unexpected qgrun option {tok!r} in: {cmd}")
    return run


def pointer_params(source: str, kernel: str) -> dict[str, str]:
    """{name: ctype} of a kernel's pointer parameters, read from the C signature (so the
    header checks need no compiler)."""
    m = re.search(r"__global__\s+void\s+" + kernel + r"\s*\(([^)]*)\)", source)
    assert m, kernel
    out = {}
    for p in m.group(1).split(","):
        p = " ".join(p.replace("*", " * ").split())
        if "*" not in p:
            continue
        ctype, name = p.split("*")
        ctype = ctype.replace("const", "").strip()
        ctype = {"unsigned char": "uchar", "unsigned int": "unsigned", "signed char": "char"}.get(ctype, ctype)
        out[name.strip()] = ctype
    return out


def kernel_name(source: str) -> str:
    names = re.findall(r"__global__\s+void\s+(\w+)", source)
    assert len(names) == 1, names
    return names[0]


def run_setup(header: Header, cwd: Path) -> None:
    """Run the documented `python -c ...` steps that create the input files."""
    for cmd in header.commands:
        toks = shlex.split(cmd)
        if toks[0] == "python":
            subprocess.run([sys.executable] + toks[1:], cwd=cwd, check=True, timeout=60)


def documented_launch(name: str, tmp: Path):
    """(RunLine, scalars, arrays) of a sample's documented launch, inputs built in tmp."""
    path = SAMPLES_DIR / f"{name}.cu"
    source = path.read_text()
    header = parse_header(path)
    run_setup(header, tmp)
    run = parse_qgrun(next(c for c in header.commands if c.startswith("qgrun")))
    ptypes = pointer_params(source, run.kernel or kernel_name(source))
    scalars: dict[str, int] = {}
    arrays: dict[str, np.ndarray] = {}
    for k, v in run.args.items():
        if v.startswith("@"):
            arrays[k] = np.load(tmp / v[1:])
            assert arrays[k].dtype == DTYPES[ptypes[k]], (k, arrays[k].dtype, ptypes[k])
        elif v.startswith("zeros:"):
            arrays[k] = np.zeros(int(v[6:]), dtype=DTYPES[ptypes[k]])
        else:  # an integer, or a float scalar (written with a point): its bit pattern
            value = _value(v)
            scalars[k] = value if isinstance(value, int) else int(np.array([value], np.float32).view(np.uint32)[0])
    assert set(arrays) == set(ptypes), (sorted(arrays), sorted(ptypes))
    return run, scalars, arrays, header


def assert_same(name: str, got: np.ndarray, want: np.ndarray, context: str = "") -> None:
    """Bit-for-bit equality, dtype and shape included; a readable diff on failure."""
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want).reshape(-1)
    assert got.dtype == want.dtype, f"{context}{name}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{context}{name}: shape {got.shape}, expected {want.shape}"
    if got.tobytes() != want.tobytes():
        bad = np.flatnonzero(got != want)
        rows = ", ".join(f"[{i}] got {got[i]!r} want {want[i]!r}" for i in bad[:8])
        raise AssertionError(f"{context}{name}: {len(bad)} of {got.size} elements differ: {rows}")


# --- documentation checks that need neither compiler nor emulator ------------------------

def test_there_are_enough_samples():
    assert len(SAMPLE_NAMES) >= 8, SAMPLE_NAMES
    for name in SAMPLE_NAMES:
        assert name in models.MODELS, f"samples/{name}.cu has no model in tests/models.py"
        assert name in CASES, f"samples/{name}.cu has no random-input case in tests/sample_cases.py"


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_header_documents_launch_and_expected_values(name, tmp_path):
    """The header's commands are well formed and its expected values are what the model
    computes for the header's inputs."""
    run, scalars, arrays, header = documented_launch(name, tmp_path)
    cmds = header.commands
    assert any(c.startswith(f"qgcc samples/{name}.cu -o {run.qg}") for c in cmds), cmds
    assert run.outs, f"{name}: the qgrun line names no --out"
    expect = models.MODELS[name](arrays, scalars, run.grid, run.block)
    assert set(header.expected) == set(run.outs), (sorted(header.expected), sorted(run.outs))
    for buf, values in header.expected.items():
        want = expect[buf].reshape(-1)
        assert len(values) == want.size, f"{name}: header lists {len(values)} values of {buf}, " \
                                         f"the buffer has {want.size}"
        assert _as_array(values, want.dtype).tobytes() == want.tobytes(), \
            f"{name}: header values of {buf} disagree with the model: {want.tolist()}"


# --- compiler + reference emulator ------------------------------------------------------

def _frontend():
    import qgcc.frontend
    return qgcc.frontend


def _emulator():
    import qgcc.ref.emulator
    return qgcc.ref.emulator


_PROGRAMS: dict[str, object] = {}


def compile_sample(name: str):
    if name not in _PROGRAMS:
        fe = _frontend()
        path = SAMPLES_DIR / f"{name}.cu"
        _PROGRAMS[name] = fe.compile_source(path.read_text(), str(path))
    return _PROGRAMS[name]


def run_on_emulator(name, grid, block, scalars, arrays, kernel=None):
    from qgcc.runtime.launch import make_launch
    emu = _emulator()
    prog = compile_sample(name)
    k = prog.kernel(kernel)
    launch = make_launch(prog, k, grid, block, scalars, {a: v.copy() for a, v in arrays.items()})
    result = emu.run(launch, max_steps=MAX_STEPS)
    outs = {p.name: launch.read_buffer(result.memory, p.name) for p in k.params if p.pointer}
    return outs, result.stats


def check_against_model(name, grid, block, scalars, arrays, context=""):
    outs, stats = run_on_emulator(name, grid, block, scalars, arrays)
    want = models.MODELS[name](arrays, scalars, grid, block)
    assert set(outs) == set(want)
    for buf in want:
        assert_same(buf, outs[buf], want[buf], context)
    return stats


# Random launches: sample_cases.CASES[name](rng) -> (grid, block, scalars, arrays).
SEEDS = [1, 2, 3, 4, 5]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_matches_model(name, seed):
    rng = np.random.default_rng([seed, SAMPLE_NAMES.index(name)])
    grid, block, scalars, arrays = CASES[name](rng)
    check_against_model(name, grid, block, scalars, arrays,
                        context=f"{name} seed={seed} grid={grid} block={block} {scalars}: ")


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_documented_launch_on_emulator(name, tmp_path):
    """The header's launch, run in-process: matches the model and stays within the step budget."""
    run, scalars, arrays, header = documented_launch(name, tmp_path)
    stats = check_against_model(name, run.grid, run.block, scalars, arrays, context=f"{name} (documented): ")
    assert stats.warp_instructions < STEP_BUDGET, \
        f"{name}: the documented launch takes {stats.warp_instructions} warp instructions"


# --- the documented commands through the real command lines ------------------------------

def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    assert found, f"the {name} entry point is not installed (pip install -e .)"
    return found


# Linking the network into the .qg takes seconds per sample, and the default (neural)
# engine runs about a step per second on a CPU; so the documented commands are run
# verbatim for VERBATIM_QGCC only, the others with --no-link, and qgrun on the
# reference emulator (--engine ref).  The slow test below runs one sample exactly
# as documented, default engine included.
VERBATIM_QGCC = {"vadd"}


def run_documented_commands(name: str, tmp_path: Path, *, fast: bool) -> None:
    header = parse_header(SAMPLES_DIR / f"{name}.cu")
    (tmp_path / "samples").symlink_to(SAMPLES_DIR)
    for cmd in header.commands:
        toks = shlex.split(cmd)
        if toks[0] == "python":
            toks[0] = sys.executable
        elif toks[0] in ("qgcc", "qgrun"):
            if fast and toks[0] == "qgcc" and name not in VERBATIM_QGCC:
                toks.insert(1, "--no-link")
            if fast and toks[0] == "qgrun" and "--engine" not in toks:
                toks += ["--engine", "ref"]
            toks[0] = _tool(toks[0])
        else:
            raise AssertionError(f"{name}: unexpected command in header: {cmd}")
        p = subprocess.run(toks, cwd=tmp_path, capture_output=True, text=True, timeout=3600)
        assert p.returncode == 0, f"{name}: `{shlex.join(toks)}` exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    run = parse_qgrun(next(c for c in header.commands if c.startswith("qgrun")))
    source = (SAMPLES_DIR / f"{name}.cu").read_text()
    ptypes = pointer_params(source, run.kernel or kernel_name(source))
    for buf, fname in run.outs.items():
        got = np.load(tmp_path / fname)
        want = _as_array(header.expected[buf], DTYPES[ptypes[buf]])
        assert_same(buf, got, want, context=f"{name} via CLI: ")


def _need_cli():
    import qgcc.cli.qgcc_cmd  # noqa: F401  (an import error fails the test, never skips it)
    import qgcc.cli.qgrun_cmd  # noqa: F401


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_documented_commands_through_cli(name, tmp_path):
    """The header's commands through the real qgcc/qgrun entry points (qgrun on the
    reference emulator); the .npy outputs equal the header's expected values."""
    _need_cli()
    run_documented_commands(name, tmp_path, fast=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_documented_commands_verbatim(name, tmp_path):
    """Exactly the documented commands, default (neural) engine included: on a CPU it
    runs a few dozen steps per second, so the ten samples take about 13 minutes."""
    _need_cli()
    run_documented_commands(name, tmp_path, fast=False)
