"""The documented protocol is enough: the standalone runner in examples/ runs a .qg (the
documents' generated figures are checked in tests/test_docs.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from qgcc.cli.qgcc_cmd import main as qgcc_main
from qgcc.frontend import compile_source
from qgcc.ref.emulator import run as ref_run
from qgcc.runtime.launch import make_launch
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
SRC = "__global__ void k(int *a, int n) { int i = threadIdx.x; if (i < n) a[i] = a[i] * 3 + i; }\n"


def test_standalone_runner_from_the_protocol_document_matches_the_emulator_and_every_state(tmp_path, monkeypatch):
    """examples/run_qg.py imports no qgcc module: built from docs/protocol.md alone, it gives the
    emulator's buffer, and every step's hidden state and every layer's recurrent states are
    the compiled C step's bit for bit (`qgrun --dump-states`, `--compare`)."""
    from qgcc.cli.qgrun_cmd import main as qgrun_main

    monkeypatch.chdir(tmp_path)
    Path("k.cu").write_text(SRC)
    a = np.array([5, -2, 7, 9], np.int32)
    np.save("a.npy", a)
    assert CliRunner().invoke(qgcc_main, ["k.cu", "-o", "k.qg"]).exit_code == 0
    launch_args = ["--grid", "1", "--block", "4", "--arg", "a=@a.npy", "--arg", "n=3"]
    r = CliRunner().invoke(qgrun_main, ["k.qg", *launch_args, "--dump-states", "c.npz", "--trace", "none"])
    assert r.exit_code == 0, r.output
    runner = (ROOT / "examples" / "run_qg.py").read_text()
    assert len(runner.splitlines()) < 200
    assert "import qgcc" not in runner and "from qgcc" not in runner  # transformers, safetensors, torch only
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "run_qg.py"), "k.qg", *launch_args, "--out", "a",
                        "--compare", "c.npz"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    got = [line for line in r.stdout.splitlines() if line.startswith("a ")][0]
    prog = compile_source(SRC, "k.cu")
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (4, 1, 1), {"n": 3}, {"a": a})
    want = launch.read_buffer(ref_run(launch).memory, "a")
    assert got == f"a {want.tolist()}"
    states = np.load("c.npz")
    layers, steps = len(states["layers"]), int(states["steps"])
    checks = 1 + steps + 1 + 2 * layers  # the step count, every step's input, the last output, two states a layer
    assert f"compare c.npz: {checks} of {checks} bit-identical" in r.stdout, r.stdout


def test_layers_linked_for_another_machines_phases_are_refused():
    """The host drives the machine by its phase field (docs/protocol.md): a .qg linked when
    the machine still started in TIDINIT has four phases where this one has three, and run
    as this machine it would be misread (its run phase taken for halt), so it is refused."""
    import json

    import pytest

    from qgcc.link.linker import from_tensors

    meta = {"protocol": json.dumps({"phases": ["tidinit", "blkinit", "run", "halt"]}), "num_layers": "0",
            "machine": "{}"}
    with pytest.raises(ValueError, match="phases"):
        from_tensors({}, meta, [])
