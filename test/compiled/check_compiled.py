#!/usr/bin/env python3
"""End-to-end checks of compiled training steps (`shardc compile` + mpirun).

  equivalence  the executable's per-step losses for N steps equal `shardc train`
               with every rank simulated (same mesh and strategy) and the
               unsharded run, to a relative tolerance (fp32: 1e-5)
  resume       stop at step 10, resume: steps 11-20 bit-identical to the
               uninterrupted run; resume the checkpoint with a binary compiled
               for another mesh: same losses to 1e-5
  resume-pipeline  the same for a pipelined mesh (--mesh with a pp strategy)
               and --resume-mesh, in both directions
  evaluate     --val-data: the validation loss the executable reports after step N
               (mean over 2 batches, no dropout, no update) equals `shardc run` on
               the parameters `shardc train` reaches after N steps (1e-5)
  gpu          the same executable on the GPU (--device cuda) against the CPU
               backend: losses for N steps within --rtol (fp32 1e-4, bf16 1e-2),
               CUDA-graph replays equal eager launches (--no-graph) bit for bit;
               several ranks share the one GPU with --comm mpi. Exits 77 (ctest:
               skipped) when --gpu-probe finds no CUDA device
  faults       a killed rank ends the job (non-zero, names the rank, < 60 s);
               a truncated checkpoint, a checkpoint tensor with one flipped bit
               (CRC32C), a token file shorter than one batch and
               the wrong number of ranks each give an error and a non-zero exit
               and leave the checkpoint directory untouched
Every failure prints what differs and exits 1.
"""
import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_btl": "self,vader",
    "OMP_NUM_THREADS": "1",
}
# The optimizer settings shared by every run (the main job's recipe).
TRAIN = ["--lr", "2e-3", "--min-lr", "2e-4", "--warmup", "5", "--decay-steps", "20",
         "--weight-decay", "0.1"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, expect_ok=True, timeout=600, env_extra=None):
    env = dict(os.environ)
    env.update(MPI_ENV)
    if env_extra:
        env.update(env_extra)
    start = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    secs = time.time() - start
    if expect_ok and p.returncode != 0:
        fail("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:],
                                                p.stderr[-3000:]))
    return p, secs


