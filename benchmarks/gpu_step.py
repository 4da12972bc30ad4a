"""Measure a dense decoder's training step on one real GPU, to check procure's single-GPU prediction.

Not a test and not run by CI (it needs PyTorch and a CUDA GPU). It builds a Llama-shaped decoder in
plain PyTorch (RMSNorm, grouped-query attention through ``scaled_dot_product_attention``, SwiGLU
MLP, untied output layer), trains it in bf16 autocast with fp32 parameters and a fused AdamW (the
torchtitan recipe that ``benchmarks/gpu_step/*.yaml`` states), and prints the measured step time
beside the shape so it can be compared with ``procure estimate benchmarks/gpu_step/<shape>.yaml``.

    python benchmarks/gpu_step.py --shape 1b --micro-batch 4 --accumulate 1 [--compile] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

SHAPES = {  # layers, hidden, heads, kv_heads, ffn_hidden; vocab 128,256 for all (Llama 3's)
    "1b": (16, 2048, 16, 8, 8192),
    "3b": (28, 3072, 24, 8, 8192),
}
VOCAB = 128_256


def build(shape: str):  # type: ignore[no-untyped-def]
    from torch import nn
    import torch.nn.functional as F

    layers, hidden, heads, kv_heads, ffn = SHAPES[shape]
    head_dim = hidden // heads

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1 = nn.RMSNorm(hidden)
            self.n2 = nn.RMSNorm(hidden)
            self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * head_dim, bias=False)
            self.o = nn.Linear(hidden, hidden, bias=False)
            self.up = nn.Linear(hidden, 2 * ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):  # type: ignore[no-untyped-def]
            b, s, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], -1)
            q = q.view(b, s, heads, head_dim).transpose(1, 2)
            k = k.view(b, s, kv_heads, head_dim).transpose(1, 2)
            v = v.view(b, s, kv_heads, head_dim).transpose(1, 2)
            rep = heads // kv_heads  # expanded so the FlashAttention backend is always eligible
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, hidden))
            gate, up = self.up(self.n2(x)).chunk(2, -1)
            return x + self.down(F.silu(gate) * up)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(VOCAB, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.RMSNorm(hidden)
            self.out = nn.Linear(hidden, VOCAB, bias=False)

        def forward(self, tokens):  # type: ignore[no-untyped-def]
            x = self.emb(tokens)
            for block in self.blocks:
                x = block(x)
            return self.out(self.norm(x))

    return Decoder()


def main() -> None:
    import torch
    import torch.nn.functional as F

    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--accumulate", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()

    torch.manual_seed(0)
    model = build(args.shape).cuda()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fwd = torch.compile(model) if args.compile else model
    tokens = torch.randint(0, VOCAB, (args.accumulate, args.micro_batch, args.seq + 1), device="cuda")

    def step() -> None:
        for i in range(args.accumulate):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = fwd(tokens[i, :, :-1])
            loss = F.cross_entropy(logits.float().view(-1, VOCAB), tokens[i, :, 1:].reshape(-1))
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    t0 = time.perf_counter()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    times = []
    for _ in range(args.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    layers, hidden, heads, kv_heads, ffn = SHAPES[args.shape]
    tokens_per_step = args.seq * args.micro_batch * args.accumulate
    # Model FLOPs as procure counts them: 6 x (params less the input embedding) x tokens plus
    # causal attention (12 L h s / 2 per token).
    flops = 6 * (params - VOCAB * hidden) * tokens_per_step + 6 * layers * hidden * args.seq * tokens_per_step
    result = {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "shape": args.shape,
        "params": params, "seq": args.seq, "micro_batch": args.micro_batch, "accumulate": args.accumulate,
        "compile": args.compile, "warmup_s": round(warm_s, 2),
        "step_time_s_mean": round(statistics.fmean(times), 5), "step_time_s_median": round(statistics.median(times), 5),
        "step_time_s_min": round(min(times), 5), "step_time_s_max": round(max(times), 5),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "model_tflops_per_s": round(flops / statistics.median(times) / 1e12, 1),
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
