"""A clocktrain recipe as PyTorch objects, for the torch sides of the benches (torch_reference.py,
torch2_train.py): the recipe file resolved over recipes/baseline.toml, the model of docs/model.md
(tests/python/reference_gpt.py) with docs/model.md's initialisation rule, the optimizer with every field of
the recipe (tests/python/reference_optim.py), and the matmul precision as torch runs it.

Precision: clocktrain's "bf16" is bf16 matmul operands with f32 accumulation, f32 master weights and
optimizer state. The torch counterpart a user would write is torch.autocast("cpu", torch.bfloat16)
around the forward (the backward follows it): the same operands and accumulation, but autocast also
rounds each matmul's output to bf16 (clocktrain keeps it f32). The logits are taken back to f32 before
the softcap and the loss, as nanochat does, so the loss itself is not computed in bf16.
"""

import contextlib
import os
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import torch  # noqa: E402
from reference_gpt import Config, GPT  # noqa: E402
from reference_optim import OptimizerConfig, ReferenceOptimizer  # noqa: E402


def load_recipe(path):
    """The recipe's tables over recipes/baseline.toml's (a recipe states only what differs)."""
    with open(os.path.join(HERE, "..", "recipes", "baseline.toml"), "rb") as f:
        recipe = tomllib.load(f)
    with open(path, "rb") as f:
        for table, fields in tomllib.load(f).items():
            if isinstance(fields, dict):
                recipe.setdefault(table, {}).update(fields)
            else:
                recipe[table] = fields
    return recipe


def model_config(recipe):
    m = dict(recipe["model"])
    if m.get("attention_layers") == "all":
        m["attention_layers"] = None
    return Config(**m)


def build_model(recipe, seed):
    """The GPT with docs/model.md's initialisation (clocktrain draws the same distributions from its own
    generator, so the weights differ draw by draw, never in law)."""
    torch.manual_seed(seed)
    model = GPT(model_config(recipe))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in ("resid_lambdas", "x0_lambdas"):  # frontier.md 1.1's ramps over the layers
                s = torch.arange(p.numel(), dtype=torch.float64) / max(p.numel() - 1, 1)
                p.copy_(1.15 - 0.10 * s if name == "resid_lambdas" else 0.20 - 0.15 * s)
            elif name == "transformer.wte.weight":
                p.normal_(0.0, 1.0)
            elif name == "lm_head.weight" or name.endswith("c_proj.weight"):
                p.zero_()
            else:
                fan_out, fan_in = p.shape
                p.normal_(0.0, fan_in**-0.5 * min(1.0, (fan_out / fan_in) ** 0.5))
    return model


def build_optimizer(model, recipe):
    o = recipe["optimizer"]
    return ReferenceOptimizer(
        model,
        OptimizerConfig(
            matrix_lr=o["matrix_lr"],
            muon_momentum=o["muon_momentum"],
            muon_momentum_start=o["muon_momentum_start"],
            muon_momentum_warmup_steps=o["muon_momentum_warmup_steps"],
            muon_momentum_final=o.get("muon_momentum_final", 0.0),
            muon_weight_decay=o.get("muon_weight_decay", 0.0),
            muon_ns_steps=o["muon_ns_steps"],
            muon_ns_coefficients=tuple(o["muon_ns_coefficients"]),
            embedding_lr=o["embedding_lr"],
            unembedding_lr=o["unembedding_lr"],
            adamw_lr_reference_width=o["adamw_lr_reference_width"],
            adam_betas=(o["adam_beta1"], o["adam_beta2"]),
            adam_eps=o["adam_eps"],
            weight_decay=o["weight_decay"],
            embedding_adam_beta2=o.get("embedding_adam_beta2", -1.0),
            unembedding_adam_beta2=o.get("unembedding_adam_beta2", -1.0),
            embedding_weight_decay=o.get("embedding_weight_decay", -1.0),
            unembedding_weight_decay=o.get("unembedding_weight_decay", -1.0),
            resid_scalar_lr=o.get("resid_scalar_lr", 0.005),
            resid_scalar_weight_decay=o.get("resid_scalar_weight_decay", 0.05),
            x0_scalar_lr=o.get("x0_scalar_lr", 0.5),
            x0_scalar_beta1=o.get("x0_scalar_beta1", 0.96),
            grad_clip=o["grad_clip"],
        ),
    )


def has_bf16_engine():
    """AVX512-BF16 or AMX, as clocktrain's matmul_precision "auto" decides (docs/cpu.md)."""
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(precision):
    """'auto' -> 'bf16' where the CPU has a bf16 engine, else 'f32'."""
    if precision == "auto":
        return "bf16" if has_bf16_engine() else "f32"
    return precision


def prepare_for_precision(model, precision):
    """Under bf16 the lm_head's output goes back to f32 before the softcap and the loss."""
    if precision == "bf16":
        model.lm_head.register_forward_hook(lambda module, inputs, output: output.float())


def autocast(precision):
    """The context the forward runs in: bf16 autocast, or nothing for f32."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