def losses(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {int(r["step"]): float(r["loss"]) for r in rows}


def mesh_args(a, strategy):
    """--mesh-args (the pipeline schedule) go with a pp strategy only."""
    return a.mesh_args if strategy and "pp" in strategy.replace("@", "+").split("+") else []


def compile_step(a, mesh, strategy, out):
    cmd = [a.shardc, "compile", a.model, "-o", out] + TRAIN + a.compile_args
    if mesh:
        cmd += ["--mesh", mesh, "--hardware", "cpu-mpi"] + a.sharding_args
    if strategy:
        cmd += ["--strategy", strategy] + mesh_args(a, strategy)
    run(cmd)
    return out


def mpirun(a, np, exe, args, **kw):
    if a.mpirun == "none":  # one rank as an Open MPI singleton (a machine without mpirun)
        if np != 1:
            fail("--mpirun none runs one rank, not %d" % np)
        return run([exe] + args, **kw)
    return run([a.mpirun, "-np", str(np), exe] + args, **kw)


def compare(name, got, want, rtol, steps):
    worst = 0.0
    for s in steps:
        if s not in got or s not in want:
            fail("%s: step %d missing (have %s / %s)" % (name, s, sorted(got), sorted(want)))
        rel = abs(got[s] - want[s]) / max(abs(want[s]), 1e-30)
        worst = max(worst, rel)
        if rel > rtol:
            fail("%s: step %d loss %.9g vs %.9g (relative %.3g > %.1g)" %
                 (name, s, got[s], want[s], rel, rtol))
    print("%s: %d steps, worst relative difference %.3g (<= %.1g)" % (name, len(steps), worst, rtol))


def simulated(a, mesh, strategy, log):
    cmd = [a.shardc, "train", a.model, "--data", a.data, "--steps", str(a.steps),
           "--seed", "1234", "--log-json", log] + TRAIN
    if mesh:
        cmd += ["--mesh", mesh, "--hardware", "cpu-mpi"] + a.sharding_args
        if strategy:
            cmd += ["--strategy", strategy] + mesh_args(a, strategy)
    run(cmd)
    return losses(log)


def equivalence(a):
    w = a.workdir
    ref = simulated(a, "", "", os.path.join(w, "unsharded.jsonl"))
    exe = compile_step(a, a.mesh, a.strategy, os.path.join(w, "step"))
    log = os.path.join(w, "compiled.jsonl")
    _, secs = mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", str(a.steps), "--seed", "1234",
                                       "--log-file", log])
    got = losses(log)
    steps = list(range(1, a.steps + 1))
    if a.mesh:
        sim = simulated(a, a.mesh, a.strategy, os.path.join(w, "simulated.jsonl"))
        compare("compiled vs simulated (%s %s, %s)" % (a.mesh, a.strategy, a.precision), got, sim,
                a.rtol, steps)
    compare("compiled vs unsharded (%s)" % a.precision, got, ref,
            a.rtol_unsharded if a.rtol_unsharded is not None else a.rtol, steps)
    if not got[a.steps] < got[1]:
        fail("the loss did not fall: %g -> %g" % (got[1], got[a.steps]))
    # A negative control: a different seed must not pass.
    if a.negative:
        log2 = os.path.join(w, "other-seed.jsonl")
        mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", "2", "--seed", "99", "--log-file", log2])
        other = losses(log2)
        if abs(other[1] - ref[1]) / abs(ref[1]) <= a.rtol:
            fail("negative control: another seed gave the same first loss")
        print("negative control: another seed differs (%.6g vs %.6g)" % (other[1], ref[1]))
    print("compiled run: %d ranks, %.1f s for %d steps" % (a.ranks, secs, a.steps))


def resume_pipeline(a):
    """A step's checkpoint (a pipelined step's: one rank file per rank, each
    with its stage's state) resumes bit-identically on its mesh and within
    --rtol (1e-5) on another mesh or strategy (--resume-mesh,
    --resume-strategy); a checkpoint of that one resumes on the first."""
    w = a.workdir
    exe = compile_step(a, a.mesh, a.strategy, os.path.join(w, "step-pp"))
    full = os.path.join(w, "full.jsonl")
    mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", "20", "--log-file", full])
    want = losses(full)
    ckpt = os.path.join(w, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", "10", "--checkpoint-dir", ckpt,
                             "--checkpoint-every", "10"])
    other_ckpt = ckpt + "-other"
    shutil.rmtree(other_ckpt, ignore_errors=True)
    shutil.copytree(ckpt, other_ckpt)
    second = os.path.join(w, "second.jsonl")
    mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", "20", "--checkpoint-dir", ckpt,
                             "--resume", "--log-file", second])
    got = losses(second)
    for s in range(11, 21):
        if got.get(s) != want[s]:
            fail("resume (same mesh %s): step %d loss %r, uninterrupted %r (must be "
                 "bit-identical)" % (a.mesh, s, got.get(s), want[s]))
    print("resume on %s: steps 11-20 bit-identical" % a.mesh)
    exe2 = compile_step(a, a.resume_mesh, a.resume_strategy, os.path.join(w, "step-other"))
    resharded = os.path.join(w, "resharded.jsonl")
    mpirun(a, a.resume_ranks, exe2, ["--data", a.data, "--steps", "20", "--checkpoint-dir",
                                     other_ckpt, "--resume", "--log-file", resharded])
    # Named by mesh and strategy: ZeRO-1 and DP can share a mesh.
    first = "%s %s" % (a.mesh, a.strategy or "")
    other = "%s %s" % (a.resume_mesh, a.resume_strategy or "") if a.resume_mesh else "one rank"
    compare("resume %s checkpoint on %s" % (first, other),
            losses(resharded), want, a.rtol, list(range(11, 21)))
    back = ckpt + "-back"
    shutil.rmtree(back, ignore_errors=True)
    mpirun(a, a.resume_ranks, exe2, ["--data", a.data, "--steps", "10", "--checkpoint-dir", back,
                                     "--checkpoint-every", "10"])
    onto = os.path.join(w, "onto-pipeline.jsonl")
    mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", "20", "--checkpoint-dir", back,
                             "--resume", "--log-file", onto])
    compare("resume %s checkpoint on %s" % (other, first), losses(onto),
            want, a.rtol, list(range(11, 21)))


