"""qgcc: a CUDA-C subset compiled to a 4-lane SIMT machine that runs inside Qwen3.5 decoder layers."""

__version__ = "0.1.0"

# The Python API (qgcc/api.py), imported on first use so that `import qgcc` stays light.
_API = ("compile", "load", "Program", "Result", "TraceStream")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'qgcc' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_API))
