// The shared-prefix evaluation pass (shared_prefix_eval.h): GPT::trunk_forward over a flat stream of
// prefixes and continuation rows, with attention placed per group (PrefixGroups). Shapes: n
// positions in the pass, C = n_embd, H / Hkv heads of D = head_dim, V = vocab_size; group g has P_g
// prefix positions at prefix_offset_[g] and R_g rows of L_g = row_length_[g] positions at
// rows_offset_[g].
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

// Every group's prefix attends to itself (positions 0..P_g-1); a continuation row attends to
// [its group's prefix keys, its own keys] with its queries at positions P_g .. P_g + L_g - 1.
class SharedPrefixEvaluator::PrefixGroups final : public AttentionPositions {
 public:
  PrefixGroups(SharedPrefixEvaluator& pass, const std::vector<SharedPrefixGroup>& groups)
      : pass_(pass), groups_(groups) {}
  void attend(Backend& be, const LayerTensors& t, int64_t, const Tensor& cos, const Tensor& sin,
              double scale) override {
    const int64_t D = cos.shape[1] * 2, H = t.q.shape[1] / D, Hkv = t.k.shape[1] / D, kv_width = Hkv * D;
    // Positions [begin, end) of the flat stream: of a [n, width] tensor, seen with `shape`, and of a
    // per-head statistic [n * heads].
    auto at = [](const Tensor& x, int64_t begin, int64_t end, Shape shape) {
      return x.rows(begin, end).reshaped(std::move(shape));
    };
    auto stats = [](const Tensor& x, int64_t heads, int64_t begin, int64_t end) {
      return x.rows(begin * heads, end * heads);
    };
    for (size_t g = 0; g < groups_.size(); ++g) {
      const int64_t P = static_cast<int64_t>(groups_[g].prefix.size()), po = pass_.prefix_offset_[g];
      const int64_t R = static_cast<int64_t>(groups_[g].inputs.size()), L = pass_.row_length_[g];
      const int64_t ro = pass_.rows_offset_[g];
      if (P > 0) {
        const Tensor q = at(t.q, po, po + P, {1, P, H, D}), k = at(t.k, po, po + P, {1, P, Hkv, D});
        be.rope_qknorm_forward(q, stats(t.rstd_q, H, po, po + P), at(t.q_raw, po, po + P, {1, P, H, D}), cos, sin, 0,
                               kNormEps);
        be.rope_qknorm_forward(k, stats(t.rstd_k, Hkv, po, po + P), at(t.k_raw, po, po + P, {1, P, Hkv, D}), cos,
                               sin, 0, kNormEps);
        be.attention_forward(at(t.att, po, po + P, {1, P, H, D}), stats(t.lse, H, po, po + P).reshaped({1, H, P}), q,
                             k, at(t.v, po, po + P, {1, P, Hkv, D}), scale);
      }
      const int64_t end = ro + R * L, Tk = P + L;
      const Tensor q = at(t.q, ro, end, {R, L, H, D});
      be.rope_qknorm_forward(q, stats(t.rstd_q, H, ro, end), at(t.q_raw, ro, end, {R, L, H, D}), cos, sin, P,
                             kNormEps);
      be.rope_qknorm_forward(at(t.k, ro, end, {R, L, Hkv, D}), stats(t.rstd_k, Hkv, ro, end),
                             at(t.k_raw, ro, end, {R, L, Hkv, D}), cos, sin, P, kNormEps);
      // Each row's keys and values: the prefix's, then the row's own (contiguous, as attention wants).
      const Buffer &keys = pass_.keys_, &values = pass_.values_;
      for (int64_t r = 0; r < R; ++r) {
        if (P > 0) {
          be.copy(part(keys, r * Tk, r * Tk + P, {P, kv_width}), at(t.k, po, po + P, {P, kv_width}));
          be.copy(part(values, r * Tk, r * Tk + P, {P, kv_width}), at(t.v, po, po + P, {P, kv_width}));
        }
        const int64_t row = ro + r * L;
        be.copy(part(keys, r * Tk + P, (r + 1) * Tk, {L, kv_width}), at(t.k, row, row + L, {L, kv_width}));
        be.copy(part(values, r * Tk + P, (r + 1) * Tk, {L, kv_width}), at(t.v, row, row + L, {L, kv_width}));
      }
      be.attention_forward(at(t.att, ro, end, {R, L, H, D}), stats(t.lse, H, ro, end).reshaped({R, H, L}), q,
                           part(keys, 0, R * Tk, {R, Tk, Hkv, D}), part(values, 0, R * Tk, {R, Tk, Hkv, D}), scale);
    }
  }

