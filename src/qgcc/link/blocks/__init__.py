"""The SIMT machine's hardware blocks, one module each, wired by qgcc.link.core.

Each block adds its gates and memories to the shared Netlist and returns the
signals the later blocks read.  The order in which core calls them is the order in
which nodes enter the netlist, and so decides the placement and the weights: keep
it when changing a block.
"""
