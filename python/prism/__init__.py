"""prism from Python: a client of prismd (docs/python.md)."""
from .batch import batch, batch_on_gpus, load_manifest, visible_gpus, write_manifest
from .client import Client, daemon_socket, find_prism_binary
from .compiled import Compiled, Kernel, compile
from .errors import ConnectionLost, PrismError, ProgramError, UnsupportedOp
from .fx_import import Imported, from_torch
from .model_layers import ModelLayers, model_manifest
from .torch_backend import explain, register_on_import, register_torch_backend, torch_backend

register_on_import()  # torch.compile(model, backend="prism")

__all__ = ["Client", "Compiled", "ConnectionLost", "Imported", "Kernel", "ModelLayers", "PrismError", "ProgramError", "UnsupportedOp", "batch", "batch_on_gpus", "compile",
           "daemon_socket", "explain", "find_prism_binary", "from_torch", "load_manifest", "model_manifest", "register_torch_backend", "torch_backend",
           "visible_gpus", "write_manifest"]
