"""The `neural` engine (qgrun's default): the compiled layers' stock math over their nonzero weights.

Implementations of the same numbers (docs/engines.md): the compiled C step (neural_c)
on the CPU; on CUDA the batched step (neural_batch) as a batch of one, in a CUDA graph;
the torch path (neural_torch) without a C compiler, when the C step's load-time checks
refuse the layers, or for a .qg linked before the exact encoding.  All are
bit-identical to transformers' modules because the linked network is exact by
construction.  Neither is imported until needed, so a CPU run never imports torch.
"""

from __future__ import annotations

from ..link.linker import LinkedNetwork
from ..link.weights import VALUE_LEVEL
from ..runtime.launch import Launch
from ..trace import Fault
from .host import NeuralResult
from .network import NetworkEngine, network_for


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

    def __init__(self, device: str = "cpu", dtype: str = "fp32", step: str = "unfused"):
        super().__init__(device, dtype)
        self.step = step  # qgcc.engines.STEPS: "fused" / "phased" run even one launch through Triton kernels

    def layers(self, network: LinkedNetwork):
        return neural_layers(network, self.device)

    def run(self, launch: Launch, max_steps: int, on_step=None, states=None) -> NeuralResult:
        """On CUDA (or with a Triton step) a launch runs as a batch of one through the batched
        step, whose steps are replayed from a CUDA graph (docs/engines.md, "Batched launches");
        one whose states are dumped (`states`) takes the one-launch torch path, which steps
        through the host."""
        if (self.device == "cuda" or self.step != "unfused") and states is None:
            from .batch import batchable_with, runner_for

            network = network_for(launch)
            if batchable_with(network, self.step):
                result = runner_for(network, 1, self.device, self.step, [launch]).run([launch], max_steps, on_step)[0]
                if isinstance(result, Fault):
                    raise result
                return result
        return super().run(launch, max_steps, on_step, states)