 private:
  SharedPrefixEvaluator& pass_;
  const std::vector<SharedPrefixGroup>& groups_;
};

SharedPrefixEvaluator::SharedPrefixEvaluator(GPT& model) : model_(model) {}
SharedPrefixEvaluator::~SharedPrefixEvaluator() = default;

int64_t SharedPrefixEvaluator::positions(const SharedPrefixGroup& group) {
  size_t longest = 0;
  for (const auto& row : group.inputs) longest = std::max(longest, row.size());
  return static_cast<int64_t>(group.prefix.size() + group.inputs.size() * longest);
}

void SharedPrefixEvaluator::ensure_capacity(int64_t positions, int64_t kv_rows, int64_t head_rows) {
  const ModelConfig& c = model_.config();
  Backend& be = model_.backend();
  // dtypes as in Activations::ensure: what feeds a matmul in the matmul dtype (bf16 with a bf16
  // backend), the logits and losses in the compute dtype.
  const DType dt = model_.dtype(), mm = model_.matmul_dtype();
  const int64_t C = c.n_embd, V = c.vocab_size, kv_width = c.n_kv_head * c.head_dim();
  if (!acts_) acts_ = std::make_unique<Activations>();
  if (positions > acts_->capacity)
    acts_->ensure(be, c, dt, mm, dt, rounded_capacity(positions), /*per_layer=*/false, /*backward=*/false,
                  /*head=*/false);
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

void SharedPrefixEvaluator::evaluate(const std::vector<SharedPrefixGroup>& groups,
                                     std::vector<std::vector<SharedPrefixRowScores>>& out) {
  const ModelConfig& c = model_.config();
  const int64_t C = c.n_embd, V = c.vocab_size, T = c.sequence_len;
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

  std::vector<int32_t> host_tokens(static_cast<size_t>(n), 0);  // padding: token 0, never a real position's input
  for (size_t g = 0; g < G; ++g) {
    std::copy(groups[g].prefix.begin(), groups[g].prefix.end(), host_tokens.begin() + prefix_offset_[g]);
    for (size_t r = 0; r < groups[g].inputs.size(); ++r)
      std::copy(groups[g].inputs[r].begin(), groups[g].inputs[r].end(),
                host_tokens.begin() + rows_offset_[g] + static_cast<int64_t>(r) * row_length_[g]);
  }

  Backend& be = model_.backend();
  be.upload(view(acts_->tokens, {n}), host_tokens.data(), DType::i32);
  PrefixGroups positions(*this, groups);
  model_.trunk_forward(*acts_, n, positions);
  const Tensor xf = view(acts_->xf, {n, C});

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
        be.copy(part(gathered_, m - len, m, {len, C}), xf.rows(row + static_cast<int64_t>(i), row + static_cast<int64_t>(j)));
        i = j;
      }
    }
  const int64_t M = head_rows;
  std::vector<float> host_losses(static_cast<size_t>(M));
  std::vector<int32_t> host_argmax(static_cast<size_t>(M));
  if (M > 0) {
    const Tensor logits = part(logits_, 0, M, {M, V}), targets = part(head_targets_, 0, M, {M});
    be.upload(targets, host_targets.data(), DType::i32);
    model_.head_forward(part(gathered_, 0, M, {M, C}), logits);
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
