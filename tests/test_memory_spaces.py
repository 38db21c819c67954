"""The memory spaces real kernels declare (issue 12): `extern __shared__` and `__constant__`.

`extern __shared__ T a[];` is CUDA's dynamic shared memory: its size is the launch's third
parameter (`qgrun --shared BYTES`), every such array starts where the kernel's static
`__shared__` variables end, and the static and dynamic cells together must fit the
per-block limit of the MachineSpec.  `__constant__` variables are read-only global cells
that the launcher fills from the source's initialisers or from values given at launch.

The kernels are written for these tests in the style of the CUDA samples (a tree reduction
with `extern __shared__ int sdata[]`, a separable convolution with `__constant__ float
c_Kernel[]`); each result is compared with a numpy model of the same C semantics, and one
launch using both spaces runs through the compiled network step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

from qgcc.spec import SPEC
from qgcc.diagnostics import UsageError
from qgcc.frontend import compile_source
from qgcc.ref.emulator import run as emulate
from qgcc.trace import MemoryFault
from qgcc.runtime.launch import make_launch
from frontcheck import assert_error

F32 = np.float32


def launch_ref(src, grid, block, scalars, arrays, **kw):
    prog = compile_source(src, "t.cu")
    k = prog.kernel(None)
    launch = make_launch(prog, k, (grid, 1, 1), (block, 1, 1), scalars, arrays, **kw)
    res = emulate(launch, max_steps=400_000)
    return {n: launch.read_buffer(res.memory, n) for n in launch.buffers}


# ------------------------------------------------------------------ extern __shared__

REDUCE = r"""
extern __shared__ int sdata[];

__global__ void reduce_sum(const int *g_idata, int *g_odata, unsigned int n) {
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    int mySum = (i < n) ? g_idata[i] : 0;
    if (i + blockDim.x < n)
        mySum += g_idata[i + blockDim.x];
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        g_odata[blockIdx.x] = mySum;
}
"""


def test_a_reduction_sizes_its_file_scope_extern_shared_array_at_launch():
    """The block size is only known at launch, so the shared array's size is the launch's."""
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, 45).astype(np.int32)
    out = launch_ref(REDUCE, 3, 8, {"n": 45}, {"g_idata": x, "g_odata": np.zeros(3, np.int32)},
                     shared_bytes=8 * 4)
    want = [int(x[b * 16:(b + 1) * 16].sum()) for b in range(3)]
    assert out["g_odata"].tolist() == want


MIXED = r"""
__device__ float half_of(float v) {
    extern __shared__ float scratch[];   // the same dynamic array, declared in a device function
    scratch[threadIdx.x] = v * 0.5f;
    return v;
}

__global__ void mixed(float *data, unsigned *bits, int *check) {
    __shared__ int stat[5];
    extern __shared__ float fbuf[];
    extern __shared__ unsigned ubuf[];
    int t = threadIdx.x;
    stat[t % 5] = -1 - t % 5;
    half_of(data[t]);
    __syncthreads();
    bits[t] = ubuf[t];                  // the cells fbuf wrote, seen as unsigned
    check[t] = stat[t % 5];             // untouched: the dynamic cells follow the static ones
    data[t] = fbuf[blockDim.x - 1 - t];
}
"""


def test_extern_shared_arrays_alias_one_base_after_the_static_shared_cells():
    """CUDA's layout: every extern __shared__ declaration names the same cells, which begin
    after the kernel's static __shared__ variables (here 5 cells)."""
    prog = compile_source(MIXED, "t.cu")
    assert prog.kernels[0].shared_words == 5
    d = np.array([1.5, -3.0, 7.25, 1e-40, 3.0, 0.1, -0.0, 8.0], F32)
    out = launch_ref(MIXED, 1, 8, {}, {"data": d.copy(), "bits": np.zeros(8, np.uint32),
                                       "check": np.zeros(8, np.int32)}, shared_bytes=32)
    halves = d * F32(0.5)
    assert out["bits"].tolist() == halves.view(np.uint32).tolist()
    assert out["check"].tolist() == [-1 - t % 5 for t in range(8)]
    assert out["data"].view(np.uint32).tolist() == halves[::-1].view(np.uint32).tolist()


