"""Layers as PyTorch models write them, for prism.from_torch (docs/python.md)."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    """Llama's RMSNorm: the mean square over the last dim, eps inside the root, then the gain."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaMLPBlock(nn.Module):
    """Llama's decoder MLP block: RMSNorm, SwiGLU through three bias-free nn.Linear, the residual."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.post_attention_layernorm = RMSNorm(dim)
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class LlamaAttentionBlock(nn.Module):
    """Llama's decoder attention block at a decode or prefill step, as LlamaAttention writes it:
    RMSNorm, the query projection viewed as heads and moved in front, scaled softmax attention over
    the cached keys and values (rotary embedding already applied) with the additive mask, the heads
    moved back and merged, the output projection and the residual."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.input_layernorm = RMSNorm(dim)
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, k_cache, v_cache, mask):
        q = self.q_proj(self.input_layernorm(x)).view(-1, self.heads, self.head_dim).transpose(0, 1)
        scores = torch.matmul(q, k_cache.transpose(1, 2)) / math.sqrt(self.head_dim) + mask
        attention = torch.matmul(torch.softmax(scores, dim=-1), v_cache)
        return x + self.o_proj(attention.transpose(0, 1).reshape(-1, self.heads * self.head_dim))


class GPT2MLP(nn.Module):
    """GPT-2's MLP: c_fc, the tanh GELU, c_proj (nn.Linear with biases)."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.c_fc = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class BertIntermediate(nn.Module):
    """BERT's intermediate block: a dense layer and the exact (erf) GELU."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.dense = nn.Linear(dim, hidden)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class Phi3MLP(nn.Module):
    """Phi-3's MLP: the gate and up projections as one nn.Linear, chunked in two, SwiGLU, down."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_up_proj = nn.Linear(dim, 2 * hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class ResidualRMSNorm(nn.Module):
    """The residual add fused with the next RMSNorm, as a decoder layer's serving kernels do it:
    returns the new residual stream and its normalized rows."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.norm = RMSNorm(dim, eps)

    def forward(self, x, residual):
        h = x + residual
        return h, self.norm(h)
