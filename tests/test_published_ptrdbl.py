"""Pointer forms and double precision as published CUDA writes them (issue 27): double struct
members and the double2/double3/double4 vector types, ...  Each kernel is compiled with
`qgcc --no-link -o k.qg`, run by `qgrun` on the emulator, and compared with an independent
model (g++ on the same text where threads do not communicate)."""

from __future__ import annotations

import numpy as np

from gxx import gxx_model, need_gxx
from test_published_constructs import cli_run

# ---------------------------------------------------------------- double members and vectors

DOUBLE_STRUCTS = r"""
struct Particle {                 // doubles first, then 4-byte members in pairs: C++ adds no padding
    double mass;
    double3 pos;
    int id, pad;
};
typedef struct { double2 v; double w; } Flux;
__device__ double3 axpy(double a, double3 x, double3 y) {
    return make_double3(a * x.x + y.x, a * x.y + y.y, a * x.z + y.z);
}
__global__ void step(Particle *ps, double3 *vel, double *energy, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle p = ps[i];               // a struct copy with double members
    double3 v = vel[i];
    p.pos = axpy(0.125, v, p.pos);     // a double3 member assigned from a double3 value
    p.mass *= 1.0 + 1.0 / (p.id + 3);
    ps[i] = p;
    Flux f;
    f.v = make_double2(p.pos.x * p.mass, p.pos.y - p.pos.z);
    f.w = f.v.x / (f.v.y + 2.5);
    double4 q = make_double4(f.v.x, f.v.y, f.w, (double)p.id);
    vel[i].x = -v.x;                  // a member of a double3 element, written in place
    energy[i] = 0.5 * p.mass * (v.x * v.x + v.y * v.y + v.z * v.z) + q.x - q.y * q.z + q.w;
}
"""

# CUDA's vector_types.h for the g++ model (qgcc has them built in)
GXX_VECTORS = r"""
struct double2 { double x, y; };
struct double3 { double x, y, z; };
struct double4 { double x, y, z, w; };
static double2 make_double2(double x, double y) { return {x, y}; }
static double3 make_double3(double x, double y, double z) { return {x, y, z}; }
static double4 make_double4(double x, double y, double z, double w) { return {x, y, z, w}; }
"""

PARTICLE = np.dtype([("mass", np.float64), ("pos", [("x", np.float64), ("y", np.float64), ("z", np.float64)]),
                     ("id", np.int32), ("pad", np.int32)])
D3 = np.dtype([("x", np.float64), ("y", np.float64), ("z", np.float64)])


@need_gxx
def test_double_struct_members_and_double_vectors_match_gxx(qgcc, qgrun, tmp_path):
    """Struct members of type double and double3, double2/3/4 locals, make_double*, a struct
    copied in and out of a buffer and a member of a double3 element written in place: every byte
    equals g++ running the same text (same operation order, IEEE binary64)."""
    rng = np.random.default_rng(27)
    n = 6
    ps = np.zeros(n, PARTICLE)
    ps["mass"] = rng.uniform(0.5, 4, n)
    for c in "xyz":
        ps["pos"][c] = rng.normal(size=n) * 10
    ps["id"] = np.arange(n) * 7 - 5
    vel = np.zeros(n, D3)
    for c in "xyz":
        vel[c] = rng.normal(size=n)
    energy = np.zeros(n, np.float64)
    got = cli_run(qgcc, qgrun, tmp_path, DOUBLE_STRUCTS, "step", 2, 4,
                  {"ps": ps, "vel": vel, "energy": energy}, {"n": n})
    want = gxx_model(tmp_path, GXX_VECTORS + DOUBLE_STRUCTS, "step", 2, 4,
                     [("ps", ps, "Particle"), ("vel", vel, "double3"), ("energy", energy), ("n", n)])
    assert got["ps"].tobytes() == want["ps"].tobytes()
    assert got["vel"].tobytes() == want["vel"].tobytes()
    assert got["energy"].tobytes() == want["energy"].tobytes()


CONSTANT_DOUBLES = r"""
#define NVAR 3
__constant__ double coef[NVAR] = {0.1, -2.5, 1e-3};
__constant__ double3 flux[1] = {{0.3333333333333333, 2.1f, -7}};   // a double3 constant from double, float, int
__constant__ double scale[2];                                // set at launch (--const)
__device__ double bias;                                      // a __device__ double: 0 until written
__global__ void init(double *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = v[i];
    v[i] = (coef[0] + x * (coef[1] + x * coef[2])) * scale[i & 1] + bias;
    v[n + i] = flux[0].x * x + flux[0].y - flux[0].z * scale[0];
}
"""


@need_gxx
def test_constant_doubles_and_constant_double_structs_match_gxx(qgcc, qgrun, tmp_path):
    """`__constant__ double` arrays and `__constant__ double3` with initialisers (each value
    converted as C converts it), one set at launch with `qgrun --const`, a `__device__ double`:
    the results equal g++ running the same text with the launch values as initialisers."""
    v = np.random.default_rng(3).normal(size=16) * 4
    v[8:] = 0
    scale = np.array([0.75, -1.0 / 7.0])
    np.save(tmp_path / "scale.npy", scale)
    got = cli_run(qgcc, qgrun, tmp_path, CONSTANT_DOUBLES, "init", 2, 4, {"v": v}, {"n": 8},
                  extra=("--const", f"scale=@{tmp_path / 'scale.npy'}"))
    model = CONSTANT_DOUBLES.replace("scale[2];", f"scale[2] = {{{scale[0].hex()}, {scale[1].hex()}}};")
    want = gxx_model(tmp_path, GXX_VECTORS + model, "init", 2, 4, [("v", v), ("n", 8)])
    assert got["v"].tobytes() == want["v"].tobytes()
    assert np.count_nonzero(got["v"]) == 16
