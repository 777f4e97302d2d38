// Parquet corpus files (data/parquet_reader.h): texts read row group by row group against what pyarrow
// wrote; the Apache Parquet project's test files (every common string encoding, page versions,
// compressions, nulls, page CRCs good and bad) read as pyarrow reads them; corrupt files and wrong
// columns are errors naming the file; `data prepare` on Parquet gives the same shards as on the same
// texts in JSONL, and `tokenizer train` the same tokenizer.
//
// Fixtures are written by pyarrow (tests/python/parquet_fixtures.py) from the project's venv
// (scripts/install-pyarrow.sh, which install-deps.sh runs). A build without Parquet support checks only
// that a Parquet input is a clear error; the rest skips, saying so (fails under the test command).
#include <gmock/gmock.h>

#include <map>

#include "data/corpus_reader.h"
#include "data/manifest.h"
#include "data/parquet_reader.h"
#include "data/prepare.h"
#include "util/sha256.h"
#include "data_test_support.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using test::TempDir;

std::string pyarrow_python() {
  return test::env_or("CLOCKTRAIN_PYARROW_PYTHON", (test::source_dir() / "build/pyarrow-venv/bin/python3").string());
}

std::string fixtures_script() { return (test::source_dir() / "tests/python/parquet_fixtures.py").string(); }

// The main build reads Parquet (install-deps.sh build installs pyarrow), so under the test command a
// build without it is a failure.
#define REQUIRE_PARQUET()                                                                      \
  CT_NEED(parquet_supported(), "built without Parquet support (cmake/Parquet.cmake)");        \
  CT_NEED(fs::exists(pyarrow_python()),                                                        \
          "no pyarrow at " + pyarrow_python() + " (scripts/install-pyarrow.sh) to write fixtures")

// Writes `texts` with pyarrow (columns id, text) and returns the path.
fs::path write_parquet(const fs::path& path, const std::vector<std::string>& texts, const std::string& options = "") {
  fs::create_directories(path.parent_path());
  const fs::path docs = path.string() + ".docs.json";
  write_file_atomic(docs, Json(texts).dump());
  auto result = test::run_command(pyarrow_python() + " " + fixtures_script() + " write '" + path.string() + "' '" +
                                  docs.string() + "' " + options);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  fs::remove(docs);
  return path;
}

std::vector<std::string> sample_texts(int n) {
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    std::string text = "document " + std::to_string(i) + ": café naïve 日本語 ";
    for (int k = 0; k < i % 7; ++k) text += "more words\nand a line ";
    if (i % 5 == 3) text += "\"quoted\" \\ back\tslash";
    texts.push_back(i == 4 ? std::string() : text);  // an empty text is a document too
  }
  return texts;
}

std::vector<std::string> read_all(ParquetTextReader& reader) {
  std::vector<std::string> out;
  std::string text;
  while (reader.next(text)) {
    out.push_back(text);
    EXPECT_EQ(reader.row_number(), static_cast<int64_t>(out.size()));
  }
  return out;
}

TEST(Parquet, WithoutSupportAParquetInputIsAClearError) {
  if (parquet_supported()) GTEST_SKIP() << "this build reads Parquet (the other tests cover it)";
  TempDir dir;
  write_file_atomic(dir / "corpus.parquet", "PAR1");
  std::string error = test::error_of([&] { ParquetTextReader reader(dir / "corpus.parquet"); });
  EXPECT_THAT(error, HasSubstr((dir / "corpus.parquet").string()));
  EXPECT_THAT(error, HasSubstr("built without Parquet support"));
  EXPECT_THAT(error, HasSubstr("scripts/install-pyarrow.sh"));
}

TEST(Parquet, ReadsTheTextColumnRowGroupByRowGroup) {
  REQUIRE_PARQUET();
  TempDir dir;
  const auto texts = sample_texts(23);
  // 23 rows in row groups of 5: five row groups, the last one short.
  const fs::path path = write_parquet(dir / "docs.parquet", texts, "--row-group-size 5 --checksum");
  ParquetTextReader reader(path);
  EXPECT_EQ(reader.rows(), 23);
  EXPECT_EQ(read_all(reader), texts);
  EXPECT_GT(reader.file_bytes_consumed(), 0u);

  // Through the corpus reader: documents in order, each naming its file and row.
  CorpusReader corpus({path});
  RawDocument raw;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(corpus.next(raw));
    EXPECT_EQ(raw.where(), path.string() + ": row " + std::to_string(i + 1));
    EXPECT_EQ(parse_document(raw).text, texts[i]);
  }
  EXPECT_FALSE(corpus.next(raw));
}

