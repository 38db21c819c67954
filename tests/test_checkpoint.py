"""`qgcc KERNEL.cu --base DIR -o OUTDIR`: a kernel linked into a real Qwen3.5 checkpoint.

The base is built here with transformers' own classes at Qwen3.5-2B text geometry (two
random layers, one of each mixer, a 512-token vocabulary and a one-block vision tower)
and saved with `save_pretrained`, once sharded with 16 value heads and once as one file
with 32 value heads (as some published Qwen3.5 configs have; the machine adapts) and a
small multi-token-prediction head (`mtp.*`, as real Qwen3.5 checkpoints carry).  The
patched checkpoint must keep every original tensor byte for byte, load in transformers with
no missing, unexpected or mismatched key, give the base's logits and generations bit for
bit (the machine is beside the text model, not in it), hold the machine as stock decoder
layers that transformers' own `Qwen3_5DecoderLayer` loads, and run the kernel under
`qgrun` exactly as the reference emulator does.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import safetensors.torch
from safetensors import safe_open

VADD = """\
__global__ void vadd(const int *a, const int *b, int *c, int n) {
    int i = threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
BASE_LAYERS = 2
MACHINE_LAYERS = 36  # an integer program's layers (docs/architecture.md, layer map)
PREFIX = "model.language_model."
MACHINE_PREFIX = "mtp.qgpu.layers."
# A real checkpoint's multi-token-prediction head, in miniature: the machine must not collide with it.
MTP = {"mtp.fc.weight": (8, 16), "mtp.layers.0.mlp.gate_proj.weight": (16, 8), "mtp.norm.weight": (8,)}


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
    single = d / "base_single" / "model.safetensors"
    weights = safetensors.torch.load_file(single)
    weights.update({k: torch.randn(shape).to(torch.bfloat16) for k, shape in MTP.items()})
    safetensors.torch.save_file(weights, single, metadata={"format": "pt"})
    del weights
    gc.collect()
    (d / "vadd.cu").write_text(VADD)
    for args in (["vadd.cu", "--base", "base_sharded", "-o", "out_sharded"],
                 ["vadd.cu", "-o", "vadd.qg"],
                 # reuses the .qg's layers; the sharded copy is in the base's bf16 (the default)
                 ["vadd.qg", "--base", "base_single", "-o", "out_single", "--machine-dtype=float32"]):
        r = qgcc(*[str(d / a) if not a.startswith("-") else a for a in args])
        assert r.exit_code == 0, r.output
    return d


# -- the layout -------------------------------------------------------------------------

MACHINE_DTYPE = {"sharded": "BF16", "single": "F32"}  # the base's dtype by default, float32 when asked


@pytest.mark.parametrize("kind", ["single", "sharded"])
def test_every_original_tensor_is_byte_identical_and_the_machine_is_in_the_dtype_asked_for(work, kind):
    base, out = work / f"base_{kind}", work / f"out_{kind}"
    before, after = tensors_of(base), tensors_of(out)
    assert set(before) <= set(after)
    for name, shard in before.items():
        assert raw(base, shard, name) == raw(out, after[name], name), name
    added = set(after) - set(before)
    config = json.loads((out / "config.json").read_text())
    machine = config["qgpu"]["machine_layers"]
    assert machine == list(range(MACHINE_LAYERS))
    assert all(n.startswith(MACHINE_PREFIX) for n in added)  # beside the text model, not in it
    assert {n[len(MACHINE_PREFIX):].split(".")[0] for n in added} == {str(i) for i in machine}
    assert not [n for n in added if n.startswith(PREFIX)]
    shard = config["qgpu"]["shard"]
    with safe_open(out / shard, "pt") as f:
        assert {f.get_slice(n).get_dtype() for n in added} == {MACHINE_DTYPE[kind]}


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


@pytest.mark.parametrize("kind", ["single", "sharded"])
def test_config_is_the_bases_plus_the_qgpu_section(work, kind):
    base = json.loads((work / f"base_{kind}" / "config.json").read_text())
    out = json.loads((work / f"out_{kind}" / "config.json").read_text())
    q = out.pop("qgpu")
    assert out == base  # the text model keeps its layer count and layer types: nothing else changed
    assert q["format"] == "qgpu" and q["format_version"] == 2
    assert q["dtype"] == q["text_config"]["dtype"] == {"BF16": "bfloat16", "F32": "float32"}[MACHINE_DTYPE[kind]]
    assert q["layer_prefix"] == MACHINE_PREFIX
    assert [k["name"] for k in q["kernels"]] == ["vadd"]
    assert len(q["program_hash"]) == 64
    tc = q["text_config"]  # the machine's own decoder-layer config
    assert tc["num_hidden_layers"] == MACHINE_LAYERS and tc["layer_types"] == ["linear_attention"] * MACHINE_LAYERS
    assert tc["linear_num_value_heads"] == base["text_config"]["linear_num_value_heads"]
    for name in ("hidden_size", "intermediate_size", "linear_num_key_heads", "linear_key_head_dim",
                 "linear_value_head_dim", "linear_conv_kernel_dim", "hidden_act", "rms_norm_eps"):
        assert tc[name] == base["text_config"][name], name


def test_the_program_hash_is_the_content_hash_of_the_same_programs_qg(work):
    from qgcc import qgfile

    want = qgfile.load(work / "vadd.qg").meta["content_hash"]
    for kind in ("single", "sharded"):  # linked from the .qg and from the source: the same layers
        assert json.loads((work / f"out_{kind}" / "config.json").read_text())["qgpu"]["program_hash"] == want


# -- transformers loads it ----------------------------------------------------------------

def no_key_problems(info) -> bool:
    return not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]


