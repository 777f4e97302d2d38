#include "eval/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace ct {

int32_t pick_next_token(const std::vector<float>& logits, double temperature, int64_t top_k, PythonRandom& rng) {
  check(!logits.empty(), "sampling: empty logits");
  check(temperature >= 0, "sampling: temperature must be >= 0, got ", temperature);
  // A NaN compares false with everything: it would be picked, or skipped, by accident.
  for (size_t id = 0; id < logits.size(); ++id)
    check(std::isfinite(logits[id]), "sampling: the model's logit for token ", id, " is ", logits[id],
          ": the model's outputs are not finite");
  if (temperature == 0) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t keep = ids.size();
  if (top_k > 0 && static_cast<size_t>(top_k) < ids.size()) {
    keep = static_cast<size_t>(top_k);
    std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), by_logit);
  } else {
    std::sort(ids.begin(), ids.end(), by_logit);
  }
  // softmax over the kept ids, largest first, in float64.
  const double top = logits[ids[0]];
  std::vector<double> weights(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    weights[i] = std::exp((static_cast<double>(logits[ids[i]]) - top) / temperature);
    total += weights[i];
  }
  const double u = rng.random() * total;
  double cumulative = 0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += weights[i];
    if (cumulative > u) return ids[i];
  }
  return ids[keep - 1];  // u within rounding of the total
}

std::vector<int32_t> sample_tokens(NextTokenModel& model, std::vector<int32_t> prompt, const SampleOptions& options,
                                   const std::function<void(int32_t)>& on_token) {
  check(!prompt.empty(), "sampling: the prompt has no tokens");
  const int64_t context = model.context_length();
  check(context >= 2, "sampling: the model's context must hold at least 2 tokens");
  if (static_cast<int64_t>(prompt.size()) >= context) prompt.erase(prompt.begin(), prompt.end() - (context - 1));
  PythonRandom rng(options.seed);
  model.reset();
  std::vector<float> logits;
  model.append(prompt, logits);
  int64_t seen = static_cast<int64_t>(prompt.size());
  std::vector<int32_t> out;
  while (static_cast<int64_t>(out.size()) < options.max_tokens) {
    const int32_t next = pick_next_token(logits, options.temperature, options.top_k, rng);
    out.push_back(next);
    if (on_token) on_token(next);
    if (next == options.stop_token || seen >= context) break;
    model.append({next}, logits);
    ++seen;
  }
  return out;
}

}  // namespace ct
