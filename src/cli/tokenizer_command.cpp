// clocktrain tokenizer train | encode | decode | info  (docs/tokenizer.md)
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "data/corpus_documents.h"
#include "data/corpus_reader.h"
#include "text/bpe_trainer.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"
#include "util/clock.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/files.h"
#include "util/progress.h"
#include "util/threads.h"

namespace ct::cli {

namespace {

// Bytes for a terminal: valid UTF-8 as is, control characters and invalid bytes as escapes.
std::string printable(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    // A byte >= 0x80 that is one "code point" alone is invalid UTF-8 (see pretokenizer.h).
    const size_t length = b < 0x80 ? 1 : prefix_of_code_points(bytes.substr(i), 1).size();
    if (b == '\n') out += "\\n";
    else if (b == '\t') out += "\\t";
    else if (b == '\\') out += "\\\\";
    else if (b == '"') out += "\\\"";
    else if (b < 0x20 || b == 0x7f || (b >= 0x80 && length == 1)) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", b);
      out += buf;
    } else {
      out.append(bytes.substr(i, length));
    }
    i += length;
  }
  return out;
}

struct TrainArgs {
  std::string data, out;
  std::string text_column = "text";
  int32_t vocab_size = 8192;
  int64_t max_chars = 0, doc_cap = 0;
  int threads = 0;
  std::vector<std::string> specials;
};

void run_train(const TrainArgs& args) {
  const DataLayout layout{resolve_data_dir(args.data)};
  const auto files = list_corpus_files(layout.corpus());
  BpeTrainerOptions options;
  options.vocab_size = args.vocab_size;
  options.max_chars = args.max_chars;
  options.doc_cap = args.doc_cap;
  options.threads = args.threads;
  if (!args.specials.empty()) {
    options.special_tokens = {"<|bos|>"};
    for (const auto& s : args.specials)
      if (s != "<|bos|>") options.special_tokens.push_back(s);
  }
  Stopwatch total;
  BpeTrainer trainer(options);
  ProgressLine progress;
  Stopwatch reading;
  read_corpus_documents(files, args.text_column, args.threads > 0 ? args.threads : available_cores(),
                        [&](std::string_view text) {
                          const bool more = trainer.add_document(text);
                          const auto& st = trainer.stats();
                          progress.update(str("tokenizer: read ", st.documents, " documents, ", st.chars / 1000000, "M chars"));
                          return more;
                        });
  const double read_seconds = reading.seconds();
  Tokenizer tokenizer = trainer.train([&](int32_t done, int32_t total_merges) {
    progress.update(str("tokenizer: merge ", done, "/", total_merges), done == total_merges);
  });
  progress.finish();
  tokenizer.save(args.out);
  const auto& st = trainer.stats();
  std::printf("documents      %lld (%lld chars, %lld bytes) from %s\n", (long long)st.documents,
              (long long)st.chars, (long long)st.bytes, layout.corpus().c_str());
  std::printf("chunks         %lld (%lld distinct)\n", (long long)st.chunks, (long long)st.unique_chunks);
  std::printf("merges         %d (%d merges reused an existing token)\n", st.merges, st.reused_tokens);
  std::printf("vocab size     %d (%zu special tokens)\n", tokenizer.vocab_size(), options.special_tokens.size());
  std::printf("time           %.2f s: reading %.2f s, counting %.2f s (alongside the reading) + %.2f s, merging %.2f s\n",
              total.seconds(), read_seconds, st.count_seconds, st.wait_seconds, st.merge_seconds);
  std::printf("sha256         %s\n", tokenizer.sha256().c_str());
  std::printf("saved          %s\n", args.out.c_str());
}