def evaluate(a):
    w = a.workdir
    val_txt = os.path.join(w, "val.txt")
    with open(val_txt, "w") as f:
        f.write("In the beginning God created the heaven and the earth. " * 40)
    val = os.path.join(w, "val.bin")
    run([a.shardc, "tokenize", val_txt, "-o", val])
    exe = compile_step(a, a.mesh, a.strategy, os.path.join(w, "step"))
    log = os.path.join(w, "log.jsonl")
    mpirun(a, a.ranks, exe, ["--data", a.data, "--steps", "6", "--val-data", val, "--eval-every",
                             "3", "--eval-batches", "2", "--log-file", log])
    with open(log) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    got = {r["step"]: r["val_loss"] for r in rows if "val_loss" in r}
    if sorted(got) != [3, 6]:
        fail("evaluate: val losses at steps %s, expected 3 and 6" % sorted(got))
    params = os.path.join(w, "params-6.safetensors")
    run([a.shardc, "train", a.model, "--data", a.data, "--steps", "6", "--save", params] + TRAIN)
    want = []
    for position in (0, 128):  # two batches of 4 x 32 tokens
        p, _ = run([a.shardc, "run", a.model, "--load", params, "--data", val, "--position",
                    str(position)])
        want.append(float(next(l for l in p.stdout.splitlines() if l.startswith("loss")).split()[1]))
    ref = sum(want) / len(want)
    rel = abs(got[6] - ref) / abs(ref)
    if rel > a.rtol:
        fail("evaluate: val loss after step 6 is %.9g, shardc run gives %.9g (relative %.3g)" %
             (got[6], ref, rel))
    if got[3] == got[6]:
        fail("evaluate: the val loss did not change between steps 3 and 6")
    print("evaluate: val loss after 6 steps %.7g = shardc run %.7g (relative %.2g); after 3 %.7g" %
          (got[6], ref, rel, got[3]))


def gpu(a):
    if not a.gpu_probe:
        fail("gpu: --gpu-probe is required")
    p = subprocess.run([a.gpu_probe], capture_output=True, text=True)
    if p.returncode == 77:
        print("gpu: skipped, " + p.stdout.strip())
        sys.exit(77)
    if p.returncode != 0:
        fail("gpu probe failed: " + p.stdout + p.stderr)
    print("gpu: " + p.stdout.strip())
    w = a.workdir
    exe = a.exe or compile_step(a, a.mesh, a.strategy, os.path.join(w, "step"))
    base = ["--data", a.data, "--steps", str(a.steps), "--seed", "1234"]
    cpu_log = os.path.join(w, "cpu.jsonl")
    mpirun(a, a.ranks, exe, base + ["--log-file", cpu_log])
    comm = ["--comm", "mpi"] if a.ranks > 1 else []
    runs = {}
    for name, extra in (("graphs", []), ("eager", ["--no-graph"])):
        log = os.path.join(w, "gpu-%s.jsonl" % name)
        _, secs = mpirun(a, a.ranks, exe, base + ["--device", "cuda", "--log-file", log] + comm +
                         extra)
        runs[name] = losses(log)
        print("gpu run (%s): %d ranks, %.1f s for %d steps" % (name, a.ranks, secs, a.steps))
    steps = list(range(1, a.steps + 1))
    compare("gpu vs cpu (%s %s, %s)" % (a.mesh or "one rank", a.strategy, a.precision),
            runs["graphs"], losses(cpu_log), a.rtol, steps)
    for s_ in steps:
        if runs["graphs"][s_] != runs["eager"][s_]:
            fail("gpu: step %d loss %r with CUDA graphs, %r eager (must be bit-identical)" %
                 (s_, runs["graphs"][s_], runs["eager"][s_]))
    print("gpu: CUDA-graph replays bit-identical to eager launches")


