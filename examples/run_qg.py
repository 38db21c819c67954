"""Run a .qg with nothing but transformers, safetensors, torch and numpy (docs/protocol.md).

    python examples/run_qg.py vadd.qg --grid 1 --block 4 --arg n=4 --arg a=@a.npy --arg b=@b.npy \\
        --arg c=zeros:4 --out c

Pointer arguments: @file.npy (int32/uint32) or zeros:N.  Prints each --out buffer.
"""
import argparse, json
import numpy as np, torch
from safetensors.numpy import load_file
from safetensors import safe_open
from transformers import DynamicCache, Qwen3_5TextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer, Qwen3_5TextRotaryEmbedding

ap = argparse.ArgumentParser()
ap.add_argument("qg"); ap.add_argument("--grid", type=int, default=1); ap.add_argument("--block", type=int, default=4)
ap.add_argument("--kernel"); ap.add_argument("--arg", action="append", default=[]); ap.add_argument("--out", action="append", default=[])
ap.add_argument("--max-steps", type=int, default=100000)
a = ap.parse_args()
meta = safe_open(a.qg, "np").metadata()
tensors = load_file(a.qg)
proto, shapes = json.loads(meta["protocol"]), json.loads(meta["tensor_shapes"])
kernels = json.loads(meta["kernels"])
kernel = next(k for k in kernels if a.kernel in (None, k["name"]))
config = Qwen3_5TextConfig(**json.loads(meta["text_config"]))
config._attn_implementation = "eager"
layers = []
for i in range(config.num_hidden_layers):                      # dense = zeros(shape); flat[idx] = val
    sd = {}
    for name, shape in shapes.items():
        dense = np.zeros(int(np.prod(shape)), np.float32)
        dense[tensors[f"layers.{i}.{name}.idx"]] = tensors[f"layers.{i}.{name}.val"]
        sd[name] = torch.from_numpy(dense.reshape(shape))
    with torch.device("meta"):                                 # no random init: every tensor is loaded
        layer = Qwen3_5DecoderLayer(config, i)
    layer.load_state_dict(sd, assign=True); layers.append(layer.eval())
# Launch: buffers laid out from cell 0 in parameter order; scalars and buffer bases are the parameter words.
params, memory, bases = [], [], {}
values = dict(s.split("=", 1) for s in a.arg)
for p in kernel["params"]:
    v = values[p["name"]]
    if p.get("pointer"):
        arr = np.zeros(int(v[6:]), np.uint32) if v.startswith("zeros:") else np.load(v[1:]).view(np.uint32).ravel()
        bases[p["name"]] = (len(memory), arr.size, p["ctype"]); params.append(len(memory)); memory += arr.tolist()
    else:
        params.append(int(v, 0) & 0xFFFFFFFF)
fields, cells = proto["fields"], proto["cells"]
def put(h, name, value):
    for i, d in enumerate(fields[name]): h[d] = 8.0 if (value >> i) & 1 else -8.0
def get(h, name):
    return sum(1 << i for i, d in enumerate(fields[name]) if h[d] > 0)
h = torch.full((config.hidden_size,), -8.0)
nt = a.block
for name, v in dict(one=1, bx=a.block, by=1, bz=1, gx=a.grid, gy=1, gz=1, nt=nt, nw=-(-nt // 4), gsize=len(memory),
                    shw=kernel["shared_words"], nparam=len(params), entry=kernel["entry"], kend=kernel["end"],
                    phase=1 << proto["phases"].index("blkinit")).items():
    put(h, name, v)
states = {}
def row(layer, head, slot, value):                              # one 32-bit cell as a dual-rail row
    st = states.setdefault(layer, torch.zeros(1, 16, 128, 128))
    for i in range(32):
        v = proto.get("value_level", 128.0)  # the level of a stored rail (older .qg files: 128)
        st[0, head, slot, 2 * i], st[0, head, slot, 2 * i + 1] = (v, 0.0) if (value >> i) & 1 else (0.0, v)
wps = cells.get("words_per_slot", 1)                            # older .qg files: one dual-rail cell a slot
def where(idx):                                                 # cell -> (layer, head, slot); word idx % wps
    return cells["first_layer"] + idx // cells["cells_per_layer"], (idx // wps // 128) % 16, idx // wps % 128
for idx in range(0, len(memory), wps):                          # two cells: 32 one-hot groups of four rails
    if wps == 1: row(*where(idx), memory[idx]); continue
    L, hd, slot = where(idx); w0, w1 = memory[idx], (memory + [0])[idx + 1]  # a cell past the buffers: 0
    st = states.setdefault(L, torch.zeros(1, 16, 128, 128))
    for i in range(32): st[0, hd, slot, 4 * i + ((w0 >> i) & 1) + 2 * ((w1 >> i) & 1)] = proto["value_level"]
for j, v in enumerate(params):
    row(*proto["params"], j, v)
cache = DynamicCache(config=config)
for i in range(len(layers)):                                    # every layer starts from its initial state
    cache.update_conv_state(torch.zeros(1, 3 * 16 * 128, 4), i)
    cache.update_recurrent_state(states.get(i, torch.zeros(1, 16, 128, 128)), i)
rotary = Qwen3_5TextRotaryEmbedding(config)
with torch.no_grad():
    for step in range(a.max_steps * 8):
        x, pos = h.reshape(1, 1, -1), torch.tensor([[step]])
        pe = rotary(x, pos)
        for layer in layers:
            x = layer(x, position_embeddings=pe, position_ids=pos, cache=cache)
        h = x.reshape(-1)                                       # the output is the next input
        if get(h, "fault"):
            raise SystemExit(f"fault {get(h, 'fault')} at pc {get(h, 'tr_pc')}")
        if get(h, "phase") == 1 << proto["phases"].index("halt"):
            break
def cell(idx):
    L, hd, slot = where(idx)
    S = cache.layers[L].recurrent_states[0][0, hd, slot]
    return sum(1 << i for i in range(32)                        # word idx % 2: rail 4i+3 or 4i+1+word above V / 2
               if (S[2 * i] > S[2 * i + 1] if wps == 1 else max(S[4 * i + 3], S[4 * i + 1 + idx % 2]) > proto["value_level"] / 2))
for name in a.out:
    base, n, ctype = bases[name]
    out = np.array([cell(base + i) for i in range(n)], np.uint32)
    print(name, (out.view(np.int32) if ctype == "int" else out).tolist())
print("steps", step + 1)
