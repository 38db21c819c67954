"""qgcc: a CUDA-C subset compiled to a 4-lane SIMT machine that runs inside Qwen3.5 decoder layers."""

__version__ = "0.1.0"
