// The GPT's training forward and backward (docs/model.md), one backend op per line, with each op's math
// in backend.h. Shapes: N = B*T positions, C = n_embd, H / Hkv heads of D = head_dim, F = mlp hidden,
// V = vocab_size (the head's rows past V are padding and never used).
#include "model/gpt.h"

#include <algorithm>
#include <cmath>

#include "model/activations.h"
#include "util/error.h"

namespace ct {

GPT::GPT(Backend& backend, const ModelConfig& config, DType dtype)
    : backend_(&backend), config_(config), dtype_(dtype), matmul_dtype_(dtype) {
  config_.validate("model config");
  check(dtype == DType::f32 || dtype == DType::f64, "GPT: compute dtype must be f32 or f64, got ", dtype_name(dtype));
  if (dtype == DType::f32) matmul_dtype_ = backend.matmul_operand_dtype();
  fused_loss_gradient_ = !backend.supports_graphs();
  for (ParameterSpec& spec : parameter_specs(config_)) {
    Parameter p;
    p.spec = std::move(spec);
    p.value = Buffer(backend, p.spec.shape, dtype);
    p.grad = Buffer(backend, p.spec.shape, dtype);
    // every matrix that a matmul reads (the layers' and the head; the embedding table is only looked up)
    if (matmul_dtype_ != dtype && (p.spec.group == ParamGroup::matrix || p.spec.group == ParamGroup::lm_head))
      p.compute = Buffer(backend, p.spec.shape, matmul_dtype_);
    params_.push_back(std::move(p));
  }
  layers_.resize(static_cast<size_t>(config_.n_layer));
  for (Parameter& p : params_) {
    const std::string& n = p.spec.name;
    if (n == "transformer.wte.weight") {
      wte_ = &p;
    } else if (n == "lm_head.weight") {
      lm_head_ = &p;
    } else if (n == "resid_lambdas") {
      resid_scalars_ = &p;
    } else if (n == "x0_lambdas") {
      x0_scalars_ = &p;
    } else {
      // transformer.h.{i}.{attn.c_q|attn.c_k|attn.c_v|attn.c_proj|mlp.c_fc|mlp.c_proj}.weight
      const size_t dot = n.find('.', 14);
      LayerParams& l = layers_[std::stoul(n.substr(14, dot - 14))];
      const std::string part = n.substr(dot + 1);
      if (part == "attn.c_q.weight") l.c_q = &p;
      else if (part == "attn.c_k.weight") l.c_k = &p;
      else if (part == "attn.c_v.weight") l.c_v = &p;
      else if (part == "attn.c_proj.weight") l.attn_proj = &p;
      else if (part == "mlp.c_fc.weight") l.c_fc = &p;
      else if (part == "mlp.c_proj.weight") l.mlp_proj = &p;
      else fail("GPT: unexpected parameter ", n);
    }
  }
  ensure_rope_tables(config_.sequence_len);
}

GPT::~GPT() = default;

void GPT::initialize(uint64_t seed) {
  initialize_parameters(*backend_, params_, seed);
  weights_changed();
}

// Once per optimizer step (not once per matmul): every later forward and backward of the step reads
// these copies.
void GPT::refresh_compute_weights() {
  for (Parameter& p : params_)
    if (!p.compute.tensor().empty()) backend_->copy(p.compute, p.value);
  compute_weights_current_ = true;
}

void GPT::ensure_compute_weights() {
  if (!compute_weights_current_) refresh_compute_weights();
}

Parameter& GPT::parameter(const std::string& name) {
  weights_changed();  // the caller may change the value
  for (Parameter& p : params_)
    if (p.spec.name == name) return p;
  fail("model: no parameter named '", name, "'");
}

int64_t GPT::parameter_count() const {
  int64_t n = 0;
  for (const Parameter& p : params_) n += p.spec.shape.numel();
  return n;
}

void GPT::zero_grad() {
  for (Parameter& p : params_) backend_->fill(p.grad, 0.0);
}

Tensor GPT::head_weight() const { return mm(lm_head_).rows(0, config_.vocab_size); }

// cos/sin[t, j] = cos/sin(t * base^(-2j/D)) for j < D/2, computed in double and rounded once.
void GPT::ensure_rope_tables(int64_t positions) {
  if (positions <= rope_positions_) return;
  const int64_t P = std::max(positions, 2 * rope_positions_), half = config_.head_dim() / 2;
  std::vector<double> cos_host(static_cast<size_t>(P * half)), sin_host(cos_host.size());
  for (int64_t t = 0; t < P; ++t)
    for (int64_t j = 0; j < half; ++j) {
      const double inv_freq = std::pow(config_.rope_base, -2.0 * static_cast<double>(j) / config_.head_dim());
      const double angle = static_cast<double>(t) * inv_freq;
      cos_host[static_cast<size_t>(t * half + j)] = std::cos(angle);
      sin_host[static_cast<size_t>(t * half + j)] = std::sin(angle);
    }
  rope_cos_ = Buffer(*backend_, {P, half}, dtype_);
  rope_sin_ = Buffer(*backend_, {P, half}, dtype_);
  backend_->upload(rope_cos_, cos_host.data(), DType::f64);
  backend_->upload(rope_sin_, sin_host.data(), DType::f64);
  rope_positions_ = P;
}

// ---- forward ------------------------------------------------------------------------------------

// x = rmsnorm(wte[tokens]), every layer, xf = rmsnorm(x), for the N positions whose tokens are in
// acts.tokens. With residual scalars each layer first takes x = r_i x + a_i x0 (x0: the first norm's
// output, kept in resid0; a pass with a backward keeps it, and each layer's x before the mix, for it).
void GPT::trunk_forward(Activations& acts, int64_t N, AttentionPositions& positions) {
  const int64_t C = config_.n_embd;
  Backend& be = *backend_;
  ensure_compute_weights();
  be.embedding_forward(view(acts.embedded, {N, C}), view(acts.tokens, {N}), wte_->value);
  if (!acts.resid0.tensor().empty()) {
    be.rmsnorm_forward(view(acts.resid0, {N, C}), view(acts.rstd0, {N}), view(acts.embedded, {N, C}), kNormEps);
    be.copy(view(acts.resid, {N, C}), view(acts.resid0, {N, C}));
  } else {
    be.rmsnorm_forward(view(acts.resid, {N, C}), view(acts.rstd0, {N}), view(acts.embedded, {N, C}), kNormEps);
  }
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    if (config_.residual_scalars) {
      const Buffer& x_in = acts.layer(l).x_in;
      be.residual_mix_forward(view(acts.resid, {N, C}), x_in.tensor().empty() ? Tensor{} : view(x_in, {N, C}),
                              view(acts.resid0, {N, C}), layer_scalar(resid_scalars_->value, l),
                              layer_scalar(x0_scalars_->value, l));
    }
    layer_forward(acts.layer_tensors(l, N), l, positions);
  }
  be.rmsnorm_forward(view(acts.xf, {N, C}), view(acts.rstd_f, {N}), view(acts.resid, {N, C}), kNormEps);
}

