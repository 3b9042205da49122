"""The reference workloads of shared/BENCH.md in PyTorch, for train_step_peer.py: the models (written so
torch.jit.script takes them), their seeded batches, their losses and their optimizers.

  inputs, labels = make_batch("bert_tiny", 32)      # inputs: the model's positional arguments
  model = make_model("bert_tiny")                   # 1,478,530 parameters
  loss = make_loss("bert_tiny")(model(*inputs), labels)
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

# BERT-tiny's and GPT-tiny's token batches: 128 tokens per row, padding included, of which 51..128
# (uniform per row) are real, ids drawn from a vocabulary of 8,192.
VOCABULARY = 8192
TOKEN_LENGTH = 128
SHORTEST_ROW = 51
IGNORED_LABEL = -100  # GPT-tiny's label where there is no next token; left out of the loss

BERT_HIDDEN = 128
BERT_INIT_STDDEV = 0.02
GPT_HIDDEN = 256
GPT_INIT_STDDEV = 0.02


def bert_init_(tensor):
    """BERT's initializer: normal(0, 0.02) redrawn beyond two standard deviations."""
    nn.init.trunc_normal_(tensor, std=BERT_INIT_STDDEV, a=-2 * BERT_INIT_STDDEV, b=2 * BERT_INIT_STDDEV)