TOKENS = torch.randint(0, 512, (3, 9), generator=torch.Generator().manual_seed(7))  # 3 token sequences
TOKENS[0, :3] = torch.tensor([0, 511, 2])  # the vocabulary's ends
CLASSES = ("Qwen3_5ForConditionalGeneration", "AutoModelForImageTextToText", "Qwen3_5ForCausalLM")


def load_logged(cls, path: Path, dtype):
    """(model, loading info, transformers' warnings while loading)."""
    import logging

    import transformers

    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        model, info = getattr(transformers, cls).from_pretrained(path, dtype=dtype, output_loading_info=True)
    finally:
        logger.removeHandler(handler)
    return model.eval(), info, [r.getMessage() for r in records]


@pytest.mark.parametrize("dtype", ["float32", "auto"])  # auto: the base's own bf16
def test_the_patched_checkpoint_gives_the_bases_logits_and_generations_bit_for_bit(work, dtype):
    """Through every class a user would load it with: the machine is beside the text model, not in its path.

    AutoModelForImageTextToText builds the same class as the first, so its logits are compared with
    that base's.  generate() runs in float32 only: bf16 grouped convolutions are slow on a CPU, and
    every bf16 forward here costs about a second.
    """
    want_dtype = torch.float32 if dtype == "float32" else torch.bfloat16
    # bf16 forwards are slow on a CPU (grouped convolutions): one short sequence there.
    tokens = TOKENS if dtype == "float32" else TOKENS[:1, :6]
    base = base_logits = None
    for cls in CLASSES:
        if cls != "AutoModelForImageTextToText":
            base, _, _ = load_logged(cls, work / "base_sharded", dtype)
            with torch.no_grad():
                base_logits = base(input_ids=tokens).logits
        model, info, logged = load_logged(cls, work / "out_sharded", dtype)
        assert no_key_problems(info), (cls, info)
        assert not logged, (cls, logged)  # no "unexpected keys" report, nor any other warning
        assert type(model) is type(base) and {p.dtype for p in model.parameters()} == {want_dtype}
        assert model.config.get_text_config().num_hidden_layers == BASE_LAYERS
        want, got = base.state_dict(), model.state_dict()
        assert list(want) == list(got) and not [k for k in got if "mtp" in k or "qgpu" in k]
        for k in want:
            assert torch.equal(want[k], got[k]), (cls, k)
        with torch.no_grad():
            logits = model(input_ids=tokens).logits
        assert logits.dtype == want_dtype and torch.equal(logits, base_logits), cls  # bit for bit
        if cls != "AutoModelForImageTextToText" and dtype == "float32":  # greedy decoding through the cache
            prompt, gen = TOKENS[1:2, :5], dict(max_new_tokens=3, do_sample=False)
            assert model.generate(prompt, **gen).tolist() == base.generate(prompt, **gen).tolist(), cls
        del model, want, got
        gc.collect()


