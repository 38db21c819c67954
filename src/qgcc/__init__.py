"""qgcc: a CUDA-C subset compiled to a 4-lane SIMT machine that runs inside Qwen3.5 decoder layers.

One folder (or module) per stage; every import points down this list:

* spec.py, isa.py, qwen35.py, diagnostics.py, trace.py, version.py: the facts every stage shares
  (machine capacities, instruction set, layer geometry, errors, trace records);
  fpu.py and semantics.py: what the instructions compute (for evaluators, not the ISA table);
* frontend/ (CUDA-C) and asm/ (qsass) -> program.py: the compiled program;
* link/: program -> netlist (link/blocks, one module per hardware block) -> schedule
  -> weights -> LinkedNetwork;
* qgfile.py and checkpoint/: the linked program on disk; loader.py reads either back;
  inputs.py: any input file by extension (.cu, .qsass, .qg, checkpoint), for cli/ and api.py;
* runtime/: the launch every engine starts from; ref/: the reference emulator;
* engines/: ref, neural and hf behind one registry (qgcc.engines.get(name));
* cli/: the qgcc and qgrun commands; tools/: developer tools (the docs' generators).
"""

from .version import __version__  # noqa: F401

# The Python API (qgcc/api.py), imported on first use so that `import qgcc` stays light.
_API = ("compile", "load", "Program", "Result", "TraceStream")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'qgcc' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_API))
