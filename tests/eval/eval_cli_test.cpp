// `clocktrain eval bpb|core` and `clocktrain sample` on a tiny checkpoint made here (a random GPT
// with the small test tokenizer beside it), and the comparison with the torch reference when
// tests/python/reference_gpt.py exists.
#include <gmock/gmock.h>

#include <cmath>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "data/data_test_support.h"
#include "eval/checkpoint_eval.h"
#include "eval/gpt_adapters.h"
#include "eval/tiny_checkpoint.h"
#include "model/checkpoint.h"
#include "test_support.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using test::make_tiny_checkpoint;

class EvalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    make_tiny_checkpoint(dir_ / "ckpt");
    test::write_jsonl(dir_ / "data" / "val" / "val_000.jsonl.zst",
                      {{"a", "The quick brown fox jumps over the lazy dog. " + std::string(300, 'x')},
                       {"b", "Caf\xC3\xA9 au lait, s'il vous pla\xC3\xAEt.\n\nSecond paragraph 12345."},
                       {"c", "short"}});
  }
  std::string bin() const { return test::clocktrain_bin(); }
  std::string ckpt() const { return (dir_ / "ckpt").string(); }
  test::TempDir dir_;
};

TEST_F(EvalCli, BpbMatchesTheLibraryAndTheCap) {
  auto r = test::run_command(bin() + " eval bpb " + ckpt() + " --data " + (dir_ / "data").string() +
                             " --backend cpu --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json j = Json::parse(r.output);
  auto backend = make_cpu_backend(BackendOptions{});
  EvalCheckpoint checkpoint = load_eval_checkpoint(*backend, dir_ / "ckpt");
  BpbResult lib = evaluate_checkpoint_bpb(checkpoint, dir_ / "data" / "val", BpbOptions{});
  EXPECT_NEAR(j["val_bpb"].get<double>(), lib.bpb, 1e-6 * lib.bpb);
  EXPECT_EQ(j["bytes"].get<int64_t>(), lib.bytes);
  EXPECT_EQ(j["targets"].get<int64_t>(), lib.targets);
  EXPECT_EQ(j["sequence_len"].get<int64_t>(), 64);
  // What the gate's trusted_evaluation check needs: the weights' hash and every file read.
  EXPECT_EQ(j["checkpoint_sha256"], sha256_file(dir_ / "ckpt" / "model.safetensors"));
  EXPECT_EQ(j["checkpoint_sha256"], checkpoint.weights_sha256);
  const auto files = j["files_read"].get<std::vector<std::string>>();
  ASSERT_EQ(files.size(), 6u);
  EXPECT_EQ(files[0], canonical_for_guard(dir_ / "ckpt" / "SHA256SUMS").string());
  EXPECT_EQ(files[4], canonical_for_guard(dir_ / "ckpt" / "model.safetensors").string());
  EXPECT_EQ(files[5], canonical_for_guard(dir_ / "data" / "val" / "val_000.jsonl.zst").string());
  // A random model is far from a good one: about log2(vocab)/bytes-per-token bits per byte or more.
  EXPECT_GT(lib.bpb, 1.0);
  // Bytes = the UTF-8 bytes of the three documents (BOS targets count nothing).
  const int64_t text_bytes = 45 + 300 + std::string("Caf\xC3\xA9 au lait, s'il vous pla\xC3\xAEt.\n\nSecond paragraph 12345.").size() + 5;
  EXPECT_EQ(lib.bytes, text_bytes);
  // Each document's part, named by its id; the parts add up to the whole.
  ASSERT_EQ(j["documents"].size(), 3u) << j.dump();
  int64_t part_bytes = 0;
  for (size_t d = 0; d < 3; ++d) {
    EXPECT_EQ(j["documents"][d]["name"], std::string(1, static_cast<char>('a' + d)));
    part_bytes += j["documents"][d]["bytes"].get<int64_t>();
  }
  EXPECT_EQ(part_bytes, j["bytes"].get<int64_t>());
  EXPECT_EQ(j["documents"][2]["bytes"].get<int64_t>(), 5);  // "short"
  auto capped = test::run_command(bin() + " eval bpb " + ckpt() + " --data " + (dir_ / "data").string() +
                                  " --backend cpu --tokens 50 --json");
  ASSERT_EQ(capped.exit_code, 0) << capped.output;
  EXPECT_EQ(Json::parse(capped.output)["targets"].get<int64_t>(), 50);
  auto text = test::run_command(bin() + " eval bpb " + ckpt() + " --data " + (dir_ / "data").string() + " --backend cpu");
  EXPECT_NE(text.output.find("val_bpb "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find(" model GFLOP/s, on "), std::string::npos) << text.output;
  EXPECT_EQ(text.output.find("  document\n"), std::string::npos) << text.output;  // the table only when asked
  auto table = test::run_command(bin() + " eval bpb " + ckpt() + " --data " + (dir_ / "data").string() +
                                 " --backend cpu --per-document");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("share  document\n"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("%  c\n"), std::string::npos) << table.output;
  // Output into a pipe (a log, `clocktrain run`): a progress line per tenth, one row per call here.
  auto logged = test::run_command(bin() + " eval bpb " + ckpt() + " --data " + (dir_ / "data").string() +
                                  " --backend cpu --batch-tokens 64");
  ASSERT_EQ(logged.exit_code, 0) << logged.output;
  const size_t line = logged.output.find("val_bpb: ");
  ASSERT_NE(line, std::string::npos) << logged.output;
  EXPECT_NE(logged.output.find("0% (", line), std::string::npos) << logged.output;
  EXPECT_NE(logged.output.find(" targets, ", line), std::string::npos) << logged.output;
  // --no-progress (what `clocktrain run --no-progress` passes on): the result line alone
  auto quiet = test::run_command(bin() + " eval bpb " + ckpt() + " --data " + (dir_ / "data").string() +
                                 " --backend cpu --batch-tokens 64 --no-progress");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("val_bpb: "), std::string::npos) << quiet.output;
  EXPECT_NE(quiet.output.find("val_bpb "), std::string::npos) << quiet.output;
}

TEST_F(EvalCli, CoreTableJsonAndDump) {
  const std::string bundle = (test::source_dir() / "tests/data/core_small").string();
  auto table = test::run_command(bin() + " eval core " + ckpt() + " --bundle " + bundle + " --backend cpu");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("CORE-8:"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("missing (data file absent): absent_task"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("schema_shots"), std::string::npos) << table.output;
  const auto dump = dir_ / "dump.json";
  auto js = test::run_command(bin() + " eval core " + ckpt() + " --bundle " + bundle +
                              " --backend cpu --tasks mc_answer,lm_default --json --dump-prompts " + dump.string());
  ASSERT_EQ(js.exit_code, 0) << js.output;
  Json j = Json::parse(js.output);
  EXPECT_EQ(j["metric"], "CORE-2");
  EXPECT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["label"], "mc_answer");
  EXPECT_EQ(j["tasks"][0]["shots"], 2);
  EXPECT_TRUE(j["task_subset"].get<bool>());
  const auto files = j["files_read"].get<std::vector<std::string>>();
  ASSERT_EQ(files.size(), 9u);  // SHA256SUMS and 4 checkpoint files, core.yaml, the CSV, 2 task files
  EXPECT_EQ(files[8], canonical_for_guard(bundle + "/eval_data/lm/lm_default.jsonl").string());
  Json d = Json::parse(read_file(dump));
  EXPECT_EQ(d["tasks"][1]["row_records"].size(), 4u);
  EXPECT_EQ(d["tasks"][0]["row_records"][0]["prompts"].size(),
            d["tasks"][0]["row_records"][0]["sequences"].size());
  auto bad = test::run_command(bin() + " eval core " + ckpt() + " --bundle " + bundle + " --backend cpu --tasks nope");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("no task labelled 'nope'"), std::string::npos) << bad.output;
}

