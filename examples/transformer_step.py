"""A small transformer's training step in PyTorch: the program `ncuh profile --top N` profiles.

A decoder-only language model (token and position embeddings, pre-norm blocks of causal
self-attention and an MLP, a tied output head) trained with AdamW under bf16 autocast on random
tokens. Each step runs inside an NVTX range named "step", after `--warmup` steps inside
"warmup", so a profiler can take one step and skip the warm-up:

    python examples/transformer_step.py                     # eager, 2 warm-up steps + 3 steps
    python examples/transformer_step.py --compile           # torch.compile'd model
    python examples/transformer_step.py --cuda-graph        # one whole step captured, replayed
    torchrun --nproc-per-node 2 examples/transformer_step.py   # one rank per GPU (DDP, NCCL)

It needs PyTorch with CUDA and nothing else; it prints the model's size and the time per step.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, width // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class LanguageModel(nn.Module):
    def __init__(self, vocab: int, width: int, depth: int, heads: int, context: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        for table in (self.tokens, self.positions):  # GPT-2's scale: small logits at the start
            nn.init.normal_(table.weight, std=0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.norm(x) @ self.tokens.weight.T  # the head shares the embedding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps, each an NVTX 'step'")
    parser.add_argument("--warmup", type=int, default=2, help="steps first, in NVTX 'warmup'")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="capture one whole step in a CUDA graph and replay it")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=8192)
    args = parser.parse_args()

    rank = int(os.environ.get("LOCAL_RANK", "0"))
    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    torch.cuda.set_device(rank)
    if distributed:
        torch.distributed.init_process_group("nccl", device_id=torch.device("cuda", rank))
    torch.manual_seed(1234 + rank)
    device = torch.device("cuda", rank)

    model = LanguageModel(args.vocab, args.width, args.depth, args.heads, args.context).to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    trained = torch.compile(model) if args.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True,
                                  capturable=args.cuda_graph)
    ids = torch.randint(0, args.vocab, (args.batch, args.context + 1), device=device)
    inputs, targets = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step() -> torch.Tensor:
        # graph capture needs autocast without its weight cache (PyTorch's CUDA graphs notes)
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not args.cuda_graph):
            logits = trained(inputs)
            loss = F.cross_entropy(logits.float().view(-1, args.vocab), targets.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        return loss

    run = step
    if args.cuda_graph:
        # PyTorch's whole-network capture: warm up on a side stream, then capture one step
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step()

        def run() -> torch.Tensor:
            graph.replay()
            return static_loss

    torch.cuda.nvtx.range_push("warmup")
    for _ in range(args.warmup):
        run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()

    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        torch.cuda.nvtx.range_push("step")
        loss = run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        times.append(time.perf_counter() - start)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"rank {rank}: {parameters / 1e6:.1f}M parameters, loss {loss.item():.3f} "
          f"(ln vocab {math.log(args.vocab):.3f}), step {1e3 * min(times):.2f} ms (best of "
          f"{len(times)})", flush=True)
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
