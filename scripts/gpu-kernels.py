#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU through PyTorch, the kernel rates trident's cost model prices
from sources (docs/cost_model.md#kernels, #precision, #optimizer): GEMMs at a plan's shapes in
BF16 and FP8, the burst and sustained clocks of BF16 and FP8 GEMMs and of fused attention, fused
attention's TFLOP/s by sequence length (PyTorch's FlashAttention-2 and cuDNN backends), the HBM
rate of the memory-bound kernels at the bytes trident counts for them, the CPU launch floor and
the CUDA context.

Not part of the build or the tests (CI has no GPU and no PyTorch). Usage, on a GPU machine:
    python3 scripts/gpu-kernels.py [--plans PLAN.json ...] [--out DIR] [--sustain-s S]
                                   [--idle-s S] [--only TEXT]
PLAN.json: `trident plan --format json` output; each plans[0].gemms entry (m, n, k, dtype,
predicted_tflops) is timed in its dtype. Results: DIR/gpu-kernels.json and the printed tables.
Clocks and memory are read through NVML on the board of CUDA_VISIBLE_DEVICES' first entry (GPU 0
without it; see nvml_handle).
"""
import argparse
import json
import math
import os
import threading
import time

import torch
import torch.nn.functional as F

RESULTS = {}
START = time.time()


def log(*args):
    print(*args, flush=True)


def nvml_handle():
    """NVML's handle of the board CUDA device 0 runs on, without touching CUDA (the context
    measurement reads NVML before this process has one): CUDA_VISIBLE_DEVICES' first entry, a
    UUID or an index (NVML's order is the PCI bus order: set CUDA_DEVICE_ORDER=PCI_BUS_ID for
    CUDA to agree), else GPU 0."""
    import pynvml
    pynvml.nvmlInit()
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    if first.startswith("GPU-") or first.startswith("MIG-"):
        return pynvml.nvmlDeviceGetHandleByUUID(first)
    return pynvml.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)


def time_loop_s(fn, min_s=0.15, warmup=3):
    """Mean seconds per call of fn (CUDA events over a loop long enough to pass min_s)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    n = 1
    while True:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        stop.record()
        stop.synchronize()
        elapsed_s = start.elapsed_time(stop) / 1e3
        if elapsed_s >= min_s or n >= 1 << 16:
            return elapsed_s / n
        n = max(n * 2, int(n * min_s / max(elapsed_s, 1e-6) * 1.2))