TEST(Parquet, EveryCompressionReadsTheSameTexts) {
  REQUIRE_PARQUET();
  TempDir dir;
  const auto texts = sample_texts(12);
  for (const char* codec : {"none", "snappy", "gzip", "zstd", "lz4", "brotli"}) {
    SCOPED_TRACE(codec);
    const fs::path path = write_parquet(dir / (std::string(codec) + ".parquet"), texts,
                                        std::string("--row-group-size 4 --compression ") + codec);
    ParquetTextReader reader(path);
    EXPECT_EQ(read_all(reader), texts);
  }
}

// Every string column of ../shared/data/parquet-testing, read as pyarrow reads it (with page CRCs
// checked): the same bytes in the same order, an error at the first null naming the row, and an
// error naming the file where pyarrow refuses the file (a corrupt page CRC).
TEST(Parquet, ApacheTestFilesReadAsPyarrowReadsThem) {
  REQUIRE_PARQUET();
  const fs::path folder = test::data_dir() / "parquet-testing";
  ASSERT_TRUE(fs::is_directory(folder)) << folder;
  TempDir dir;
  auto dump = test::run_command(pyarrow_python() + " " + fixtures_script() + " dump '" + folder.string() + "' '" +
                                (dir / "dump.json").string() + "'");
  ASSERT_EQ(dump.exit_code, 0) << dump.output;
  const Json entries = Json::parse(read_file(dir / "dump.json"));
  int compared = 0, null_errors = 0, refused = 0;
  for (const Json& entry : entries) {
    if (entry["column"].is_null()) continue;
    const fs::path path = folder / entry["file"].get<std::string>();
    const std::string column = entry["column"];
    SCOPED_TRACE(path.string() + " column " + column);
    if (entry.contains("error")) {
      std::string error = test::error_of([&] {
        ParquetTextReader reader(path, column);
        read_all(reader);
      });
      EXPECT_THAT(error, HasSubstr(path.string()));
      EXPECT_THAT(error, HasSubstr("CRC"));
      ++refused;
      continue;
    }
    std::vector<std::string> expected;
    size_t first_null = SIZE_MAX;
    for (const Json& value : entry["values"]) {
      if (value.is_null()) {
        first_null = expected.size();
        break;
      }
      std::string bytes, hex = value;
      for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
      expected.push_back(bytes);
    }
    ParquetTextReader reader(path, column);
    std::vector<std::string> got;
    std::string error = test::error_of([&] { got = read_all(reader); });
    if (first_null == SIZE_MAX) {
      EXPECT_EQ(error, "");
      EXPECT_EQ(got, expected);
      ++compared;
    } else {
      EXPECT_THAT(error, HasSubstr(path.string() + ": row " + std::to_string(first_null + 1) + ": column \"" + column +
                                   "\" is null"));
      ++null_errors;
    }
  }
  // What the README promises is there: plain, dictionary and delta encodings, nulls, a bad CRC.
  EXPECT_GE(compared, 15);
  EXPECT_GE(null_errors, 10);
  EXPECT_GE(refused, 1);
}

