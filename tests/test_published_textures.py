"""Textures as published CUDA uses them (issue 27): file-scope `texture<T, N>` references and
`cudaTextureObject_t` parameters, read with tex1Dfetch, tex1D and tex2D.  There is no texture
unit: a texture is a read-only buffer bound by name (`qgrun --arg NAME=@a.npy`, whose shape gives
the width and height), and the fetches are CUDA's point sampling with unnormalised coordinates:
tex1Dfetch reads 0 outside the buffer, tex1D/tex2D clamp floor(x) into 0 .. width-1.  Each
kernel runs the way a user runs it (`qgcc -o k.qg` + `qgrun k.qg`) and every output is compared
with numpy computing CUDA's definition in the kernel's own operation order.
"""

from __future__ import annotations

import numpy as np
import pytest

import qgcc as qg_api
from frontcheck import assert_error
from test_published_constructs import cli_run

F32 = np.float32

# --------------------------------------------------------------- texture references

REFERENCES = r"""
texture<float, 1, cudaReadModeElementType> t_in;   // as rodinia binds its features
texture<float> t_bias;

__device__ float neighbour(int i) { return tex1Dfetch(t_in, i); }   // a texture read in a device function

__global__ void gather(float *out, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = neighbour(i + shift) - tex1Dfetch(t_bias, i) + tex1D(t_in, i * 0.75f - 2.5f);
}
"""


def _fetch(a: np.ndarray, i: int) -> F32:
    return a[i] if 0 <= i < a.size else F32(0)


def _clamp_floor(x: F32, w: int) -> int:
    return int(min(max(np.floor(x), 0), w - 1))


def test_texture_references_are_hidden_buffer_parameters_bound_by_name(qgcc, qgrun, tmp_path):
    """tex1Dfetch reads 0 outside the texture (CUDA's linear-memory fetch), tex1D clamps floor(x);
    a texture read inside a device function binds it to the kernel that calls it."""
    rng = np.random.default_rng(3)
    t_in = rng.standard_normal(11).astype(F32)
    t_bias = rng.standard_normal(14).astype(F32)
    n, shift = 14, -3
    d = tmp_path / "refs"
    d.mkdir()
    np.save(d / "t_in.npy", t_in)
    np.save(d / "t_bias.npy", t_bias)
    got = cli_run(qgcc, qgrun, tmp_path, REFERENCES, "gather", 2, 8, {"out": np.zeros(n, F32)},
                  scalars={"n": n, "shift": shift},
                  extra=["--arg", f"t_in=@{d / 't_in.npy'}", "--arg", f"t_bias=@{d / 't_bias.npy'}"])["out"]
    want = np.array([_fetch(t_in, i + shift) - t_bias[i] + t_in[_clamp_floor(F32(i) * F32(0.75) - F32(2.5), 11)]
                     for i in range(n)], F32)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    prog = qgcc_api_program(REFERENCES)
    params = prog.program.kernel("gather").params
    assert [(p.name, p.texture, p.words) for p in params] == [("out", 0, 1), ("n", 0, 1), ("shift", 0, 1),
                                                               ("t_in", 1, 2), ("t_bias", 1, 2)]


def qgcc_api_program(src: str):
    return qg_api.compile(src)


HEAT_2D = r"""
texture<float, 2> texIn;    // the book's heat transfer: a 2-D texture read with int coordinates

__global__ void blend(float *dst, float speed) {
    int x = threadIdx.x + blockIdx.x * blockDim.x;
    int y = blockIdx.y;
    int offset = x + y * blockDim.x * gridDim.x;
    float t = tex2D(texIn, x, y - 1);
    float l = tex2D(texIn, x - 1, y);
    float c = tex2D(texIn, x, y);
    float r = tex2D(texIn, x + 1, y);
    float b = tex2D(texIn, x, y + 1);
    dst[offset] = c + speed * (t + b + r + l - 4 * c);
}
"""


def test_tex2d_clamps_each_coordinate_to_the_edge_of_a_2d_texture(qgcc, qgrun, tmp_path):
    """A 2-D texture's width and height are the bound array's shape (H, W); tex2D(t, x, y) reads
    row clamp(floor(y)), column clamp(floor(x)), as CUDA's clamp addressing does at the borders."""
    H, W = 3, 8
    img = np.random.default_rng(5).standard_normal((H, W)).astype(F32)
    d = tmp_path / "heat"
    d.mkdir()
    np.save(d / "img.npy", img)
    prog = qgcc_api_program(HEAT_2D)
    res = prog.launch((2, H), (4,), kernel="blend", engine="ref", dst=np.zeros(H * W, F32), speed=0.25,
                      texIn=img)

    def at(x, y):
        return img[min(max(y, 0), H - 1), min(max(x, 0), W - 1)]

    want = np.zeros(H * W, F32)
    for y in range(H):
        for x in range(W):
            t, l, c, r, b = at(x, y - 1), at(x - 1, y), at(x, y), at(x + 1, y), at(x, y + 1)
            want[x + y * W] = c + F32(0.25) * ((((t + b) + r) + l) - F32(4) * c)
    assert res["dst"].view(np.uint32).tolist() == want.view(np.uint32).tolist()
    # the same through the command line
    got = cli_run(qgcc, qgrun, tmp_path, HEAT_2D, "blend", "2,3", 4, {"dst": np.zeros(H * W, F32)},
                  scalars={"speed": 0.25}, extra=["--arg", f"texIn=@{d / 'img.npy'}"])["dst"]
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