def test_static_and_dynamic_shared_memory_share_the_per_block_limit():
    prog = compile_source(MIXED, "t.cu")
    k = prog.kernels[0]
    args = {"data": np.zeros(8, F32), "bits": np.zeros(8, np.uint32), "check": np.zeros(8, np.int32)}
    S = SPEC.shared_words
    ok = make_launch(prog, k, (1, 1, 1), (8, 1, 1), {}, args, shared_bytes=(S - 5) * 4)
    assert ok.shared_words == S
    with pytest.raises(UsageError) as info:
        make_launch(prog, k, (1, 1, 1), (8, 1, 1), {}, args, shared_bytes=(S - 4) * 4)
    assert str(info.value) == (f"--shared {(S - 4) * 4}: kernel 'mixed' would use 5 static + {S - 4} dynamic = "
                               f"{S + 1} shared cells per block; the machine has {S} ({S * 4} bytes); give "
                               f"--shared at most {(S - 5) * 4}")


def test_an_access_past_the_dynamic_size_is_an_out_of_bounds_fault():
    with pytest.raises(MemoryFault) as info:
        launch_ref(REDUCE, 1, 8, {"n": 16}, {"g_idata": np.ones(16, np.int32), "g_odata": np.zeros(1, np.int32)},
                   shared_bytes=7 * 4)
    assert "shared cells 0x10000..0x10006" in str(info.value)


# ------------------------------------------------------------------ __constant__

CONV = r"""
#define KERNEL_RADIUS 2
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)

__constant__ float c_Kernel[KERNEL_LENGTH] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
__constant__ int c_pairs[][2] = {{0, 1}, {2, 3}, {-1, 7}};
__constant__ int c_flat[2][3] = {1, 2, 3, 4};
__constant__ unsigned char c_lut[4] = {255, 1, 2, 300};
__constant__ char c_signed[] = {-5, 130};
__constant__ float c_scale = 2;
__constant__ float c_shift = 0.1;
__constant__ int c_count;

__global__ void convolutionRows(const float *d_Src, float *d_Dst, int *aux, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0.0f;
#pragma unroll
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; k++) {
        int j = i + k;
        if (j >= 0 && j < n)
            sum += d_Src[j] * c_Kernel[KERNEL_RADIUS - k];
    }
    d_Dst[i] = sum * c_scale + c_shift;
    const int *row = c_pairs[i % 3];
    aux[i] = row[i % 2] * 1000 + c_flat[i % 2][i % 3] * 100 + c_lut[i % 4] + c_signed[i % 2] + c_count;
}
"""


def conv_model(src, kern, scale, shift, pairs, flat, lut, signed, count):
    n = len(src)
    dst = np.zeros(n, F32)
    aux = np.zeros(n, np.int64)
    for i in range(n):
        s = F32(0)
        for k in range(-2, 3):
            if 0 <= i + k < n:
                s = F32(s + F32(src[i + k] * kern[2 - k]))
        dst[i] = F32(F32(s * scale) + shift)
        aux[i] = (int(pairs[i % 3][i % 2]) * 1000 + int(flat[i % 2][i % 3]) * 100 + int(lut[i % 4])
                  + int(signed[i % 2]) + count)
    return dst, aux.astype(np.int32)


DEFAULTS = dict(kern=np.array([0.0625, 0.25, 0.375, 0.25, 0.0625], F32), scale=F32(2), shift=F32(0.1),
                pairs=[[0, 1], [2, 3], [-1, 7]], flat=[[1, 2, 3], [4, 0, 0]],
                lut=[255, 1, 2, 300 % 256], signed=[-5, 130 - 256], count=0)


def run_conv(x, **constants):
    return launch_ref(CONV, 2, 4, {"n": len(x)}, {"d_Src": x, "d_Dst": np.zeros(len(x), F32),
                                                 "aux": np.zeros(len(x), np.int32)}, constants=constants)


def test_constant_initialisers_follow_cs_conversions_and_layouts():
    """Brace lists (flat or nested, sizes from the list), zero fill, an int and an unsuffixed
    double converted to float once, chars wrapped to 8 bits, a scalar without initialiser 0."""
    x = np.random.default_rng(2).normal(size=7).astype(F32)
    out = run_conv(x)
    dst, aux = conv_model(x, **DEFAULTS)
    assert out["d_Dst"].view(np.uint32).tolist() == dst.view(np.uint32).tolist()
    assert out["aux"].tolist() == aux.tolist()


def test_constants_set_at_launch_replace_the_initialisers():
    x = np.random.default_rng(3).normal(size=8).astype(F32)
    kern = np.random.default_rng(4).normal(size=5).astype(F32)
    out = run_conv(x, c_Kernel=kern, c_count=np.array(-77, np.int32), c_lut=np.array([9, 8, 7, 6], np.uint8))
    dst, aux = conv_model(x, **{**DEFAULTS, "kern": kern, "count": -77, "lut": [9, 8, 7, 6]})
    assert out["d_Dst"].view(np.uint32).tolist() == dst.view(np.uint32).tolist()
    assert out["aux"].tolist() == aux.tolist()