class ClockSampler:
    """Samples the SM clock (MHz) and board power (W) through NVML every period_s."""

    def __init__(self, period_s=0.1):
        import pynvml
        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = nvml_handle()
        self.period_s = period_s
        self.samples = []
        self.running = False

    def _run(self):
        while self.running:
            t = time.time()
            clock = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
            power = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1e3
            temp = self.nvml.nvmlDeviceGetTemperature(self.handle, self.nvml.NVML_TEMPERATURE_GPU)
            self.samples.append((t, clock, power, temp))
            time.sleep(self.period_s)

    def __enter__(self):
        self.samples = []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()

    def window(self, t0, t1):
        rows = [s for s in self.samples if t0 <= s[0] <= t1]
        if not rows:
            return {}
        med = lambda xs: sorted(xs)[len(xs) // 2]
        return {"sm_mhz": med([r[1] for r in rows]), "power_w": med([r[2] for r in rows]),
                "temp_c": med([r[3] for r in rows]), "samples": len(rows)}


def gemm_fn(m, n, k, dtype):
    """A callable running x(m,k) @ W(n,k)^T as a linear layer does; FP8 via torch._scaled_mm
    (E4M3 inputs, per-tensor scales, bf16 out)."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    if dtype == "fp8":
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        del a, b
        return lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16)
    return lambda: a @ b.t()


def measure_plan_gemms(paths):
    rows = []
    for path in paths:
        plan = json.load(open(path))["plans"][0]
        for g in plan["gemms"]:
            m, n, k, dtype = g["m"], g["n"], g["k"], g["dtype"]
            try:  # one shape refused (FP8 needs multiples of 16) loses that row only
                fn = gemm_fn(m, n, k, dtype)
                t = time_loop_s(fn, min_s=0.3)
            except Exception as e:
                log(f"  {os.path.basename(path)} {g['name']}: {type(e).__name__}: {e}"[:200])
                continue
            tflops = 2 * m * n * k / t / 1e12
            rows.append({"plan": os.path.basename(path), "name": g["name"], "m": m, "n": n,
                         "k": k, "dtype": dtype, "measured_tflops": tflops,
                         "predicted_tflops": g["predicted_tflops"]})
            log(f"  {os.path.basename(path):28s} {g['name']:14s} {m}x{n}x{k} {dtype:4s} "
                f"measured {tflops:7.1f}  predicted {g['predicted_tflops']:7.1f}  "
                f"pred/meas {g['predicted_tflops'] / tflops:.3f}")
            del fn
            torch.cuda.empty_cache()
    RESULTS["plan_gemms"] = rows


def sustained(name, fn, flops_per_call, seconds, sampler):
    """Burst (first 1 s after warm-up) and sustained (last third) rate with clocks."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    marks = []
    with sampler:
        t_begin = time.time()
        while time.time() - t_begin < seconds:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                fn()
            stop.record()
            stop.synchronize()
            marks.append((time.time(), 10 * flops_per_call / (start.elapsed_time(stop) / 1e3)))
    first = [r for t, r in marks if t - t_begin <= 1.0]
    last = [r for t, r in marks if t - t_begin >= seconds * 2 / 3]
    if not first or not last:
        raise RuntimeError(f"{name}: no timed batch in the first second or the last third")
    burst = max(first) / 1e12
    steady = sum(last) / len(last) / 1e12
    row = {"name": name, "burst_tflops": burst, "sustained_tflops": steady,
           "ratio": steady / burst, "seconds": seconds,
           "clock_first_s": sampler.window(t_begin, t_begin + 1.0),
           "clock_last_third": sampler.window(t_begin + seconds * 2 / 3, t_begin + seconds)}
    log(f"  {name:34s} burst {burst:7.1f}  sustained {steady:7.1f}  ratio {row['ratio']:.3f}  "
        f"clock {row['clock_first_s'].get('sm_mhz')} -> {row['clock_last_third'].get('sm_mhz')} "
        f"MHz  power {row['clock_last_third'].get('power_w')} W")
    return row


def attention_fn(s, causal, backend, backward, heads=32, d=128, tokens=16384):
    from torch.nn.attention import sdpa_kernel
    b = max(1, tokens // s)
    q, k, v = (torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16,
                           requires_grad=backward) for _ in range(3))
    grad = torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16)

    def run():
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            if backward:  # fresh gradients: no accumulation kernel into .grad
                torch.autograd.grad(out, (q, k, v), grad)
    flops_fwd = 4 * b * heads * s * s * d * (0.5 if causal else 1.0)
    return run, flops_fwd


