#include "eval/checkpoint_eval.h"

#include "data/corpus_reader.h"
#include "data/text_encoder.h"
#include "eval/gpt_adapters.h"
#include "model/checkpoint.h"
#include "util/error.h"
#include "util/folder_checksums.h"

namespace ct {

EvalCheckpoint load_eval_checkpoint(Backend& backend, const std::filesystem::path& dir, ReadGuard* guard) {
  check(std::filesystem::is_directory(dir), dir.string(), ": not a checkpoint folder");
  if (guard) {
    if (std::filesystem::exists(dir / kChecksumsFile)) guard->admit(dir / kChecksumsFile);
    for (const std::filesystem::path& file : {dir / kTokenizerTiktokenFile, tokenizer_json_path(dir), dir / kModelConfigFile,
                                 dir / kModelWeightsFile})
      guard->admit(file);
  }
  EvalCheckpoint c;
  c.dir = dir;
  for (const std::filesystem::path& file : {dir / kTokenizerTiktokenFile, tokenizer_json_path(dir)}) verify_file_checksum(file);
  c.tokenizer = Tokenizer::load(dir);
  c.model = load_model(backend, dir, DType::f32, &c.weights_sha256);
  check(c.model->config().vocab_size == c.tokenizer.vocab_size(), (dir / kModelConfigFile).string(),
        ": field 'vocab_size' is ", c.model->config().vocab_size, " but the tokenizer beside it has ",
        c.tokenizer.vocab_size(), " tokens");
  return c;
}

BpbResult evaluate_checkpoint_bpb(EvalCheckpoint& checkpoint, const std::filesystem::path& val_dir,
                                  const BpbOptions& options, int64_t batch_tokens,
                                  ReadGuard* guard) {
  auto encoder = tokenizer_encoder(checkpoint.tokenizer);
  if (guard)
    for (const auto& f : list_corpus_files(val_dir)) guard->admit(f);
  std::vector<std::string> names;
  BpbOptions opt = options;
  const auto stream = tokenize_documents(read_documents(val_dir, &names), *encoder, &opt.document_starts);
  GptSequenceScorer scorer(*checkpoint.model, batch_tokens);
  const int64_t T = opt.sequence_len > 0 ? opt.sequence_len : checkpoint.model->config().sequence_len;
  opt.rows_per_call = std::max<int64_t>(1, batch_tokens / T);
  BpbResult result = evaluate_bpb(stream, checkpoint.tokenizer.token_bytes(), scorer, opt);
  for (BpbPart& part : result.documents) part.name = names[part.document];
  return result;
}

void allow_evaluator_reads(ReadGuard& guard, const std::vector<std::filesystem::path>& roots) {
  for (const auto& root : roots) guard.allow(root);
}

OrderedJson bpb_result_json(const BpbResult& r) {
  OrderedJson j;
  j["val_bpb"] = r.bpb;
  j["nats"] = r.nats;
  j["bytes"] = r.bytes;
  j["targets"] = r.targets;
  j["counted_targets"] = r.counted_targets;
  j["rows"] = r.rows;
  j["sequence_len"] = r.sequence_len;
  j["seconds"] = r.seconds;
  // Each document's share (docs/eval.md "val_bpb"): where a score comes from, e.g. one long document unlike
  // the training text.
  OrderedJson documents = OrderedJson::array();
  for (const BpbPart& part : r.documents) {
    OrderedJson d;
    d["name"] = part.name;
    d["bpb"] = part.bpb();
    d["nats"] = part.nats;
    d["bytes"] = part.bytes;
    d["counted_targets"] = part.counted_targets;
    documents.push_back(std::move(d));
  }
  j["documents"] = std::move(documents);
  return j;
}

CoreResult evaluate_checkpoint_core(EvalCheckpoint& checkpoint, const std::filesystem::path& bundle_dir,
                                    const CoreOptions& options) {
  auto encoder = tokenizer_encoder(checkpoint.tokenizer);
  GptSequenceScorer scorer(*checkpoint.model, options.batch_tokens, options.reuse_prefixes);
  return evaluate_core(load_core_bundle(bundle_dir, options.read_guard), *encoder, scorer, options);
}

}  // namespace ct
