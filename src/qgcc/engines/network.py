"""What the two network engines share: link on demand, pick the device, drive the host.

`neural` and `hf` differ only in how they step the compiled layers (`layers()`);
the host (qgcc.engines.host) and the linked network are the same.  Neither imports
the reference emulator.
"""

from __future__ import annotations

from ..link.linker import LinkedNetwork, link
from ..runtime.launch import Launch
from .host import Host, NeuralResult


def network_for(launch: Launch) -> LinkedNetwork:
    """The layers the launch's program was linked into; a program compiled on the fly is linked now."""
    if launch.network is None:
        launch.network = link(launch.program)
    return launch.network


class NetworkEngine:
    name = ""

    def __init__(self, device: str = "cpu", dtype: str = "fp32"):
        self.device = device
        self.dtype = dtype  # the arithmetic of the layers (qgcc.engines.DTYPES)

    def layers(self, network: LinkedNetwork):
        """The compiled layers as an object with reset(recurrent_init), step(h) and recurrent_state(layer)."""
        raise NotImplementedError

    def host(self, network: LinkedNetwork) -> Host:
        """Built once per network and device: later launches of the program (qgrun --batch,
        the API) reuse the loaded layers."""
        key = (self.name, self.device) if self.dtype == "fp32" else (self.name, self.device, self.dtype)
        host = network.hosts.get(key)
        if host is None:
            host = network.hosts[key] = Host(network, self.layers(network))
        return host

    def run(self, launch: Launch, max_steps: int, on_step=None, states=None) -> NeuralResult:
        if self.device == "cuda":
            import torch

            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        return self.host(network_for(launch)).run(launch, max_steps=max_steps, on_step=on_step, states=states)