Tensor GPT::layer_scalar(const Buffer& per_layer, int64_t layer) { return per_layer.tensor().rows(layer, layer + 1); }

// x += Wo attention(ropenorm(ln1 Wq^T), ropenorm(ln1 Wk^T), ln1 Wv^T) with ln1 = rmsnorm(x), where
// the layer has attention; then x += W2 relu(W1 ln2)^2 with ln2 = rmsnorm(x).
void GPT::layer_forward(const LayerTensors& t, int64_t layer, AttentionPositions& positions) {
  Backend& be = *backend_;
  const LayerParams& p = layers_[static_cast<size_t>(layer)];
  if (config_.has_attention(layer)) {
    be.rmsnorm_forward(t.ln1, t.rstd1, t.x, kNormEps);
    be.gemm(t.ln1, mm(p.c_q), t.q_raw, false, true);
    be.gemm(t.ln1, mm(p.c_k), t.k_raw, false, true);
    be.gemm(t.ln1, mm(p.c_v), t.v, false, true);
    positions.attend(be, t, layer, rope_cos_, rope_sin_, config_.attention_scale());
    be.gemm(t.att, mm(p.attn_proj), t.x, false, true, 1.0, 1.0);
  }
  be.rmsnorm_forward(t.ln2, t.rstd2, t.x, kNormEps);
  be.linear_forward_fp8(t.ln2, mm(p.c_fc), t.fc);  // fp8 when the backend was asked for it
  be.relu2_forward(t.act, t.fc);
  be.linear_forward_fp8(t.act, mm(p.mlp_proj), t.x, 1.0);
}

// logits = xf lm_head[:V]^T for the rows of xf given ([M, C] -> [M, V]).
void GPT::head_forward(const Tensor& xf_rows, const Tensor& logits) {
  backend_->gemm(xf_rows, head_weight(), logits, false, true);
}

