"""Run a .qg, or a checkpoint linked with `qgcc --base`, with nothing but transformers, safetensors,
torch and numpy: an implementation of docs/protocol.md that imports no qgcc module.

    python examples/run_qg.py vadd.qg --grid 1 --block 4 --arg n=4 --arg a=@a.npy --arg b=@b.npy \\
        --arg c=zeros:4 --out c [--dtype fp32|bf16] [--compare STATES.npz]

Pointer arguments: @file.npy or zeros:N; scalars: a number.  Prints each --out buffer and the
step count.  --compare checks every state against `qgrun ... --dump-states STATES.npz` bit for
bit (docs/protocol.md, section 5a) and exits 1 on any difference.
"""
import argparse, inspect, json, os, sys
import numpy as np, torch
from safetensors import safe_open
from transformers import DynamicCache, Qwen3_5TextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

ap = argparse.ArgumentParser()
ap.add_argument("qg", help="a .qg file or a checkpoint directory (config.json with a qgpu section)")
ap.add_argument("--grid", default="1"); ap.add_argument("--block", default="4"); ap.add_argument("--kernel")
ap.add_argument("--arg", action="append", default=[]); ap.add_argument("--out", action="append", default=[])
ap.add_argument("--max-steps", type=int, default=100000); ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
ap.add_argument("--compare", metavar="STATES.npz")
a = ap.parse_args()
DT = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
dim3 = lambda s: (list(map(int, s.split(","))) + [1, 1])[:3]

# 1. The layers (section 1; a checkpoint: section 6).
if os.path.isdir(a.qg):
    q = json.load(open(os.path.join(a.qg, "config.json")))["qgpu"]
    meta = safe_open(os.path.join(a.qg, q["program"]), "np").metadata()
    config = Qwen3_5TextConfig(**q["text_config"])
    V = json.loads(meta["protocol"])["value_level"]
    shard = safe_open(os.path.join(a.qg, q["shard"]), "pt")

    def layer_tensors(i):
        p = f"{q['layer_prefix']}{q['machine_layers'][i]}."
        sd = {k[len(p):]: shard.get_tensor(k) for k in shard.keys() if k.startswith(p)}
        if a.dtype == "fp32":                                 # widen exactly; V was stored as 181 in bf16
            sd = {k: t.float() for k, t in sd.items()}
            if q["dtype"] == "bfloat16":
                w = sd["linear_attn.in_proj_qkv.weight"]
                w[w == 181.0], w[w == -181.0] = V, -V
        return sd
    head_map = q["value_head_map"]
else:
    meta = safe_open(a.qg, "np").metadata()
    config = Qwen3_5TextConfig(**json.loads(meta["text_config"]))
    shapes = json.loads(meta["tensor_shapes"])
    f = safe_open(a.qg, "np")

    def layer_tensors(i):
        sd = {}
        for name, shape in shapes.items():                    # dense = zeros(shape); flat[idx] = val
            dense = np.zeros(int(np.prod(shape)), np.float32)
            dense[f.get_tensor(f"layers.{i}.{name}.idx")] = f.get_tensor(f"layers.{i}.{name}.val")
            sd[name] = torch.from_numpy(dense.reshape(shape))
        return sd
    head_map = list(range(16))
config._attn_implementation = "eager"
proto = json.loads(meta["protocol"])
V, fields, cells = proto["value_level"], proto["fields"], proto["cells"]
layers = []
for i in range(config.num_hidden_layers):
    with torch.device("meta"):                                 # no random init: every tensor is loaded
        layer = Qwen3_5DecoderLayer(config, i)
    layer.load_state_dict({k: t.to(DT) for k, t in layer_tensors(i).items()}, strict=True, assign=True)
    layers.append(layer.eval())
# The cache keyword: `cache` in newer transformers, `past_key_values` in 5.5-5.17.
CACHE_KW = next(k for k in ("cache", "past_key_values") if k in inspect.signature(Qwen3_5DecoderLayer.forward).parameters)

# 2. The launch's memory image (section 3): constants, local frames, then the buffers in parameter order.
kernels = json.loads(meta["kernels"])
kernel = next(k for k in kernels if a.kernel in (None, k["name"]))
grid, block = dim3(a.grid), dim3(a.block)
nt = block[0] * block[1] * block[2]
memory = [c for const in json.loads(meta.get("constants", "[]")) for c in const["init"]]
memory += [0] * (kernel.get("local_words", 0) * nt)
params, bases = [], {}
values = dict(s.split("=", 1) for s in a.arg)
WIDE = {"llong": "int64", "ullong": "uint64", "double": "float64"}
for p in kernel["params"]:
    v = values[p["name"]]
    if p["pointer"]:
        arr = np.zeros(int(v[6:]), np.uint32) if v.startswith("zeros:") else np.load(v[1:]).ravel()
        words = arr.view(np.uint8).astype(np.uint32) if arr.dtype.itemsize == 1 else arr.view(np.uint32)  # chars: 8 bits
        bases[p["name"]] = (len(memory), words.size, p["ctype"]); params.append(len(memory)); memory += words.tolist()
    elif p["ctype"] in WIDE:                                   # two words, low first
        x = np.array([float(v) if p["ctype"] == "double" else int(v, 0)]).astype(WIDE[p["ctype"]]).view(np.uint32)
        params += x.tolist()
    else:
        params.append(int(np.float32(float(v)).view(np.uint32)) if p["ctype"] == "float" else int(v, 0) & 0xFFFFFFFF)

