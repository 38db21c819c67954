"""bench/published_run.py, the corpus runner: its oracle, its comparison and its verdicts.

The held-out corpus lives outside the repository; these tests build a tiny corpus of our own
kernels in the published style (device code only, a manifest with a launch spec) and check that
the runner compiles it with g++ as CUDA threads, runs it through `qgcc` + `qgrun`, and says
"exact" only when every byte agrees, and "MISMATCH" (with exit code 1) otherwise.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gxx import need_gxx  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import published_run  # noqa: E402
from published_oracle import rewrite, uses_libm  # noqa: E402
from published_spec import parse_run  # noqa: E402

SCALE = """#include <cuda_runtime.h>
#define BLOCK 64
__device__ float twice(float x) { return x + x; }
__global__ void scale(const float *in, float *out, float k, int n)
{
    __shared__ float tile[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = twice(tile[blockDim.x - 1 - threadIdx.x]) * k + 0.1f;
}
__global__ void wave(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sinf(0.25f * i);
}
"""


def corpus(tmp: Path, runs: list[dict], text: str = SCALE) -> Path:
    (tmp / "files").mkdir()
    (tmp / "files" / "scale.cu").write_text(text)
    (tmp / "manifest.json").write_text(json.dumps([{"file": "files/scale.cu", "source": "ours", "runs": runs}]))
    return tmp


def run(root: Path) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = published_run.main(["--corpus", str(root), "--no-neural"])
    return code, out.getvalue().splitlines()


SPEC = {"kernel": "scale", "grid": [2], "block": [64], "args": ["in:float[128]=rand", "out:float[128]", "k:float=1.5", "n=100"]}


@need_gxx
def test_a_kernel_that_qgcc_runs_right_is_exact_and_the_exit_code_is_zero(tmp_path):
    code, lines = run(corpus(tmp_path, [SPEC]))
    assert code == 0, lines
    assert any(ln.startswith("exact ") and "scale<<<2,1,1; 64,1,1>>>" in ln for ln in lines), lines
    assert lines[-1] == "1 runnable, 1 exact on the emulator, 0 exact in the network (of 0), 0 mismatches"


@need_gxx
def test_a_byte_that_differs_from_the_oracle_is_a_mismatch_and_fails_the_run(tmp_path, monkeypatch):
    real = published_run.qgrun

    def off_by_one_ulp(*args, **kw):
        side = real(*args, **kw)
        side.bufs["out"] = side.bufs["out"].copy()
        side.bufs["out"].view(np.uint32)[7] += 1
        return side

    monkeypatch.setattr(published_run, "qgrun", off_by_one_ulp)
    code, lines = run(corpus(tmp_path, [SPEC]))
    assert code == 1
    assert any(ln.startswith("MISMATCH") and "out[7]" in ln for ln in lines), lines


@need_gxx
def test_a_kernel_calling_sinf_is_reported_apart_as_libm_dependent(tmp_path):
    spec = {"kernel": "wave", "grid": [1], "block": [32], "args": ["out:float[32]", "n=32"]}
    code, lines = run(corpus(tmp_path, [SPEC, spec]))
    assert code == 0, lines
    assert any("libm-dependent: sinf" in ln and "wave<<<" in ln for ln in lines), lines
    assert not any("libm-dependent" in ln and "scale<<<" in ln for ln in lines), lines


def test_a_skipped_launch_is_reported_with_its_reason_and_not_counted_runnable(tmp_path):
    code, lines = run(corpus(tmp_path, [{"skip": "512 threads a block"}]))
    assert any(ln.startswith("cannot run") and "512 threads a block" in ln for ln in lines), lines
    assert lines[-1].startswith("0 runnable")


GAIN = """#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__constant__ float gain;
__global__ void amplify(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * gain + 0.5f;
}
__global__ void tileSum(const int *in, int *out)
{
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    int v = in[threadIdx.x];
    for (int d = 16; d > 0; d /= 2) v += tile.shfl_down(v, d);
    if (tile.thread_rank() == 0) out[threadIdx.x / 32] = v;
}
"""


@need_gxx
def test_a_scalar_constant_takes_its_value_from_the_spec_on_both_sides(tmp_path):
    spec = {"kernel": "amplify", "grid": [1], "block": [32], "consts": ["gain:float=0.3"],
            "args": ["x:float[32]=rand", "n=32"]}
    assert not parse_run(spec).consts[0].is_buffer
    code, lines = run(corpus(tmp_path, [spec], GAIN))
    assert code == 0, lines
    assert lines[-1] == "1 runnable, 1 exact on the emulator, 0 exact in the network (of 0), 0 mismatches", lines


@need_gxx
def test_a_shuffle_over_a_tile_wider_than_the_oracles_warp_stops_only_its_own_launch(tmp_path):
    amplify = {"kernel": "amplify", "grid": [1], "block": [32], "consts": ["gain:float=2"],
               "args": ["x:float[32]=rand", "n=32"]}
    wide = {"kernel": "tileSum", "grid": [1], "block": [64], "args": ["in:int[64]=rand", "out:int[2]"]}
    code, lines = run(corpus(tmp_path, [amplify, wide], GAIN))
    assert code == 0, lines
    assert any(ln.startswith("cannot run") and "tileSum<<<" in ln and "thread_block_tile wider" in ln
               for ln in lines), lines
    assert lines[-1].startswith("1 runnable, 1 exact on the emulator"), lines


def test_dynamic_shared_arrays_become_static_cells_for_the_oracle():
    assert rewrite("extern __shared__ float s[];") == "static float s[4096];"
    assert rewrite("extern float __shared__ smem[];") == "static float smem[4096];"
    assert rewrite('extern "C" void f(int a[]);') == 'extern "C" void f(int a[]);'


def test_libm_use_is_traced_through_the_functions_a_kernel_calls(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text("__device__ float g(float x) { return __expf(x); }\n"
                 "__global__ void a(float *p) { for (int i = 0; i < 2; i++) { p[i] = g(p[i]); } }\n"
                 "__global__ void b(float *p) { if (p) { p[0] = 1.0f; } }\n")
    assert uses_libm([f], "a") == ["__expf"]
    assert uses_libm([f], "b") == []


def test_libm_use_is_traced_through_template_calls_and_explicit_specialisations(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text("template <typename T> __device__ T inv(T x) { return 1 / x; }\n"
                 "template <> __device__ float inv<float>(float x) { return rsqrtf(x * x); }\n"
                 "template <typename T> __device__ T pull(T a) { return inv<T>(a); }\n"
                 "template <typename T> __global__ void k(T *p) { p[0] = pull<T>(p[0]); }\n")
    assert uses_libm([f], "k<float>") == ["rsqrtf"]


def test_a_spec_reads_buffers_scalars_and_vector_types():
    r = parse_run({"kernel": "k", "grid": [2, 3], "block": 64,
                   "args": ["p:float4[8]=rand", "n=5", "x:float=0.5", "q:uint[3]=vals(1,2)"]})
    assert r.grid == (2, 3, 1) and r.block == (64, 1, 1)
    assert [a.is_buffer for a in r.args] == [True, False, False, True]
    assert r.args[0].lanes == 4 and r.args[0].np_dtype.itemsize == 16
    with pytest.raises(ValueError):
        parse_run({"kernel": "k", "grid": 1, "block": 1, "args": ["p:widget[3]"]})


SAMPLED = """#include <cuda_runtime.h>
#include <stdio.h>
#include <assert.h>
texture<float, 2, cudaReadModeElementType> img;
texture<int> lut;
__global__ void sample(float *out, int w, int h)
{
    int x = threadIdx.x + blockIdx.x * blockDim.x;
    int y = threadIdx.y + blockIdx.y * blockDim.y;
    int i = x + y * w;
    // the neighbours past the edge clamp; the lookup past its end reads 0
    out[i] = tex2D(img, x - 1, y + 1) + tex2D(img, x + 0.75f, y - 2.5f) + (float)tex1Dfetch(lut, i - 3);
    if (x == 0 && y < 2)
        printf("row %d: %f %5.2e|%x\\n", y, out[i], out[i], tex1Dfetch(lut, y));
}
__global__ void through_object(float *out, int n, cudaTextureObject_t src)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(src, i + 5) * 2.0f;  // the last five read 0
}
__global__ void guarded(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(i < n);
    out[i] = i;
}
"""


def test_textures_are_bound_by_name_and_printf_lines_are_compared(tmp_path):
    need_gxx()
    spec = {"kernel": "sample", "grid": [2, 1], "block": [8, 6], "args": ["out:float[96]", "w=16", "h=6"],
            "textures": ["img:float[6x16]=rand", "lut:int[64]=rand"]}
    code, lines = run(corpus(tmp_path, [spec], SAMPLED))
    assert code == 0, lines
    assert any(ln.startswith("exact") and "sample<<<" in ln and "2 printf lines equal" in ln for ln in lines), lines


def test_a_texture_read_with_another_clamp_rule_is_a_mismatch(tmp_path, monkeypatch):
    need_gxx()
    import published_oracle

    wrong = published_oracle.EXTRA.replace("return f >= (float)(n - 1) ? n - 1 : (int)f;", "return (int)f % n;")
    monkeypatch.setattr(published_oracle, "EXTRA", wrong)
    spec = {"kernel": "sample", "grid": [2, 1], "block": [8, 6], "args": ["out:float[96]", "w=16", "h=6"],
            "textures": ["img:float[6x16]=rand", "lut:int[64]=rand"]}
    code, lines = run(corpus(tmp_path, [spec], SAMPLED))
    assert code == 1 and any(ln.startswith("MISMATCH") and "out[" in ln for ln in lines), lines


def test_a_failing_device_assert_must_stop_both_sides(tmp_path):
    need_gxx()
    spec = {"kernel": "guarded", "grid": [2], "block": [32], "args": ["out:int[64]", "n=60"]}
    code, lines = run(corpus(tmp_path, [spec, dict(spec, args=["out:int[64]", "n=64"])], SAMPLED))
    assert code == 0, lines
    assert sum(ln.startswith("exact") and "guarded<<<" in ln for ln in lines) == 2, lines
    assert any("both stop on the failing assert" in ln for ln in lines), lines


def test_a_texture_object_parameter_is_bound_by_its_name_from_the_textures(tmp_path):
    need_gxx()
    spec = {"kernel": "through_object", "grid": [2], "block": [32], "args": ["out:float[64]", "n=64", "src"],
            "textures": ["src:float[64]=rand"]}
    code, lines = run(corpus(tmp_path, [spec], SAMPLED))
    assert code == 0 and any(ln.startswith("exact") and "through_object<<<" in ln for ln in lines), lines


NAMESPACED = """namespace img {
class Timer {                                   // host-side, as dwt2d's tester: never called by a kernel
    cudaEvent_t start;
    std::vector<float> laps;
public:
    void lap() {
        float t;
        cudaEventRecord(start, 0);
        cudaEventElapsedTime(&t, start, start);
        laps.push_back(t);
        std::sort(laps.begin(), laps.end());
    }
};
template <int W>
__global__ void twice(const int *in, int *out, int n)
{
    int i = blockIdx.x * W + threadIdx.x;
    if (i < n) out[i] = in[i] * 2 + 1;
}
}
"""


@need_gxx
def test_a_kernel_in_a_namespace_beside_a_host_class_runs_exactly(tmp_path):
    """The spec names the kernel as C++ calls it (`img::twice<32>`), qgcc as it names it (`twice<32>`);
    the oracle builds with a host class that uses the runtime's events, std::vector and std::sort."""
    spec = {"kernel": "img::twice<32>", "grid": [2], "block": [32], "instantiate": ["twice<32>"],
            "args": ["in:int[64]=rand", "out:int[64]", "n=60"]}
    code, lines = run(corpus(tmp_path, [spec], NAMESPACED))
    assert code == 0, lines
    assert lines[-1] == "1 runnable, 1 exact on the emulator, 0 exact in the network (of 0), 0 mismatches", lines