TEST_F(EvalCli, SampleIsSeededAndGreedyMatchesTheLibrary) {
  const std::string cmd = bin() + " sample " + ckpt() + " --backend cpu --prompt 'the' --max-tokens 12";
  auto greedy = test::run_command(cmd + " --temperature 0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.output;
  auto backend = make_cpu_backend(BackendOptions{});
  EvalCheckpoint checkpoint = load_eval_checkpoint(*backend, dir_ / "ckpt");
  GptNextTokenModel next(*checkpoint.model);
  SampleOptions opt;
  opt.temperature = 0;
  opt.max_tokens = 12;
  opt.stop_token = checkpoint.tokenizer.bos_id();
  std::vector<int32_t> prompt{checkpoint.tokenizer.bos_id()};
  checkpoint.tokenizer.encode_append("the", prompt);
  std::string expected = "the";
  for (int32_t t : sample_tokens(next, prompt, opt))
    if (t != checkpoint.tokenizer.bos_id()) expected += checkpoint.tokenizer.token_bytes_of(t);
  EXPECT_EQ(greedy.output, expected + "\n");
  auto a = test::run_command(cmd + " --seed 7");
  auto b = test::run_command(cmd + " --seed 7");
  EXPECT_EQ(a.output, b.output);
}

// sample's options are checked before anything is printed: --max-tokens -1 is refused, and
// --temperature -1 fails before the prompt is printed.
TEST_F(EvalCli, SampleRefusesBadOptionsBeforeAnyOutput) {
  const std::string cmd = bin() + " sample " + ckpt() + " --backend cpu --prompt 'PROMPT-TEXT'";
  for (const std::string bad : {" --max-tokens -1", " --max-tokens 0", " --temperature -1", " --temperature nan",
                                 " --top-k -1", " --samples 0"}) {
    auto r = test::run_command(cmd + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(bad.substr(1, bad.find(' ', 1) - 1))) << bad;
    EXPECT_EQ(r.output.find("PROMPT-TEXT"), std::string::npos) << bad << ": " << r.output;
  }
  auto ok = test::run_command(cmd + " --max-tokens 2 --temperature 0");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("PROMPT-TEXT"));
}

