"""`sin`, `cos` and `tan` on double as published CUDA calls them (issue 27: rodinia's
particlefilter draws Gaussian noise with `cos` on a double, Box-Muller style).  They are
routines of src/qgcc/frontend/dmath.cu, written in the subset with `double` itself, so each
result is an exact sequence of binary64 operations that tests/dmathref.py repeats in numpy:
the compiled kernels (`qgcc --no-link -o k.qg` + `qgrun k.qg`) must equal that model bit for
bit, the model must be as accurate as docs/subset.md says (against mpmath, and within the same
bound of numpy's, i.e. glibc's, sin/cos/tan), and the network must equal the emulator."""

from __future__ import annotations

import subprocess
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

import dmathref as D
from gxx import need_gxx
from test_published_constructs import cli_run

# docs/subset.md ("double"): the largest error for |x| < 2^20, in ulps of the true value
BOUND = {"sin": 0.8, "cos": 0.8, "tan": 2.0}

NOISE = r"""
#include <math.h>
#include <limits.h>
__device__ double uniform01(unsigned *state, int i) {     // an LCG, as the published generators
    unsigned s = state[i] * 1664525u + 1013904223u;
    state[i] = s;
    return (s >> 1) / ((double)INT_MAX + 1.0);             // [0, 1)
}
__global__ void gaussian(unsigned *state, double *out, float *outf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double pi = 3.14159265358979323846;
    double u = 1.0 - uniform01(state, i);                  // (0, 1]: log(u) is finite
    double v = uniform01(state, i);
    double rad = sqrt(-2 * log(u));
    out[i] = rad * cos(2 * pi * v);                        // Box-Muller, both normals
    out[n + i] = rad * sin(2 * pi * v);
    out[2 * n + i] = tan(pi * (v - 0.5));                  // a Cauchy deviate
    outf[i] = cos((float)v);                               // a float argument: CUDA's cosf
}
"""


def gaussian_model(state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's arithmetic in its own order, with dmath.cu's functions from dmathref."""
    import mathref

    pi = np.float64(3.14159265358979323846)
    scale = np.float64(2147483647) + np.float64(1.0)
    st = state.astype(np.uint64)
    outs, vs = [], []
    for s0 in st:
        s1 = (int(s0) * 1664525 + 1013904223) & 0xFFFFFFFF
        s2 = (s1 * 1664525 + 1013904223) & 0xFFFFFFFF
        u = np.float64(1.0) - np.float64(s1 >> 1) / scale
        v = np.float64(s2 >> 1) / scale
        rad = np.sqrt(np.float64(-2) * D.log(u))
        outs.append((rad * D.cos(np.float64(2) * pi * v), rad * D.sin(np.float64(2) * pi * v),
                     D.tan(pi * (v - np.float64(0.5))), s2))
        vs.append(v)
    o = np.array([[a for a, _, _, _ in outs], [b for _, b, _, _ in outs], [c for _, _, c, _ in outs]])
    cosf = mathref.host("cosf", np.array(vs).astype(np.float32))[0]
    return o.reshape(-1), np.asarray(cosf, np.float32), np.array([s for *_, s in outs], np.uint32)


@pytest.mark.slow  # about 4 s: its doubles live across routine calls and spill (15-50 s when spilling went one value a round)
def test_box_muller_noise_with_double_cos_sin_tan_equals_the_documented_algorithms(qgcc, qgrun, tmp_path):
    """A particlefilter-style generator: an LCG in a `__device__` function, `sqrt(-2 log u)` times
    `cos`/`sin` of `2 pi v` on doubles, `tan` for a Cauchy deviate.  Through `qgcc -o` and
    `qgrun` on the emulator every output equals the numpy model of dmath.cu's operation
    sequences bit for bit; `cos` of a float is still CUDA's `cosf`."""
    state = np.random.default_rng(29).integers(0, 2 ** 32, 12, dtype=np.uint64).astype(np.uint32)
    n = state.size
    got = cli_run(qgcc, qgrun, tmp_path, NOISE, "gaussian", 2, 8,
                  {"state": state, "out": np.zeros(3 * n), "outf": np.zeros(n, np.float32)}, {"n": n})
    want, wantf, wstate = gaussian_model(state)
    assert got["out"].view(np.uint64).tolist() == want.view(np.uint64).tolist()
    assert got["outf"].view(np.uint32).tolist() == wantf.view(np.uint32).tolist()
    assert got["state"].tolist() == wstate.tolist()
    assert np.all(np.abs(want[:2 * n]) < 8) and np.std(want[:2 * n]) > 0.3   # normals, not zeros


TRIG = r"""
__global__ void trig(const double *x, double *r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double a = x[i];
    r[i] = sin(a);
    r[n + i] = cos(a);
    r[2 * n + i] = tan(a);
}
"""


def near_multiples_of_half_pi() -> list[float]:
    """The doubles nearest to k pi/2 where x - k pi/2 is smallest for |x| < 2^20 (2^-60.5 at
    k = 29, then 58, 116, ...: the worst cancellation the reduction meets), and their neighbours."""
    mp.mp.prec = 300
    out = []
    for k in (1, 2, 29, 58, 116, 232, 464, 667544):
        d = float(mp.mpf(k) * mp.pi / 2)
        out += [d, float(np.nextafter(d, 0)), -d]
    return out


def edge_inputs() -> np.ndarray:
    """Special values, the ends of each branch (2^-27, 2^20, 2^50), subnormals, signed zeros."""
    t = 2.0 ** -27
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -2.2250738585072014e-308, 1e-300,
                     t, float(np.nextafter(t, 0)), -t, 1e-8, np.pi / 4, -np.pi / 4, 0.7853981633974484,
                     np.pi, 2 * np.pi, 1.0, -1.0, 2.0 ** 20, float(np.nextafter(2.0 ** 20, 0)), 1e6, -123456.789,
                     2.0 ** 50, float(np.nextafter(2.0 ** 50, 0)), -2.0 ** 50, 1e300])


