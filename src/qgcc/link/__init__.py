"""Link time: a program becomes the weights of stock Qwen3.5 decoder layers.

core (the machine as a netlist, built from the program) -> schedule (gates and
memories placed into layers) -> weights (the layer tensors) -> linker (the
LinkedNetwork, and its tensor form for .qg files and checkpoints).  Nothing here
runs a network or imports the front end.
"""
