"""Register spilling on the kind of kernel published ODE solvers have (issue 27): the right-hand
side of a cell model in double precision, written as a long chain of small device functions that
are inlined, with far more values live at once than the machine's 32 registers, every double
operation a call of a shared routine whose registers no value may share while it is live across
the call.  Compiled with `qgcc --no-link -o k.qg`, run by `qgrun --engine ref`, and compared byte
for byte with g++ running the same text."""

from __future__ import annotations

import numpy as np

from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

STATES = 16

CELL = r"""
#define NS 16
__device__ double rate(double v, double a, double b) { return a * (v + b) / (1.0 + v * v * 0.01); }
__device__ double relax(double inf, double x, double tau) { return (inf - x) / tau; }
__device__ double current(double g, double x, double y, double v, double e) { return g * x * x * y * (v - e); }
__device__ double flux(double c1, double c2, double k) { return k * (c1 - c2) / (1.0 + c1 * c2); }
__device__ double hill(double c, double kd) { double c2 = c * c; return c2 / (c2 + kd * kd); }

__global__ void cellRhs(const double *y, const double *par, double *dy, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const double *s = y + t * NS;
    double v = s[0], m = s[1], h = s[2], j = s[3], d = s[4], f = s[5], x = s[6], r = s[7];
    double ca = s[8], caSR = s[9], caJ = s[10], na = s[11], k = s[12], b1 = s[13], b2 = s[14], w = s[15];
    double gNa = par[0], gCa = par[1], gK = par[2], gKr = par[3], gL = par[4], eNa = par[5], eK = par[6];
    double eCa = par[7], kRel = par[8], kUp = par[9], kLeak = par[10], kd = par[11];
    // gates: every rate stays live until the derivatives at the end
    double am = rate(v, 0.32, 47.13), bm = rate(-v, 0.08, 11.0), ah = rate(-v, 0.135, 80.0);
    double bh = rate(v, 3.56, 0.35), aj = rate(-v, 0.05, 37.78), bj = rate(v, 0.3, 32.0);
    double ad = rate(v, 0.095, 5.0), bd = rate(-v, 0.07, 44.0), af = rate(-v, 0.012, 28.0);
    double bf = rate(v, 0.0065, 30.0), ax = rate(v, 0.0005, 50.0), bx = rate(-v, 0.0013, 20.0);
    double ar = rate(v, 0.02, 10.0), br = rate(-v, 0.01, 15.0);
    // currents
    double iNa = current(gNa, m, h * j, v, eNa), iCa = current(gCa, d, f, v, eCa);
    double iK = current(gK, x, 1.0, v, eK), iKr = current(gKr, r, x, v, eK);
    double iL = gL * (v - eK), iNaK = current(0.5, hill(na, 10.0), hill(k, 1.5), v, -150.0);
    double iNCX = current(0.3, hill(ca, kd), na, v, eCa - eNa), iPCa = gCa * hill(ca, 0.0005);
    // calcium handling
    double jRel = flux(caSR, ca, kRel) * hill(caJ, kd), jUp = flux(ca, 0.0, kUp) * hill(ca, 0.0003);
    double jLeak = flux(caSR, caJ, kLeak), jDiff = flux(caJ, ca, 0.5);
    double jB1 = flux(ca, b1, 0.1), jB2 = flux(caJ, b2, 0.2), jW = flux(w, ca, 0.05);
    double iTot = iNa + iCa + iK + iKr + iL + iNaK + iNCX + iPCa;
    double * o = dy + t * NS;
    o[0] = -iTot + jW * 0.001;
    o[1] = am * (1.0 - m) - bm * m + relax(am / (am + bm), m, 1.0 / (am + bm));
    o[2] = ah * (1.0 - h) - bh * h + relax(ah / (ah + bh), h, 1.0 / (ah + bh));
    o[3] = aj * (1.0 - j) - bj * j + relax(aj / (aj + bj), j, 1.0 / (aj + bj));
    o[4] = ad * (1.0 - d) - bd * d + relax(ad / (ad + bd), d, 1.0 / (ad + bd));
    o[5] = af * (1.0 - f) - bf * f + relax(af / (af + bf), f, 1.0 / (af + bf));
    o[6] = ax * (1.0 - x) - bx * x + relax(ax / (ax + bx), x, 1.0 / (ax + bx));
    o[7] = ar * (1.0 - r) - br * r + relax(ar / (ar + br), r, 1.0 / (ar + br));
    o[8] = jRel - jUp + jLeak + jDiff - jB1 - (iCa + iPCa - 2.0 * iNCX) * 0.0001;
    o[9] = jUp - jRel - jLeak;
    o[10] = jLeak - jDiff - jB2 + jRel * 0.5;
    o[11] = -(iNa + 3.0 * iNCX + 3.0 * iNaK) * 0.0002;
    o[12] = -(iK + iKr + iL - 2.0 * iNaK) * 0.0002;
    o[13] = jB1 - b1 * 0.01;
    o[14] = jB2 - b2 * 0.02;
    o[15] = jW + iTot * iTot * 1e-6 - w * (jRel + jUp + jLeak + jDiff + jB1 + jB2);
}
"""


@need_gxx
def test_a_cell_model_of_inlined_double_functions_spills_to_the_frame_and_matches_gxx(qgcc, qgrun, tmp_path):
    """Dozens of doubles live across the double routines' calls (two registers each, and none
    may share a register with the routines): the kernel compiles to 32 registers with spill
    slots in its frame, and every output bit equals g++'s."""
    from qgcc import qgfile

    n, grid, block = 3, 1, 4
    rng = np.random.default_rng(27)
    y = rng.uniform(-1.0, 1.0, n * STATES)
    y[0::STATES] = rng.uniform(-90.0, 40.0, n)          # membrane potentials
    par = np.array([23.0, 0.09, 0.282, 0.0136, 0.0183, 54.4, -77.0, 120.0, 0.2, 0.004, 5e-5, 0.0006])
    args = {"y": y, "par": par, "dy": np.zeros(n * STATES)}
    got = cli_run(qgcc, qgrun, tmp_path, CELL, "cellRhs", grid, block, args, {"n": n})
    k = qgfile.load(tmp_path / "cellRhs" / "k.qg").program.kernels[0]
    assert k.regs <= 32 and k.local_words > 16  # far more than 32 registers' worth went to spill slots
    want = gxx_model(tmp_path, CELL, "cellRhs", grid, block,
                     [("y", y), ("par", par), ("dy", args["dy"]), ("n", n)])
    assert np.isfinite(want["dy"]).all()
    assert got["dy"].tobytes() == want["dy"].tobytes()
