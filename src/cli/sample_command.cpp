// clocktrain sample CHECKPOINT --prompt TEXT  (docs/sample.md)
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "cli/model_loading.h"
#include "eval/checkpoint_eval.h"
#include "eval/gpt_adapters.h"
#include "eval/sampling.h"

namespace ct::cli {

namespace {

struct SampleArgs {
  std::string checkpoint, prompt;
  int64_t max_tokens = 64;
  double temperature = 1.0;
  int64_t top_k = 50;
  int64_t seed = 42;
  int samples = 1;
  BackendArgs backend;
};

void run_sample(const SampleArgs& args) {
  auto backend = make_backend(args.backend);
  EvalCheckpoint checkpoint = load_eval_checkpoint(*backend, args.checkpoint);
  const Tokenizer& tok = checkpoint.tokenizer;
  std::vector<int32_t> prompt{tok.bos_id()};
  tok.encode_append(args.prompt, prompt);
  GptNextTokenModel model(*checkpoint.model);
  for (int s = 0; s < args.samples; ++s) {
    if (args.samples > 1) std::printf("%s--- sample %d\n", s ? "\n" : "", s + 1);
    SampleOptions options;
    options.max_tokens = args.max_tokens;
    options.temperature = args.temperature;
    options.top_k = args.top_k;
    options.seed = args.seed + s;
    options.stop_token = tok.bos_id();  // <|bos|> starts a new document: the sample is over
    std::printf("%s", args.prompt.c_str());
    // Print as soon as the bytes so far decode to whole tokens; a UTF-8 character split across
    // tokens comes out when complete (the terminal sees whole bytes either way).
    sample_tokens(model, prompt, options, [&](int32_t token) {
      if (token == tok.bos_id()) return;
      std::string bytes = tok.token_bytes_of(token);
      std::fwrite(bytes.data(), 1, bytes.size(), stdout);
      std::fflush(stdout);
    });
    std::printf("\n");
  }
}

}  // namespace

void add_sample_command(CLI::App& app) {
  static SampleArgs args;
  auto* cmd = app.add_subcommand("sample", "Generate text from a saved checkpoint (docs/sample.md)");
  cmd->add_option("checkpoint", args.checkpoint, "Checkpoint folder (config.json, model.safetensors, tokenizer)")
      ->required();
  cmd->add_option("--prompt", args.prompt, "Text to continue (a <|bos|> is put in front)")->capture_default_str();
  cmd->add_option("--max-tokens", args.max_tokens, "New tokens at most")->check(integer_in(1))->capture_default_str();
  cmd->add_option("--temperature", args.temperature, "0 = greedy")->check(number_above(0, false))->capture_default_str();
  cmd->add_option("--top-k", args.top_k, "Sample among the k most likely tokens (0 = all)")
      ->check(integer_in(0))
      ->capture_default_str();
  cmd->add_option("--seed", args.seed, "Seed of the sampler (the same seed gives the same text)")
      ->check(integer_in(0, kMaxSeed))
      ->capture_default_str();
  cmd->add_option("--samples", args.samples, "How many samples (seeds seed, seed+1, ...)")
      ->check(integer_in(1, 1000000))
      ->capture_default_str();
  add_backend_options(cmd, args.backend);
  cmd->callback([] { run_sample(args); });
}

}  // namespace ct::cli