def test_a_base_with_a_multi_token_prediction_head_keeps_it_and_loads_cleanly(work):
    out = work / "out_single"
    wm = tensors_of(out)
    assert set(MTP) <= set(wm)  # beside the machine's mtp.qgpu.*, byte-identical (the layout test)
    for cls in ("Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"):
        model, info, logged = load_logged(cls, out, "auto")
        assert no_key_problems(info) and not logged, (cls, info, logged)
        del model
        gc.collect()


def test_the_warning_capture_sees_a_loading_report(work):
    """The bare text model reports the vision tower as unexpected: the capture above can see such a report."""
    model, info, logged = load_logged("Qwen3_5TextModel", work / "out_sharded", torch.float32)
    assert info["unexpected_keys"] and any("UNEXPECTED" in m.upper() for m in logged), logged
    assert not [k for k in info["unexpected_keys"] if "qgpu" in k]  # the machine is ignored even there
    del model
    gc.collect()


@pytest.mark.parametrize("kind", ["single", "sharded"])
def test_the_machine_loads_into_transformers_own_decoder_layers_from_its_config_section(work, kind):
    """The qgpu section's text_config (its dtype included) builds stock layers that take the stored tensors."""
    from transformers import Qwen3_5TextConfig
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

    out = work / f"out_{kind}"  # 32 and 16 value heads
    q = json.loads((out / "config.json").read_text())["qgpu"]
    config = Qwen3_5TextConfig(**q["text_config"])
    layer = MACHINE_LAYERS - 1
    with safe_open(out / q["shard"], "pt") as f:
        prefix = f"{q['layer_prefix']}{layer}."
        sd = {k[len(prefix):]: f.get_tensor(k) for k in f.keys() if k.startswith(prefix)}
    module = Qwen3_5DecoderLayer(config, layer).to(config.dtype)  # what dtype="auto" does
    module.load_state_dict(sd, strict=True)  # every stock tensor, no other, at the stored shapes
    assert {p.dtype for p in module.parameters()} == {getattr(torch, q["dtype"])}
    assert torch.equal(module.mlp.gate_proj.weight, sd["mlp.gate_proj.weight"]) and sd["mlp.gate_proj.weight"].any()
    del module, sd
    gc.collect()


def test_a_bf16_shard_is_the_linked_machine_with_only_the_value_level_rounded(work):
    """Every weight but V = 181.019... is a bfloat16 value (docs/architecture.md), so the bf16 shard must
    hold the .qg's float32 layers exactly, with +-V stored as +-181, and nothing else changed."""
    from qgcc import qgfile
    from qgcc.link.weights import VALUE_LEVEL

    qg = qgfile.load(work / "vadd.qg")  # the same program; the sharded base has the .qg's 16 value heads
    out = work / "out_sharded"
    q = json.loads((out / "config.json").read_text())["qgpu"]
    rounded = 0
    with safe_open(out / q["shard"], "pt") as f:
        for i in range(MACHINE_LAYERS):
            for name in ("linear_attn.in_proj_qkv.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight"):
                stored = f.get_tensor(f"{q['layer_prefix']}{i}.{name}").float().reshape(-1).numpy()
                want = np.zeros(stored.size, np.float32)
                want[qg.tensors[f"layers.{i}.{name}.idx"]] = qg.tensors[f"layers.{i}.{name}.val"]
                v = np.abs(want) == np.float32(VALUE_LEVEL)
                rounded += int(v.sum())
                assert np.array_equal(stored[~v], want[~v]), (i, name)
                assert np.array_equal(stored[v], np.sign(want[v]) * 181.0), (i, name)
    assert rounded > 0