def measure_attention(sampler, lengths, sustain_s):
    from torch.nn.attention import SDPBackend
    rows = []
    for backend_name, backend in (("flash2", SDPBackend.FLASH_ATTENTION),
                                  ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        for causal in (True, False):
            for s in lengths:
                try:
                    fwd, flops = attention_fn(s, causal, backend, backward=False)
                    t_fwd = time_loop_s(fwd)
                    both, _ = attention_fn(s, causal, backend, backward=True)
                    t_both = time_loop_s(both)
                except Exception as e:  # a backend refusing a shape is recorded, not fatal
                    log(f"  {backend_name} s={s} causal={causal}: {type(e).__name__}: {e}"[:200])
                    continue
                t_bwd = t_both - t_fwd
                if t_bwd <= 0:
                    log(f"  {backend_name} s={s} causal={causal}: backward not resolved")
                    continue
                row = {"backend": backend_name, "causal": causal, "seq": s,
                       "fwd_tflops": flops / t_fwd / 1e12,
                       "bwd_tflops": 2.5 * flops / t_bwd / 1e12}
                rows.append(row)
                log(f"  {backend_name:6s} {'causal' if causal else 'full  '} s={s:6d} "
                    f"fwd {row['fwd_tflops']:6.1f}  bwd {row['bwd_tflops']:6.1f} TFLOP/s")
                torch.cuda.empty_cache()
    RESULTS["attention"] = rows
    sus = []
    for backend_name, backend in (("flash2", SDPBackend.FLASH_ATTENTION),
                                  ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            fn, flops = attention_fn(8192, True, backend, backward=True)
            sus.append(sustained(f"attention {backend_name} causal 8k f+b", fn, 3.5 * flops,
                                 sustain_s, sampler))
        except Exception as e:
            log(f"  sustained {backend_name}: {type(e).__name__}: {e}"[:200])
    RESULTS["attention_sustained"] = sus


def measure_cold_clocks(sampler, seconds, idle_s):
    """Each kernel's burst from an idle GPU (idle_s of sleep first, so the clock is back at its
    boost) against its sustained rate: the same method for GEMMs and attention."""
    from torch.nn.attention import SDPBackend
    cases = [("bf16 8192^3", lambda: (gemm_fn(8192, 8192, 8192, "bf16"), 2 * 8192**3)),
             ("fp8 8192^3", lambda: (gemm_fn(8192, 8192, 8192, "fp8"), 2 * 8192**3)),
             ("attention flash2 causal 8k f+b",
              lambda: (lambda f: (f[0], 3.5 * f[1]))(
                  attention_fn(8192, True, SDPBackend.FLASH_ATTENTION, backward=True))),
             ("attention cudnn causal 8k f+b",
              lambda: (lambda f: (f[0], 3.5 * f[1]))(
                  attention_fn(8192, True, SDPBackend.CUDNN_ATTENTION, backward=True)))]
    rows = []
    for name, make in cases:
        fn, flops = make()
        torch.cuda.synchronize()
        time.sleep(idle_s)
        rows.append(sustained(name + " (from idle)", fn, flops, seconds, sampler))
        del fn
        torch.cuda.empty_cache()
    RESULTS["cold_clocks"] = rows


def measure_memory_bound():
    """Effective GB/s at the bytes docs/cost_model.md counts per kernel (E = 8192 x 4096 bf16
    elements: one Llama 3 8B micro-batch of 8192 tokens; F = 8192 x 14336)."""
    E, h, F_ = 8192 * 4096, 4096, 8192 * 14336
    x = torch.randn(8192, h, device="cuda", dtype=torch.bfloat16)
    y = torch.randn_like(x)
    w = torch.randn(h, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(8192, 14336, device="cuda", dtype=torch.bfloat16)
    u = torch.randn_like(g)
    big = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16)  # 1 GiB
    big2 = torch.empty_like(big)
    x8 = x.to(torch.float8_e4m3fn)
    cases = [
        ("copy 1 GiB (read + write)", lambda: big2.copy_(big), 2 * big.numel() * 2),
        ("residual add x + y", lambda: x + y, 6 * E),
        ("rms_norm fwd (F.rms_norm)", lambda: F.rms_norm(x, (h,), w), 4 * E),
        ("layer_norm fwd (F.layer_norm)", lambda: F.layer_norm(x, (h,), w), 4 * E),
        ("silu(g) * u eager (2 kernels)", lambda: F.silu(g) * u, 10 * F_),
        ("cast bf16 -> fp8 e4m3", lambda: x.to(torch.float8_e4m3fn), 3 * E),
        ("fp8 transpose .t().contiguous()", lambda: x8.t().contiguous(), 2 * E),
        ("amax(abs(x))", lambda: x.abs().amax(), 4 * E + 2 * E),
    ]
    rows = []
    for name, fn, nbytes in cases:
        t = time_loop_s(fn)
        rows.append({"name": name, "bytes": nbytes, "time_s": t, "gbps": nbytes / t / 1e9})
        log(f"  {name:34s} {nbytes / 1e9:7.3f} GB  {t * 1e6:9.1f} us  {nbytes / t / 1e9:7.0f} GB/s")
    del big, big2, g, u
    torch.cuda.empty_cache()
    # torchtitan's loss: F.cross_entropy(logits.float()), forward and backward; trident counts 22
    # + 26 bytes per logit (#output-layer-and-loss).
    logits = torch.randn(8192, 128256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, 128256, (8192,), device="cuda")

    def ce():
        loss = F.cross_entropy(logits.float(), target)
        loss.backward()
    t = time_loop_s(ce, min_s=0.3)
    nbytes = 48 * logits.numel()
    rows.append({"name": "cross_entropy(logits.float()) f+b", "bytes": nbytes, "time_s": t,
                 "gbps": nbytes / t / 1e9})
    log(f"  {'cross_entropy(logits.float()) f+b':34s} {nbytes / 1e9:7.3f} GB  {t * 1e6:9.1f} us  "
        f"{nbytes / t / 1e9:7.0f} GB/s (at 48 B/logit)")
    del logits
    torch.cuda.empty_cache()
    # Fused AdamW (torch._fused_adamw_): 28 bytes per fp32 parameter (r16 w12; no 16-bit copy).
    params = [torch.randn(1 << 26, device="cuda", requires_grad=True) for _ in range(8)]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    opt.step()
    n_params = sum(p.numel() for p in params)
    t = time_loop_s(opt.step)
    rows.append({"name": "AdamW fused=True step", "bytes": 28 * n_params, "time_s": t,
                 "gbps": 28 * n_params / t / 1e9})
    log(f"  {'AdamW fused=True step':34s} {28 * n_params / 1e9:7.3f} GB  {t * 1e6:9.1f} us  "
        f"{28 * n_params / t / 1e9:7.0f} GB/s (at 28 B/param)")
    RESULTS["memory_bound"] = rows


def measure_launch_floor():
    a = torch.zeros(1, device="cuda")
    for _ in range(100):
        a.add_(1)
    torch.cuda.synchronize()
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        a.add_(1)
    torch.cuda.synchronize()
    per_us = (time.perf_counter() - t0) / n * 1e6
    RESULTS["launch_floor_us_eager_add"] = per_us
    log(f"  eager a.add_(1) back to back: {per_us:.2f} us per kernel (CPU launch bound)")


def nvml_used_bytes():
    import pynvml
    return pynvml.nvmlDeviceGetMemoryInfo(nvml_handle()).used


def measure_context(before_bytes):
    used = nvml_used_bytes() - before_bytes
    reserved = torch.cuda.memory_reserved()
    RESULTS["context"] = {"nvml_used_before_bytes": before_bytes, "process_used_bytes": used,
                          "torch_reserved_bytes": reserved,
                          "outside_allocator_bytes": used - reserved,
                          "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING", "")}
    log(f"  NVML used {used / 2**20:.0f} MiB, torch reserved {reserved / 2**20:.0f} MiB: "
        f"outside the allocator {(used - reserved) / 2**20:.0f} MiB (context, cuBLAS, cuDNN)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plans", nargs="*", default=[])
    ap.add_argument("--out", default="gpu-kernels")
    ap.add_argument("--sustain-s", type=float, default=20.0)
    ap.add_argument("--idle-s", type=float, default=4.0,
                    help="idle seconds before each run of the cold-clock step")
    ap.add_argument("--only", default="",
                    help="run only the steps whose names contain this text (e.g. 'cold')")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    before_bytes = nvml_used_bytes()  # before this process makes a CUDA context
    props = torch.cuda.get_device_properties(0)
    RESULTS["device"] = {"name": props.name, "sms": props.multi_processor_count,
                         "torch": torch.__version__, "cuda": torch.version.cuda,
                         "cudnn": torch.backends.cudnn.version()}
    log("device:", RESULTS["device"])
    sampler = ClockSampler()
    steps = [
        ("context (after the first kernels)", lambda: (torch.ones(1, device="cuda") @
                                                        torch.ones(1, 1, device="cuda"),
                                                        measure_context(before_bytes))),
        ("plan GEMMs", lambda: measure_plan_gemms(args.plans)),
        ("sustained GEMM clocks", lambda: RESULTS.__setitem__("gemm_sustained", [
            sustained("bf16 8192^3", gemm_fn(8192, 8192, 8192, "bf16"), 2 * 8192**3,
                      args.sustain_s, sampler),
            sustained("fp8 8192^3", gemm_fn(8192, 8192, 8192, "fp8"), 2 * 8192**3,
                      args.sustain_s, sampler),
            sustained("bf16 8192^3 again", gemm_fn(8192, 8192, 8192, "bf16"), 2 * 8192**3,
                      args.sustain_s, sampler)])),
        ("attention", lambda: measure_attention(sampler, [512, 1024, 2048, 4096, 8192, 16384],
                                                args.sustain_s)),
        ("memory-bound kernels", measure_memory_bound),
        ("launch floor", measure_launch_floor),
        ("cold clocks", lambda: measure_cold_clocks(sampler, args.sustain_s, args.idle_s)),
    ]
    for name, fn in steps:
        if args.only and args.only not in name:
            continue
        log(f"\n== {name} (t = {time.time() - START:.0f} s) ==")
        try:
            fn()
        except Exception as e:
            RESULTS.setdefault("errors", []).append(f"{name}: {type(e).__name__}: {e}")
            log(f"  FAILED: {type(e).__name__}: {e}")
        with open(os.path.join(args.out, "gpu-kernels.json"), "w") as f:
            json.dump(RESULTS, f, indent=1)
    log(f"\ndone in {time.time() - START:.0f} s")


if __name__ == "__main__":
    main()