# 3. The first input (section 2).
def put(h, name, value):
    for i, d in enumerate(fields[name]): h[d] = 8.0 if (value >> i) & 1 else -8.0
def get(h, name):
    return sum(1 << i for i, d in enumerate(fields[name]) if h[d] > 0)
h = torch.full((config.hidden_size,), -8.0)
for name, v in dict(one=1, bx=block[0], by=block[1], bz=block[2], gx=grid[0], gy=grid[1], gz=grid[2], nt=nt,
                    nw=-(-nt // 4), gsize=len(memory), shw=kernel["shared_words"], nparam=len(params),
                    entry=kernel["entry"], kend=kernel["end"], phase=1 << proto["phases"].index("blkinit")).items():
    put(h, name, v)

# 4. The initial recurrent states, in the machine's 16 memory heads (section 3).
states = {}
S = lambda layer: states.setdefault(layer, torch.zeros(16, 128, 128))
where = lambda idx: (cells["first_layer"] + idx // cells["cells_per_layer"], (idx // 2 // 128) % 16, idx // 2 % 128)
for idx in range(0, len(memory), 2):                          # two cells a row: 32 one-hot groups of four rails
    L, hd, slot = where(idx); w0, w1 = memory[idx], (memory + [0])[idx + 1]  # a cell past the image: 0
    for i in range(32): S(L)[hd, slot, 4 * i + ((w0 >> i) & 1) + 2 * ((w1 >> i) & 1)] = V
for j, v in enumerate(params):                                # parameter words: dual-rail rows
    for i in range(32): S(proto["params"][0])[proto["params"][1], j, 2 * i + 1 - ((v >> i) & 1)] = V
nv = config.linear_num_value_heads
cache = DynamicCache(config=config)
for i in range(len(layers)):                                  # every step takes the single-token path
    cache.update_conv_state(torch.zeros(1, 2 * config.linear_num_key_heads * config.linear_key_head_dim + nv * config.linear_value_head_dim,
                                        config.linear_conv_kernel_dim, dtype=DT), i)
    s0 = torch.zeros(1, nv, 128, 128)
    s0[0, head_map] = states.get(i, torch.zeros(16, 128, 128))
    cache.update_recurrent_state(s0.to(DT), i)
bits = lambda t: t.float().numpy().view(np.uint32)
initial = [bits(cache.layers[i].recurrent_states[0].reshape(nv, 128, 128)[head_map]) for i in range(len(layers))]

# 5. Stepping (section 4), keeping the inputs that --compare needs.
want = np.load(a.compare) if a.compare else None
keep = set(want["hidden_steps"].tolist()) if want is not None else set()
inputs, fault = {}, 0
with torch.no_grad():
    for step in range(a.max_steps * 8):
        if step in keep: inputs[step] = bits(h)
        x = h.reshape(1, 1, -1).to(DT)
        for layer in layers:
            x = layer(x, None, **{CACHE_KW: cache})
        h = x.reshape(-1).float()                              # the output is the next input
        fault = get(h, "fault")
        if fault or get(h, "phase") == 1 << proto["phases"].index("halt"):
            break
steps = step + 1
final = [bits(cache.layers[i].recurrent_states[0].reshape(nv, 128, 128)[head_map]) for i in range(len(layers))]

# 6. Results (section 5): bit i of word c % 2 is set when rail 4i+3 or 4i+1+word is above V / 2.
def cell(idx):
    L, hd, slot = where(idx)
    r = final[L][hd, slot].view(np.float32)
    return sum(1 << i for i in range(32) if max(r[4 * i + 3], r[4 * i + 1 + idx % 2]) > V / 2)
if fault:
    print(f"fault {fault} at pc {get(h, 'tr_pc')} warp {get(h, 'tr_w')} lane {get(h, 'tr_lane')}")
for name in a.out:
    base, n, ctype = bases[name]
    out = np.array([cell(base + i) for i in range(n)], np.uint32)
    print(name, out.view({"int": np.int32, "float": np.float32}.get(ctype, np.uint32)).tolist())
print("steps", steps)

# 7. --compare: every state, as bits.
if want is not None:
    checks = [("steps", int(want["steps"]) == steps),
              *((f"input of step {t}", t in inputs and np.array_equal(inputs[t], want["hidden"][k]))
                for k, t in enumerate(want["hidden_steps"].tolist())),
              ("final hidden state", np.array_equal(bits(h), want["final_hidden"])),
              *((f"initial state of layer {L}", np.array_equal(initial[L], want["initial_states"][L])) for L in range(len(layers))),
              *((f"final state of layer {L}", np.array_equal(final[L], want["final_states"][L])) for L in range(len(layers)))]
    bad = [name for name, ok in checks if not ok]
    n_h = len(want["hidden_steps"])
    print(f"compare {a.compare}: {len(checks) - len(bad)} of {len(checks)} bit-identical "
          f"({n_h} step inputs, the final hidden state, {len(layers)} initial and {len(layers)} final layer states)")
    for name in bad[:10]:
        print("  differs:", name)
    sys.exit(1 if bad else 0)
sys.exit(3 if fault else 0)