@pytest.mark.parametrize("dtype", ["F32", "BF16"])
def test_the_sparse_machine_shard_reads_back_the_same_with_or_without_holes(tmp_path, monkeypatch, dtype):
    from qgcc.checkpoint import shards

    monkeypatch.setattr(shards, "PAGES_PER_BATCH", 3)  # many batches, pages shared by tensors
    rng = np.random.default_rng(0)
    entries, dense = [], {}
    for i, shape in enumerate([(5,), (300, 70), (1,), (4096, 33), (7,)]):
        d = np.zeros(int(np.prod(shape)), np.float32)
        d[rng.choice(d.size, size=min(d.size, 40), replace=False)] = rng.standard_normal(min(d.size, 40))
        if dtype == "BF16":
            d = torch.from_numpy(d).to(torch.bfloat16).float().numpy()
        idx = np.flatnonzero(d)
        entries.append(shards.SparseEntry(f"t{i}", shape, idx, d[idx], dtype))
        dense[f"t{i}"] = d.reshape(shape)
    sparse = tmp_path / "sparse.safetensors"
    shards.write_sparse_shard(str(sparse), entries, {"format": "pt"})
    filled = tmp_path / "filled.safetensors"
    filled.write_bytes(sparse.read_bytes())  # a plain copy has no holes
    for path in (sparse, filled):
        loaded = safetensors.torch.load_file(path)
        assert {v.dtype for v in loaded.values()} == {torch.float32 if dtype == "F32" else torch.bfloat16}
        assert {k: v.float().tolist() for k, v in loaded.items()} == {k: v.tolist() for k, v in dense.items()}
        infos, _ = shards.read_header(str(path))
        fd = os.open(path, os.O_RDONLY)
        start = 8 + int.from_bytes(os.pread(fd, 8, 0), "little")
        for e in entries:
            idx, val = shards.read_nonzeros(fd, start + infos[e.name].begin, int(np.prod(e.shape)), dtype)
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