# two warps: each branch once for the emulator (the g++ test covers all of the above)
EMULATED = [np.nan, -0.0, 2.0 ** -27, 0.7853981633974484, 45.553093477052, -3.0, 1234567.25, 2.0 ** 50]


def test_sin_cos_tan_at_edges_and_near_multiples_of_half_pi_equal_the_model(qgcc, qgrun, tmp_path):
    """Each branch and the worst cancellation (k = 29), through `qgcc -o` + `qgrun` on the
    emulator: every result equals the model bit for bit (NaN canonical, -0 and subnormals kept
    by the small-argument branch, NaN from 2^50 on)."""
    x = np.array(EMULATED)
    n = x.size
    got = cli_run(qgcc, qgrun, tmp_path, TRIG, "trig", 1, 8, {"x": x, "r": np.zeros(3 * n)}, {"n": n})
    want = np.array([f(v) for f in (D.sin, D.cos, D.tan) for v in x])
    assert got["r"].view(np.uint64).tolist() == want.view(np.uint64).tolist()
    assert D.bits(D.sin(-0.0)) == D.bits(-0.0) and D.cos(5e-324) == 1.0
    assert np.isnan(D.sin(2.0 ** 50)) and not np.isnan(D.sin(float(np.nextafter(2.0 ** 50, 0))))


def accuracy_sample(rng) -> np.ndarray:
    return np.concatenate([rng.uniform(-4, 4, 80), rng.uniform(-1e3, 1e3, 40), rng.uniform(-2 ** 20, 2 ** 20, 40),
                           np.exp2(rng.uniform(-27, 20, 40)) * rng.choice([-1, 1], 40), near_multiples_of_half_pi()])


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_the_model_is_within_the_documented_bound_of_the_true_value_and_of_numpy(name):
    """For |x| < 2^20 the error is within docs/subset.md's bound (sin, cos 0.8 ulp, tan 2 ulp;
    bench/dmath_accuracy.py measures 0.74, 0.73 and 1.9 on ~14,000 arguments each) against
    mpmath at 200 bits, and numpy's (glibc's) result is at most that bound plus its own half
    ulp away."""
    x = accuracy_sample(np.random.default_rng(20))
    f, ref = getattr(D, name), getattr(np, name)
    errs = [D.ulp_error(float(f(v)), D.exact(name, float(v))) for v in x]
    assert max(errs) < BOUND[name]
    ours = np.array([f(v) for v in x])
    lib = ref(x)
    assert np.all(np.abs(ours - lib) <= (BOUND[name] + 0.5) * np.spacing(np.abs(lib)))


