"""prism from Python: a client of prismd (docs/python.md)."""
from .client import Client, daemon_socket, find_prism_binary
from .errors import ConnectionLost, PrismError, ProgramError

__all__ = ["Client", "ConnectionLost", "PrismError", "ProgramError", "daemon_socket", "find_prism_binary"]