def rename_shard(src: Path, dst: Path, rename) -> None:
    """A copy of a safetensors file with its tensors renamed, its holes kept and its data copied by the kernel.

    The header is padded with spaces (which safetensors allows) so that the data moves by whole
    pages: only the source's data extents are copied, so a sparse 4.2 GB shard costs what it holds.
    """
    with open(src, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    hb = json.dumps({k if k == "__metadata__" else rename(k): v for k, v in header.items()}).encode()
    shift = -(-(len(hb) - n) // 4096) * 4096
    hb += b" " * (n + shift - len(hb))
    fi, fo = os.open(src, os.O_RDONLY), os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        size = os.fstat(fi).st_size
        os.ftruncate(fo, size + shift)
        os.pwrite(fo, len(hb).to_bytes(8, "little") + hb, 0)
        pos = 8 + n
        while pos < size:
            try:
                data = os.lseek(fi, pos, os.SEEK_DATA)
            except OSError:  # only a hole is left
                break
            end = os.lseek(fi, data, os.SEEK_HOLE)
            while data < end:
                data += os.copy_file_range(fi, fo, end - data, data, data + shift)
            pos = end
    finally:
        os.close(fi)
        os.close(fo)


def test_qgrun_still_reads_a_checkpoint_of_format_1_with_the_machine_appended_to_the_text_layers(qgrun, work, tmp_path):
    """Earlier qgcc wrote the machine as text layers N..N+17: qgrun still reads those layers, bit for bit."""
    from qgcc.checkpoint.reader import load_checkpoint_program

    out, old = work / "out_sharded", tmp_path / "old"
    old.mkdir()
    config = json.loads((out / "config.json").read_text())
    q = config["qgpu"]
    for f in out.iterdir():
        if f.name not in ("config.json", "model.safetensors.index.json", q["shard"]):
            (old / f.name).symlink_to(f)

    def v1(name: str) -> str:  # mtp.qgpu.layers.<i>.X -> model.language_model.layers.<N+i>.X
        layer, rest = name[len(MACHINE_PREFIX):].split(".", 1)
        return f"{PREFIX}layers.{BASE_LAYERS + int(layer)}.{rest}"

    rename_shard(out / q["shard"], old / q["shard"], v1)
    index = json.loads((out / "model.safetensors.index.json").read_text())
    index["weight_map"] = {v1(k) if k.startswith(MACHINE_PREFIX) else k: v for k, v in index["weight_map"].items()}
    (old / "model.safetensors.index.json").write_text(json.dumps(index))
    tc = config["text_config"]
    tc["num_hidden_layers"] += MACHINE_LAYERS
    tc["layer_types"] += ["linear_attention"] * MACHINE_LAYERS
    for key in ("layer_prefix", "text_config"):
        del q[key]
    q.update(format_version=1, text_prefix=PREFIX, machine_layers=list(range(BASE_LAYERS, BASE_LAYERS + MACHINE_LAYERS)))
    (old / "config.json").write_text(json.dumps(config))
    # qgrun's loader reads the layers under their old names and checks them against the program
    # hash, which covers every tensor: it gets the machine a format-2 checkpoint gives.
    program = load_checkpoint_program(str(old))
    assert len(program.network.layers) == MACHINE_LAYERS
    (old / "config.json").write_text(json.dumps(config).replace(f'"{PREFIX}"', '"model.other."'))
    r = qgrun(str(old), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and f"tensor model.other.layers.{BASE_LAYERS}.input_layernorm.weight of the machine " \
                                 "is missing" in r.output, r.output
    del program


@pytest.mark.slow  # transformers' own 32-value-head modules: about a minute on 2 cores
def test_qgrun_hf_engine_runs_the_patched_checkpoint(qgrun, work, tmp_path):
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.int32))
    r = qgrun(str(work / "out_single"), "--grid", "1", "--block", "4", "--arg", f"a=@{tmp_path / 'a.npy'}",
            "--arg", f"b=@{tmp_path / 'a.npy'}", "--arg", "c=zeros:4", "--arg", "n=4", "--engine", "hf",
            "--out", f"c={tmp_path / 'c.npy'}", "--trace", "none")
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "c.npy").tolist() == [0, 2, 4, 6]


@pytest.mark.slow  # 9.4 GB of float32 modules, or transformers' bf16 modules at a few seconds a step
@pytest.mark.parametrize("kind,dtype,engine", [("sharded", "fp32", "neural"), ("single", "fp32", "neural"),
                                               ("sharded", "bf16", "hf")])