def test_beyond_2_to_the_20_the_error_is_half_an_ulp_of_the_argument():
    """From 2^20 to 2^50 the products k P1.. of the reduction round: as docs/subset.md says, the
    result is then sin or cos of a point within about half an ulp of x (absolute error at most
    0.51 ulp(x) plus the kernel's), no longer within the ulp bound of the result."""
    rng = np.random.default_rng(50)
    x = np.exp2(rng.uniform(20, 50, 60))
    for name in ("sin", "cos"):
        f = getattr(D, name)
        worst = max(float(abs(mp.mpf(float(f(v))) - D.exact(name, float(v))) / np.spacing(v)) for v in x)
        assert worst < 0.51


@need_gxx
def test_double_trig_library_text_built_by_gxx_equals_the_model(tmp_path):
    """dmath.cu's sin/cos/tan are valid C++ too: built by g++ (IEEE binary64, no contraction)
    they compute what the numpy model computes, bit for bit, on 3,000 arguments across the
    domains (the emulator tests show qgcc compiles the same text to the same bits)."""
    lib = Path(__file__).resolve().parents[1] / "src/qgcc/frontend/dmath.cu"
    cpp = tmp_path / "dt.cpp"
    cpp.write_text("#include <cstdio>\n#include <cstring>\n#define __device__ static\n"
                   "static double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }\n"
                   "static long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }\n"
                   + lib.read_text() + r"""
int main() {
    unsigned long long a;
    while (scanf("%llu", &a) == 1) {
        double x = __longlong_as_double((long long)a);
        for (int f = 0; f < 3; f++)
            printf("%llu\n", (unsigned long long)__double_as_longlong(__qgd_trig(x, f)));
    }
}
""")
    subprocess.run(["g++", "-O1", "-ffp-contract=off", "-o", str(tmp_path / "dt"), str(cpp)], check=True)
    rng = np.random.default_rng(6)
    x = np.concatenate([edge_inputs(), near_multiples_of_half_pi(), rng.uniform(-8, 8, 1000),
                        rng.uniform(-2 ** 20, 2 ** 20, 800),
                        np.exp2(rng.uniform(-30, 52, 1200)) * rng.choice([-1, 1], 1200)])
    out = subprocess.run([str(tmp_path / "dt")], input="\n".join(str(v) for v in x.view(np.uint64)),
                         capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in out] == [D.bits(f(v)) for v in x for f in (D.sin, D.cos, D.tan)]


@pytest.mark.slow  # about 1-2 minutes: some 130 double routine calls a lane, step by step in the network
def test_double_sin_cos_tan_in_the_network_equal_the_emulator(qgcc, qgrun, tmp_path):
    """`qgcc -o` (linked) + `qgrun --engine neural`: the layers compute the same bits as the
    emulator and the model for one warp's arguments (a worst cancellation, a negative argument,
    a subnormal, one past 2^20)."""
    x = np.array([45.553093477052, -3.0, 5e-324, 1234567.25])
    d = tmp_path / "net"
    d.mkdir()
    (d / "k.cu").write_text(TRIG)
    assert qgcc(d / "k.cu", "-o", d / "k.qg").exit_code == 0
    np.save(d / "x.npy", x)
    got = {}
    for engine in ("ref", "neural"):
        np.save(d / "r.npy", np.zeros(12))
        res = qgrun(d / "k.qg", "--engine", engine, "--grid", "1", "--block", "4", "--trace", "none",
                    "--arg", f"x=@{d / 'x.npy'}", "--arg", f"r=@{d / 'r.npy'}", "--arg", "n=4",
                    "--out", f"r={d / f'o_{engine}.npy'}")
        assert res.exit_code == 0, res.stderr
        got[engine] = np.load(d / f"o_{engine}.npy").view(np.uint64).tolist()
    assert got["neural"] == got["ref"] == [D.bits(f(v)) for f in (D.sin, D.cos, D.tan) for v in x]
