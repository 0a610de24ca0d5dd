#!/usr/bin/env python3
"""Runs one benchmark command for bench/gpu_step.sh: times a shardc step binary by the
arrival of its per-step log lines, and samples the GPU's memory while any command runs.

  step_timer.py --kind shardc --warmup 10 --flops-per-token 8.035e8 --name step_124m_b64 \\
      --model 124M --log out/step_124m_b64.log -- ./step_124m_b64 --data t.bin --steps 40 --device cuda
  step_timer.py --kind passthrough --name torch_124M --log out/torch_124M.log -- python3 bench/torch_gpt2.py ...

Why the arrival of lines: rank 0 of a step binary (runtime/main/Main.cpp) prints

  step     3/20 | loss 10.78 | lr 1.20e-03 | grad norm 1.78 | 1305 tok/s | 98.1 ms | rss 130 MiB

after it has read the step's loss back (a device synchronization on the GPU), and
flushes stdout. Its own "ms" is the host time around the step's launch, which on a
GPU need not include the device's work (a CUDA graph launch returns early; the wait
is in the loss read-back, after the timer). The time between the line of step W and
the line of step W+n is n whole steps whatever the runtime's timer measures; both are
reported (tokens_per_s from the lines, runtime_tokens_per_s from the binary's own ms).

GPU memory: `nvidia-smi --query-gpu=memory.used` every 0.2 s while the command runs;
smi_peak_gib is the maximum minus the reading before the command started (the
device's whole use: context, allocator pools, workspaces -- the same measure for
torch and shardc).

Prints the command's output, then for --kind shardc a line
  RESULT impl=shardc model=... tokens_per_s=... mfu=... step_ms=... peak_mem_gib=...
and for every kind a line
  MEM name=... smi_peak_gib=... smi_baseline_gib=...
Exit status: the command's (124 if --timeout ended it).
"""

import argparse
import re
import shutil
import subprocess
import sys
import threading
import time

STEP = re.compile(r"^step\s+(\d+)/(\d+) \| loss (\S+) \|.*\| (\d+) tok/s \| ([\d.]+) ms")
HEADER = re.compile(r"^training steps (\d+)\.\.(\d+): (\d+) micro-batch\(es\) x (\d+) x (\d+) "
                    r"tokens, (\S+),")
DEVICE = re.compile(r"^device: (.*)$")
PLANNED = re.compile(r"^memory per rank: planned ([\d.]+) MiB")


