#include "lab/decision_rule.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "util/error.h"

namespace ct::lab {

namespace {

// A hand-written recursive-descent reader over the rule text; `position` is a byte offset.
class RuleReader {
 public:
  explicit RuleReader(std::string_view text) : text_(text) {}

  void skip_spaces() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }
  bool at_end() {
    skip_spaces();
    return position_ >= text_.size();
  }
  [[noreturn]] void error(const std::string& expected) {
    fail("decision rule '", text_, "': at column ", position_ + 1, ": expected ", expected,
         " (form: accept if mean(B) - mean(A) < -0.005 at 95%)");
  }
  // Case-insensitive keyword followed by a non-identifier character.
  bool accept_keyword(std::string_view word) {
    skip_spaces();
    if (text_.size() - position_ < word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(text_[position_ + i])) != word[i]) return false;
    size_t end = position_ + word.size();
    if (end < text_.size() && is_name_char(text_[end])) return false;
    position_ = end;
    return true;
  }
  void expect_keyword(std::string_view word) {
    if (!accept_keyword(word)) error(std::string("'") + std::string(word) + "'");
  }
  bool accept_symbol(std::string_view symbol) {
    skip_spaces();
    if (text_.substr(position_, symbol.size()) != symbol) return false;
    position_ += symbol.size();
    return true;
  }
  void expect_symbol(std::string_view symbol) {
    if (!accept_symbol(symbol)) error(std::string("'") + std::string(symbol) + "'");
  }
  std::string name(const std::string& what) {
    skip_spaces();
    size_t start = position_;
    while (position_ < text_.size() && is_name_char(text_[position_])) ++position_;
    if (position_ == start) error(what);
    return std::string(text_.substr(start, position_ - start));
  }
  double number() {
    skip_spaces();
    std::string rest(text_.substr(position_));
    char* end = nullptr;
    double value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str() || !std::isfinite(value)) error("a number");
    position_ += static_cast<size_t>(end - rest.c_str());
    return value;
  }

 private:
  static bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  std::string_view text_;
  size_t position_ = 0;
};

struct MeanTerm {
  std::string arm;
  std::optional<std::string> metric;
};

MeanTerm read_mean(RuleReader& reader) {
  reader.expect_keyword("mean");
  reader.expect_symbol("(");
  MeanTerm term;
  term.arm = reader.name("an arm name");
  if (reader.accept_symbol(".")) term.metric = reader.name("a metric name after '.'");
  reader.expect_symbol(")");
  return term;
}

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

}  // namespace

bool DecisionRule::satisfied_by(double effect) const {
  switch (comparison) {
    case Comparison::less: return effect < threshold;
    case Comparison::less_equal: return effect <= threshold;
    case Comparison::greater: return effect > threshold;
    case Comparison::greater_equal: return effect >= threshold;
  }
  return false;
}

std::string DecisionRule::comparison_text() const {
  switch (comparison) {
    case Comparison::less: return "<";
    case Comparison::less_equal: return "<=";
    case Comparison::greater: return ">";
    case Comparison::greater_equal: return ">=";
  }
  return "?";
}

std::string DecisionRule::canonical(std::optional<double> confidence_fallback) const {
  std::string out = "accept if mean(" + treatment_arm + "." + metric + ") - mean(" + control_arm + "." + metric +
                    ") " + comparison_text() + " " + format_number(threshold);
  auto c = confidence ? confidence : confidence_fallback;
  if (c) out += " at " + format_number(*c * 100.0) + "%";
  return out;
}

Json DecisionRule::to_json() const {
  Json j{{"metric", metric},
         {"treatment_arm", treatment_arm},
         {"control_arm", control_arm},
         {"comparison", comparison_text()},
         {"threshold", threshold}};
  j["confidence"] = confidence ? Json(*confidence) : Json(nullptr);
  return j;
}

DecisionRule parse_decision_rule(std::string_view text) {
  RuleReader reader(text);
  DecisionRule rule;
  rule.text = std::string(text);
  reader.expect_keyword("accept");
  reader.expect_keyword("if");
  MeanTerm first = read_mean(reader);
  reader.expect_symbol("-");
  MeanTerm second = read_mean(reader);
  if (first.metric && second.metric && *first.metric != *second.metric)
    fail("decision rule '", text, "': both means must name the same metric, got '", *first.metric, "' and '",
         *second.metric, "'");
  if (first.metric) rule.metric = *first.metric;
  else if (second.metric) rule.metric = *second.metric;
  check(first.arm != second.arm, "decision rule '", text, "': compares arm '", first.arm, "' with itself");
  rule.treatment_arm = first.arm;
  rule.control_arm = second.arm;
  if (reader.accept_symbol("<=")) rule.comparison = Comparison::less_equal;
  else if (reader.accept_symbol(">=")) rule.comparison = Comparison::greater_equal;
  else if (reader.accept_symbol("<")) rule.comparison = Comparison::less;
  else if (reader.accept_symbol(">")) rule.comparison = Comparison::greater;
  else reader.error("one of < <= > >=");
  rule.threshold = reader.number();
  if (reader.accept_keyword("at")) {
    double percent = reader.number();
    reader.expect_symbol("%");
    check(percent > 0 && percent < 100, "decision rule '", text, "': confidence must be between 0% and 100%, got ",
          percent, "%");
    rule.confidence = percent / 100.0;
  }
  if (!reader.at_end()) reader.error("the end of the rule");
  return rule;
}

}  // namespace ct::lab
