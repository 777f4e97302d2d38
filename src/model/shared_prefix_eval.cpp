// The shared-prefix evaluation pass (shared_prefix_eval.h): the layers of GPT::forward_trunk over a
// flat stream of prefixes and continuation rows. Shapes: n positions in the pass, C = n_embd, H / Hkv
// heads of D = head_dim, F = mlp hidden, V = vocab_size; group g has P_g prefix positions at
// prefix_offset_[g] and R_g rows of L_g = row_length_[g] positions at rows_offset_[g].
#include "model/shared_prefix_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/activations.h"
#include "util/error.h"

namespace ct {

namespace {

// Rows [begin, end) of a buffer's first dimension, seen with `shape`.
Tensor part(const Buffer& buffer, int64_t begin, int64_t end, Shape shape) {
  return buffer.tensor().rows(begin, end).reshaped(std::move(shape));
}

// Capacities grow in steps, so batches of slightly different sizes do not reallocate every time.
int64_t rounded_capacity(int64_t wanted) { return (wanted + 4095) / 4096 * 4096; }

}  // namespace

SharedPrefixEvaluator::SharedPrefixEvaluator(GPT& model) : model_(model) {}

int64_t SharedPrefixEvaluator::positions(const SharedPrefixGroup& group) {
  size_t longest = 0;
  for (const auto& row : group.inputs) longest = std::max(longest, row.size());
  return static_cast<int64_t>(group.prefix.size() + group.inputs.size() * longest);
}

void SharedPrefixEvaluator::ensure_capacity(int64_t positions, int64_t kv_rows, int64_t head_rows) {
  const ModelConfig& c = model_.config();
  Backend& be = model_.backend();
  // dtypes as in Activations::ensure: what feeds a matmul in the matmul dtype (bf16 with a bf16
  // backend), the residual stream, statistics and losses in the compute dtype.
  const DType dt = model_.dtype(), mm = model_.matmul_dtype();
  const int64_t C = c.n_embd, F = c.mlp_hidden(), V = c.vocab_size;
  const int64_t q_width = c.n_head * c.head_dim(), kv_width = c.n_kv_head * c.head_dim();
  if (positions > capacity_) {
    const int64_t N = rounded_capacity(positions);
    tokens_ = Buffer(be, {N}, DType::i32);
    embedded_ = Buffer(be, {N, C}, dt);
    x_ = Buffer(be, {N, C}, dt);
    ln_ = Buffer(be, {N, C}, mm);
    rstd_ = Buffer(be, {N * std::max<int64_t>(c.n_head, 1)}, dt);
    lse_ = Buffer(be, {N * std::max<int64_t>(c.n_head, 1)}, dt);
    fc_ = Buffer(be, {N, F}, mm);
    act_ = Buffer(be, {N, F}, mm);
    if (c.attention_layer_count() > 0) {
      q_raw_ = Buffer(be, {N, q_width}, dt);
      q_ = Buffer(be, {N, q_width}, mm);
      att_ = Buffer(be, {N, q_width}, mm);
      k_raw_ = Buffer(be, {N, kv_width}, dt);
      k_ = Buffer(be, {N, kv_width}, mm);
      v_ = Buffer(be, {N, kv_width}, mm);
    }
    capacity_ = N;
  }
  if (kv_rows > kv_capacity_ && c.attention_layer_count() > 0) {
    const int64_t K = rounded_capacity(kv_rows);
    keys_ = Buffer(be, {K, kv_width}, mm);
    values_ = Buffer(be, {K, kv_width}, mm);
    kv_capacity_ = K;
  }
  if (head_rows > head_capacity_) {
    const int64_t M = rounded_capacity(head_rows);
    gathered_ = Buffer(be, {M, C}, mm);
    logits_ = Buffer(be, {M, V}, dt);
    head_targets_ = Buffer(be, {M}, DType::i32);
    losses_ = Buffer(be, {M}, dt);
    argmax_ = Buffer(be, {M}, DType::i32);
    head_capacity_ = M;
  }
}

// x += Wo attention(...) for every group: prefixes attend to themselves; a continuation row attends
// to [its group's prefix keys, its own keys] with its queries at positions P_g .. P_g + L_g - 1.
void SharedPrefixEvaluator::attention_layer(int64_t layer, const std::vector<SharedPrefixGroup>& groups) {
  const ModelConfig& c = model_.config();
  Backend& be = model_.backend();
  const int64_t n = positions_;
  const int64_t C = c.n_embd, H = c.n_head, Hkv = c.n_kv_head, D = c.head_dim(), kv_width = Hkv * D;
  const GPT::LayerParams& p = model_.layers_[static_cast<size_t>(layer)];
  const Tensor x = part(x_, 0, n, {n, C}), ln = part(ln_, 0, n, {n, C});
  be.rmsnorm_forward(ln, part(rstd_, 0, n, {n}), x, kNormEps);
  be.gemm(ln, model_.mm(p.c_q), part(q_raw_, 0, n, {n, H * D}), false, true);
  be.gemm(ln, model_.mm(p.c_k), part(k_raw_, 0, n, {n, kv_width}), false, true);
  be.gemm(ln, model_.mm(p.c_v), part(v_, 0, n, {n, kv_width}), false, true);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const Tensor& cos = model_.rope_cos_;
  const Tensor& sin = model_.rope_sin_;
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t P = static_cast<int64_t>(groups[g].prefix.size()), po = prefix_offset_[g];
    const int64_t R = static_cast<int64_t>(groups[g].inputs.size()), L = row_length_[g], ro = rows_offset_[g];
    if (P > 0) {
      const Tensor q = part(q_, po, po + P, {1, P, H, D}), k = part(k_, po, po + P, {1, P, Hkv, D});
      be.rope_qknorm_forward(q, part(rstd_, 0, P * H, {P * H}), part(q_raw_, po, po + P, {1, P, H, D}), cos, sin, 0,
                             kNormEps);
      be.rope_qknorm_forward(k, part(rstd_, 0, P * Hkv, {P * Hkv}), part(k_raw_, po, po + P, {1, P, Hkv, D}), cos,
                             sin, 0, kNormEps);
      be.attention_forward(part(att_, po, po + P, {1, P, H, D}), part(lse_, 0, H * P, {1, H, P}), q, k,
                           part(v_, po, po + P, {1, P, Hkv, D}), scale);
    }
    const int64_t end = ro + R * L, Tk = P + L;
    const Tensor q = part(q_, ro, end, {R, L, H, D});
    be.rope_qknorm_forward(q, part(rstd_, 0, R * L * H, {R * L * H}), part(q_raw_, ro, end, {R, L, H, D}), cos, sin,
                           P, kNormEps);
    be.rope_qknorm_forward(part(k_, ro, end, {R, L, Hkv, D}), part(rstd_, 0, R * L * Hkv, {R * L * Hkv}),
                           part(k_raw_, ro, end, {R, L, Hkv, D}), cos, sin, P, kNormEps);
    // Each row's keys and values: the prefix's, then the row's own (contiguous, as attention wants).
    for (int64_t r = 0; r < R; ++r) {
      if (P > 0) {
        be.copy(part(keys_, r * Tk, r * Tk + P, {P, kv_width}), part(k_, po, po + P, {P, kv_width}));
        be.copy(part(values_, r * Tk, r * Tk + P, {P, kv_width}), part(v_, po, po + P, {P, kv_width}));
      }
      const int64_t row = ro + r * L;
      be.copy(part(keys_, r * Tk + P, (r + 1) * Tk, {L, kv_width}), part(k_, row, row + L, {L, kv_width}));
      be.copy(part(values_, r * Tk + P, (r + 1) * Tk, {L, kv_width}), part(v_, row, row + L, {L, kv_width}));
    }
    be.attention_forward(part(att_, ro, end, {R, L, H, D}), part(lse_, 0, R * H * L, {R, H, L}), q,
                         part(keys_, 0, R * Tk, {R, Tk, Hkv, D}), part(values_, 0, R * Tk, {R, Tk, Hkv, D}), scale);
  }
  be.gemm(part(att_, 0, n, {n, H * D}), model_.mm(p.attn_proj), x, false, true, 1.0, 1.0);
}