TEST(Parquet, CorruptFilesAndWrongColumnsAreErrorsNamingTheFile) {
  REQUIRE_PARQUET();
  TempDir dir;
  const auto texts = sample_texts(40);
  const fs::path good = write_parquet(dir / "good.parquet", texts, "--compression none --checksum");
  const std::string bytes = read_file(good);

  // A truncated footer: the last bytes (the footer length and the "PAR1" magic) cut off.
  write_file_atomic(dir / "truncated.parquet", bytes.substr(0, bytes.size() - 6));
  std::string error = test::error_of([&] { ParquetTextReader reader(dir / "truncated.parquet"); });
  EXPECT_THAT(error, HasSubstr((dir / "truncated.parquet").string() + ": not a readable Parquet file"));

  // A bad page: one byte of a text changed inside the (uncompressed, CRC-carrying) data page.
  std::string bad = bytes;
  size_t at = bad.find("document 17");
  ASSERT_NE(at, std::string::npos);
  bad[at] = 'D';
  write_file_atomic(dir / "bad_page.parquet", bad);
  error = test::error_of([&] {
    ParquetTextReader reader(dir / "bad_page.parquet");
    read_all(reader);
  });
  EXPECT_THAT(error, HasSubstr((dir / "bad_page.parquet").string() + ": row group 0"));
  EXPECT_THAT(error, HasSubstr("CRC"));

  // Not a Parquet file at all.
  write_file_atomic(dir / "text.parquet", "just some text, no magic");
  error = test::error_of([&] { ParquetTextReader reader(dir / "text.parquet"); });
  EXPECT_THAT(error, HasSubstr((dir / "text.parquet").string() + ": not a readable Parquet file"));

  // A column that is not there names the columns that are.
  error = test::error_of([&] { ParquetTextReader reader(good, "body"); });
  EXPECT_THAT(error, HasSubstr(good.string() + ": no column \"body\" (the file's columns: id, text)"));
  // A column that holds no strings.
  error = test::error_of([&] { ParquetTextReader reader(good, "id"); });
  EXPECT_THAT(error, HasSubstr(good.string() + ": column \"id\": expected a string (BYTE_ARRAY) column, got INT64"));
  // A null text.
  auto result = test::run_command(pyarrow_python() + " -c \"import pyarrow as pa, pyarrow.parquet as pq; "
                                  "pq.write_table(pa.table({'text': ['a', None, 'c']}), '" +
                                  (dir / "nulls.parquet").string() + "')\"");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  error = test::error_of([&] {
    ParquetTextReader reader(dir / "nulls.parquet");
    read_all(reader);
  });
  EXPECT_THAT(error, HasSubstr((dir / "nulls.parquet").string() + ": row 2: column \"text\" is null"));
}

// A row group that needs more memory than the reader's budget is an error naming it, whether the
// footer says so (checked before reading) or only a page header claims it (a forged header: a
// 74 KB file whose page declares 128 MiB, refused by the reader's pool instead of allocated).
TEST(Parquet, ARowGroupBeyondTheMemoryBudgetIsAnErrorNotAnAllocation) {
  REQUIRE_PARQUET();
  TempDir dir;
  const fs::path forged = dir / "forged.parquet";
  auto result = test::run_command(pyarrow_python() + " " + fixtures_script() + " write-forged '" + forged.string() + "'");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  ASSERT_LT(fs::file_size(forged), uint64_t{1} << 20);

  const uint64_t budget = uint64_t{64} << 20;
  std::string error = test::error_of([&] {
    ParquetTextReader reader(forged, "text", budget);
    read_all(reader);
  });
  EXPECT_THAT(error, HasSubstr(forged.string() + ": row group 0 (rows from 1): needs more than the reader's " +
                              std::to_string(budget) + "-byte memory budget"));
  EXPECT_THAT(error, HasSubstr("was refused"));
  // Under the default budget the claim is allocated, and the page still does not decompress to it.
  error = test::error_of([&] {
    ParquetTextReader reader(forged);
    read_all(reader);
  });
  EXPECT_THAT(error, HasSubstr(forged.string() + ": row group 0"));

  // An honest file whose row group is larger than the budget: refused from the footer, before reading.
  const fs::path honest = write_parquet(dir / "honest.parquet", sample_texts(400), "--compression zstd");
  error = test::error_of([&] {
    ParquetTextReader reader(honest, "text", 16384);
    read_all(reader);
  });
  EXPECT_THAT(error, HasSubstr(honest.string() + ": row group 0 (rows from 1): column \"text\" declares "));
  EXPECT_THAT(error, HasSubstr("bytes uncompressed, more than the reader's 16384-byte memory budget"));
  ParquetTextReader reader(honest);
  EXPECT_EQ(read_all(reader), sample_texts(400));
  // A budget too small for the footer itself is the same error, at opening.
  error = test::error_of([&] { ParquetTextReader tiny(honest, "text", 64); });
  EXPECT_THAT(error, HasSubstr(honest.string() + ": not a readable Parquet file: needs more than the reader's 64-byte"));
}

// The smallest memory budget (to 1%) under which `path` reads to the end.
uint64_t smallest_budget(const fs::path& path) {
  uint64_t fails = 1024, reads = uint64_t{256} << 20;
  while (reads - fails > reads / 100) {
    const uint64_t mid = fails + (reads - fails) / 2;
    try {
      ParquetTextReader reader(path, "text", mid);
      read_all(reader);
      reads = mid;
    } catch (const Error&) {
      fails = mid;
    }
  }
  return reads;
}