def run_args(root: Path, *args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = published_run.main(["--corpus", str(root), *args])
    return code, out.getvalue().splitlines()


def two_files(tmp: Path) -> Path:
    (tmp / "files").mkdir()
    (tmp / "files" / "a.cu").write_text(SCALE)
    (tmp / "files" / "b.cu").write_text(SCALE.replace("+ 0.1f", "- 0.25f"))
    spec = dict(SPEC, args=["in:float[128]=rand", "out:float[128]", "k:float=1.5", "n=128"])
    (tmp / "manifest.json").write_text(json.dumps([{"file": "files/a.cu", "runs": [SPEC]},
                                                   {"file": "files/b.cu", "runs": [spec, {"skip": "too wide"}]}]))
    return tmp


@pytest.mark.slow
def test_files_checked_by_worker_processes_print_what_one_process_prints_in_file_order(tmp_path):
    need_gxx()
    root = two_files(tmp_path)
    one = run_args(root, "--no-neural", "--cache", str(tmp_path / "c1"))
    two = run_args(root, "--no-neural", "--jobs", "2", "--cache", str(tmp_path / "c1"))
    assert one == two and one[0] == 0
    assert [ln.split("files/")[1].split()[0] for ln in one[1] if ln.startswith("exact")] == ["a.cu", "b.cu"], one
    assert run_args(root, "--no-neural", "--from", "b.cu")[1][-1].startswith("1 runnable")


@pytest.mark.slow
def test_neural_all_runs_every_runnable_launch_in_the_network_and_a_network_scale_spec_replaces_a_long_one(
        tmp_path, monkeypatch):
    need_gxx()
    root = two_files(tmp_path)
    scale = tmp_path / "netscale.json"
    scale.write_text(json.dumps({"files/b.cu": {"0": {"grid": [1], "why": "one block"}}}))
    monkeypatch.setattr(published_run, "NETSCALE", scale)
    code, lines = run_args(root, "--neural", "all", "--cache", "")
    assert code == 0, lines
    assert any(ln.startswith("exact, network exact files/a.cu") for ln in lines), lines
    assert any("files/b.cu" in ln and "network exact at scale<<<1,1,1; 64,1,1>>> (one block)" in ln for ln in lines), lines
    assert lines[-1] == "2 runnable, 2 exact on the emulator, 2 exact in the network (of 2), 0 mismatches"
    code, lines = run_args(root, "--neural", "all", "--max-net-steps", "10", "--cache", "")
    assert code == 0 and "2 runnable launches too long for the network here" in lines[-2], lines
