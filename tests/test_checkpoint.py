"""`qgcc KERNEL.cu --base DIR -o OUTDIR`: a kernel linked into a real Qwen3.5 checkpoint.

The base is built here with transformers' own classes at Qwen3.5-2B text geometry (two
random layers, one of each mixer, a 512-token vocabulary and a one-block vision tower)
and saved with `save_pretrained`, once sharded with 16 value heads and once as one file
with 32 value heads (as some published Qwen3.5 configs have; the machine adapts).  The patched
checkpoint must keep every original tensor byte for byte, load in transformers with no
missing, unexpected or mismatched key, compute what the base computes in the original
layers, and run the kernel under `qgrun` exactly as the reference emulator does.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

VADD = """\
__global__ void vadd(const int *a, const int *b, int *c, int n) {
    int i = threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
BASE_LAYERS = 2
MACHINE_LAYERS = 18
PREFIX = "model.language_model."


def tiny_config(value_heads: int):
    from transformers import Qwen3_5Config

    return Qwen3_5Config(
        text_config=dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=BASE_LAYERS,
                         layer_types=["linear_attention", "full_attention"], linear_num_key_heads=16,
                         linear_num_value_heads=value_heads, linear_key_head_dim=128, linear_value_head_dim=128,
                         linear_conv_kernel_dim=4, num_attention_heads=8, num_key_value_heads=2, head_dim=256,
                         rms_norm_eps=1e-6, vocab_size=512, tie_word_embeddings=True,
                         max_position_embeddings=4096),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=2048,
                           patch_size=4, num_position_embeddings=16),
        tie_word_embeddings=True)


def tensors_of(ckpt: Path) -> dict[str, str]:
    """Tensor name -> shard file, from the index or the single file."""
    index = ckpt / "model.safetensors.index.json"
    if index.exists():
        return json.loads(index.read_text())["weight_map"]
    with safe_open(ckpt / "model.safetensors", "pt") as f:
        return dict.fromkeys(f.keys(), "model.safetensors")


def raw(ckpt: Path, shard: str, name: str) -> tuple[torch.dtype, bytes]:
    with safe_open(ckpt / shard, "pt") as f:
        t = f.get_tensor(name)
    return t.dtype, t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


@pytest.fixture(scope="session")
def work(qgcc, tmp_path_factory):
    """The two bases and their patched copies, linked once through the command line."""
    from transformers import Qwen3_5ForConditionalGeneration

    d = tmp_path_factory.mktemp("ckpt")
    torch.manual_seed(0)
    for kind, value_heads, shard_size in (("sharded", 16, "100MB"), ("single", 32, "10GB")):
        model = Qwen3_5ForConditionalGeneration(tiny_config(value_heads)).to(torch.bfloat16)  # like the real one
        model.save_pretrained(d / f"base_{kind}", max_shard_size=shard_size)
        del model
    (d / "base_sharded" / "tokenizer_config.json").write_text('{"model_max_length": 4096}\n')
    gc.collect()
    (d / "vadd.cu").write_text(VADD)
    for args in (["vadd.cu", "--base", "base_sharded", "-o", "out_sharded"],
                 ["vadd.cu", "-o", "vadd.qg"],
                 ["vadd.qg", "--base", "base_single", "-o", "out_single"]):  # reuses the .qg's layers
        r = qgcc(*[str(d / a) if not a.startswith("-") else a for a in args])
        assert r.exit_code == 0, r.output
    return d


# -- the layout -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["single", "sharded"])
def test_every_original_tensor_is_byte_identical_and_the_machine_is_float32(work, kind):
    base, out = work / f"base_{kind}", work / f"out_{kind}"
    before, after = tensors_of(base), tensors_of(out)
    assert set(before) <= set(after)
    for name, shard in before.items():
        assert raw(base, shard, name) == raw(out, after[name], name), name
    added = set(after) - set(before)
    config = json.loads((out / "config.json").read_text())
    machine = config["qgpu"]["machine_layers"]
    assert machine == list(range(BASE_LAYERS, BASE_LAYERS + MACHINE_LAYERS))
    assert {n.split(".")[3] for n in added} == {str(i) for i in machine}
    assert all(n.startswith(PREFIX + "layers.") for n in added)  # the base's own naming
    shard = config["qgpu"]["shard"]
    with safe_open(out / shard, "pt") as f:
        assert {f.get_slice(n).get_dtype() for n in added} == {"F32"}


def test_a_single_file_base_becomes_two_shards_with_an_index(work):
    out = work / "out_single"
    assert not (out / "model.safetensors").exists()  # transformers would load it and ignore the index
    assert sorted(set(tensors_of(out).values())) == ["model-00001-of-00002.safetensors",
                                                     "model-00002-of-00002.safetensors"]


