"""grid.sync() as the multi-block cooperative-groups samples use it (issue 27).

Blocks run one after another on this machine, so a barrier of the whole grid is exact only
when the grid is one block, where it is the block barrier.  `grid.sync()`, `cg::sync(grid)`
and `cg::this_grid().sync()` compile to a check that the grid is one block (a device assert
with its own report: the network stops the launch) and `__syncthreads()`.  Each kernel is
compiled with `qgcc --no-link -o`, run with `qgrun` and compared with numpy in the kernel's
own operation order.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from frontcheck import emulate_src

F32 = np.float32

# A Jacobi-style relaxation: every step each thread publishes its value, waits for the grid,
# then reads three others'.  Later threads spin before publishing, so without the barriers
# the readers see stale values.
RELAX = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void relax(float *x, float *buf, int steps) {
    cg::grid_group grid = cg::this_grid();
    unsigned t = grid.thread_rank(), n = grid.size();
    float v = x[t];
    for (int k = 0; k < steps; k++) {
        unsigned spin = 0;                       // later threads reach the store later
        for (unsigned j = 0; j < 4 * t; j++) spin += j;
        if (spin == 12345u) v = 0.0f;            // never: spin is even
        buf[t] = v;
        grid.sync();
        v = 0.5f * v + 0.25f * (buf[(t + 1) % n] + buf[(t + n - 1) % n]) + 0.125f * buf[(t + n / 2) % n];
        cg::sync(grid);
    }
    x[t] = v;
    cg::this_grid().sync();
}
"""
SYNC_LINE = 13  # grid.sync() in RELAX


def relax_model(x: np.ndarray, steps: int) -> np.ndarray:
    v, n = x.copy(), len(x)
    for _ in range(steps):
        b = v.copy()
        v = np.array([F32(F32(F32(0.5) * v[t]) + F32(F32(0.25) * F32(b[(t + 1) % n] + b[(t - 1) % n])))
                      + F32(F32(0.125) * b[(t + n // 2) % n]) for t in range(n)], F32)
    return v


def run_relax(qgcc, qgrun, tmp_path, grid: int, engine: str = "ref", src: str = RELAX):
    (tmp_path / "k.cu").write_text(src)
    r = qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "k.qg")
    assert r.exit_code == 0, r.stderr
    x = (np.linspace(-2, 3, 16).astype(F32) ** 3).astype(F32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / f"o_{engine}_{grid}.npy"
    r = qgrun(tmp_path / "k.qg", "--engine", engine, "--grid", str(grid), "--block", "16", "--arg",
              f"x=@{tmp_path / 'x.npy'}", "--arg", "buf=zeros:32", "--arg", "steps=4", "--trace", "none",
              "--out", f"x={out}", "--json", tmp_path / "r.json")
    return x, r, out


def test_grid_sync_in_a_one_block_launch_is_the_block_barrier(qgcc, qgrun, tmp_path):
    """With --grid 1 the three spellings of the grid barrier order the threads' stores and loads
    exactly as the barrier does: every output bit equals numpy's step-by-step model."""
    x, r, out = run_relax(qgcc, qgrun, tmp_path, 1)
    assert r.exit_code == 0, r.stderr
    assert np.load(out).tobytes() == relax_model(x, 4).tobytes()


def test_the_relaxation_needs_its_barriers():
    """The model above is not what the kernel computes without the barriers (so the test above
    checks that grid.sync() orders memory, not only that it compiles)."""
    src = RELAX.replace("        grid.sync();\n", "").replace("        cg::sync(grid);\n", "")
    x = (np.linspace(-2, 3, 16).astype(F32) ** 3).astype(F32)
    got = emulate_src(src, "relax", 1, 16, [("x", x), ("buf", np.zeros(16, F32)), ("steps", 4)])["x"]
    assert got.tobytes() != relax_model(x, 4).tobytes()


def test_grid_sync_in_a_launch_of_two_blocks_stops_it_with_a_one_line_reason(qgcc, qgrun, tmp_path):
    """With two blocks the in-kernel check fails at the first grid.sync(): the launch stops with
    the assert exit code (7), one line naming file, line, kernel, thread and what to do, and no
    --out file."""
    _, r, out = run_relax(qgcc, qgrun, tmp_path, 2)
    assert r.exit_code == 7
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"qgrun: error: assert: {tmp_path / 'k.cu'}:{SYNC_LINE}: relax: block [0,0,0], thread [0,0,0]: "
        "grid.sync() needs every block of the grid resident at once; this machine runs blocks one after "
        "another: launch one block (--grid 1) (block 0, warp 0, lane 0, pc ")
    assert not out.exists()
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "assert"


def test_grid_sync_in_divergent_code_is_a_divergent_barrier(qgcc, qgrun, tmp_path):
    """As __syncthreads(): reached by only some lanes of a warp, the barrier faults (exit code 5)."""
    src = RELAX.replace("        grid.sync();", "        if (t % 4 < 2) grid.sync();")
    _, r, _ = run_relax(qgcc, qgrun, tmp_path, 1, src=src)
    assert r.exit_code == 5
    assert "barrier in divergent code" in r.stderr and f"line {SYNC_LINE}: if (t % 4 < 2) grid.sync();" in r.stderr


def test_grid_sync_round_trips_through_qsass(qgcc, tmp_path):
    """The check's report travels in the .qg and in qsass text (.assert with a message)."""
    from qgcc.asm import assemble, disassemble
    from qgcc.qgfile import load

    (tmp_path / "k.cu").write_text(RELAX)
    assert qgcc(tmp_path / "k.cu", "--no-link", "-o", tmp_path / "k.qg").exit_code == 0
    p = load(tmp_path / "k.qg").program
    assert [a.message for a in p.asserts] == [
        "grid.sync() needs every block of the grid resident at once; this machine runs blocks one after "
        "another: launch one block (--grid 1)"] * 3
    back = assemble(disassemble(p))
    assert back.asserts == p.asserts


@pytest.mark.slow
def test_grid_sync_runs_inside_the_network(qgcc, qgrun, tmp_path):
    """The network computes the one-block relaxation bit for bit and stops the two-block launch
    at the same store as the emulator."""
    x, r, out = run_relax(qgcc, qgrun, tmp_path, 1, engine="neural")
    assert r.exit_code == 0, r.stderr
    assert np.load(out).tobytes() == relax_model(x, 4).tobytes()
    _, r, _ = run_relax(qgcc, qgrun, tmp_path, 2, engine="neural")
    assert r.exit_code == 7
    assert "relax: block [0,0,0], thread [0,0,0]: grid.sync() needs every block of the grid resident" in r.stderr