void SharedPrefixEvaluator::evaluate(const std::vector<SharedPrefixGroup>& groups,
                                     std::vector<std::vector<SharedPrefixRowScores>>& out) {
  const ModelConfig& c = model_.config();
  const int64_t C = c.n_embd, F = c.mlp_hidden(), V = c.vocab_size, T = c.sequence_len;
  out.assign(groups.size(), {});
  if (groups.empty()) return;

  // Layout: every prefix, then every group's block of rows.
  const size_t G = groups.size();
  prefix_offset_.assign(G, 0);
  rows_offset_.assign(G, 0);
  row_length_.assign(G, 0);
  int64_t n = 0, kv_rows = 0, head_rows = 0;
  for (size_t g = 0; g < G; ++g) {
    const SharedPrefixGroup& grp = groups[g];
    check(!grp.inputs.empty() && grp.inputs.size() == grp.targets.size(), "SharedPrefixEvaluator: group ", g,
          " has ", grp.inputs.size(), " input rows and ", grp.targets.size(), " target rows (need equal, >= 1)");
    for (int32_t t : grp.prefix) check(t >= 0 && t < V, "SharedPrefixEvaluator: token ", t, " outside the vocabulary");
    prefix_offset_[g] = n;
    n += static_cast<int64_t>(grp.prefix.size());
  }
  for (size_t g = 0; g < G; ++g) {
    const SharedPrefixGroup& grp = groups[g];
    const int64_t P = static_cast<int64_t>(grp.prefix.size());
    int64_t L = 0;
    for (size_t r = 0; r < grp.inputs.size(); ++r) {
      const auto& in = grp.inputs[r];
      check(!in.empty() && in.size() == grp.targets[r].size(), "SharedPrefixEvaluator: group ", g, " row ", r, " has ",
            in.size(), " inputs and ", grp.targets[r].size(), " targets (need equal, >= 1)");
      check(P + static_cast<int64_t>(in.size()) <= T, "SharedPrefixEvaluator: group ", g, " row ", r, " reaches position ",
            P + static_cast<int64_t>(in.size()), ", beyond the context of ", T);
      for (int32_t t : in) check(t >= 0 && t < V, "SharedPrefixEvaluator: token ", t, " outside the vocabulary");
      for (int32_t t : grp.targets[r]) {
        check(t < V, "SharedPrefixEvaluator: target ", t, " outside the vocabulary");
        head_rows += t >= 0 ? 1 : 0;
      }
      L = std::max(L, static_cast<int64_t>(in.size()));
    }
    rows_offset_[g] = n;
    row_length_[g] = L;
    const int64_t R = static_cast<int64_t>(grp.inputs.size());
    n += R * L;
    kv_rows = std::max(kv_rows, R * (P + L));
  }
  ensure_capacity(n, kv_rows, head_rows);
  positions_ = n;

  std::vector<int32_t> host_tokens(static_cast<size_t>(n), 0);  // padding: token 0, never a real position's input
  for (size_t g = 0; g < G; ++g) {
    std::copy(groups[g].prefix.begin(), groups[g].prefix.end(), host_tokens.begin() + prefix_offset_[g]);
    for (size_t r = 0; r < groups[g].inputs.size(); ++r)
      std::copy(groups[g].inputs[r].begin(), groups[g].inputs[r].end(),
                host_tokens.begin() + rows_offset_[g] + static_cast<int64_t>(r) * row_length_[g]);
  }

  Backend& be = model_.backend();
  const Tensor tokens = part(tokens_, 0, n, {n}), x = part(x_, 0, n, {n, C}), ln = part(ln_, 0, n, {n, C});
  be.upload(tokens, host_tokens.data(), DType::i32);
  model_.refresh_compute_weights();  // the matmul copies of the weights, when the backend wants them
  // x = rmsnorm(wte[idx])
  const Tensor embedded = part(embedded_, 0, n, {n, C});
  be.embedding_forward(embedded, tokens, model_.wte_->value);
  be.rmsnorm_forward(x, part(rstd_, 0, n, {n}), embedded, kNormEps);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (c.has_attention(l)) attention_layer(l, groups);
    // x += W2 relu(W1 rmsnorm(x))^2
    const GPT::LayerParams& p = model_.layers_[static_cast<size_t>(l)];
    be.rmsnorm_forward(ln, part(rstd_, 0, n, {n}), x, kNormEps);
    be.gemm(ln, model_.mm(p.c_fc), part(fc_, 0, n, {n, F}), false, true);
    be.relu2_forward(part(act_, 0, n, {n, F}), part(fc_, 0, n, {n, F}));
    be.gemm(part(act_, 0, n, {n, F}), model_.mm(p.mlp_proj), x, false, true, 1.0, 1.0);
  }
  be.rmsnorm_forward(ln, part(rstd_, 0, n, {n}), x, kNormEps);  // the final norm: ln_ is xf now

  // The head only where a loss is wanted: gather those rows of xf (runs of consecutive positions).
  std::vector<int32_t> host_targets;
  host_targets.reserve(static_cast<size_t>(head_rows));
  for (size_t g = 0; g < G; ++g)
    for (size_t r = 0; r < groups[g].inputs.size(); ++r) {
      const auto& tg = groups[g].targets[r];
      const int64_t row = rows_offset_[g] + static_cast<int64_t>(r) * row_length_[g];
      for (size_t i = 0; i < tg.size();) {
        if (tg[i] < 0) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j < tg.size() && tg[j] >= 0) host_targets.push_back(tg[j++]);
        const int64_t m = static_cast<int64_t>(host_targets.size()), len = static_cast<int64_t>(j - i);
        be.copy(part(gathered_, m - len, m, {len, C}),
                part(ln_, row + static_cast<int64_t>(i), row + static_cast<int64_t>(j), {len, C}));
        i = j;
      }
    }
  const int64_t M = head_rows;
  std::vector<float> host_losses(static_cast<size_t>(M));
  std::vector<int32_t> host_argmax(static_cast<size_t>(M));
  if (M > 0) {
    const Tensor logits = part(logits_, 0, M, {M, V}), targets = part(head_targets_, 0, M, {M});
    be.upload(targets, host_targets.data(), DType::i32);
    be.gemm(part(gathered_, 0, M, {M, C}), model_.head_weight(), logits, false, true);
    be.softcap_cross_entropy_forward(part(losses_, 0, M, {M}), part(argmax_, 0, M, {M}), logits, targets, c.softcap);
    be.download(host_losses.data(), DType::f32, part(losses_, 0, M, {M}));
    be.download(host_argmax.data(), DType::i32, part(argmax_, 0, M, {M}));
  }
  size_t m = 0;
  for (size_t g = 0; g < G; ++g) {
    out[g].resize(groups[g].inputs.size());
    for (size_t r = 0; r < groups[g].inputs.size(); ++r) {
      const auto& tg = groups[g].targets[r];
      SharedPrefixRowScores& s = out[g][r];
      s.loss.assign(tg.size(), std::numeric_limits<float>::quiet_NaN());
      s.argmax.assign(tg.size(), -1);
      for (size_t i = 0; i < tg.size(); ++i)
        if (tg[i] >= 0) {
          s.loss[i] = host_losses[m];
          s.argmax[i] = host_argmax[m++];
        }
    }
  }
}

}  // namespace ct