def test_a_sharded_base_keeps_its_numbering_and_its_other_files(work):
    base, out = work / "base_sharded", work / "out_sharded"
    n = len(set(tensors_of(base).values()))
    assert n >= 2
    assert sorted(set(tensors_of(out).values())) == [f"model-{i:05d}-of-{n + 1:05d}.safetensors"
                                                     for i in range(1, n + 2)]
    for name in ("tokenizer_config.json", "generation_config.json"):
        assert (out / name).read_bytes() == (base / name).read_bytes()
    index = json.loads((out / "model.safetensors.index.json").read_text())
    size = 0
    for shard in set(index["weight_map"].values()):
        with safe_open(out / shard, "pt") as f:
            for k in f.keys():
                s = f.get_slice(k)
                size += int(np.prod(s.get_shape())) * {"F32": 4, "BF16": 2}[s.get_dtype()]
    assert index["metadata"]["total_size"] == size


def test_config_grows_by_the_machine_layers_and_carries_the_qgpu_section(work):
    base = json.loads((work / "base_sharded" / "config.json").read_text())
    out = json.loads((work / "out_sharded" / "config.json").read_text())
    tc = out["text_config"]
    assert tc["num_hidden_layers"] == BASE_LAYERS + MACHINE_LAYERS
    assert tc["layer_types"] == base["text_config"]["layer_types"] + ["linear_attention"] * MACHINE_LAYERS
    q = out.pop("qgpu")
    assert q["format"] == "qgpu" and q["format_version"] == 1 and q["dtype"] == "float32"
    assert [k["name"] for k in q["kernels"]] == ["vadd"]
    assert len(q["program_hash"]) == 64
    # Nothing else changed.
    out["text_config"] = {k: v for k, v in tc.items() if k not in ("num_hidden_layers", "layer_types")}
    base["text_config"] = {k: v for k, v in base["text_config"].items()
                           if k not in ("num_hidden_layers", "layer_types")}
    assert out == base


def test_the_program_hash_is_the_content_hash_of_the_same_programs_qg(work):
    from qgcc import qgfile

    want = qgfile.load(work / "vadd.qg").meta["content_hash"]
    for kind in ("single", "sharded"):  # linked from the .qg and from the source: the same layers
        assert json.loads((work / f"out_{kind}" / "config.json").read_text())["qgpu"]["program_hash"] == want


# -- transformers loads it ----------------------------------------------------------------

def no_key_problems(info) -> bool:
    return not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]


def test_transformers_loads_the_multimodal_model_and_the_original_layers_compute_as_before(work):
    from transformers import Qwen3_5ForConditionalGeneration

    base = Qwen3_5ForConditionalGeneration.from_pretrained(work / "base_sharded", dtype=torch.float32)
    model, info = Qwen3_5ForConditionalGeneration.from_pretrained(work / "out_sharded", dtype=torch.float32,
                                                                 output_loading_info=True)
    assert no_key_problems(info), info
    layers = model.model.language_model.layers
    assert len(layers) == BASE_LAYERS + MACHINE_LAYERS
    assert {p.dtype for p in model.parameters()} == {torch.float32}

    class Enough(Exception):
        pass

    def outputs(m):
        """Each original layer's output; the forward stops after the last one (the rest is the machine)."""
        seen = []

        def keep(_module, _inputs, output):
            seen.append(output.clone())
            if len(seen) == BASE_LAYERS:
                raise Enough

        hooks = [m.model.language_model.layers[i].register_forward_hook(keep) for i in range(BASE_LAYERS)]
        with torch.no_grad(), pytest.raises(Enough):
            m(input_ids=torch.tensor([[1, 5, 7, 300, 2, 511]]))
        for h in hooks:
            h.remove()
        return seen

    want, got = outputs(base), outputs(model)
    assert len(want) == len(got) == BASE_LAYERS
    for w, g in zip(want, got):
        assert torch.equal(w, g)  # exactly, not approximately
    # The machine layers hold the stored float32 values (no rounding on the way in).
    shard = json.loads((work / "out_sharded" / "config.json").read_text())["qgpu"]["shard"]
    with safe_open(work / "out_sharded" / shard, "pt") as f:
        name = f"{PREFIX}layers.{BASE_LAYERS}.mlp.gate_proj.weight"
        assert torch.equal(layers[BASE_LAYERS].mlp.gate_proj.weight, f.get_tensor(name))
    del base, model, layers
    gc.collect()