# --------------------------------------------------------------- texture objects

OBJECTS = r"""
typedef float2 fComplex;
#define LOAD_FCOMPLEX(i) tex1Dfetch<fComplex>(texComplex, i)

__global__ void sample(float *dst, cudaTextureObject_t texSrc, int w) {
    int x = threadIdx.x, y = blockIdx.x;
    float tx = (float)x + 0.5f, ty = (float)y - 0.75f;
    dst[y * w + x] = tex2D<float>(texSrc, tx * 1.5f, ty);
}

__global__ void twiddle(float *dst, cudaTextureObject_t texComplex, int n) {
    int i = threadIdx.x;
    fComplex a = LOAD_FCOMPLEX(i);
    fComplex b = LOAD_FCOMPLEX(n - 1 - i + 2);   // past the end: 0
    dst[i] = a.x * b.y - a.y * b.x;
}

__global__ void colour(float *dst, cudaTextureObject_t rgba) {
    int x = threadIdx.x, y = blockIdx.x;
    float4 p = tex2D<float4>(rgba, x + 0.25f, y - 1.0f);    // a 2-D texture of structs
    dst[y * blockDim.x + x] = p.x + p.w;
}
"""


def test_texture_objects_are_buffer_parameters_read_with_the_template_argument(qgcc, qgrun, tmp_path):
    """A cudaTextureObject_t parameter is a texture whose texel type is the fetch's template
    argument (tex2D<float>, tex1Dfetch<fComplex>): fractional coordinates are floored, structs
    are read whole, an index past the end reads a zero struct."""
    H, W = 4, 6
    img = np.random.default_rng(7).standard_normal((H, W)).astype(F32)
    prog = qgcc_api_program(OBJECTS)
    got = prog.launch(H, W, kernel="sample", engine="ref", dst=np.zeros(H * W, F32), texSrc=img, w=W)["dst"]
    want = np.zeros(H * W, F32)
    for y in range(H):
        for x in range(W):
            tx, ty = F32(x) + F32(0.5), F32(y) - F32(0.75)
            want[y * W + x] = img[_clamp_floor(ty, H), _clamp_floor(tx * F32(1.5), W)]
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    n = 5
    c = np.zeros(n, dtype=[("x", F32), ("y", F32)])
    c["x"], c["y"] = np.arange(n) * 1.5 + 1, np.arange(n) * -0.5 + 2
    d = tmp_path / "obj"
    d.mkdir()
    np.save(d / "c.npy", c)
    got = cli_run(qgcc, qgrun, tmp_path, OBJECTS, "twiddle", 1, n, {"dst": np.zeros(n, F32)},
                  scalars={"n": n}, extra=["--arg", f"texComplex=@{d / 'c.npy'}"])["dst"]
    zero = np.zeros(1, c.dtype)[0]
    want = []
    for i in range(n):
        a = c[i]
        j = n - 1 - i + 2
        b = c[j] if j < n else zero
        want.append(F32(a["x"]) * F32(b["y"]) - F32(a["y"]) * F32(b["x"]))
    assert got.view(np.uint32).tolist() == np.array(want, F32).view(np.uint32).tolist()
    rgba = np.zeros((3, 4), dtype=[("x", F32), ("y", F32), ("z", F32), ("w", F32)])
    rgba["x"], rgba["w"] = np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4) * F32(0.5)
    got = prog.launch(3, 4, kernel="colour", engine="ref", dst=np.zeros(12, F32), rgba=rgba)["dst"]
    want = [rgba[max(y - 1, 0), x]["x"] + rgba[max(y - 1, 0), x]["w"] for y in range(3) for x in range(4)]
    assert got.tolist() == want