void CausalRows::attend(Backend& be, const LayerTensors& t, int64_t, const Tensor& rope_cos, const Tensor& rope_sin,
                        double scale) {
  const int64_t D = rope_cos.shape[1] * 2, H = t.q.shape[1] / D, Hkv = t.k.shape[1] / D;
  be.rope_qknorm_forward(t.q.reshaped({B_, T_, H, D}), t.rstd_q, t.q_raw.reshaped({B_, T_, H, D}), rope_cos,
                         rope_sin, 0, kNormEps);
  be.rope_qknorm_forward(t.k.reshaped({B_, T_, Hkv, D}), t.rstd_k, t.k_raw.reshaped({B_, T_, Hkv, D}), rope_cos,
                         rope_sin, 0, kNormEps);
  be.attention_forward(t.att.reshaped({B_, T_, H, D}), t.lse.reshaped({B_, H, T_}), t.q.reshaped({B_, T_, H, D}),
                       t.k.reshaped({B_, T_, Hkv, D}), t.v.reshaped({B_, T_, Hkv, D}), scale);
}

double GPT::forward(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T) {
  forward_losses(inputs, targets, B, T);
  const double total = backend_->sum(view(train_acts_->losses, {B * T}));
  return last_valid_targets_ > 0 ? total / static_cast<double>(last_valid_targets_) : 0.0;
}

int64_t GPT::forward_queued(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T, int loss_slot,
                            bool accumulate) {
  forward_losses(inputs, targets, B, T);
  backend_->sum_to_slot(loss_slot, view(train_acts_->losses, {B * T}), accumulate);
  return last_valid_targets_;
}

Activations& GPT::forward_to_logits(std::unique_ptr<Activations>& slot, bool training, const int32_t* inputs,
                                    const int32_t* targets, int64_t B, int64_t T) {
  check(B > 0 && T > 0, training ? "GPT::forward" : "GPT::evaluate", ": expected B, T > 0, got ", B, ", ", T);
  const int64_t N = B * T, V = config_.vocab_size, C = config_.n_embd;
  if (!slot) slot = std::make_unique<Activations>();
  Activations& acts = *slot;
  // A training step whose cross-entropy is fused keeps the logits in the matmul dtype (as nanochat's
  // bf16 autocast produces them) and writes their gradient over them: half the memory traffic of f32
  // logits. Evaluation and the unfused path keep f32 logits.
  const DType logits_dtype = training && fused_loss_gradient_ ? matmul_dtype_ : dtype_;
  acts.ensure(*backend_, config_, dtype_, matmul_dtype_, logits_dtype, N, /*per_layer=*/training,
              /*backward=*/training, /*head=*/true);
  Backend& be = *backend_;
  be.upload(view(acts.tokens, {N}), inputs, DType::i32);
  if (targets) be.upload(view(acts.targets, {N}), targets, DType::i32);
  ensure_rope_tables(T);
  CausalRows positions(B, T);
  trunk_forward(acts, N, positions);
  head_forward(view(acts.xf, {N, C}), view(acts.logits, {N, V}));
  return acts;
}

void GPT::forward_losses(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T) {
  Activations& acts = forward_to_logits(train_acts_, /*training=*/true, inputs, targets, B, T);
  const int64_t N = B * T, V = config_.vocab_size;
  Backend& be = *backend_;
  // losses = softcapped cross-entropy, and with them (one pass over the logits, fused_loss_gradient_)
  // d losses[n] / d logits, unscaled: backward() applies the loss scale in the head's matmuls.
  // Otherwise backward() computes d logits itself.
  if (fused_loss_gradient_) {
    be.softcap_cross_entropy_fused(view(acts.losses, {N}), view(acts.dlogits(), {N, V}), view(acts.logits, {N, V}),
                                   view(acts.targets, {N}), config_.softcap, 1.0);
  } else {
    be.softcap_cross_entropy_forward(view(acts.losses, {N}), Tensor{}, view(acts.logits, {N, V}),
                                     view(acts.targets, {N}), config_.softcap);
  }
  last_valid_targets_ = std::count_if(targets, targets + N, [](int32_t t) { return t >= 0; });
  last_B_ = B;
  last_T_ = T;
  backward_ready_ = true;
}

void GPT::last_losses(float* out) {
  check(train_acts_ && last_B_ > 0, "GPT::last_losses: no forward pass yet");
  backend_->download(out, DType::f32, view(train_acts_->losses, {last_B_ * last_T_}));
}

// ---- backward -----------------------------------------------------------------------------------

