#include "eval/core_prompts.h"

#include <numeric>

#include "util/error.h"
#include "util/python_random.h"
#include "util/python_text.h"

namespace ct {

std::vector<size_t> core_fewshot_indices(size_t n, size_t idx, int k) {
  if (k <= 0) return {};
  check(static_cast<size_t>(k) < n, "few-shot selection: ", k, " shots need more than ", k, " rows, but only ", n,
        " are kept (raise --max-per-task)");
  std::vector<size_t> available;
  available.reserve(n - 1);
  for (size_t i = 0; i < n; ++i)
    if (i != idx) available.push_back(i);
  return PythonRandom(static_cast<int64_t>(1234 + idx)).sample(available, static_cast<size_t>(k));
}

namespace {

// The rendered few-shot blocks, each followed by a blank line.
std::string render_shots(CoreTaskType type, const std::string& d, const std::vector<const CoreRow*>& shots) {
  std::string out;
  for (const CoreRow* shot : shots) {
    switch (type) {
      case CoreTaskType::kMultipleChoice:
        out += shot->query;
        out += d;
        out += shot->choices.at(shot->gold);
        break;
      case CoreTaskType::kSchema:
        out += shot->context_options.at(shot->gold);
        out += d;
        out += shot->continuation;
        break;
      case CoreTaskType::kLanguageModeling:
        out += python_strip(shot->context);
        out += d;
        out += shot->continuation;
        break;
    }
    out += "\n\n";
  }
  return out;
}

}  // namespace

std::vector<std::string> render_core_prompts(CoreTaskType type, const std::string& d, const CoreRow& item,
                                             const std::vector<const CoreRow*>& shots) {
  const std::string prefix = render_shots(type, d, shots);
  std::vector<std::string> prompts;
  switch (type) {
    case CoreTaskType::kMultipleChoice:
      for (const auto& choice : item.choices) prompts.push_back(prefix + item.query + d + choice);
      break;
    case CoreTaskType::kSchema:
      for (const auto& option : item.context_options) prompts.push_back(prefix + option + d + item.continuation);
      break;
    case CoreTaskType::kLanguageModeling: {
      std::string without = prefix;
      without += python_strip(item.context);
      without += d;
      // Only the prompt without the continuation is stripped as a whole (a delimiter's trailing
      // space would otherwise merge into the continuation's first token).
      prompts.push_back(std::string(python_strip(without)));
      prompts.push_back(without + item.continuation);
      break;
    }
  }
  return prompts;
}

}  // namespace ct
