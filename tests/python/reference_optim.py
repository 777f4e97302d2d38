"""Muon + AdamW + gradient clipping + schedule of docs/model.md, in PyTorch, written from the spec as a
reference for clocktrain's optimizer (tests/python/torch_parity.py) and for the throughput bench.

    opt = ReferenceOptimizer(model, OptimizerConfig())   # model: reference_gpt.GPT
    loss.backward(); opt.step(lr_factor)                 # clips, then Muon + AdamW
"""

import math

import torch


class OptimizerConfig:
    def __init__(self, **overrides):
        self.matrix_lr = 0.02
        self.muon_momentum = 0.95
        self.muon_momentum_start = 0.85
        self.muon_momentum_warmup_steps = 300
        self.muon_momentum_final = 0.0  # 0: none; else the momentum at the end of the lr warmdown
        self.muon_weight_decay = 0.0  # lambda_0 of cautious weight decay (frontier.md 2.4); 0: none
        self.muon_ns_steps = 5
        self.muon_ns_coefficients = (3.4445, -4.7750, 2.0315)
        self.embedding_lr = 0.2
        self.unembedding_lr = 0.004
        self.adamw_lr_reference_width = 768.0
        self.adam_betas = (0.8, 0.95)
        self.adam_eps = 1e-10
        self.weight_decay = 0.0
        # per-group beta2 and weight decay for wte and lm_head (frontier.md 2.5); -1: the shared value
        self.embedding_adam_beta2 = -1.0
        self.unembedding_adam_beta2 = -1.0
        self.embedding_weight_decay = -1.0
        self.unembedding_weight_decay = -1.0
        # the residual scalars' AdamW groups (frontier.md 1.1): r at (adam beta1, beta2), a at (x0 beta1, beta2)
        self.resid_scalar_lr = 0.005
        self.resid_scalar_weight_decay = 0.05
        self.x0_scalar_lr = 0.5
        self.x0_scalar_beta1 = 0.96
        self.grad_clip = 1.0
        for k, v in overrides.items():
            assert hasattr(self, k), k
            setattr(self, k, v)


def lr_factor(progress, warmup=0.0, warmdown=0.2, final=0.0):
    """1 until 1 - warmdown, then linear to `final` at progress 1."""
    p = min(max(progress, 0.0), 1.0)
    if warmup > 0 and p < warmup:
        return p / warmup
    if warmdown <= 0 or p <= 1.0 - warmdown:
        return 1.0
    remaining = (1.0 - p) / warmdown
    return remaining + (1.0 - remaining) * final


def warmdown_position(progress, warmdown=0.2):
    """How far progress is into the lr warmdown: 0 up to its start, 1 at progress 1."""
    if warmdown <= 0:
        return 0.0
    p = min(max(progress, 0.0), 1.0)
    return min(max((p - (1.0 - warmdown)) / warmdown, 0.0), 1.0)


def newton_schulz(G, steps, a, b, c):
    """X = G / (||G||_F + 1e-7); `steps` times A = X X^T, B = b A + c A A, X = a X + B X; on G^T when rows > cols."""
    X = G.clone()
    transposed = X.shape[0] > X.shape[1]
    if transposed:
        X = X.T
    X = X / (X.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return X.T if transposed else X


class ReferenceOptimizer:
    def __init__(self, model, cfg):
        self.cfg = cfg
        self.model = model
        self.matrices = model.matrix_params()
        width_scale = (model.cfg.n_embd / cfg.adamw_lr_reference_width) ** -0.5
        def own(group_value, shared):
            return group_value if group_value >= 0 else shared

        b1, b2, wd = cfg.adam_betas[0], cfg.adam_betas[1], cfg.weight_decay
        # (parameter, lr, beta1, beta2, weight decay)
        self.adam = [
            (model.transformer["wte"].weight, cfg.embedding_lr * width_scale, b1, own(cfg.embedding_adam_beta2, b2),
             own(cfg.embedding_weight_decay, wd)),
            (model.lm_head.weight, cfg.unembedding_lr * width_scale, b1, own(cfg.unembedding_adam_beta2, b2),
             own(cfg.unembedding_weight_decay, wd)),
        ]
        if model.cfg.residual_scalars:  # no width factor
            self.adam += [
                (model.resid_lambdas, cfg.resid_scalar_lr, b1, b2, cfg.resid_scalar_weight_decay),
                (model.x0_lambdas, cfg.x0_scalar_lr, cfg.x0_scalar_beta1, b2, 0.0),
            ]
        self.momentum = [torch.zeros_like(p) for p in self.matrices]
        self.exp_avg = [torch.zeros_like(group[0]) for group in self.adam]
        self.exp_avg_sq = [torch.zeros_like(group[0]) for group in self.adam]
        self.steps_taken = 0

    def grad_norm(self):
        return math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in self.model.parameters()))

    @torch.no_grad()
    def step(self, lr_factor_value, warmdown_position=0.0, progress=0.0):
        cfg = self.cfg
        norm = self.grad_norm()
        if cfg.grad_clip > 0:
            coef = cfg.grad_clip / (norm + 1e-6)
            if coef < 1.0:
                for p in self.model.parameters():
                    p.grad.mul_(coef)
        frac = min(1.0, self.steps_taken / cfg.muon_momentum_warmup_steps) if cfg.muon_momentum_warmup_steps > 0 else 1.0
        mu = (1 - frac) * cfg.muon_momentum_start + frac * cfg.muon_momentum
        if frac >= 1.0 and cfg.muon_momentum_final > 0:  # the warm-up wins while it lasts
            mu = cfg.muon_momentum + (cfg.muon_momentum_final - cfg.muon_momentum) * min(max(warmdown_position, 0.0), 1.0)
        # cautious weight decay: lambda_t = lambda_0 (1 + cos(pi progress)) / 2, only where x p >= 0
        wd = cfg.muon_weight_decay * (1 + math.cos(math.pi * min(max(progress, 0.0), 1.0))) / 2
        a, b, c = cfg.muon_ns_coefficients
        for p, buf in zip(self.matrices, self.momentum):
            g = p.grad
            buf.mul_(mu).add_((1 - mu) * g)
            u = (1 - mu) * g + mu * buf
            x = newton_schulz(u, cfg.muon_ns_steps, a, b, c)
            rows, cols = p.shape
            lr = cfg.matrix_lr * lr_factor_value * math.sqrt(max(1.0, rows / cols))
            if cfg.muon_weight_decay > 0:
                mask = (x * p) >= 0
                p.sub_(lr * x + lr * wd * p * mask)
            else:
                p.add_(x, alpha=-lr)
        t = self.steps_taken + 1
        for (p, lr, b1, b2, wd), m, v in zip(self.adam, self.exp_avg, self.exp_avg_sq):
            g = p.grad
            m.mul_(b1).add_((1 - b1) * g)
            v.mul_(b2).add_((1 - b2) * g * g)
            m_hat = m / (1 - b1**t)
            v_hat = v / (1 - b2**t)
            p.sub_(lr * lr_factor_value * (wd * p + m_hat / (v_hat.sqrt() + cfg.adam_eps)))
        self.steps_taken += 1
        return norm