def test_the_text_model_alone_loads_from_the_multimodal_checkpoint(work):
    from transformers import Qwen3_5ForCausalLM

    # transformers maps model.language_model.* to the text model's model.* and ignores model.visual.*.
    model, info = Qwen3_5ForCausalLM.from_pretrained(work / "out_single", dtype=torch.float32,
                                                     output_loading_info=True)
    assert no_key_problems(info), info
    assert len(model.model.layers) == BASE_LAYERS + MACHINE_LAYERS
    assert model.config.layer_types[BASE_LAYERS:] == ["linear_attention"] * MACHINE_LAYERS
    del model
    gc.collect()


def test_the_sparse_machine_shard_reads_back_the_same_with_or_without_holes(tmp_path, monkeypatch):
    from qgcc.checkpoint import shards

    monkeypatch.setattr(shards, "PAGES_PER_BATCH", 3)  # many batches, pages shared by tensors
    rng = np.random.default_rng(0)
    entries, dense = [], {}
    for i, shape in enumerate([(5,), (300, 70), (1,), (4096, 33), (7,)]):
        d = np.zeros(int(np.prod(shape)), np.float32)
        d[rng.choice(d.size, size=min(d.size, 40), replace=False)] = rng.standard_normal(min(d.size, 40))
        idx = np.flatnonzero(d)
        entries.append(shards.SparseEntry(f"t{i}", shape, idx, d[idx]))
        dense[f"t{i}"] = d.reshape(shape)
    sparse = tmp_path / "sparse.safetensors"
    shards.write_sparse_shard(str(sparse), entries, {"format": "pt"})
    filled = tmp_path / "filled.safetensors"
    filled.write_bytes(sparse.read_bytes())  # a plain copy has no holes
    import safetensors.numpy

    for path in (sparse, filled):
        assert {k: v.tolist() for k, v in safetensors.numpy.load_file(path).items()} == \
               {k: v.tolist() for k, v in dense.items()}
        infos, _ = shards.read_header(str(path))
        fd = os.open(path, os.O_RDONLY)
        start = 8 + int.from_bytes(os.pread(fd, 8, 0), "little")
        for e in entries:
            idx, val = shards.read_nonzeros(fd, start + infos[e.name].begin, int(np.prod(e.shape)))
            assert idx.tolist() == e.idx.tolist() and val.tolist() == e.val.tolist()
        os.close(fd)


# -- qgrun runs it ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["sharded", "single"])  # 16 and 32 value heads
def test_qgrun_runs_the_kernel_from_the_patched_checkpoint_like_the_emulator(qgrun, work, tmp_path, kind):
    np.save(tmp_path / "a.npy", np.array([5, -2, 7, 9], np.int32))
    np.save(tmp_path / "b.npy", np.array([100, 200, -300, 2**31 - 9], np.int32))
    common = ["--grid", "1", "--block", "4", "--arg", f"a=@{tmp_path / 'a.npy'}", "--arg",
              f"b=@{tmp_path / 'b.npy'}", "--arg", "c=zeros:4", "--arg", "n=3", "--trace", "none"]
    r = qgrun(str(work / f"out_{kind}"), *common, "--engine", "neural", "--out", f"c={tmp_path / 'net.npy'}",
            "--json", str(tmp_path / "net.json"))
    assert r.exit_code == 0, r.output
    r = qgrun(str(work / "vadd.cu"), *common, "--engine", "ref", "--out", f"c={tmp_path / 'ref.npy'}",
            "--json", str(tmp_path / "ref.json"))
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "net.npy").tolist() == np.load(tmp_path / "ref.npy").tolist() == [105, 198, -293, 0]
    net, ref = (json.loads((tmp_path / f"{e}.json").read_text()) for e in ("net", "ref"))
    assert net["steps"] == ref["steps"] and net["warp_instructions"] == ref["warp_instructions"]


@pytest.mark.slow  # transformers' own 32-value-head modules: about a minute on 2 cores
def test_qgrun_hf_engine_runs_the_patched_checkpoint(qgrun, work, tmp_path):
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.int32))
    r = qgrun(str(work / "out_single"), "--grid", "1", "--block", "4", "--arg", f"a=@{tmp_path / 'a.npy'}",
            "--arg", f"b=@{tmp_path / 'a.npy'}", "--arg", "c=zeros:4", "--arg", "n=4", "--engine", "hf",
            "--out", f"c={tmp_path / 'c.npy'}", "--trace", "none")
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "c.npy").tolist() == [0, 2, 4, 6]


