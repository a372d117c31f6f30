"""The exceptions prism's Python client raises, and the warnings its torch.compile backend says."""
import warnings

WARNED = set()  # the warnings said in this process: each once


def warn_once(text):
    """A RuntimeWarning of `text`, the first time this process says it."""
    if text not in WARNED:
        WARNED.add(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)


class PrismError(Exception):
    """A JSON-RPC error from prismd: `code` (docs/protocol.md, Errors), `message` and `data`
    (for RequestFailed, `data["subject"]` names what in the request it is about)."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ProgramError(PrismError):
    """A program text with errors: `diagnostics` is a list of (line, column, message), 1-based as
    the REPL prints them."""

    def __init__(self, uri, diagnostics):
        self.uri = uri
        self.diagnostics = diagnostics
        text = "; ".join(f"{uri}:{line}:{column}: {message}" for line, column, message in diagnostics)
        super().__init__(None, text)


class NoFusedKernel(PrismError):
    """A tune at some sizes in which no fused kernel passed its check or beat the eager plan (the
    program op by op), raised by a Compiled made with `eager_plan=False` in place of loading that
    plan: its caller has the program's own ops to run (torch.compile's graph)."""

    def __init__(self, message):
        super().__init__(None, message)


class ConnectionLost(Exception):
    """prismd closed the connection or could not be reached."""


class UnsupportedOp(Exception):
    """from_torch met an op prism cannot express: the message names the node, its op and the
    line of the user's source it came from; `node` is the node's name and `reason` the why alone,
    where one node is to blame."""

    def __init__(self, message, node=None, reason=None):
        super().__init__(message)
        self.node, self.reason = node, reason


class OutOfBoundsWrite(Exception):
    """A kernel wrote past one of its outputs (found by compiled.Call's first call): a bug of prism's."""


def as_bug(error):
    """What a warning says of an error of prism's own: its type and text, and that it is a bug."""
    return f"{type(error).__name__}: {error}; a bug: please report it"