// Memory holds one row group, not every group read so far: a file of two row groups, each the
// whole of a one-group file, reads within (nearly) the same budget as that file.
TEST(Parquet, TheBudgetHoldsOneRowGroupAtATime) {
  REQUIRE_PARQUET();
  TempDir dir;
  const auto texts = sample_texts(2000);
  auto twice = texts;
  twice.insert(twice.end(), texts.begin(), texts.end());
  const fs::path one = write_parquet(dir / "one.parquet", texts, "--row-group-size 2000");
  const fs::path two = write_parquet(dir / "two.parquet", twice, "--row-group-size 2000");
  const uint64_t for_one = smallest_budget(one), for_two = smallest_budget(two);
  EXPECT_LT(static_cast<double>(for_two), 1.1 * static_cast<double>(for_one)) << for_one << " " << for_two;
}

// The same documents as JSONL (data_test_support's writer) and as Parquet, split over the same
// files: `data prepare` writes byte-identical shards.
void write_both(const fs::path& jsonl_root, const fs::path& parquet_root, const std::vector<std::string>& corpus,
                const std::vector<std::string>& val) {
  const size_t half = corpus.size() / 2;
  std::vector<std::pair<std::string, std::string>> a, b, v;
  for (size_t i = 0; i < corpus.size(); ++i) (i < half ? a : b).push_back({std::to_string(i), corpus[i]});
  for (size_t i = 0; i < val.size(); ++i) v.push_back({"v" + std::to_string(i), val[i]});
  test::write_jsonl(jsonl_root / "corpus" / "part_000.jsonl.zst", a);
  test::write_jsonl(jsonl_root / "corpus" / "part_001.jsonl", b);
  test::write_jsonl(jsonl_root / "val" / "val_000.jsonl", v);
  write_parquet(parquet_root / "corpus" / "part_000.parquet",
                std::vector<std::string>(corpus.begin(), corpus.begin() + static_cast<ptrdiff_t>(half)),
                "--row-group-size 7");
  write_parquet(parquet_root / "corpus" / "part_001.parquet",
                std::vector<std::string>(corpus.begin() + static_cast<ptrdiff_t>(half), corpus.end()));
  write_parquet(parquet_root / "val" / "val_000.parquet", val);
}

std::map<std::string, std::string> shard_bytes(const fs::path& out) {
  std::map<std::string, std::string> shards;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() == ".bin") shards[entry.path().filename().string()] = read_file(entry.path());
  }
  return shards;
}

TEST(Parquet, PrepareGivesTheSameShardsAsJsonl) {
  REQUIRE_PARQUET();
  TempDir dir;
  std::vector<std::string> corpus;
  for (int i = 0; i < 60; ++i) {
    std::string text = "Document number " + std::to_string(i) + " talks about rivers, stones and café tables. ";
    for (int k = 0; k < 20 + i % 9; ++k) text += "The quick brown fox jumps over the lazy dog " + std::to_string(k) + ". ";
    corpus.push_back(text);
  }
  std::vector<std::string> val = {"A validation text about hills.", corpus[10]};  // corpus[10] is a val copy
  write_both(dir / "jsonl", dir / "parquet", corpus, val);
  test::ByteEncoder encoder;
  for (int64_t heldout_tokens : {int64_t{0}, int64_t{1000}}) {
    SCOPED_TRACE(heldout_tokens);
    PrepareSettings settings;
    settings.shard_tokens = 4000;
    settings.heldout_tokens = heldout_tokens;
    settings.threads = 2;
    settings.progress = false;
    settings.data_dir = dir / "jsonl";
    settings.out_dir = dir / ("out_jsonl_" + std::to_string(heldout_tokens));
    const auto jsonl = prepare_data(settings, encoder);
    settings.data_dir = dir / "parquet";
    settings.out_dir = dir / ("out_parquet_" + std::to_string(heldout_tokens));
    const auto parquet = prepare_data(settings, encoder);

    // The held-out stride comes from a count of bytes read (JSON lines for JSONL, texts for
    // Parquet); on these long documents both give the same stride, which identical shards need.
    ASSERT_EQ(jsonl.manifest.settings["heldout_stride"], parquet.manifest.settings["heldout_stride"]);
    const auto expected = shard_bytes(dir / ("out_jsonl_" + std::to_string(heldout_tokens)));
    EXPECT_GE(expected.size(), heldout_tokens > 0 ? 4u : 3u);
    EXPECT_EQ(shard_bytes(dir / ("out_parquet_" + std::to_string(heldout_tokens))), expected);
    EXPECT_EQ(parquet.manifest.summary, jsonl.manifest.summary);
    EXPECT_EQ(parquet.manifest.summary["val_copies_excluded"], 1);
    // The manifest hashes the Parquet files themselves.
    ASSERT_EQ(parquet.manifest.sources.size(), 3u);
    EXPECT_EQ(parquet.manifest.sources[0].path, "corpus/part_000.parquet");
    EXPECT_EQ(parquet.manifest.sources[0].sha256, sha256_file(dir / "parquet/corpus/part_000.parquet"));
    EXPECT_EQ(parquet.manifest.settings["parquet_text_column"], "text");
    EXPECT_FALSE(jsonl.manifest.settings.contains("parquet_text_column"));
  }
}