def test_qgrun_refuses_a_checkpoint_without_a_program_or_of_another_version(qgrun, work, tmp_path):
    r = qgrun(str(work / "base_single"), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and "without a qgpu section" in r.output
    fake = tmp_path / "fake"
    fake.mkdir()
    config = json.loads((work / "out_single" / "config.json").read_text())
    config["qgpu"]["format_version"] = 2
    (fake / "config.json").write_text(json.dumps(config))
    r = qgrun(str(fake), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and "version 2 is not supported" in r.output


# -- bad bases: one line, exit 1, nothing written ----------------------------------------

def broken_base(work: Path, tmp_path: Path, **text_changes) -> Path:
    """A copy of the single-file base's small files (the weights symlinked) with config changes."""
    d = tmp_path / "base"
    d.mkdir()
    (d / "model.safetensors").symlink_to(work / "base_single" / "model.safetensors")
    config = json.loads((work / "base_single" / "config.json").read_text())
    config["text_config"].update(text_changes)
    (d / "config.json").write_text(json.dumps(config))
    return d


def expect_error(qgcc, work: Path, tmp_path: Path, base: Path | str, message: str, out: Path | None = None) -> None:
    out = out or tmp_path / "out"
    r = qgcc(str(work / "vadd.cu"), "--base", str(base), "-o", str(out))
    assert r.exit_code == 1, r.output
    lines = r.output.strip().splitlines()
    assert lines == [f"qgcc: error: {message}"], r.output
    assert not [p for p in os.listdir(out.parent) if p.startswith(f".{out.name}.")]  # no temporary left


@pytest.mark.parametrize("field,value,shown,needed", [
    ("hidden_size", 4096, "4096", "2048"),
    ("linear_num_value_heads", 24, "24", "a multiple of 16"),
    ("linear_num_key_heads", 32, "32", "16"),
    ("intermediate_size", 12288, "12288", "6144"),
    ("linear_conv_kernel_dim", 3, "3", "4"),
])
def test_a_base_of_a_geometry_the_machine_cannot_take_is_refused_naming_the_field(qgcc, work, tmp_path, field, value, shown, needed):
    base = broken_base(work, tmp_path, **{field: value})
    expect_error(qgcc, work, tmp_path, base, f"base checkpoint {base}: text_config.{field} is {shown}, "
                                       f"the compiled machine needs {needed}")
    assert not (tmp_path / "out").exists()


def test_bad_base_directories_are_one_line_errors(qgcc, work, tmp_path):
    expect_error(qgcc, work, tmp_path, tmp_path / "nowhere", f"base checkpoint {tmp_path / 'nowhere'}: no such directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    expect_error(qgcc, work, tmp_path, empty,
                 f"base checkpoint {empty}: no config.json (expected a Hugging Face model directory)")
    llama = tmp_path / "llama"
    llama.mkdir()
    (llama / "config.json").write_text('{"model_type": "llama"}')
    expect_error(qgcc, work, tmp_path, llama, f"base checkpoint {llama}: model_type is \"llama\", "
                                        "not a Qwen3.5 checkpoint (qwen3_5 or qwen3_5_text)")
    noweights = broken_base(work, tmp_path)
    (noweights / "model.safetensors").unlink()
    expect_error(qgcc, work, tmp_path, noweights, f"base checkpoint {noweights}: no model.safetensors or "
                                            "model.safetensors.index.json (only safetensors checkpoints can be linked)")


def test_an_existing_non_empty_outdir_is_refused_and_left_alone(qgcc, work, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    expect_error(qgcc, work, tmp_path, work / "base_single", f"output {out}: exists and is not empty; give a new directory",
                 out=out)
    assert os.listdir(out) == ["keep.txt"]


def test_the_output_cannot_be_the_base_or_inside_it(qgcc, work, tmp_path):
    base = broken_base(work, tmp_path)
    expect_error(qgcc, work, tmp_path, base, f"output {base}: is the base checkpoint itself", out=base)
    expect_error(qgcc, work, tmp_path, base, f"output {base / 'out'}: is inside the base checkpoint; "
                                       "give a directory outside it", out=base / "out")


def test_base_needs_an_output_directory(qgcc, work):
    r = qgcc(str(work / "vadd.cu"), "--base", str(work / "base_single"))
    assert r.exit_code == 2 and "--base needs -o OUTDIR" in r.output


def test_a_failure_while_writing_leaves_no_outdir_and_no_temporary(work, tmp_path, monkeypatch):
    from qgcc.checkpoint import writer
    from qgcc.checkpoint.base import inspect_base
    from qgcc.qgfile import load

    program = load(work / "out_single" / "qgpu.qg").program

    def disk_full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "write_sparse_shard", disk_full)
    out = tmp_path / "out"
    with pytest.raises(OSError):
        writer.write_checkpoint(inspect_base(str(work / "base_single")), program, {}, {"num_layers": "0"}, str(out))
    assert not out.exists() and os.listdir(tmp_path) == []


# -- more value heads than the machine's 16 ---------------------------------------------

def test_the_32_value_head_checkpoint_records_where_the_machine_heads_are(work):
    q = json.loads((work / "out_single" / "config.json").read_text())["qgpu"]
    assert q["value_heads"] == 32 and q["value_head_map"] == list(range(0, 32, 2))


# tensor -> (axis of the value heads, where the value part starts on it, entries per head)
VALUE_AXIS = {"linear_attn.in_proj_qkv.weight": (0, 4096, 128), "linear_attn.conv1d.weight": (0, 4096, 128),
              "linear_attn.in_proj_z.weight": (0, 0, 128), "linear_attn.in_proj_a.weight": (0, 0, 1),
              "linear_attn.A_log": (0, 0, 1), "linear_attn.out_proj.weight": (1, 0, 128)}


def value_head(dense: np.ndarray, name: str, head: int) -> np.ndarray:
    axis, start, per = VALUE_AXIS[name]
    return np.take(dense, range(start + head * per, start + (head + 1) * per), axis=axis)


@pytest.mark.parametrize("name", [*VALUE_AXIS, "mlp.up_proj.weight"])
def test_machine_head_h_moves_to_value_head_2h_and_back(name):
    from qgcc.qwen35 import SHAPES, GeometryError, ValueHeads

    heads = ValueHeads(32)
    rng = np.random.default_rng(1)
    size = int(np.prod(SHAPES[name]))
    idx = np.sort(rng.choice(size, size=min(size, 2000), replace=False)).astype(np.int64)
    val = rng.standard_normal(len(idx)).astype(np.float32)

    def dense(i, v, shape):
        out = np.zeros(int(np.prod(shape)), np.float32)
        out[i] = v
        return out.reshape(shape)

    bidx, bval = heads.to_base(name, idx, val)
    small, big = dense(idx, val, SHAPES[name]), dense(bidx, bval, heads.shape(name))
    assert heads.from_base(name, bidx, bval)[0].tolist() == idx.tolist()
    if name not in VALUE_AXIS:
        assert heads.shape(name) == SHAPES[name] and np.array_equal(big, small)
        return
    axis, start, _ = VALUE_AXIS[name]
    assert np.array_equal(np.take(big, range(start), axis=axis), np.take(small, range(start), axis=axis))
    for h in range(16):
        assert np.array_equal(value_head(big, name, 2 * h), value_head(small, name, h))
        assert not value_head(big, name, 2 * h + 1).any()
    coords = [0] * big.ndim
    coords[axis] = start + 3 * VALUE_AXIS[name][2]  # first entry of value head 3, which the machine leaves empty
    with pytest.raises(GeometryError):
        heads.from_base(name, np.array([np.ravel_multi_index(coords, big.shape)]), np.ones(1, np.float32))


def test_a_corrupt_shard_is_a_one_line_error(qgcc, work, tmp_path):
    base = broken_base(work, tmp_path)
    (base / "model.safetensors").unlink()
    (base / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    expect_error(qgcc, work, tmp_path, base, f"base checkpoint {base}: model.safetensors: truncated safetensors header")


def test_a_text_only_base_is_found_under_its_own_prefix(tmp_path):
    """A Qwen3_5ForCausalLM checkpoint (model_type qwen3_5_text) keeps its layers under `model.`."""
    from transformers import Qwen3_5ForCausalLM

    from qgcc.checkpoint.base import inspect_base
    from qgcc.checkpoint.writer import patched_config

    import safetensors.numpy

    text = tiny_config(16).text_config
    text.num_hidden_layers, text.layer_types = 1, ["linear_attention"]
    text.save_pretrained(tmp_path / "text")
    with torch.device("meta"):  # the real tensor names, without building 2B-geometry weights
        names = [k for k in Qwen3_5ForCausalLM(text).state_dict() if k != "lm_head.weight"]  # tied
    safetensors.numpy.save_file({k: np.zeros(1, np.float32) for k in names}, tmp_path / "text" / "model.safetensors")
    base = inspect_base(str(tmp_path / "text"))
    assert (base.text_key, base.text_prefix, base.num_layers) == (None, "model.", 1)
    config = patched_config(base, MACHINE_LAYERS, {"format": "qgpu"})
    assert config["num_hidden_layers"] == 1 + MACHINE_LAYERS and config["qgpu"] == {"format": "qgpu"}
    assert config["layer_types"] == ["linear_attention"] * (1 + MACHINE_LAYERS)
