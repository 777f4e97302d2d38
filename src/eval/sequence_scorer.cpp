#include "eval/sequence_scorer.h"

namespace ct {

void SequenceScorer::score_groups(const std::vector<ScoreGroup>& groups,
                                  std::vector<std::vector<SequenceScores>>& out) {
  std::vector<std::vector<int32_t>> flat;
  for (const auto& g : groups)
    for (const auto& s : g.sequences) flat.push_back(s);
  std::vector<SequenceScores> scores;
  score(flat, scores);
  out.assign(groups.size(), {});
  std::size_t next = 0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t s = 0; s < groups[g].sequences.size(); ++s) out[g].push_back(std::move(scores[next++]));
}

}  // namespace ct
