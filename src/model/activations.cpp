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
                         int64_t positions, bool per_layer, bool backward) {
  const size_t wanted_layers = per_layer ? static_cast<size_t>(config.n_layer) : 1;
  if (positions <= capacity && layers.size() == wanted_layers && with_backward == backward && mm_dtype == mm &&
      logits_dtype == logits_type)
    return;
  check(logits_type == dtype || logits_type == mm, "Activations: logits must be in ", dtype_name(dtype), " or ",
        dtype_name(mm), ", got ", dtype_name(logits_type));
  *this = Activations{};
  const int64_t N = positions, C = config.n_embd, F = config.mlp_hidden(), V = config.vocab_size;
  const int64_t q_width = config.n_head * config.head_dim(), kv_width = config.n_kv_head * config.head_dim();
  auto alloc = [&](Shape shape, DType type) { return Buffer(backend, shape, type); };

  tokens = alloc({N}, DType::i32);
  targets = alloc({N}, DType::i32);
  embedded = alloc({N, C}, dtype);
  resid0 = alloc({N, C}, dtype);
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
  }
  xf = alloc({N, C}, mm);
  rstd_f = alloc({N}, dtype);
  logits = alloc({N, V}, logits_type);
  losses = alloc({N}, dtype);
  if (!backward) argmax = alloc({N}, DType::i32);
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
  with_backward = backward;
  mm_dtype = mm;
  logits_dtype = logits_type;
}

}  // namespace ct