TEST(Parquet, PrepareOfACorruptFileFailsNamingItAndLeavesOutputs) {
  REQUIRE_PARQUET();
  TempDir dir;
  write_parquet(dir / "data/corpus/a.parquet", sample_texts(10));
  test::ByteEncoder encoder;
  PrepareSettings settings;
  settings.data_dir = dir / "data";
  settings.out_dir = dir / "out";
  settings.heldout_tokens = 0;
  settings.progress = false;
  prepare_data(settings, encoder);
  const auto before = shard_bytes(dir / "out");
  const std::string manifest_before = read_file(dir / "out" / kManifestFileName);
  const std::string bytes = read_file(dir / "data/corpus/a.parquet");
  write_file_atomic(dir / "data/corpus/b.parquet", bytes.substr(0, bytes.size() / 2));
  std::string error = test::error_of([&] { prepare_data(settings, encoder); });
  EXPECT_THAT(error, HasSubstr((dir / "data/corpus/b.parquet").string() + ": not a readable Parquet file"));
  EXPECT_EQ(shard_bytes(dir / "out"), before);
  EXPECT_EQ(read_file(dir / "out" / kManifestFileName), manifest_before);
}

// The commands end to end: `tokenizer train` learns the same tokenizer from Parquet as from the same
// texts in JSONL, and `data prepare` (with it) writes the same shards.
TEST(Parquet, CliTokenizerTrainAndPrepareReadParquet) {
  REQUIRE_PARQUET();
  TempDir dir;
  std::vector<std::string> corpus;
  for (int i = 0; i < 20; ++i) corpus.push_back(sample_texts(20)[static_cast<size_t>(i)] + " extra " + std::to_string(i));
  write_both(dir / "jsonl", dir / "parquet", corpus, {"held apart validation text"});
  auto sha_line = [](const std::string& output) {
    size_t at = output.find("sha256");
    return at == std::string::npos ? std::string() : output.substr(at, output.find('\n', at) - at);
  };
  std::map<std::string, std::string> sha;
  for (const char* kind : {"jsonl", "parquet"}) {
    auto train = test::run_command(test::clocktrain_bin() + " tokenizer train --vocab-size 300 --data " +
                                   (dir / kind).string() + " --out " + (dir / (std::string("tok_") + kind)).string());
    ASSERT_EQ(train.exit_code, 0) << train.output;
    sha[kind] = sha_line(train.output);
    auto prepare = test::run_command(test::clocktrain_bin() + " data prepare --heldout-tokens 0 --data " +
                                     (dir / kind).string() + " --tokenizer " + (dir / "tok_jsonl").string() +
                                     " --out " + (dir / (std::string("out_") + kind)).string());
    ASSERT_EQ(prepare.exit_code, 0) << prepare.output;
  }
  EXPECT_FALSE(sha["jsonl"].empty());
  EXPECT_EQ(sha["parquet"], sha["jsonl"]);
  EXPECT_EQ(shard_bytes(dir / "out_parquet"), shard_bytes(dir / "out_jsonl"));

  // A wrong --text-column is an error naming the file and the columns there are; nothing is written.
  auto wrong = test::run_command(test::clocktrain_bin() + " data prepare --text-column body --data " +
                                 (dir / "parquet").string() + " --tokenizer " + (dir / "tok_jsonl").string() +
                                 " --out " + (dir / "out_wrong").string());
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.output, HasSubstr("no column \"body\" (the file's columns: id, text)"));
  EXPECT_FALSE(fs::exists(dir / "out_wrong" / kManifestFileName));
}

}  // namespace
}  // namespace ct