class SmiSampler:
    """Max of nvidia-smi's memory.used (MiB) on one GPU while running."""

    def __init__(self, gpu, period_ms=200):
        self.gpu, self.period = gpu, period_ms
        self.proc, self.max_mib, self.baseline_mib = None, None, None
        self.thread = None

    def query(self):
        try:
            out = subprocess.run(["nvidia-smi", "-i", str(self.gpu), "--query-gpu=memory.used",
                                  "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, timeout=20)
            return float(out.stdout.strip().splitlines()[0])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return None

    def start(self):
        if not shutil.which("nvidia-smi"):
            return
        self.baseline_mib = self.query()
        self.proc = subprocess.Popen(
            ["nvidia-smi", "-i", str(self.gpu), "--query-gpu=memory.used",
             "--format=csv,noheader,nounits", "-lms", str(self.period)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                v = float(line.strip())
            except ValueError:
                continue
            self.max_mib = v if self.max_mib is None else max(self.max_mib, v)

    def stop(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.thread.join(timeout=5)

    def peak_gib(self):
        if self.max_mib is None:
            return None
        return (self.max_mib - (self.baseline_mib or 0.0)) / 1024.0


def fmt(v, spec):
    return "nan" if v is None else format(v, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kind", choices=["shardc", "passthrough"], default="shardc")
    p.add_argument("--name", required=True)
    p.add_argument("--model", default="?")
    p.add_argument("--warmup", type=int, default=10, help="steps left out of the timing")
    p.add_argument("--flops-per-token", type=float, default=0.0)
    p.add_argument("--peak-tflops", type=float, default=989.0)
    p.add_argument("--planned-mib", type=float, default=None)
    p.add_argument("--gpu", type=int, default=0, help="nvidia-smi index to sample")
    p.add_argument("--log", default=None, help="write the command's output here")
    p.add_argument("--echo", choices=["all", "some", "none"], default="some",
                   help="echo output lines: all, or all but most step lines (some)")
    p.add_argument("--timeout", type=float, default=0, help="seconds (0: none)")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        p.error("no command after --")

    log = open(a.log, "w") if a.log else None
    smi = SmiSampler(a.gpu)
    smi.start()
    t_start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1)
    timed_out = False

    def kill_after():
        nonlocal timed_out
        if proc.poll() is None:
            timed_out = True
            proc.kill()

    timer = threading.Timer(a.timeout, kill_after) if a.timeout > 0 else None
    if timer:
        timer.start()
    arrivals, runtime_ms, losses = {}, {}, {}
    tokens_per_step, device, planned, total_steps, precision = None, None, None, None, None
    tail = []
    for line in proc.stdout:
        now = time.perf_counter()
        line = line.rstrip("\n")
        if log:
            log.write(f"{now - t_start:10.4f} {line}\n")
        tail = (tail + [line])[-20:]
        m = STEP.match(line)
        if m:
            s = int(m.group(1))
            total_steps = int(m.group(2))
            arrivals[s], runtime_ms[s] = now, float(m.group(5))
            try:
                losses[s] = float(m.group(3))
            except ValueError:
                losses[s] = float("nan")
            show = a.echo == "all" or (a.echo == "some" and (
                s <= 2 or s in (a.warmup, a.warmup + 1) or s == total_steps or s % 10 == 0))
        else:
            show = a.echo != "none"
            if (h := HEADER.match(line)):
                tokens_per_step = int(h.group(3)) * int(h.group(4)) * int(h.group(5))
                precision = h.group(6)
            elif (d := DEVICE.match(line)):
                device = d.group(1).strip()
            elif (pm := PLANNED.match(line)):
                planned = float(pm.group(1))
        if show:
            print(line, flush=True)
    rc = proc.wait()
    if timer:
        timer.cancel()
    smi.stop()
    if log:
        log.close()
    if timed_out:
        rc = 124
    mem = smi.peak_gib()
    base = None if smi.baseline_mib is None else smi.baseline_mib / 1024.0
    print(f"MEM name={a.name} smi_peak_gib={fmt(mem, '.2f')} smi_baseline_gib="
          f"{fmt(base, '.2f')}", flush=True)
    if a.kind != "shardc":
        return rc

    def fail(why):
        errors = [l for l in tail if "error" in l.lower()] or [l for l in tail if l.strip()]
        last = f": {errors[-1].strip()}" if errors else ""
        print(f"FAIL name={a.name} rc={rc} {why}{last}", flush=True)
        if a.echo == "none":
            print("\n".join(tail))
        return rc if rc else 1

    if rc != 0:
        return fail("(the step binary failed; last lines above)" if not timed_out else
                    f"(timed out after {a.timeout:g} s)")
    if tokens_per_step is None:
        return fail("(no 'training steps ...' header: not a shardc step log?)")
    steps = sorted(arrivals)
    first, last = a.warmup, steps[-1] if steps else 0
    if first < 1 or first not in arrivals or last - first < 1:
        return fail(f"(need --warmup >= 1 and more steps than that: {len(steps)} step lines, "
                    f"warm-up {a.warmup})")
    n = last - first
    wall = arrivals[last] - arrivals[first]
    deltas = sorted(arrivals[s] - arrivals[s - 1] for s in range(first + 1, last + 1))
    tps = tokens_per_step * n / wall
    rt_secs = sum(runtime_ms[s] for s in range(first + 1, last + 1)) / 1e3
    rt_tps = tokens_per_step * n / rt_secs
    mfu = a.flops_per_token * tps / (a.peak_tflops * 1e12) if a.flops_per_token else 0.0
    planned = planned if planned is not None else a.planned_mib
    print(f"timed: steps {first + 1}..{last} ({n} steps, {tokens_per_step} tokens each) in "
          f"{wall:.3f} s by line arrival: {tps:.0f} tokens/s, median step "
          f"{deltas[len(deltas) // 2] * 1e3:.1f} ms; the binary's own timer says "
          f"{rt_tps:.0f} tokens/s ({rt_secs / n * 1e3:.1f} ms/step)"
          + (f"; MFU {mfu * 100:.2f}% of {a.peak_tflops:g} TFLOP/s" if mfu else ""),
          flush=True)
    if rt_tps > 1.05 * tps:
        print(f"note: the binary's timer is {rt_tps / tps:.2f}x faster than the line arrival: "
              "its step timer does not wait for the device (the RESULT uses the lines)",
              flush=True)
    dev = (device or "unknown").replace(" ", "_")
    print(f"RESULT impl=shardc model={a.model} name={a.name} device={dev} "
          f"tokens_per_step={tokens_per_step} steps={n} tokens_per_s={tps:.1f} "
          f"mfu={mfu:.4g} step_ms={deltas[len(deltas) // 2] * 1e3:.2f} "
          f"peak_mem_gib={fmt(mem, '.2f')} planned_gib={fmt(planned and planned / 1024, '.2f')} "
          f"runtime_tokens_per_s={rt_tps:.1f} precision={precision} "
          f"first_loss={losses[steps[0]]:.6f} last_loss={losses[last]:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