def test_the_standalone_runner_reproduces_every_state_of_a_patched_checkpoint(qgrun, work, tmp_path, kind, dtype,
                                                                             engine):
    """examples/run_qg.py (no qgcc import) from OUTDIR: in float32 it widens the stored machine and
    restores V, and equals the C step state for state (16 value heads in bf16, 32 in float32);
    in bfloat16 it runs the stored tensors as they are and equals `qgrun --engine hf --dtype bf16`."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    np.save(tmp_path / "a.npy", np.arange(4, dtype=np.int32))
    launch = ["--grid", "1", "--block", "4", "--arg", f"a=@{tmp_path / 'a.npy'}", "--arg", f"b=@{tmp_path / 'a.npy'}",
              "--arg", "c=zeros:4", "--arg", "n=4"]
    out = str(work / f"out_{kind}")
    r = qgrun(out, *launch, "--engine", engine, "--dtype", dtype, "--dump-states", tmp_path / "s.npz",
              "--trace", "none")
    assert r.exit_code == 0, r.output
    r = subprocess.run([sys.executable, str(root / "examples" / "run_qg.py"), out, *launch, "--out", "c",
                        "--dtype", dtype, "--compare", str(tmp_path / "s.npz")], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "c [0, 2, 4, 6]" in r.stdout
    d = np.load(tmp_path / "s.npz")
    checks = 1 + int(d["steps"]) + 1 + 2 * len(d["layers"])
    assert f"{checks} of {checks} bit-identical" in r.stdout, r.stdout


def test_qgrun_refuses_a_checkpoint_without_a_program_or_of_another_version(qgrun, work, tmp_path):
    r = qgrun(str(work / "base_single"), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and "without a qgpu section" in r.output
    fake = tmp_path / "fake"
    fake.mkdir()
    config = json.loads((work / "out_single" / "config.json").read_text())
    config["qgpu"]["format_version"] = 3
    (fake / "config.json").write_text(json.dumps(config))
    r = qgrun(str(fake), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and "version 3 is not supported" in r.output
    config["qgpu"]["format_version"] = 2
    config["qgpu"]["text_config"]["hidden_size"] = 4096
    (fake / "config.json").write_text(json.dumps(config))
    r = qgrun(str(fake), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and "qgpu.text_config.hidden_size is 4096, the machine needs 2048" in r.output, r.output
    config["qgpu"]["text_config"]["hidden_size"] = 2048  # valid, but no program or machine (save_pretrained's copy)
    (fake / "config.json").write_text(json.dumps(config))
    r = qgrun(str(fake), "--grid", "1", "--block", "4")
    assert r.exit_code == 3 and r.output.strip() == (
        f"qgrun: error: {fake}: qgpu.qg is missing (transformers' save_pretrained keeps the qgpu section but not "
        "the machine); relink it with 'qgcc KERNEL.cu --base BASE -o DIR'"), r.output


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


def test_a_checkpoint_that_already_carries_a_machine_is_refused_as_a_base(qgcc, work, tmp_path):
    from qgcc.checkpoint.base import inspect_base

    out = work / "out_single"
    expect_error(qgcc, work, tmp_path, out, f"base checkpoint {out}: already carries a qgcc machine (tensors "
                                      "mtp.qgpu.*); give the checkpoint it was linked from")
    config = json.loads((out / "config.json").read_text())
    config["qgpu"]["format_version"] = 1
    old = broken_base(work, tmp_path)
    (old / "config.json").write_text(json.dumps(config))
    expect_error(qgcc, work, tmp_path, old, f"base checkpoint {old}: was linked by an earlier qgcc (qgpu format 1, the "
                                      "machine among its text layers); give the checkpoint it was linked from")
    # A qgpu section without the machine, as save_pretrained leaves it: a base like any other.
    config["qgpu"]["format_version"] = 2
    (old / "config.json").write_text(json.dumps(config))
    assert inspect_base(str(old)).num_layers == BASE_LAYERS


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


def test_machine_dtype_is_an_option_of_base_only(qgcc, work, tmp_path):
    r = qgcc(str(work / "vadd.cu"), "--machine-dtype", "bfloat16", "-o", str(tmp_path / "x.qg"))
    assert r.exit_code == 2 and "--machine-dtype only applies with --base" in r.output
    assert not (tmp_path / "x.qg").exists()


def test_a_machine_that_bf16_cannot_hold_is_refused_before_anything_is_written():
    """Only +-V may be rounded; any other weight bf16 cannot hold, or a weight the reader would take for a
    rounded V, must stop the link (the reader could not give the linked machine back)."""
    from qgcc.checkpoint.machine_dtype import from_bf16, to_bf16
    from qgcc.link.weights import VALUE_LEVEL

    qkv = "linear_attn.in_proj_qkv.weight"
    vals = np.array([VALUE_LEVEL, -VALUE_LEVEL, 128.0, -8.0], np.float32)
    assert to_bf16(qkv, vals).tolist() == [181.0, -181.0, 128.0, -8.0]
    assert from_bf16(qkv, to_bf16(qkv, vals)).tolist() == vals.tolist()
    with pytest.raises(ValueError, match="not a bfloat16 value"):
        to_bf16("mlp.gate_proj.weight", np.array([VALUE_LEVEL], np.float32))
    with pytest.raises(ValueError, match="uses for the value level"):
        to_bf16(qkv, np.array([181.0], np.float32))


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
    config = patched_config(base, {"format": "qgpu"})
    assert config.pop("qgpu") == {"format": "qgpu"}
    assert config == json.loads((tmp_path / "text" / "config.json").read_text())
