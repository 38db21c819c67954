"""Linking into a Hugging Face Qwen3.5 checkpoint (`qgcc KERNEL.cu --base DIR -o OUTDIR`) and reading it back.

* base.py: inspect and validate the base (config, geometry, shards) from headers only;
* shards.py: safetensors headers, and the sparse writer of the machine shard;
* writer.py: OUTDIR = the base's files verbatim + the machine shard + config/index;
* reader.py: reads a patched checkpoint directory back (qgcc.loader.load_program).

docs/checkpoint.md describes the layout.
"""
