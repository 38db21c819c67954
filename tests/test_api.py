"""The Python API (qgcc.compile / qgcc.load, Program.launch / .stream, prog.kernel[grid, block](...)):
every sample's documented launch gives the documented buffers and the same trace as qgrun's
--trace-out; bad arguments fail with qgrun's exceptions and messages; faults are qgrun's faults."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import qgcc
from qgcc.spec import SPEC
from qgcc import qgfile
from qgcc.asm import assemble
from qgcc.cli.qgrun_cmd import main as qgrun_main
from qgcc.diagnostics import CompileError, QgFileError, UsageError
from qgcc.cli.render import fault_message
from qgcc.trace import BarrierFault, MemoryFault, StepLimitFault
from qgcc.traceout import Describer, record_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qsass_programs import FAULTS  # noqa: E402
from test_samples import SAMPLE_NAMES, SAMPLES_DIR, _as_array, documented_launch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


_PROGRAMS: dict[str, qgcc.Program] = {}


def program(name: str) -> qgcc.Program:
    if name not in _PROGRAMS:
        _PROGRAMS[name] = qgcc.compile(SAMPLES_DIR / f"{name}.cu")
    return _PROGRAMS[name]


def qgrun(*args: str):
    return CliRunner().invoke(qgrun_main, list(args), catch_exceptions=False)


def api_values(prog: qgcc.Program, run, arrays) -> dict:
    """The documented --arg values as Python values: numbers for scalars, the arrays for pointers."""
    kernel = prog.program.kernel(run.kernel)
    values = {}
    for p in kernel.params:
        if p.pointer:
            values[p.name] = arrays[p.name].copy()
        elif p.ctype == "float":
            values[p.name] = float(run.args[p.name])
        else:
            values[p.name] = int(run.args[p.name], 0)
    return values


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_through_the_api_gives_the_documented_buffers_and_qgruns_trace(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run, _scalars, arrays, header = documented_launch(name, tmp_path)
    prog = program(name)
    values = api_values(prog, run, arrays)
    before = {k: v.copy() for k, v in values.items() if isinstance(v, np.ndarray)}
    result = prog.launch(run.grid, run.block, kernel=run.kernel, engine="ref", trace=True, args=values)

    for buf, expected in header.expected.items():
        got = result[buf]
        assert got.dtype == arrays[buf].dtype, (buf, got.dtype)
        assert got.tobytes() == _as_array(expected, got.dtype).tobytes(), (buf, got.tolist())
    for k, v in before.items():  # launch() never writes into the caller's arrays
        assert values[k].tobytes() == v.tobytes()
    assert result.stats.steps == len(result.trace) > 0

    argv = [str(SAMPLES_DIR / f"{name}.cu"), "--grid", ",".join(map(str, run.grid)),
            "--block", ",".join(map(str, run.block)), "--engine", "ref", "--trace", "none",
            "--trace-out", "t.jsonl"]
    if run.kernel:
        argv += ["--kernel", run.kernel]
    for k, v in run.args.items():
        argv += ["--arg", f"{k}={v}"]
    r = qgrun(*argv)
    assert r.exit_code == 0, r.stderr
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    describe = Describer(prog.program)
    assert lines[1:-1] == [json.loads(json.dumps(record_dict(rec, describe))) for rec in result.trace]
    assert lines[-1]["status"] == "ok" and lines[-1]["steps"] == result.stats.steps


@pytest.fixture
def vadd():
    return program("vadd")


def vadd_args(n=6):
    a = np.arange(n, dtype=np.int32)
    return dict(a=a, b=100 * a, c=np.zeros(n, np.int32), n=n)


def test_launch_returns_every_buffer_in_its_dtype_and_shape_and_the_statistics(vadd):
    args = vadd_args(6)
    args["c"] = np.zeros((2, 3), np.int32)
    r = vadd.launch(grid=2, block=4, engine="ref", **args)
    assert r["c"].shape == (2, 3) and r["c"].dtype == np.int32
    assert r["c"].ravel().tolist() == [0, 101, 202, 303, 404, 505]
    assert sorted(r.outputs) == ["a", "b", "c"]
    assert r.trace is None
    assert (r.stats.loads, r.stats.stores, r.kernel, r.grid, r.block) == (12, 6, "vadd", (2, 1, 1), (4, 1, 1))
    assert r.summary()["status"] == "ok" and r.summary()["steps"] == r.stats.steps


def test_bracket_form_writes_results_back_into_the_arrays_passed_in(vadd):
    a = np.arange(6, dtype=np.int32)
    b = 100 * a
    c = np.full(6, -1, np.int32)
    result = vadd.vadd[2, 4](a, b, c, 6, engine="ref")
    assert c.tolist() == [0, 101, 202, 303, 404, 505]
    assert a.tolist() == list(range(6))
    assert result["c"].tolist() == c.tolist()
    c2 = np.zeros(6, np.int32)
    vadd.vadd[(2,), (4, 1, 1)](a, b, n=6, c=c2, engine="ref")  # keywords work too
    assert c2.tolist() == c.tolist()


def test_bracket_form_errors(vadd):
    with pytest.raises(UsageError, match=r"vadd\(\) takes 4 arguments \(a, b, c, n\); 5 were given"):
        vadd.vadd[2, 4](*vadd_args().values(), 7, engine="ref")
    with pytest.raises(UsageError, match=r"expected vadd\[grid, block\]"):
        vadd.vadd[2]
    with pytest.raises(AttributeError, match="no kernel named 'vmul'; the program has: vadd"):
        vadd.vmul


def test_argument_errors_are_qgruns_errors_with_qgruns_messages(vadd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("a64.npy", np.arange(6, dtype=np.int64))
    np.save("a.npy", np.arange(6, dtype=np.int32))
    cli = [str(SAMPLES_DIR / "vadd.cu"), "--grid", "2", "--block", "4", "--engine", "ref"]

    def cli_error(*extra):
        r = qgrun(*cli, *extra)
        assert r.exit_code == 2, r.stderr
        return r.stderr.strip().removeprefix("qgrun: error: ")

    cases = [  # (API values changed, CLI --args, the message's shared part)
        ({"a": np.arange(6, dtype=np.int64)}, ["a=@a64.npy"],
         "has dtype int64, but parameter 'a' (const int * a) needs int32"),
        ({"n": 1 << 33}, [f"n={1 << 33}"], f"{1 << 33} is out of range for int (-2147483648..2147483647)"),
    ]
    for change, cli_args, shared in cases:
        args = {**vadd_args(), **change}
        with pytest.raises(UsageError) as e:
            vadd.launch(2, 4, engine="ref", **args)
        full = {"a": "@a.npy", "b": "@a.npy", "c": "zeros:6", "n": "6"}
        full.update(dict(a.split("=", 1) for a in cli_args))
        msg = cli_error(*[x for k, v in full.items() for x in ("--arg", f"{k}={v}")])
        # the same check, named the way each interface names the argument
        assert str(e.value).removesuffix(shared) in ("a: the array ", f"n={1 << 33}: "), str(e.value)
        assert str(e.value).endswith(shared) and msg.endswith(shared), (str(e.value), msg)

    with pytest.raises(UsageError, match=r"^missing argument for 'n' \(int n\)$"):
        vadd.launch(2, 4, engine="ref", **{k: v for k, v in vadd_args().items() if k != "n"})
    with pytest.raises(UsageError, match=r"argument 'm': kernel 'vadd' has no parameter 'm' \(parameters: a, b, c, n\)"):
        vadd.launch(2, 4, engine="ref", m=1, **vadd_args())
    with pytest.raises(UsageError, match=r"c=\[0, 0\]: parameter 'c' is a pointer \(int \* c\); give a numpy array of int32"):
        vadd.launch(2, 4, engine="ref", **{**vadd_args(), "c": [0, 0]})
    with pytest.raises(UsageError, match=r"n=1.5: parameter 'n' is a scalar \(int n\); give an int"):
        vadd.launch(2, 4, engine="ref", **{**vadd_args(), "n": 1.5})
    with pytest.raises(UsageError) as e:
        vadd.launch(2, 4, kernel="vmul", engine="ref", **vadd_args())
    assert str(e.value) == cli_error("--kernel", "vmul") == "no kernel named 'vmul'; the program has: vadd"
    with pytest.raises(UsageError) as e:
        vadd.launch(2, SPEC.max_block_threads + 1, engine="ref", **vadd_args())
    T = SPEC.max_block_threads
    assert str(e.value) == f"--block {T + 1},1,1 has {T + 1} threads; the machine runs at most {T} threads per block"
    with pytest.raises(UsageError, match="unknown engine 'gpu'"):
        vadd.launch(2, 4, engine="gpu", **vadd_args())


def test_compile_and_load_errors_are_qgruns():
    with pytest.raises(CompileError, match="unknown identifier 'b'"):
        qgcc.compile("__global__ void k(int *a) {\n    a[0] = b;\n}\n", name="bad.cu")
    with pytest.raises(QgFileError):
        qgcc.load(ROOT / "README.md")


def test_faults_are_raised_as_qgruns_fault_classes_with_qgruns_messages(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    qgfile.save(assemble(FAULTS, "faults.qsass"), tmp_path / "k.qg")
    prog = qgcc.load("k.qg")
    assert prog.kernels == ["oob", "divbar", "spin"]
    for kernel, cls, args, extra in (("oob", MemoryFault, {"c": np.zeros(4, np.int32)}, ["--arg", "c=zeros:4"]),
                                     ("divbar", BarrierFault, {}, []),
                                     ("spin", StepLimitFault, {}, [])):
        with pytest.raises(cls) as e:
            prog.launch(1, 4, kernel=kernel, engine="ref", max_steps=50, **args)
        r = qgrun("k.qg", "--grid", "1", "--block", "4", "--kernel", kernel, "--engine", "ref",
                  "--max-steps", "50", *extra)
        assert r.exit_code == cls.exit_code
        assert r.stderr == f"qgrun: error: {fault_message(e.value, prog.program)}\n"


def test_stream_yields_the_trace_as_it_runs_then_the_result(vadd):
    whole = vadd.launch(2, 4, engine="ref", trace=True, **vadd_args())
    stream = vadd.stream(2, 4, engine="ref", **vadd_args())
    assert stream.result is None
    records = list(stream)
    assert [r.key() for r in records] == [r.key() for r in whole.trace]
    assert stream.result["c"].tolist() == whole["c"].tolist()

    prog = qgcc.compile("__global__ void spin(int *a) {\n    for (;;) a[0] = a[0] + 1;\n}\n", name="spin.cu")
    seen = []
    with pytest.raises(StepLimitFault):
        for rec in prog.stream(1, 4, engine="ref", max_steps=30, a=np.zeros(1, np.int32)):
            seen.append(rec.step)
    assert seen == list(range(30))
    with prog.stream(1, 4, engine="ref", max_steps=10_000_000, a=np.zeros(1, np.int32)) as s:
        first = [next(s) for _ in range(5)]
    assert [r.step for r in first] == [0, 1, 2, 3, 4]  # closed early: the launch stops, nothing hangs


def test_neural_engine_through_the_api_equals_the_emulator(vadd):
    ref = vadd.launch(2, 4, engine="ref", trace=True, **vadd_args())
    net = vadd.launch(2, 4, engine="neural", device="cpu", trace=True, **vadd_args())
    assert net.engine == "neural" and net["c"].tolist() == ref["c"].tolist()
    assert [r.key() for r in net.trace] == [r.key() for r in ref.trace]


def test_float_scalars_round_once_to_float32():
    prog = program("saxpy")
    x = np.array([1, 2, 3], np.float32)
    r = prog.launch(1, 4, engine="ref", a=0.1, x=x, y=np.zeros(3, np.float32), n=3)
    assert r["y"].tolist() == (np.float32(0.1) * x).tolist()
    r2 = prog.launch(1, 4, engine="ref", a=np.float32(0.1), x=x, y=np.zeros(3, np.float32), n=3)
    assert r2["y"].tobytes() == r["y"].tobytes()


def test_the_readme_from_python_example_runs_as_written(monkeypatch):
    text = (ROOT / "README.md").read_text()
    section = text.split("### From Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 (the documentation's own example)
    assert scope["r"]["c"].tolist() == [0, 101, 202, 303, 404, 505] and scope["r"]["c"].dtype == np.int32
    assert scope["r"].stats.steps == 38 and scope["r"].engine == "neural"
    assert scope["c"].tolist() == [0, 101, 202, 303, 404, 505]


def test_step_is_the_batched_steps_option_and_a_kernel_parameter_named_step_goes_in_args():
    """`step=` (qgrun --step) names the neural engine's batched step.  A kernel whose parameter
    is called `step` gets its value through `args=`, like any parameter named like an option; a
    number given as `step=` is refused with that fix rather than taken for the option."""
    prog = qgcc.compile("__global__ void k(int *a, int step) {\n    a[threadIdx.x] = threadIdx.x * step;\n}\n",
                        name="stepk.cu")
    with pytest.raises(UsageError, match=r"^step=3: `step` names the batched step \(qgrun --step\); pass the "
                                         r"kernel's parameter 'step' as args=\{'step': \.\.\.\}$"):
        prog.launch(1, 4, engine="ref", a=np.zeros(4, np.int32), step=3)
    with pytest.raises(UsageError, match=r"^--step fused: only the neural engine has a batched step"):
        prog.launch(1, 4, engine="ref", step="fused", args={"a": np.zeros(4, np.int32), "step": 3})
    r = prog.launch(1, 4, engine="ref", args={"a": np.zeros(4, np.int32), "step": 3})
    assert r["a"].tolist() == [0, 3, 6, 9]