std::vector<int32_t> parse_ids(const std::vector<std::string>& words) {
  std::vector<int32_t> ids;
  for (const auto& word : words) {
    // Accept "1 2 3", "1,2,3" and "[1, 2, 3]", over lines (encode's output, a file of ids).
    std::string token;
    auto flush = [&] {
      if (token.empty()) return;
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(token, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      check(used == token.size() && v >= 0 && v <= INT32_MAX, "decode: '", token, "' is not a token id");
      ids.push_back(static_cast<int32_t>(v));
      token.clear();
    };
    for (char c : word) {
      if (c == ',' || c == '[' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r') flush();
      else token += c;
    }
    flush();
  }
  return ids;
}

// The bytes of a file, or of standard input for "-" (so that encode and decode can sit in a pipe).
std::string read_input(const std::string& file) {
  if (file != "-") return read_file(file);
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), stdin)) > 0) bytes.append(buffer, n);
  check(!std::ferror(stdin), "standard input (--file -): read failed");
  return bytes;
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "Train, inspect and use the byte-level BPE tokenizer");
  cmd->require_subcommand(1);

  auto args = std::make_shared<TrainArgs>();
  auto* train = cmd->add_subcommand("train", "Train a tokenizer on the training corpus (DATA/corpus/*.jsonl.zst, *.jsonl, *.jsonl.gz, *.txt, *.parquet)");
  train->add_option("--data", args->data, "Data folder (default: $CLOCKTRAIN_DATA or ../shared/data)");
  train->add_option("--text-column", args->text_column, "The text column of Parquet corpus files")
      ->capture_default_str();
  train->add_option("--out", args->out, "Folder to write tokenizer.tiktoken and tokenizer_clocktrain.json into")->required();
  train->add_option("--vocab-size", args->vocab_size, "Vocabulary size, special tokens included")
      ->check(integer_in(1, std::numeric_limits<int32_t>::max()))
      ->capture_default_str();
  train->add_option("--max-chars", args->max_chars, "Stop after this many characters in all (0: the whole corpus)")
      ->check(integer_in(0))
      ->capture_default_str();
  train->add_option("--doc-cap", args->doc_cap, "Keep at most this many characters of each document (0: no cap)")
      ->check(integer_in(0))
      ->capture_default_str();
  train->add_option("--threads", args->threads, "Threads for pre-tokenizing and counting (0: all cores)")
      ->check(thread_count_option())
      ->capture_default_str();
  train->add_option("--special", args->specials,
                    "Special tokens after <|bos|> (repeatable; <|bos|> is always first)");
  train->callback([args] { run_train(*args); });

  auto dir = std::make_shared<std::string>();
  auto text = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>();
  auto bos = std::make_shared<bool>(false);
  auto* encode =
      cmd->add_subcommand("encode", "Print the token ids of a text (argument, --file F, or --file - for stdin)");
  encode->add_option("--tokenizer", *dir, "Tokenizer folder")->required();
  encode->add_option("text", *text, "Text to encode");
  encode->add_option("--file", *file, "Encode this file's bytes instead (- reads standard input)");
  encode->add_flag("--bos", *bos, "Begin with <|bos|>, as every training document does");
  encode->callback([dir, text, file, bos] {
    check(text->empty() != file->empty(), "tokenizer encode: give either TEXT or --file F");
    const Tokenizer tokenizer = Tokenizer::load(*dir);
    std::vector<int32_t> ids;
    if (*bos) ids.push_back(tokenizer.bos_id());
    tokenizer.encode_append(file->empty() ? *text : read_input(*file), ids);
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
    std::printf("%s\n", line.c_str());
  });

  auto id_words = std::make_shared<std::vector<std::string>>();
  auto decode_dir = std::make_shared<std::string>();
  auto id_file = std::make_shared<std::string>();
  auto* decode = cmd->add_subcommand(
      "decode", "Write the bytes of token ids exactly, nothing added (ids as arguments, --file F, - for stdin)");
  decode->add_option("--tokenizer", *decode_dir, "Tokenizer folder")->required();
  decode->add_option("ids", *id_words, "Token ids (space or comma separated)");
  decode->add_option("--file", *id_file,
                     "Read the ids from this file instead, as encode prints them (- reads standard input)");
  decode->callback([decode_dir, id_words, id_file] {
    check(id_words->empty() != id_file->empty(), "tokenizer decode: give either IDS or --file F");
    const Tokenizer tokenizer = Tokenizer::load(*decode_dir);
    const std::string text =
        tokenizer.decode(parse_ids(id_file->empty() ? *id_words : std::vector<std::string>{read_input(*id_file)}));
    check(std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0,
          "tokenizer decode: writing to standard output failed");
  });

  auto info_dir = std::make_shared<std::string>();
  auto* info = cmd->add_subcommand("info", "Describe a tokenizer: vocabulary, special tokens, SHA-256, merges");
  info->add_option("--tokenizer", *info_dir, "Tokenizer folder")->required();
  info->callback([info_dir] {
    const Tokenizer tokenizer = Tokenizer::load(*info_dir);
    const int32_t vocab = tokenizer.vocab_size();
    const auto sizes = tokenizer.token_bytes();
    int32_t specials = 0;
    for (int32_t id = 0; id < vocab; ++id) specials += sizes[id] == 0;
    const int32_t ranks = vocab - specials;
    std::printf("folder          %s\n", info_dir->c_str());
    std::printf("vocab size      %d (256 bytes + %d merges + %d special tokens)\n", vocab, ranks - 256, specials);
    std::printf("pattern         %s\n", std::string(kSplitPattern).c_str());
    std::printf("sha256          %s\n", tokenizer.sha256().c_str());
    for (int32_t id = ranks; id < vocab; ++id) std::printf("special         %d %s\n", id, tokenizer.decode({id}).c_str());
    int64_t total_bytes = 0;
    int32_t longest = 0;
    for (int32_t id = 256; id < ranks; ++id) {
      total_bytes += sizes[id];
      if (sizes[id] > sizes[longest]) longest = id;
    }
    if (ranks > 256)
      std::printf("merged tokens   %.2f bytes on average, longest %d: \"%s\"\n", double(total_bytes) / (ranks - 256),
                  longest, printable(tokenizer.token_bytes_of(longest)).c_str());
    std::printf("first merges\n");
    for (int32_t id = 256; id < std::min(ranks, 266); ++id)
      std::printf("  %5d \"%s\"\n", id, printable(tokenizer.token_bytes_of(id)).c_str());
    if (ranks > 266) {
      std::printf("last merges\n");
      for (int32_t id = std::max(266, ranks - 5); id < ranks; ++id)
        std::printf("  %5d \"%s\"\n", id, printable(tokenizer.token_bytes_of(id)).c_str());
    }
  });
}

}  // namespace ct::cli