@pytest.mark.parametrize("name, value, message", [
    ("c_Kernel", np.zeros(4, F32), "--const c_Kernel: __constant__ float c_Kernel[5] needs 5 float32 values; "
                                   "got float32 of shape (4,)"),
    ("c_lut", np.zeros(4, np.int32), "--const c_lut: __constant__ unsigned char c_lut[4] needs 4 uint8 values; "
                                     "got int32 of shape (4,)"),
    ("c_nope", np.zeros(1, F32), "--const c_nope: the program has no __constant__ variable 'c_nope' (it has: "
                                 "c_Kernel, c_pairs, c_flat, c_lut, c_signed, c_scale, c_shift, c_count)"),
])
def test_launch_values_of_constants_are_checked(name, value, message):
    with pytest.raises(UsageError) as info:
        run_conv(np.zeros(4, F32), **{name: value})
    assert str(info.value) == message


@pytest.mark.parametrize("src, line, col, message", [
    ("__constant__ int c[2];\n__global__ void k(int *a) { c[0] = 1; }\n", 2, 29,
     "cannot assign to read-only memory (through 'const int[2]')"),
    ("__constant__ int c;\n__global__ void k(int *a) { c++; }\n", 2, 29, "cannot increment const variable 'c'"),
    ("__constant__ int c[2] = {1, 2, 3};\n__global__ void k(int *a) {}\n", 1, 32,
     "too many initialisers for 'c' (3 for 2)"),
    ("__constant__ int c = threadIdx.x;\n__global__ void k(int *a) {}\n", 1, 32,
     "the initialiser of __constant__ 'c' is not a compile-time constant"),
    ("__global__ void k(int *a) { __constant__ int c = 1; }\n", 1, 29,
     "__constant__ variables must be declared at file scope"),
    ("__constant__ int *p;\n__global__ void k(int *a) {}\n", 1, 19,
     "__constant__ pointers are not supported; declare a __constant__ array or scalar"),
    # (a host `extern int x;` that no kernel reads is host code, left out as nvcc's device pass does)
    ("extern int x;\n__global__ void k(int *a) { a[0] = x; }\n", 1, 1,
     "'extern' is not supported (only 'extern __shared__' arrays and 'extern \"C\"')"),
    ("__global__ void k(int *a) {\n  extern __shared__ int s[16];\n}\n", 2, 25,
     "extern __shared__ 's' must be a 1-D array of unknown size ('s[]'); its size is set at launch "
     "(qgrun --shared BYTES)"),
    ("extern __shared__ int s[];\nextern __shared__ float s[];\n__global__ void k(int *a) {}\n", 2, 25,
     "redefinition of 's' (previously declared on line 1)"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 3 else None)
def test_misuses_of_the_memory_spaces_are_named(src, line, col, message):
    assert_error(src, line, col, message)


# ------------------------------------------------------------------ files, command line, API

def test_constants_survive_qg_files_and_qsass(tmp_path):
    from qgcc import qgfile
    from qgcc.asm.assembler import assemble
    from qgcc.asm.disassembler import disassemble

    prog = compile_source(CONV, "conv.cu")
    qgfile.save(prog, tmp_path / "c.qg")
    back = qgfile.load(tmp_path / "c.qg").program
    assert back.constants == prog.constants
    again = assemble(disassemble(prog), "c.qsass")
    assert again.constants == prog.constants


def test_qgrun_takes_shared_and_const(tmp_path, qgrun, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.cu").write_text(REDUCE + "\n__constant__ int c_k[2] = {5, 6};\n")
    x = np.arange(16, dtype=np.int32)
    np.save("x.npy", x)
    np.save("k.npy", np.array([1, 2], np.int32))
    base = ["r.cu", "--grid", "1", "--block", "8", "--arg", "g_idata=@x.npy", "--arg", "g_odata=zeros:1",
            "--arg", "n=16", "--engine", "ref", "--trace", "none"]
    r = qgrun(*base, "--shared", "32", "--const", "c_k=@k.npy", "--out", "g_odata=o.npy")
    assert r.exit_code == 0, r.output
    assert np.load("o.npy").tolist() == [int(x.sum())]
    over = SPEC.shared_words + 1
    r = qgrun(*base, "--shared", str(over * 4))
    assert r.exit_code == 2 and f"--shared {over * 4}: kernel 'reduce_sum' would use 0 static + {over} dynamic" \
        in r.output
    r = qgrun(*base, "--shared", "32", "--const", "c_k=@x.npy")
    assert r.exit_code == 2 and "--const c_k: __constant__ int c_k[2] needs 2 int32 values" in r.output
    (tmp_path / "b.jsonl").write_text(
        '{"grid": 1, "block": 8, "args": {"g_idata": "@x.npy", "g_odata": "zeros:1", "n": 16}, '
        '"shared": 32, "consts": {"c_k": "@k.npy"}, "outs": {"g_odata": "b.npy"}}\n')
    r = qgrun("r.cu", "--batch", "b.jsonl", "--engine", "ref", "--trace", "none")
    assert r.exit_code == 0, r.output
    assert np.load("b.npy").tolist() == [int(x.sum())]


def test_the_python_api_takes_shared_and_constants():
    import qgcc

    prog = qgcc.compile(REDUCE + "\n__constant__ int c_off = 3;\n")
    x = np.arange(10, dtype=np.int32)
    res = prog.launch(1, 8, g_idata=x, g_odata=np.zeros(1, np.int32), n=10, shared=32,
                      constants={"c_off": 4}, engine="ref")
    assert res["g_odata"].tolist() == [45]
    out = np.zeros(1, np.int32)
    prog.reduce_sum[1, 8, 32](x, out, 10, engine="ref", constants={"c_off": 4})  # <<<1, 8, 32>>>
    assert out.tolist() == [45]
    with pytest.raises(UsageError) as info:
        prog.launch(1, 8, g_idata=x, g_odata=out, n=10, shared=-1, engine="ref")
    assert str(info.value) == "shared=-1: expected a number of bytes >= 0"


# ------------------------------------------------------------------ in the network

NET = r"""
__constant__ int c_weights[4] = {3, -1, 4, 10};

__global__ void weighted_rotate(const int *in, int *out) {
    extern __shared__ int tile[];
    __shared__ int bias[1];
    int t = threadIdx.x;
    if (t == 0) bias[0] = 100;
    tile[t] = in[t] * c_weights[t];
    __syncthreads();
    out[t] = tile[(t + 1) % blockDim.x] + bias[0];
}
"""


def test_the_network_loads_constants_and_sizes_dynamic_shared_memory():
    """Both spaces change what the launcher loads (global cells below the buffers, the shared
    size the network bounds-checks against); the layers must agree with the emulator."""
    from lockstep import both

    x = np.array([7, -2, 5, 1], np.int32)
    w = np.array([2, 3, -4, 6], np.int32)
    outs, _ = both("memory_spaces", (1, 1, 1), (4, 1, 1), {}, {"in": x, "out": np.zeros(4, np.int32)},
                   source=NET, max_steps=3000, shared_bytes=16, constants={"c_weights": w})
    prod = x * w
    assert outs["out"].tolist() == [int(prod[(t + 1) % 4]) + 100 for t in range(4)]


NULL_CHECKS = r"""
#include <cstddef>
__constant__ int c_k[2] = {5, 6};
__device__ int d_v;
__global__ void nulls(const int *first, int *out) {
    int local[2] = {threadIdx.x, 1};
    out[0] = first != NULL;
    out[1] = first ? 7 : 9;
    out[2] = &c_k[0] != 0;
    out[3] = &d_v != 0;
    out[4] = local != 0;
    out[5] = !out;
    const int *none = nullptr;
    out[6] = none == NULL;
    out[7] = first != nullptr && none == 0;
}
"""


def test_no_object_is_at_address_0_so_a_null_pointer_differs_from_every_pointer(tmp_path, qgcc, qgrun,
                                                                                 monkeypatch):
    """As in CUDA, `p != NULL` for a pointer to a buffer (the first one too), a __constant__ or
    __device__ variable or a local array: the compiler keeps cells 0 and 1 for itself (the null
    guard).  `nullptr` is the null pointer constant.  Through `qgcc -o` and `qgrun` on the network
    and on the emulator; the guard is not a constant a user can set."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nulls.cu").write_text(NULL_CHECKS)
    prog = compile_source(NULL_CHECKS, "nulls.cu")
    launch = make_launch(prog, prog.kernels[0], (1, 1, 1), (1, 1, 1), {},
                         {"first": np.zeros(2, np.int32), "out": np.zeros(8, np.int32)})
    assert launch.buffers["first"].base > 0
    want = [1, 7, 1, 1, 1, 0, 1, 1]
    assert launch.read_buffer(emulate(launch).memory, "out").tolist() == want
    assert qgcc("nulls.cu", "-o", "nulls.qg").exit_code == 0
    run = ["nulls.qg", "--grid", "1", "--block", "1", "--arg", "first=zeros:2", "--arg", "out=zeros:8",
           "--trace", "none"]
    for engine in ("neural", "ref"):
        r = qgrun(*run, "--engine", engine, "--out", f"out={engine}.npy")
        assert r.exit_code == 0, r.output
        assert np.load(f"{engine}.npy").tolist() == want, engine
    r = qgrun(*run, "--engine", "ref", "--const", "__qg_null=0")
    assert r.exit_code == 2 and "no __constant__ variable '__qg_null' (it has: c_k, d_v)" in r.output


OPTIONAL_BIAS = r"""
__global__ void axpb(const float *x, const float *bias, float *y, int n) {
    int i = threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + (bias ? bias[i] : 0.5f);
}
"""


def test_a_null_pointer_argument_reaches_the_kernel_as_null_from_qgrun_batches_and_python(tmp_path, qgcc, qgrun,
                                                                                          monkeypatch):
    """`--arg bias=null` (a kernel's optional input): the kernel takes its null branch on the
    network and on the emulator, `"null"` and JSON null in --batch lines, `None` in Python; a null
    argument has no buffer to --out, and a program that keeps an object at address 0 refuses it."""
    import json

    import qgcc as api

    monkeypatch.chdir(tmp_path)
    (tmp_path / "axpb.cu").write_text(OPTIONAL_BIAS)
    np.save("x.npy", np.arange(4, dtype=np.float32))
    np.save("b.npy", np.full(4, 10, np.float32))
    assert qgcc("axpb.cu", "-o", "axpb.qg").exit_code == 0
    run = ["axpb.qg", "--grid", "1", "--block", "4", "--arg", "x=@x.npy", "--arg", "y=zeros:4", "--arg", "n=4",
           "--trace", "none"]
    for engine, bias, want in (("neural", "null", [0.5, 2.5, 4.5, 6.5]), ("ref", "null", [0.5, 2.5, 4.5, 6.5]),
                               ("neural", "@b.npy", [10, 12, 14, 16])):
        r = qgrun(*run, "--engine", engine, "--arg", f"bias={bias}", "--out", "y=y.npy")
        assert r.exit_code == 0, r.output
        assert np.load("y.npy").tolist() == want, (engine, bias)
    r = qgrun(*run, "--engine", "ref", "--arg", "bias=null", "--out", "bias=b2.npy")
    assert r.exit_code == 2 and "--out 'bias': parameter 'bias' was given null" in r.output
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(
        {"grid": 1, "block": 4, "args": {"x": "@x.npy", "bias": bias, "y": "zeros:4", "n": 4},
         "outs": {"y": f"y{i}.npy"}}) + "\n" for i, bias in enumerate(("null", None))))
    r = qgrun("axpb.qg", "--batch", "b.jsonl", "--engine", "ref", "--trace", "none")
    assert r.exit_code == 0, r.output
    assert np.load("y0.npy").tolist() == np.load("y1.npy").tolist() == [0.5, 2.5, 4.5, 6.5]
    prog = api.load(tmp_path / "axpb.qg")
    y = np.zeros(4, np.float32)
    res = prog.launch(1, 4, x=np.arange(4, dtype=np.float32), bias=None, y=y, n=4, engine="ref")
    assert res["y"].tolist() == [0.5, 2.5, 4.5, 6.5] and "bias" not in res.outputs
    prog.axpb[1, 4](np.arange(4, dtype=np.float32), None, y, 4, engine="ref")
    assert y.tolist() == [0.5, 2.5, 4.5, 6.5]
    assert qgcc("axpb.cu", "-S", "-o", "axpb.qsass").exit_code == 0  # the same program without the guard
    text = (tmp_path / "axpb.qsass").read_text()
    assert ".const unsigned __qg_null[2] 0x0, 0x0\n" in text
    (tmp_path / "old.qsass").write_text(text.replace(".const unsigned __qg_null[2] 0x0, 0x0\n", ""))
    assert qgcc("old.qsass", "-o", "old.qg", "--no-link").exit_code == 0
    r = qgrun("old.qg", *run[1:], "--engine", "ref", "--arg", "bias=null")
    assert r.exit_code == 2 and "--arg bias=null: this program has an object at address 0" in r.output
