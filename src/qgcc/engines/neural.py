"""The `neural` engine (qgrun's default): the compiled layers' stock math over their nonzero weights.

Two implementations of the same numbers (docs/engines.md): the compiled C step
(neural_c) on the CPU, and the torch path (neural_torch) on CUDA, without a C
compiler, or when the C step's load-time checks refuse the layers.  Both are
bit-identical to transformers' modules because the linked network is exact by
construction.  Neither is imported until needed, so a CPU run never imports torch.
"""

from __future__ import annotations

from ..link.linker import LinkedNetwork
from ..link.weights import VALUE_LEVEL
from .network import NetworkEngine


def neural_layers(network: LinkedNetwork, device: str = "cpu"):
    """The C step when it can run these layers here, else the torch path."""
    if device == "cpu" and network.value_level == VALUE_LEVEL:
        from .neural_c import CStepLayers, Unsupported

        try:
            return CStepLayers(network.layers, network.fields["one"][0])
        except Unsupported:
            pass
    from .neural_torch import NeuralLayers

    return NeuralLayers(network.layers, device)


class NeuralEngine(NetworkEngine):
    """`qgrun --engine neural` (the default)."""

    name = "neural"

    def layers(self, network: LinkedNetwork):
        return neural_layers(network, self.device)
