"""Parity of clocktrain's model and optimizer with the PyTorch reference (reference_gpt.py,
reference_optim.py), on files written by tests/optim/torch_parity_test.cpp into FOLDER:

  checkpoint/          config.json + model.safetensors: the starting weights
  batch.safetensors    inputs, targets (I32 [B, T]); metadata lr_factors (JSON list), grad_clip, and
                       optionally warmdown_positions and progresses (JSON lists, one per step) and
                       optimizer (JSON: other OptimizerConfig fields)
  grads.safetensors    clocktrain's gradient of every parameter at the start; metadata loss
  steps.safetensors    clocktrain's parameters after len(lr_factors) optimizer steps on the batch;
                       metadata losses, grad_norms (JSON lists)

Checks, in float32: the loss and every gradient (relative error < 1e-4), then the parameters after the
optimizer steps (Muon + AdamW + clipping written from docs/model.md): the relative error of each
parameter's total change must be < 1e-3 and of the parameter itself < 1e-4.
Prints one line per check; exits 1 on any failure.
usage: torch_parity.py FOLDER
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_gpt import load_checkpoint, read_safetensors  # noqa: E402
from reference_optim import OptimizerConfig, ReferenceOptimizer  # noqa: E402


def rel_err(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm().clamp(min=1e-30))


def main(folder):
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    failures = []

    def expect(ok, line):
        print(("ok    " if ok else "FAIL  ") + line)
        if not ok:
            failures.append(line)

    model = load_checkpoint(os.path.join(folder, "checkpoint"))
    start = {k: v.clone() for k, v in model.state_dict().items()}
    batch, batch_meta = read_safetensors(os.path.join(folder, "batch.safetensors"))
    grads_ct, grads_meta = read_safetensors(os.path.join(folder, "grads.safetensors"))
    after_ct, steps_meta = read_safetensors(os.path.join(folder, "steps.safetensors"))
    inputs, targets = batch["inputs"], batch["targets"]

    loss = model(inputs, targets)
    loss.backward()
    loss_ct = float(grads_meta["loss"])
    expect(abs(loss_ct - float(loss)) <= 1e-4 * abs(float(loss)), f"loss clocktrain {loss_ct:.8f} torch {float(loss):.8f}")
    for name, p in model.named_parameters():
        e = rel_err(grads_ct[name], p.grad)
        expect(e < 1e-4, f"grad {name}: relative error {e:.2e}")

    lr_factors = json.loads(batch_meta["lr_factors"])
    warmdown = json.loads(batch_meta.get("warmdown_positions", "null")) or [0.0] * len(lr_factors)
    progresses = json.loads(batch_meta.get("progresses", "null")) or [0.0] * len(lr_factors)
    overrides = json.loads(batch_meta.get("optimizer", "{}"))
    cfg = OptimizerConfig(grad_clip=float(batch_meta["grad_clip"]), **overrides)
    opt = ReferenceOptimizer(model, cfg)
    norms = []
    for i, (f, w, progress) in enumerate(zip(lr_factors, warmdown, progresses)):
        if i > 0:
            model.zero_grad()
            model(inputs, targets).backward()
        norms.append(opt.step(f, w, progress))
    norms_ct = json.loads(steps_meta["grad_norms"])
    for i, (a, b) in enumerate(zip(norms_ct, norms)):
        expect(abs(a - b) <= 1e-4 * b, f"step {i + 1} grad norm clocktrain {a:.6f} torch {b:.6f}")
    for name, p in model.named_parameters():
        delta_torch = p.detach() - start[name]
        delta_ct = after_ct[name] - start[name]
        e_delta = rel_err(delta_ct, delta_torch)
        e_param = rel_err(after_ct[name], p.detach())
        expect(e_delta < 1e-3 and e_param < 1e-4, f"after {len(lr_factors)} steps {name}: change {e_delta:.2e}, value {e_param:.2e}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