size_t GPT::first_parameter_of_layer(int64_t layer) const {
  const LayerParams& p = layers_[static_cast<size_t>(layer)];
  return static_cast<size_t>((p.c_q ? p.c_q : p.c_fc) - params_.data());
}

void GPT::backward(double loss_scale, const GradientsReady& ready) {
  check(backward_ready_, "GPT::backward: needs a forward() first (each forward supports one backward)");
  backward_ready_ = false;
  Activations& acts = *train_acts_;
  const int64_t B = last_B_, T = last_T_, N = B * T, C = config_.n_embd, V = config_.vocab_size;
  Backend& be = *backend_;
  // d loss / d logits of the mean over valid targets = scale * (the per-row gradients forward() left).
  const double scale = last_valid_targets_ > 0 ? loss_scale / static_cast<double>(last_valid_targets_) : 0.0;
  const Tensor dlogits = view(acts.dlogits(), {N, V});
  double head_scale = scale;  // the factor the head's products apply to dlogits
  if (!fused_loss_gradient_) {
    be.softcap_cross_entropy_backward(dlogits, view(acts.logits, {N, V}), view(acts.targets, {N}), config_.softcap,
                                      scale);
    head_scale = 1.0;
  }
  // lm_head: dW[:V] += scale dlogits^T xf;  d xf = scale dlogits W[:V]
  be.gemm(dlogits, view(acts.xf, {N, C}), lm_head_->grad.tensor().rows(0, V), true, false, head_scale, 1.0);
  const Tensor dxf = view(acts.d_width, {N, C});
  if (ready) ready(static_cast<size_t>(lm_head_ - params_.data()));
  be.gemm(dlogits, head_weight(), dxf, false, false, head_scale, 0.0);
  const Tensor d_resid = view(acts.d_resid, {N, C});
  be.fill(d_resid, 0.0);
  be.rmsnorm_backward(d_resid, dxf, view(acts.xf, {N, C}), view(acts.rstd_f, {N}));
  const Tensor d_x0 = config_.residual_scalars ? view(acts.d_x0, {N, C}) : Tensor{};
  if (config_.residual_scalars) be.fill(d_x0, 0.0);
  for (int64_t l = config_.n_layer - 1; l >= 0; --l) {
    mlp_backward(l, N);
    if (config_.has_attention(l)) attention_backward(l, B, T);
    // d_resid holds d loss / d(r x + a x0): into d x (r g), d x0 (a g), d r and d a
    if (config_.residual_scalars)
      be.residual_mix_backward(d_resid, d_x0, layer_scalar(resid_scalars_->grad, l), layer_scalar(x0_scalars_->grad, l),
                               view(acts.layer(l).x_in, {N, C}), view(acts.resid0, {N, C}),
                               layer_scalar(resid_scalars_->value, l), layer_scalar(x0_scalars_->value, l));
    if (ready) ready(first_parameter_of_layer(l));
  }
  // x0 is also the stream entering the first layer: both gradients flow into the first norm's output
  if (config_.residual_scalars) be.axpby(d_resid, 1.0, d_x0, 1.0);
  // through the first rmsnorm into the embedding rows
  const Tensor d_embedded = view(acts.embedded, {N, C});
  be.fill(d_embedded, 0.0);
  be.rmsnorm_backward(d_embedded, d_resid, view(acts.resid0, {N, C}), view(acts.rstd0, {N}));
  be.embedding_backward(wte_->grad, d_embedded, view(acts.tokens, {N}));
  // wte's gradient is the last to be final, and with it the residual scalars' (they come first)
  if (ready) ready(0);
}

// d_resid as the A operand of a branch's first backward matmuls: itself, or (mixed precision) a copy
// rounded to the matmul dtype, made once per branch.
Tensor GPT::residual_gradient_operand(Activations& acts, int64_t N) {
  const int64_t C = config_.n_embd;
  if (acts.d_resid_mm.tensor().empty()) return view(acts.d_resid, {N, C});
  backend_->copy(view(acts.d_resid_mm, {N, C}), view(acts.d_resid, {N, C}));
  return view(acts.d_resid_mm, {N, C});
}

