// The lab's decision-rule language (lab/decision_rule.h), read from the command line and from the
// ledger: an accepted rule's canonical text must parse back to the same rule.
#include "fuzz_support.h"
#include "lab/decision_rule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::lab::DecisionRule rule = ct::lab::parse_decision_rule(ct::fuzz::as_text(data, size));
    const std::string canonical = rule.canonical();
    const ct::lab::DecisionRule again = ct::lab::parse_decision_rule(canonical);
    ct::fuzz::fuzz_require(again.canonical() == canonical, "canonical text parses back to itself");
    (void)rule.to_json();
  });
  return 0;
}