def tree_digest(path):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def resume(a):
    w = a.workdir
    exe = compile_step(a, "dp=2", "dp", os.path.join(w, "step-dp2"))
    full = os.path.join(w, "full.jsonl")
    mpirun(a, 2, exe, ["--data", a.data, "--steps", "20", "--log-file", full])
    want = losses(full)
    ckpt = os.path.join(w, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    mpirun(a, 2, exe, ["--data", a.data, "--steps", "10", "--checkpoint-dir", ckpt,
                       "--checkpoint-every", "10", "--log-file", os.path.join(w, "first.jsonl")])
    second = os.path.join(w, "second.jsonl")
    mpirun(a, 2, exe, ["--data", a.data, "--steps", "20", "--checkpoint-dir", ckpt, "--resume",
                       "--log-file", second])
    got = losses(second)
    for s in range(11, 21):
        if got.get(s) != want[s]:
            fail("resume (same mesh): step %d loss %r, uninterrupted %r (must be bit-identical)" %
                 (s, got.get(s), want[s]))
    print("resume on the same mesh: steps 11-20 bit-identical")
    # The same checkpoint into a binary compiled for tp=2.
    shutil.rmtree(ckpt, ignore_errors=True)
    mpirun(a, 2, exe, ["--data", a.data, "--steps", "10", "--checkpoint-dir", ckpt,
                       "--checkpoint-every", "10"])
    # Each resumed run saves again at its end: each gets its own copy.
    ckpt_tp, ckpt_one = ckpt + "-tp", ckpt + "-one"
    for d in (ckpt_tp, ckpt_one):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(ckpt, d)
    exe_tp = compile_step(a, "tp=2", "tp", os.path.join(w, "step-tp2"))
    other = os.path.join(w, "resharded.jsonl")
    mpirun(a, 2, exe_tp, ["--data", a.data, "--steps", "20", "--checkpoint-dir", ckpt_tp,
                          "--resume", "--log-file", other])
    compare("resume dp=2 checkpoint on tp=2", losses(other), want, 1e-5, list(range(11, 21)))
    # And into one rank, unsharded.
    exe_one = compile_step(a, "", "", os.path.join(w, "step-one"))
    one = os.path.join(w, "one.jsonl")
    mpirun(a, 1, exe_one, ["--data", a.data, "--steps", "20", "--checkpoint-dir", ckpt_one,
                           "--resume", "--log-file", one])
    # Export: one safetensors file with GPT-2's names.
    exported = os.path.join(w, "exported.safetensors")
    run([a.shardc, "export", ckpt_one, "-o", exported])
    with open(exported, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    for name in ("transformer.h.0.attn.c_attn.weight", "transformer.wte.weight"):
        if name not in header:
            fail("export: no tensor %s in %s" % (name, sorted(header)[:8]))
    if header["transformer.h.0.attn.c_attn.weight"]["shape"] != [64, 192]:
        fail("export: c_attn.weight has shape %s" % header["transformer.h.0.attn.c_attn.weight"]["shape"])
    if any("q_proj" in k for k in header):
        fail("export: q_proj left unfused")
    print("export: %d tensors with GPT-2 names (c_attn fused)" % (len(header) - ("__metadata__" in header)))
    compare("resume dp=2 checkpoint on one rank", losses(one), want, 1e-5, list(range(11, 21)))


def expect_error(name, p, secs, words):
    out = p.stdout + p.stderr
    if p.returncode == 0:
        fail("%s: exited 0\n%s" % (name, out[-2000:]))
    for word in words:
        if word not in out:
            fail("%s: the message does not mention '%s':\n%s" % (name, word, out[-2000:]))
    print("%s: exit %d in %.1f s: %s" % (name, p.returncode, secs,
                                         next((l for l in out.splitlines() if "error" in l),
                                              out.strip().splitlines()[-1] if out.strip() else "")))


def faults(a):
    w = a.workdir
    exe = compile_step(a, "dp=2", "dp", os.path.join(w, "step-dp2"))
    # A rank killed before step 3.
    p, secs = mpirun(a, 2, exe, ["--data", a.data, "--steps", "20"], expect_ok=False, timeout=60,
                     env_extra={"SHARDC_FAULT_KILL": "1:3"})
    expect_error("rank 1 killed", p, secs, ["rank 1"])
    # A checkpoint, then damage it.
    ckpt = os.path.join(w, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    mpirun(a, 2, exe, ["--data", a.data, "--steps", "2", "--checkpoint-dir", ckpt,
                       "--checkpoint-every", "2"])
    files = [os.path.join(r, f) for r, _, fs in os.walk(ckpt) for f in fs
             if f.endswith(".safetensors")]
    if not files:
        fail("no checkpoint files written under " + ckpt)
    victim = sorted(files)[-1]
    with open(victim, "r+b") as f:
        f.truncate(os.path.getsize(victim) // 2)
    before = tree_digest(ckpt)
    p, secs = mpirun(a, 2, exe, ["--data", a.data, "--steps", "4", "--checkpoint-dir", ckpt,
                                 "--checkpoint-every", "1", "--resume"], expect_ok=False, timeout=60)
    expect_error("truncated checkpoint", p, secs, [os.path.basename(victim)])
    if tree_digest(ckpt) != before:
        fail("truncated checkpoint: the checkpoint directory was modified")
    # A checkpoint of another model (a narrower GPT-2): mismatched tensors.
    good = os.path.join(w, "ckpt-good")
    shutil.rmtree(good, ignore_errors=True)
    mpirun(a, 2, exe, ["--data", a.data, "--steps", "2", "--checkpoint-dir", good])
    # One flipped bit in a tensor (the lowest mantissa bit of its first value:
    # still a finite number, so no loss would give it away): the CRC32C names
    # the tensor and the file.
    flipped = os.path.join(w, "ckpt-flip")
    shutil.rmtree(flipped, ignore_errors=True)
    shutil.copytree(good, flipped)
    victim = sorted(os.path.join(r, f) for r, _, fs in os.walk(flipped) for f in fs
                    if f.endswith(".safetensors"))[0]
    with open(victim, "r+b") as f:
        header_len = int.from_bytes(f.read(8), "little")
        f.seek(8 + header_len)
        first = f.read(1)
        f.seek(8 + header_len)
        f.write(bytes([first[0] ^ 1]))
    before = tree_digest(flipped)
    p, secs = mpirun(a, 2, exe, ["--data", a.data, "--steps", "4", "--checkpoint-dir", flipped,
                                 "--resume"], expect_ok=False, timeout=60)
    expect_error("flipped bit in a checkpoint tensor", p, secs,
                 [os.path.basename(victim), "CRC32C", "the file is damaged"])
    if tree_digest(flipped) != before:
        fail("flipped bit: the checkpoint directory was modified")
    other_model = os.path.join(w, "other.mlir")
    run([a.shardc, "gen", "gpt2", "--hidden", "32", "--layers", "2", "--heads", "2", "--seq", "32",
         "--batch", "4", "-o", other_model])
    saved_model = a.model
    a.model = other_model
    exe_other = compile_step(a, "dp=2", "dp", os.path.join(w, "step-other"))
    a.model = saved_model
    before = tree_digest(good)
    p, secs = mpirun(a, 2, exe_other, ["--data", a.data, "--steps", "4", "--checkpoint-dir", good,
                                       "--resume"], expect_ok=False, timeout=60)
    expect_error("checkpoint of another model", p, secs, ["ckpt-good"])
    if tree_digest(good) != before:
        fail("checkpoint of another model: the checkpoint directory was modified")
    # A token file shorter than one batch (4 x 32 tokens).
    short = os.path.join(w, "short.txt")
    with open(short, "w") as f:
        f.write("Too short for a batch.\n")
    short_bin = os.path.join(w, "short.bin")
    run([a.shardc, "tokenize", short, "-o", short_bin])
    p, secs = mpirun(a, 2, exe, ["--data", short_bin, "--steps", "1"], expect_ok=False, timeout=60)
    expect_error("token file shorter than a batch", p, secs, ["short.bin"])
    # The wrong number of ranks.
    p, secs = mpirun(a, 3, exe, ["--data", a.data, "--steps", "1"], expect_ok=False, timeout=60)
    expect_error("3 ranks for a 2-rank mesh", p, secs, ["2", "3"])
    # --eval-every without --val-data.
    p, secs = mpirun(a, 2, exe, ["--data", a.data, "--steps", "1", "--eval-every", "2"],
                     expect_ok=False, timeout=60)
    expect_error("--eval-every without --val-data", p, secs, ["--val-data"])
    # Bad command-line values.
    p, secs = mpirun(a, 2, exe, ["--data", a.data, "--steps", "ten"], expect_ok=False, timeout=60)
    expect_error("--steps ten", p, secs, ["--steps"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=["equivalence", "resume", "resume-pipeline", "evaluate",
                                      "faults", "gpu"])
    ap.add_argument("--mesh-args", default="",
                    help="options for meshes with a pp strategy component only (the schedule)")
    ap.add_argument("--resume-mesh", default="")
    ap.add_argument("--resume-strategy", default="")
    ap.add_argument("--resume-ranks", type=int, default=1)
    ap.add_argument("--gpu-probe", default="",
                    help="gpu: a program that exits 0 where a CUDA device is usable, 77 elsewhere")
    ap.add_argument("--shardc", default="")
    ap.add_argument("--mpirun", default="mpirun",
                    help="launcher; 'none' runs one rank directly (an MPI singleton)")
    ap.add_argument("--model", default="")
    ap.add_argument("--exe", default="",
                    help="gpu: a step compiled beforehand (on a machine without MLIR)")
    ap.add_argument("--data", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--mesh", default="")
    ap.add_argument("--strategy", default="")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--negative", action="store_true")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--step-args", default="",
                    help="training-step flags for compile and train alike, one string "
                         "(--step-args='--micro-batches 2')")
    ap.add_argument("--rtol-unsharded", type=float, default=None,
                    help="tolerance against the unsharded run (default --rtol); bf16/fp16 "
                         "round differently when the sums are grouped differently")
    ap.add_argument("--sharding-args", default="",
                    help="sharding flags for the compiled step and the simulated run on a mesh "
                         "(--sharding-args='--attention-rows split')")
    ap.add_argument("--compile-args", default="",
                    help="extra `shardc compile` flags, one string (--compile-args='--bucket-mb 1')")
    a = ap.parse_args()
    if not a.exe and not (a.shardc and a.model):
        ap.error("--shardc and --model are required unless --exe names a compiled step")
    a.compile_args = shlex.split(a.compile_args)
    a.sharding_args = shlex.split(a.sharding_args)
    a.mesh_args = shlex.split(a.mesh_args)
    # The precision and --step-args are part of the step: compiled and
    # simulated runs alike.
    TRAIN.extend(["--precision", a.precision] + shlex.split(a.step_args))
    os.makedirs(a.workdir, exist_ok=True)
    {"equivalence": equivalence, "resume": resume, "resume-pipeline": resume_pipeline,
     "evaluate": evaluate, "faults": faults, "gpu": gpu}[a.check](a)
    print("PASS")


if __name__ == "__main__":
    main()