class EncoderLayer(nn.Module):
    """A post-LN Transformer block: x = LN(x + Attention(x)); x = LN(x + FFN(x)), FFN = Linear GELU(erf) Linear."""

    def __init__(self, hidden=BERT_HIDDEN, heads=2, intermediate=512, eps=1e-12):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, L, D] -> [B, heads, L, D / heads]."""
        return x.view(x.size(0), x.size(1), self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale + mask_bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(x.shape)
        x = self.attention_norm(x + self.attention_output(context))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class BertTiny(nn.Module):
    """BERT-tiny as BENCH.md defines it: token and learned position embeddings, LN, 2 post-LN blocks of
    2 heads of 64, a tanh pooler on token 0 and a 2-class classifier; no dropout."""

    def __init__(self, layers=2, classes=2, eps=1e-12):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCABULARY, BERT_HIDDEN)
        self.position_embedding = nn.Parameter(torch.empty(TOKEN_LENGTH, BERT_HIDDEN))
        self.embeddings_norm = nn.LayerNorm(BERT_HIDDEN, eps=eps)
        self.layers = nn.ModuleList([EncoderLayer(eps=eps) for _ in range(layers)])
        self.pooler = nn.Linear(BERT_HIDDEN, BERT_HIDDEN)
        self.classifier = nn.Linear(BERT_HIDDEN, classes)
        bert_init_(self.token_embedding.weight)
        bert_init_(self.position_embedding)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                bert_init_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.token_embedding(input_ids) + self.position_embedding[:input_ids.size(1)]
        h = self.embeddings_norm(h)
        # Padding keys get -1e9 added to their scores: [B, L] -> [B, 1, 1, L], broadcast over heads and queries.
        mask_bias = ((1.0 - attention_mask.to(h.dtype)) * -1e9).unsqueeze(1).unsqueeze(2)
        for layer in self.layers:
            h = layer(h, mask_bias)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return self.classifier(pooled)


class GptBlock(nn.Module):
    """A pre-LN GPT-2 block: x = x + Attention(LN(x)); x = x + FFN(LN(x)), FFN = Linear GELU(tanh) Linear."""

    def __init__(self, hidden=GPT_HIDDEN, heads=4, intermediate=1024, eps=1e-5):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.attention_output = nn.Linear(hidden, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        # [B, L, 3D] -> 3 x [B, heads, L, D / heads]
        qkv = self.qkv(self.attention_norm(x)).view(batch, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale + mask_bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(batch, length, hidden)
        x = x + self.attention_output(context)
        return x + self.output(F.gelu(self.intermediate(self.ffn_norm(x)), approximate="tanh"))


class GptTiny(nn.Module):
    """GPT-tiny as BENCH.md defines it: token and learned position embeddings (N(0, 0.02)), 4 pre-LN
    blocks of 4 heads of 64 under a causal mask, a final LN, and logits through the token embedding
    itself (tied, no bias); no dropout. Linear weights N(0, 0.02) and biases zero, as Kestrel's GPT.

    The attention also masks padding keys (attention_mask 0), as Kestrel's GPT does with the mask it is
    given. With right padding that changes nothing a real token sees, only what padding positions
    (whose labels the loss ignores) attend to, so both compute the same loss with the same work."""

    def __init__(self, layers=4, eps=1e-5):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCABULARY, GPT_HIDDEN)
        self.position_embedding = nn.Parameter(torch.empty(TOKEN_LENGTH, GPT_HIDDEN))
        self.blocks = nn.ModuleList([GptBlock(eps=eps) for _ in range(layers)])
        self.final_norm = nn.LayerNorm(GPT_HIDDEN, eps=eps)
        nn.init.normal_(self.token_embedding.weight, std=GPT_INIT_STDDEV)
        nn.init.normal_(self.position_embedding, std=GPT_INIT_STDDEV)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=GPT_INIT_STDDEV)
                nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        length = input_ids.size(1)
        h = self.token_embedding(input_ids) + self.position_embedding[:length]
        # Position t attends to keys j <= t that are real: [L, L] & [B, 1, L] -> bias [B, 1, L, L],
        # made once and broadcast over the heads of every block.
        causal = torch.ones(length, length, dtype=torch.bool, device=h.device).tril()
        allowed = causal.unsqueeze(0) & (attention_mask != 0).unsqueeze(1)
        mask_bias = ((~allowed).to(h.dtype) * -1e9).unsqueeze(1)
        for block in self.blocks:
            h = block(h, mask_bias)
        return torch.matmul(self.final_norm(h), self.token_embedding.weight.t())


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "gpt_tiny":
        return GptTiny()
    return BertTiny()


def token_batch(batch, generator):
    """Int64 ids and mask, as a tokenizer makes them: per row a length uniform in 51..128, random ids in
    [1, vocabulary) up to it, then id 0 and mask 0."""
    lengths = torch.randint(SHORTEST_ROW, TOKEN_LENGTH + 1, (batch,), generator=generator)
    ids = torch.randint(1, VOCABULARY, (batch, TOKEN_LENGTH), generator=generator)
    mask = (torch.arange(TOKEN_LENGTH).unsqueeze(0) < lengths.unsqueeze(1)).to(torch.int64)
    return ids * mask, mask


def make_batch(name, batch):
    """The model's inputs (a tuple of its positional arguments) and the labels, from seed 0."""
    generator = torch.Generator().manual_seed(0)
    if name == "bert_tiny":
        ids, mask = token_batch(batch, generator)
        return (ids, mask), torch.randint(0, 2, (batch,), generator=generator)
    if name == "gpt_tiny":
        # Labels: each position's next token, or IGNORED_LABEL on a row's last token and on padding.
        ids, mask = token_batch(batch, generator)
        next_ids = torch.full_like(ids, IGNORED_LABEL)
        next_ids[:, :-1] = ids[:, 1:]
        next_is_real = torch.zeros_like(mask)
        next_is_real[:, :-1] = mask[:, 1:]
        return (ids, mask), torch.where(next_is_real != 0, next_ids, torch.full_like(ids, IGNORED_LABEL))
    shape = (batch, 784) if name == "mlp" else (batch, 1, 28, 28)
    x = torch.randn(*shape, generator=generator)
    return (x,), torch.randint(0, 10, (batch,), generator=generator)


def make_loss(name):
    """Cross-entropy on logits: per sample, or for GPT-tiny per token over the labelled tokens (the mean
    leaves IGNORED_LABEL out of its count)."""
    cross_entropy = nn.CrossEntropyLoss(ignore_index=IGNORED_LABEL)
    if name == "gpt_tiny":
        return lambda logits, labels: cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
    return cross_entropy


def make_optimizer(name, parameters, foreach):
    """Adam for the MLP and CNN, AdamW (weight decay 0.01 on every parameter) for BERT-tiny and GPT-tiny."""
    if name in ("bert_tiny", "gpt_tiny"):
        return torch.optim.AdamW(parameters, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                                 foreach=foreach)
    return torch.optim.Adam(parameters, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, foreach=foreach)
