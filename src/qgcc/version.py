"""The package version, in a module of its own so that modules which print or record it (the
CLI, the checkpoint writer) need not import the package root, which reaches the whole API."""

__version__ = "0.1.0"