TEST_F(EvalCli, BadCheckpoints) {
  auto missing = test::run_command(bin() + " eval bpb " + (dir_ / "nothing").string() + " --backend cpu");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("not a checkpoint folder"), std::string::npos) << missing.output;
  make_tiny_checkpoint(dir_ / "wrong_vocab", 2048);
  auto wrong = test::run_command(bin() + " sample " + (dir_ / "wrong_vocab").string() + " --backend cpu");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.output.find("config.json: field 'vocab_size' is 2048 but the tokenizer beside it has"),
            std::string::npos)
      << wrong.output;
}

// Fail before the work: an --out (or --dump-prompts) that cannot be written is refused before the
// evaluation runs, not after it (the finding: `eval bpb --out` on a read-only folder failed only after
// the whole evaluation).
TEST_F(EvalCli, AnOutThatCannotBeWrittenIsRefusedBeforeEvaluating) {
  write_file_atomic(dir_ / "a-file", "not a folder\n");
  const std::string out = (dir_ / "a-file" / "result.json").string();
  for (const std::string what : {"bpb --out ", "core --out ", "core --dump-prompts "}) {
    auto r = test::run_command(bin() + " eval " + what + out + " " + ckpt() + " --data " + (dir_ / "data").string() +
                               " --backend cpu --threads 1");
    EXPECT_EQ(r.exit_code, 1) << what << r.output;
    EXPECT_NE(r.output.find(out + ": " + (dir_ / "a-file").string() + ": cannot create folder"), std::string::npos)
        << what << r.output;
    EXPECT_EQ(r.output.find("val_bpb"), std::string::npos) << what << r.output;
  }
}

