#include "model/activations.h"

#include <algorithm>

#include "util/error.h"

namespace ct {

Tensor view(const Buffer& buffer, Shape shape) {
  const Tensor& t = buffer.tensor();
  check(shape.numel() <= t.numel(), "activation view ", shape.to_string(), " exceeds the buffer ", t.shape.to_string());
  Tensor v = t;
  v.shape = shape;
  return v;
}

void Activations::ensure(Backend& backend, const ModelConfig& config, DType dtype, DType mm, DType logits_type,
                         int64_t positions, bool per_layer, bool backward, bool head) {
  const size_t wanted_layers = per_layer ? static_cast<size_t>(config.n_layer) : 1;
  if (positions <= capacity && layers.size() == wanted_layers && with_backward == backward && mm_dtype == mm &&
      logits_dtype == logits_type && with_head == head)
    return;
  check(logits_type == dtype || logits_type == mm, "Activations: logits must be in ", dtype_name(dtype), " or ",
        dtype_name(mm), ", got ", dtype_name(logits_type));
  *this = Activations{};
  const int64_t N = positions, C = config.n_embd, F = config.mlp_hidden(), V = config.vocab_size;
  const int64_t q_width = config.n_head * config.head_dim(), kv_width = config.n_kv_head * config.head_dim();
  auto alloc = [&](Shape shape, DType type) { return Buffer(backend, shape, type); };

  tokens = alloc({N}, DType::i32);
  embedded = alloc({N, C}, dtype);
  if (backward || config.residual_scalars) resid0 = alloc({N, C}, dtype);
  rstd0 = alloc({N}, dtype);
  resid = alloc({N, C}, dtype);
  bool any_attention = config.attention_layer_count() > 0;
  layers.resize(wanted_layers);
  for (size_t i = 0; i < wanted_layers; ++i) {
    LayerActivations& l = layers[i];
    bool attention = per_layer ? config.has_attention(static_cast<int64_t>(i)) : any_attention;
    if (attention) {
      l.ln1 = alloc({N, C}, mm);
      l.rstd1 = alloc({N}, dtype);
      l.q = alloc({N, q_width}, mm);
      l.rstd_q = alloc({N * config.n_head}, dtype);
      l.k = alloc({N, kv_width}, mm);
      l.rstd_k = alloc({N * config.n_kv_head}, dtype);
      l.v = alloc({N, kv_width}, mm);
      l.att = alloc({N, q_width}, mm);
      l.lse = alloc({N * config.n_head}, dtype);
    }
    l.ln2 = alloc({N, C}, mm);
    l.rstd2 = alloc({N}, dtype);
    l.fc = alloc({N, F}, mm);
    l.act = alloc({N, F}, mm);
    if (per_layer && backward && config.residual_scalars) l.x_in = alloc({N, C}, dtype);
  }
  xf = alloc({N, C}, mm);
  rstd_f = alloc({N}, dtype);
  if (head) {
    targets = alloc({N}, DType::i32);
    logits = alloc({N, V}, logits_type);
    losses = alloc({N}, dtype);
    if (!backward) argmax = alloc({N}, DType::i32);
  }
  if (any_attention) {
    q_raw = alloc({N, q_width}, dtype);
    k_raw = alloc({N, kv_width}, dtype);
  }
  if (backward) {
    d_resid = alloc({N, C}, dtype);
    d_width = alloc({N, std::max(C, q_width)}, dtype);
    d_hidden = alloc({N, F}, mm);
    if (any_attention) {
      dq = alloc({N, q_width}, dtype);
      dk = alloc({N, kv_width}, dtype);
      dv = alloc({N, kv_width}, mm);
    }
    if (config.residual_scalars) d_x0 = alloc({N, C}, dtype);
    if (mm != dtype) {
      if (logits_type != mm) dlogits_mm = alloc({N, V}, mm);
      d_resid_mm = alloc({N, C}, mm);
      if (any_attention) {
        d_att_mm = alloc({N, q_width}, mm);
        dq_raw_mm = alloc({N, q_width}, mm);
        dk_raw_mm = alloc({N, kv_width}, mm);
      }
    }
  }
  capacity = N;
  this->config = config;
  with_backward = backward;
  with_head = head;
  mm_dtype = mm;
  logits_dtype = logits_type;
}

LayerTensors Activations::layer_tensors(int64_t i, int64_t N) {
  const LayerActivations& a = layer(i);
  const int64_t C = config.n_embd, F = config.mlp_hidden(), H = config.n_head, Hkv = config.n_kv_head;
  const int64_t D = config.head_dim();
  LayerTensors t;
  t.x = view(resid, {N, C});
  if (!a.ln1.tensor().empty()) {  // empty for an MLP-only layer that has a set of its own
    t.ln1 = view(a.ln1, {N, C});
    t.rstd1 = view(a.rstd1, {N});
    t.q_raw = view(q_raw, {N, H * D});
    t.k_raw = view(k_raw, {N, Hkv * D});
    t.q = view(a.q, {N, H * D});
    t.rstd_q = view(a.rstd_q, {N * H});
    t.k = view(a.k, {N, Hkv * D});
    t.rstd_k = view(a.rstd_k, {N * Hkv});
    t.v = view(a.v, {N, Hkv * D});
    t.att = view(a.att, {N, H * D});
    t.lse = view(a.lse, {N * H});
  }
  t.ln2 = view(a.ln2, {N, C});
  t.rstd2 = view(a.rstd2, {N});
  t.fc = view(a.fc, {N, F});
  t.act = view(a.act, {N, F});
  return t;
}

}  // namespace ct