@pytest.mark.slow
def test_a_texture_fetch_runs_inside_the_network(qgcc, qgrun, tmp_path):
    """The fetch is ordinary loads and ALU work: the compiled layers give the emulator's bits."""
    t_in = np.arange(11, dtype=F32) * F32(0.5) - F32(1)
    t_bias = np.ones(6, F32)
    d = tmp_path / "net"
    d.mkdir()
    np.save(d / "t_in.npy", t_in)
    np.save(d / "t_bias.npy", t_bias)
    extra = ["--arg", f"t_in=@{d / 't_in.npy'}", "--arg", f"t_bias=@{d / 't_bias.npy'}"]
    outs = [cli_run(qgcc, qgrun, tmp_path, REFERENCES, "gather", 1, 4, {"out": np.zeros(4, F32)},
                    scalars={"n": 4, "shift": -2}, engine=e, extra=extra)["out"] for e in ("ref", "neural")]
    assert outs[0].view(np.uint32).tolist() == outs[1].view(np.uint32).tolist()
    want = [_fetch(t_in, i - 2) - F32(1) + t_in[_clamp_floor(F32(i) * F32(0.75) - F32(2.5), 11)] for i in range(4)]
    assert outs[1].tolist() == want


# --------------------------------------------------------------- what stays outside

def test_texture_modes_without_a_model_are_named_errors():
    assert_error("texture<unsigned char, 2, cudaReadModeNormalizedFloat> t;\n__global__ void k(float *a) {}\n",
                 1, 27, "cudaReadModeNormalizedFloat is not supported (textures are read as their element "
                        "type); use cudaReadModeElementType and scale the value")
    assert_error("texture<float, 3> t;\n__global__ void k(float *a) {}\n", 1, 16,
                 "3-D textures are not supported; bind the data as a 1-D or 2-D texture, or pass a pointer and "
                 "index it")
    assert_error("__global__ void k(float *a, cudaTextureObject_t t) { a[0] = tex3D<float>(t, 0, 0, 0); }\n",
                 1, 61, "tex3D is not supported (3-D textures are not); use a 1-D or 2-D texture, or pass a "
                        "pointer and index it")
    assert_error("texture<float, 2> t;\n__global__ void k(float *a) { a[0] = tex1D(t, 0.5f); }\n", 2, 38,
                 "'tex1D' on the 2-D texture 't'; use tex2D")
    assert_error("__device__ float f(texture<float> t) { return 0; }\n", 1, 20,
                 "a texture reference is declared at file scope as 'texture<TYPE, DIMENSIONS, "
                 "cudaReadModeElementType> NAME;' (docs/subset.md, \"Textures\")")
    assert_error("texture<float, 2> t;\n__global__ void k(float *a) { a[0] = tex1Dfetch(t, 0); }\n", 2, 38,
                 "'tex1Dfetch' on the 2-D texture 't'; use tex2D")
    assert_error("__global__ void k(float *a, cudaTextureObject_t t) { a[0] = tex1Dfetch(t, 0); }\n", 1, 61,
                 "a texture object's element type is its template argument: write tex1Dfetch<float>(...)")
    assert_error("texture<double> t;\n__global__ void k(float *a) { a[0] = tex1Dfetch(t, 0); }\n", 1, 17,
                 "textures of 'double' are not supported: a texel is a 32-bit number (int, unsigned, float, "
                 "char) or a struct (float2, float4, ...) of them")
    assert_error("texture<float> t;\n__global__ void k(float *a) { a[0] = tex1Dfetch(t, 0.5f); }\n", 2, 52,
                 "a coordinate of 'tex1Dfetch' must be an integer")


def test_a_texture_argument_of_the_wrong_shape_or_dtype_is_a_usage_error(qgcc, qgrun, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "k.cu").write_text(REFERENCES)
    assert qgcc(d / "k.cu", "--no-link", "-o", d / "k.qg").exit_code == 0
    np.save(d / "two.npy", np.zeros((2, 3), F32))
    np.save(d / "ints.npy", np.zeros(3, np.int32))
    np.save(d / "ok.npy", np.zeros(3, F32))
    base = [d / "k.qg", "--engine", "ref", "--grid", "1", "--block", "1", "--arg", "out=zeros:1", "--arg", "n=1",
            "--arg", "shift=0"]
    r = qgrun(*base, "--arg", f"t_in=@{d / 'two.npy'}", "--arg", f"t_bias=@{d / 'ok.npy'}")
    assert r.exit_code == 2
    assert f"--arg t_in=@{d / 'two.npy'}: {d / 'two.npy'} has shape (2, 3); the 1-D texture 't_in' takes a " \
           f"1-D array" in r.stderr
    r = qgrun(*base, "--arg", f"t_in=@{d / 'ok.npy'}", "--arg", f"t_bias=@{d / 'ints.npy'}")
    assert r.exit_code == 2
    assert "has dtype int32, but texture 't_bias' (texture<float, 1> t_bias) needs float32" in r.stderr
    r = qgrun(*base, "--arg", f"t_in=@{d / 'ok.npy'}")
    assert r.exit_code == 2
    assert "missing --arg for 't_bias' (texture<float, 1> t_bias)" in r.stderr
