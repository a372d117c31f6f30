"""A patch embedding's convolution, written as the linear it is (docs/python.md, "Patch
convolutions").

ViT (and CLIP's, SigLIP's, DeiT's vision towers) cut an image into patches with a convolution
whose stride is its kernel: `conv2d(x, W[o, c, kh, kw], b, stride=(kh, kw))`, no padding,
dilation or groups. Each output pixel is one patch's `c * kh * kw` values times W's rows: a
linear. prism has no convolution, so the patch embedding, the only op of these models PyTorch
still ran, is rewritten as `patch_grid(linear(patch_rows(x, kh, kw), W.reshape(o, -1), b), x,
kh, kw)`: PyTorch copies the patches into rows (`patch_rows`) and views the result back as the
convolution's `[batch, o, h, w]` (`patch_grid`, no copy); the linear is prism's. The rows' order
of `c, kh, kw` is W's, so each sum is the same products (in another order).
"""
from . import share


def patch_rows(image, kh, kw):
    """`image` [b, c, H, W] as one row per patch, [b, (H/kh)(W/kw), c * kh * kw], patches in
    row-major order, each row's values in W's order (c, kh, kw)."""
    b, c, height, width = image.shape
    grid = image.reshape(b, c, height // kh, kh, width // kw, kw).permute(0, 2, 4, 1, 3, 5)
    return grid.reshape(b, (height // kh) * (width // kw), c * kh * kw)


def patch_grid(rows, image, kh, kw):
    """The linear's rows [b, patches, o] as the convolution gives them, [b, o, H/kh, W/kw]: a view."""
    return rows.transpose(1, 2).unflatten(2, (image.shape[2] // kh, image.shape[3] // kw))


def write_patch_linears(graph, meta_of):
    """Rewrites each patch convolution in `graph` (module docstring) as its linear. `meta_of(shape,
    dtype)` makes a new node's tensor_meta."""
    import torch

    for node in list(graph.nodes):
        found = _patch_convolution(node)
        if found is None:
            continue
        image, weight, bias, (b, c, height, width), (o, kh, kw) = found
        dtype = node.meta["tensor_meta"].dtype
        patches, size = (height // kh) * (width // kw), c * kh * kw
        with graph.inserting_before(node):
            rows = graph.call_function(patch_rows, (image, kh, kw))
            matrix = graph.call_method("reshape", (weight, o, size))
            linear = graph.call_function(torch.nn.functional.linear, (rows, matrix, bias))
            grid = graph.call_function(patch_grid, (linear, image, kh, kw))
        rows.meta = {**node.meta, "tensor_meta": meta_of((b, patches, size), dtype)}
        matrix.meta = {**node.meta, "tensor_meta": meta_of((o, size), dtype)}
        linear.meta = {**node.meta, "tensor_meta": meta_of((b, patches, o), dtype)}
        grid.meta = dict(node.meta)
        node.replace_all_uses_with(grid)
        graph.erase_node(node)
        _as_tokens(graph, grid, linear)


def _as_tokens(graph, grid, linear):
    """Where the patches go on as tokens, `grid.flatten(2).transpose(1, 2)` (ViT's), the linear's
    rows are those tokens: its readers read it, and the piece goes on from the linear."""
    users = list(grid.users)
    if len(users) != 1 or share.op_name(users[0]) != "flatten" or list(users[0].args[1:]) + list(users[0].kwargs.values()) not in ([2], [2, -1]):
        return
    flatten = users[0]
    readers = list(flatten.users)
    if len(readers) != 1 or share.op_name(readers[0]) != "transpose" or sorted(readers[0].args[1:]) != [1, 2]:
        return
    transpose = readers[0]
    transpose.replace_all_uses_with(linear)
    for dead in (transpose, flatten, grid):
        graph.erase_node(dead)


def _patch_convolution(node):
    """(image, weight, bias, image's shape, (o, kh, kw)) of a conv2d whose stride is its kernel,
    without padding, dilation or groups, over an image of fixed sizes its kernel divides; else None."""
    if node.op != "call_function" or share.op_name(node) != "conv2d" or not share.computes_numbers(node):
        return None
    a = share.arguments(node, ["input", "weight", "bias", "stride", "padding", "dilation", "groups"],
                        {"bias": None, "stride": 1, "padding": 0, "dilation": 1, "groups": 1})
    image, weight = a["input"], a["weight"]
    shape, kernel = share.shape_of(image), share.shape_of(weight) if hasattr(weight, "meta") else None
    if shape is None or kernel is None or len(shape) != 4 or not all(isinstance(d, int) for d in shape + kernel):
        return None
    o, _, kh, kw = kernel
    if (_pair(a["stride"]) != (kh, kw) or _pair(a["padding"]) != (0, 0) or _pair(a["dilation"]) != (1, 1)
            or a["groups"] != 1 or shape[2] % kh or shape[3] % kw):
        return None
    return image, weight, a["bias"], shape, (o, kh, kw)


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)