// d_resid holds d loss / d(x after the MLP); adds the branch's contribution to d(x before it).
void GPT::mlp_backward(int64_t layer, int64_t N) {
  const int64_t C = config_.n_embd, F = config_.mlp_hidden();
  Backend& be = *backend_;
  Activations& acts = *train_acts_;
  LayerActivations& a = acts.layer(layer);
  const LayerParams& p = layers_[static_cast<size_t>(layer)];
  const Tensor dy = view(acts.d_resid, {N, C}), act = view(a.act, {N, F}), ln2 = view(a.ln2, {N, C});
  const Tensor dy_mm = residual_gradient_operand(acts, N);       // dy as a matmul operand
  const Tensor d_act = view(acts.d_hidden, {N, F});
  be.gemm(dy_mm, mm(p.mlp_proj), d_act, false, false);          // d act = dy W2
  be.gemm(dy_mm, act, p.mlp_proj->grad, true, false, 1.0, 1.0); // dW2 += dy^T act
  const Tensor d_fc = act;                                       // act is spent: reuse it for d fc
  be.relu2_backward(d_fc, d_act, view(a.fc, {N, F}));            // d fc = d act * 2 relu(fc)
  be.gemm(d_fc, ln2, p.c_fc->grad, true, false, 1.0, 1.0);       // dW1 += d fc^T ln2
  const Tensor d_ln2 = view(acts.d_width, {N, C});
  be.gemm(d_fc, mm(p.c_fc), d_ln2, false, false);                // d ln2 = d fc W1
  be.rmsnorm_backward(dy, d_ln2, ln2, view(a.rstd2, {N}));       // residual: dx = dy + norm'(d ln2)
}

void GPT::attention_backward(int64_t layer, int64_t B, int64_t T) {
  const int64_t N = B * T, C = config_.n_embd, H = config_.n_head, Hkv = config_.n_kv_head, D = config_.head_dim();
  Backend& be = *backend_;
  Activations& acts = *train_acts_;
  LayerActivations& a = acts.layer(layer);
  const LayerParams& p = layers_[static_cast<size_t>(layer)];
  const Tensor dy = view(acts.d_resid, {N, C}), ln1 = view(a.ln1, {N, C});
  const Tensor dy_mm = residual_gradient_operand(acts, N);
  const Tensor d_att = view(acts.d_attention(), {N, H * D});
  be.gemm(dy_mm, mm(p.attn_proj), d_att, false, false);                          // d att = dy Wo
  be.gemm(dy_mm, view(a.att, {N, H * D}), p.attn_proj->grad, true, false, 1.0, 1.0);  // dWo += dy^T att
  be.attention_backward(view(acts.dq, {B, T, H, D}), view(acts.dk, {B, T, Hkv, D}), view(acts.dv, {B, T, Hkv, D}),
                        view(acts.d_attention(), {B, T, H, D}), view(a.att, {B, T, H, D}), view(a.lse, {B, H, T}),
                        view(a.q, {B, T, H, D}), view(a.k, {B, T, Hkv, D}), view(a.v, {B, T, Hkv, D}),
                        config_.attention_scale());
  // back through QK norm and rotary into the projections' outputs (stored as matmul operands)
  const Tensor dq_raw = view(acts.dq_raw(), {N, H * D}), dk_raw = view(acts.dk_raw(), {N, Hkv * D});
  const Tensor dv = view(acts.dv, {N, Hkv * D});
  be.rope_qknorm_backward(view(acts.dq_raw(), {B, T, H, D}), view(acts.dq, {B, T, H, D}), view(a.q, {B, T, H, D}),
                          view(a.rstd_q, {N * H}), rope_cos_, rope_sin_, 0);
  be.rope_qknorm_backward(view(acts.dk_raw(), {B, T, Hkv, D}), view(acts.dk, {B, T, Hkv, D}),
                          view(a.k, {B, T, Hkv, D}), view(a.rstd_k, {N * Hkv}), rope_cos_, rope_sin_, 0);
  be.gemm(dq_raw, ln1, p.c_q->grad, true, false, 1.0, 1.0);  // dWq += dq^T ln1
  be.gemm(dk_raw, ln1, p.c_k->grad, true, false, 1.0, 1.0);
  be.gemm(dv, ln1, p.c_v->grad, true, false, 1.0, 1.0);
  const Tensor d_ln1 = view(acts.d_width, {N, C});           // d att is spent
  be.gemm(dq_raw, mm(p.c_q), d_ln1, false, false);             // d ln1 = dq Wq + dk Wk + dv Wv
  be.gemm(dk_raw, mm(p.c_k), d_ln1, false, false, 1.0, 1.0);
  be.gemm(dv, mm(p.c_v), d_ln1, false, false, 1.0, 1.0);
  be.rmsnorm_backward(dy, d_ln1, ln1, view(a.rstd1, {N}));
}

}  // namespace ct