// A changed byte in any file the evaluators read is refused naming the file, by eval and sample
// alike. Each change is one a reader could take for valid data: the sign of the last weight, a
// space of a JSON file turned into a tab, the tiktoken file's last newline into a carriage return.
TEST_F(EvalCli, AChangedByteInACheckpointFileIsRefusedNamingTheFile) {
  const auto offset_of = [&](const std::string& file, const std::string& text) {
    return static_cast<int64_t>(read_file(dir_ / "ckpt" / file).find(text));
  };
  struct Damage {
    std::string file;
    int64_t offset;
    unsigned char mask;
  };
  const std::vector<Damage> damages = {
      {"model.safetensors", -1, 0x80},
      {"config.json", offset_of("config.json", "\n ") + 1, ' ' ^ '\t'},
      {"tokenizer_clocktrain.json", offset_of("tokenizer_clocktrain.json", ": ") + 1, ' ' ^ '\t'},
      {"tokenizer.tiktoken", -1, '\n' ^ '\r'},
  };
  const std::string bundle = (test::source_dir() / "tests/data/core_small").string();
  for (const Damage& d : damages) {
    const fs::path copy = dir_ / ("damaged-" + d.file);
    fs::copy(dir_ / "ckpt", copy);
    test::flip_byte(copy / d.file, d.offset, d.mask);
    const std::vector<std::string> commands = {" eval bpb " + copy.string() + " --data " + (dir_ / "data").string(),
                                               " eval core " + copy.string() + " --bundle " + bundle,
                                               " sample " + copy.string() + " --max-tokens 4"};
    for (const std::string& command : commands) {
      auto r = test::run_command(bin() + command + " --backend cpu");
      EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
      EXPECT_THAT(r.output, AllOf(HasSubstr((copy / d.file).string() + ": SHA-256 "),
                                  HasSubstr("recorded in " + (copy / "SHA256SUMS").string())))
          << command;
    }
  }
  // A checkpoint written before clocktrain recorded SHA256SUMS is read unverified.
  fs::copy(dir_ / "ckpt", dir_ / "unlisted");
  fs::remove(dir_ / "unlisted" / "SHA256SUMS");
  auto r = test::run_command(bin() + " eval bpb " + (dir_ / "unlisted").string() + " --data " +
                             (dir_ / "data").string() + " --backend cpu --no-progress");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A NaN weight written as such (SHA256SUMS agrees) in a row the validation text never reaches (the
// <|end|> token's embedding), which no score may come from: every command that loads the model
// refuses it, naming the tensor and the element.
TEST_F(EvalCli, ANonFiniteWeightIsRefusedNamingTheTensor) {
  const int64_t end_token = test::small_tokenizer().vocab_size() - 1, n_embd = 32;
  make_tiny_checkpoint(dir_ / "nan", 0, [&](GPT& model) {
    test::set_parameter_element(model, "transformer.wte.weight", end_token * n_embd + 7,
                                std::numeric_limits<float>::quiet_NaN());
  });
  const std::string nan = (dir_ / "nan").string();
  const std::string expected = str(nan, "/model.safetensors: tensor 'transformer.wte.weight': element [", end_token,
                                   ", 7] (flat index ", end_token * n_embd + 7, ") is nan");
  const std::vector<std::string> commands = {
      " eval bpb " + nan + " --data " + (dir_ / "data").string(),
      " eval core " + nan + " --bundle " + (test::source_dir() / "tests/data/core_small").string(),
      " sample " + nan + " --max-tokens 4"};
  for (const std::string& command : commands) {
    auto r = test::run_command(bin() + command + " --backend cpu");
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(expected)) << command;
  }
}

TEST_F(EvalCli, CoreDumpMatchesTorchReference) {
  // Against the engine's torch twin of the model (tests/python/reference_gpt.py): the same prompts,
  // tokens and spans, mean losses within float tolerance, and the same verdicts except
  // float-rounding ties.
  const auto ref = test::source_dir() / "tests/python/reference_gpt.py";
  if (!fs::exists(ref)) GTEST_SKIP() << ref << " is not there yet";
  CT_NEED_PYTHON_MODULES("torch yaml jinja2 regex", "python3 lacks torch, yaml, jinja2 or regex");
  const std::string bundle = (test::source_dir() / "tests/data/core_small").string();
  const auto cpp = dir_ / "cpp.json", py = dir_ / "py.json";
  auto c = test::run_command(bin() + " eval core " + ckpt() + " --bundle " + bundle + " --backend cpu --dump-prompts " +
                             cpp.string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const auto pydir = test::source_dir() / "tests/python";
  auto p = test::run_command(test::python() + " " + (pydir / "core_reference.py").string() + " --bundle " + bundle +
                             " --checkpoint " + ckpt() + " --out " + py.string());
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto cmp = test::run_command(test::python() + " " + (pydir / "compare_core_dumps.py").string() + " " + cpp.string() +
                               " " + py.string() + " --loss-tolerance 1e-4 --max-verdict-diffs 1");
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;
}

}  // namespace
}  // namespace ct
