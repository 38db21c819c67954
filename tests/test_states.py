"""`qgrun --dump-states` (docs/protocol.md, section 5a): a launch's network states as raw
float32 bits, readable with numpy alone, so that an implementation that shares no code with
qgcc can be compared with the engines bit for bit.  The checks decode the file by the
document's rules, not by qgcc's host."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors import safe_open

import qgcc
from qgcc.trace import MemoryFault

SRC = ("__global__ void k(const int *a, int *c, int n) { int i = threadIdx.x; if (i < n) c[i] = a[i] * 3 + i; }\n"
       "__global__ void bad(int *c) { c[threadIdx.x + 70000] = 1; }\n")
A = np.array([5, -2, 7, 9], np.int32)


@pytest.fixture(scope="module")
def program(tmp_path_factory, qgcc):
    d = tmp_path_factory.mktemp("states")
    (d / "k.cu").write_text(SRC)
    np.save(d / "a.npy", A)
    assert qgcc(d / "k.cu", "-o", d / "k.qg").exit_code == 0
    return d


@pytest.fixture(scope="module")
def full_dump(program, qgrun):
    """Every step of one launch, dumped by qgrun (the path users take)."""
    r = _launch(qgrun, program, "--dump-states", program / "s.npz")
    assert r.exit_code == 0, r.output
    return np.load(program / "s.npz")


def _launch(qgrun, d, *more):
    return qgrun(d / "k.qg", "--kernel", "k", "--grid", "1", "--block", "4", "--arg", f"a=@{d / 'a.npy'}",
                 "--arg", "c=zeros:4", "--arg", "n=4", "--trace", "none", *more)


def _field(protocol, h_bits: np.ndarray, name: str) -> int:
    h = h_bits.view(np.float32)
    return sum(1 << i for i, d in enumerate(protocol["fields"][name]) if h[d] > 0)


def _cells(protocol, states: np.ndarray, first: int, count: int) -> list[int]:
    """Cells first.. from a stack of layer states, by section 5's rule (rail above V/2)."""
    V, c = protocol["value_level"], protocol["cells"]
    out = []
    for idx in range(first, first + count):
        s = idx // 2
        row = states[c["first_layer"] + idx // c["cells_per_layer"], (s // 128) % 16, s % 128].view(np.float32)
        out.append(sum(1 << i for i in range(32) if max(row[4 * i + 3], row[4 * i + 1 + idx % 2]) > V / 2))
    return out


def test_dump_holds_every_step_input_and_every_layers_state_from_qgrun_and_the_api(program, full_dump):
    d = full_dump
    protocol = json.loads(safe_open(str(program / "k.qg"), "np").metadata()["protocol"])
    assert str(d["format"]) == "qgcc-states" and int(d["format_version"]) == 1
    meta = json.loads(str(d["meta"]))
    assert (meta["kernel"], meta["engine"], meta["status"]) == ("k", "neural", "ok")
    steps = int(d["steps"])
    assert d["hidden"].dtype == np.uint32 and d["hidden"].shape == (steps, 2048)
    assert d["hidden_steps"].tolist() == list(range(steps))
    assert d["layers"].tolist() == list(range(d["initial_states"].shape[0]))
    assert d["initial_states"].shape == d["final_states"].shape == (len(d["layers"]), 16, 128, 128)
    # Step 0's input is section 2's first input; the last output reads halt.
    first = d["hidden"][0]
    assert _field(protocol, first, "phase") == 1 << protocol["phases"].index("blkinit")
    assert (_field(protocol, first, "nt"), _field(protocol, first, "nparam"), _field(protocol, first, "gsize")) == (4, 3, 10)
    assert _field(protocol, d["final_hidden"], "phase") == 1 << protocol["phases"].index("halt")
    # The null guard (cells 0-1), buffer a (cells 2-5) in the initial states, c (cells 6-9) in the final ones.
    assert _cells(protocol, d["initial_states"], 0, 2) == [0, 0]
    assert _cells(protocol, d["initial_states"], 2, 4) == A.view(np.uint32).tolist()
    assert _cells(protocol, d["initial_states"], 6, 4) == [0, 0, 0, 0]
    assert _cells(protocol, d["final_states"], 6, 4) == (A * 3 + np.arange(4)).astype(np.int32).view(np.uint32).tolist()

    # The Python API writes the same states, here every 5th step's input (one test: the
    # program is linked once).
    prog = qgcc.load(program / "k.qg")
    prog.launch(1, 4, kernel="k", a=A, c=np.zeros(4, np.int32), n=4, dump_states=program / "k5.npz", dump_every=5)
    every = np.load(program / "k5.npz")
    assert every["hidden_steps"].tolist() == list(range(0, int(full_dump["steps"]), 5))
    assert np.array_equal(every["hidden"], full_dump["hidden"][::5])
    for key in ("final_hidden", "initial_states", "final_states", "steps", "layers", "head_map"):
        assert np.array_equal(every[key], full_dump[key]), key
    assert int(every["dump_every"]) == 5

    # A faulting launch still writes its states, up to and including the faulting step.
    with pytest.raises(MemoryFault):
        prog.launch(1, 4, kernel="bad", c=np.zeros(4, np.int32), dump_states=program / "f.npz")
    d = np.load(program / "f.npz")
    assert json.loads(str(d["meta"]))["status"] == "out-of-bounds"
    protocol = json.loads(safe_open(str(program / "k.qg"), "np").metadata()["protocol"])
    assert _field(protocol, d["final_hidden"], "fault") & 1  # the out-of-bounds bit
    assert len(d["hidden"]) == int(d["steps"])


def test_engines_without_layers_refuse_the_dump_in_one_line(qgrun, tmp_path):
    """Refused before the program is even read."""
    r = qgrun(tmp_path / "missing.qg", "--grid", "1", "--block", "4", "--dump-states", tmp_path / "r.npz",
              "--engine", "ref")
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "qgrun: error: --dump-states: the ref engine runs no network layers, so it has no states to dump; "
        "use --engine neural or hf"]
    assert not (tmp_path / "r.npz").exists()


def test_dump_states_options_that_make_no_sense_are_usage_errors(qgrun, tmp_path):
    launch = (tmp_path / "missing.qg", "--grid", "1", "--block", "4")
    r = qgrun(*launch, "--dump-every", "3")
    assert r.exit_code == 2 and "--dump-every needs --dump-states FILE.npz" in r.output
    r = qgrun(*launch, "--dump-states", tmp_path / "x.json")
    assert r.exit_code == 2 and "--dump-states " + str(tmp_path / "x.json") + ": expected a .npz file name" in r.output
    (tmp_path / "b.jsonl").write_text('{"grid": 1, "block": 4}\n')
    r = qgrun(tmp_path / "missing.qg", "--batch", tmp_path / "b.jsonl", "--dump-states", tmp_path / "b.npz")
    assert r.exit_code == 2 and "--dump-states records one launch" in r.output
