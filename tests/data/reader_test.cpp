// Corpus readers: JSONL (plain, .zst, .gz) and .txt folders, and every kind of bad input giving an
// error that names the file and the line or offset.
#include "data/byte_source.h"
#include "data/corpus_reader.h"

#include "data_test_support.h"
#include "util/error.h"

namespace ct {
namespace {

using test::TempDir;

std::vector<Document> read_all(const std::vector<fs::path>& files) {
  CorpusReader reader(files);
  std::vector<Document> docs;
  Document doc;
  while (reader.next(doc)) docs.push_back(doc);
  return docs;
}

// The error message of `fn`, or "" when it did not throw ct::Error.
using test::error_of;

const std::vector<std::pair<std::string, std::string>> kDocs = {
    {"a", "First document.\nWith two lines."},
    {"b", "Second: unicode \u00e9\u00e8 \u4e2d\u6587 and \"quotes\" and \\ backslash."},
    {"c", ""},
    {"d", std::string(3'000'000, 'x') + "end"},  // longer than the reader's first buffer
};

void expect_documents(const std::vector<Document>& docs, const std::string& file) {
  ASSERT_EQ(docs.size(), kDocs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(docs[i].text, kDocs[i].second) << i;
    EXPECT_EQ(docs[i].metadata["id"], kDocs[i].first);
    EXPECT_EQ(docs[i].metadata["source"], "test");
    EXPECT_FALSE(docs[i].metadata.contains("text"));
    EXPECT_EQ(docs[i].origin, file);
    EXPECT_EQ(docs[i].line, static_cast<int64_t>(i + 1));
  }
}

TEST(CorpusReader, PlainZstdAndGzipGiveTheSameDocuments) {
  TempDir dir;
  for (const char* name : {"docs.jsonl", "docs.jsonl.zst", "docs.jsonl.gz"}) {
    test::write_jsonl(dir / name, kDocs);
    expect_documents(read_all({dir / name}), (dir / name).string());
  }
}

TEST(CorpusReader, ConcatenatedFramesAndMembersAreOneStream) {
  TempDir dir;
  std::string first = test::jsonl_line("a", "one"), second = test::jsonl_line("b", "two");
  write_file_atomic(dir / "f.jsonl.zst", test::zstd_compress(first) + test::zstd_compress(second));
  write_file_atomic(dir / "f.jsonl.gz", test::gzip_compress(first) + test::gzip_compress(second));
  for (const char* name : {"f.jsonl.zst", "f.jsonl.gz"}) {
    auto docs = read_all({dir / name});
    ASSERT_EQ(docs.size(), 2u) << name;
    EXPECT_EQ(docs[0].text, "one");
    EXPECT_EQ(docs[1].text, "two");
  }
}

TEST(CorpusReader, BlankLinesCrlfAndMissingFinalNewline) {
  TempDir dir;
  write_file_atomic(dir / "f.jsonl", "\n{\"text\": \"a\"}\r\n   \n{\"text\": \"b\", \"n\": 3}");
  auto docs = read_all({dir / "f.jsonl"});
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].text, "a");
  EXPECT_EQ(docs[0].line, 2);
  EXPECT_EQ(docs[1].text, "b");
  EXPECT_EQ(docs[1].line, 4);
  EXPECT_EQ(docs[1].metadata, (Json{{"n", 3}}));
}

TEST(CorpusReader, TextFolderIsOneDocumentPerFileInNameOrder) {
  TempDir dir;
  write_file_atomic(dir / "b.txt", "second");
  write_file_atomic(dir / "a.txt", "first\nline");
  write_file_atomic(dir / "c.txt", "");
  write_file_atomic(dir / "notes.md", "not a corpus file");
  auto files = list_corpus_files(dir.path());
  ASSERT_EQ(files.size(), 3u);
  auto docs = read_all(files);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].text, "first\nline");
  EXPECT_EQ(docs[0].metadata, (Json{{"file", "a.txt"}}));
  EXPECT_EQ(docs[1].text, "second");
  EXPECT_EQ(docs[2].text, "");
}

TEST(CorpusReader, FilesOfAFolderAreReadInNameOrderAcrossFormats) {
  TempDir dir;
  test::write_jsonl(dir / "b.jsonl.gz", {{"b", "from b"}});
  test::write_jsonl(dir / "a.jsonl.zst", {{"a", "from a"}});
  test::write_jsonl(dir / "c.jsonl", {{"c", "from c"}});
  write_file_atomic(dir / "d.txt", "from d");
  auto docs = read_all(list_corpus_files(dir.path()));
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0].text, "from a");
  EXPECT_EQ(docs[1].text, "from b");
  EXPECT_EQ(docs[2].text, "from c");
  EXPECT_EQ(docs[3].text, "from d");
}

TEST(CorpusReader, CountsUncompressedAndFileBytes) {
  TempDir dir;
  test::write_jsonl(dir / "a.jsonl.zst", kDocs);
  std::string plain;
  for (const auto& [id, text] : kDocs) plain += test::jsonl_line(id, text);
  CorpusReader reader({dir / "a.jsonl.zst"});
  RawDocument raw;
  while (reader.next(raw)) {
  }
  EXPECT_EQ(reader.bytes_read(), plain.size());
  EXPECT_EQ(reader.file_bytes_consumed(), fs::file_size(dir / "a.jsonl.zst"));
}

TEST(CorpusReaderErrors, MalformedJsonNamesFileAndLine) {
  TempDir dir;
  write_file_atomic(dir / "bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"unterminated}\n");
  std::string message = error_of([&] { read_all({dir / "bad.jsonl"}); });
  EXPECT_NE(message.find((dir / "bad.jsonl").string() + ":2:"), std::string::npos) << message;
  EXPECT_NE(message.find("invalid JSON"), std::string::npos) << message;
  write_file_atomic(dir / "deep.jsonl", "{\"text\": \"ok\", \"m\": " + std::string(100000, '[') + "\n");
  message = error_of([&] { read_all({dir / "deep.jsonl"}); });
  EXPECT_NE(message.find((dir / "deep.jsonl").string() + ":1: invalid JSON at byte 276: arrays/objects nested deeper"),
            std::string::npos)
      << message;
}

// nlohmann::json throws out_of_range, not parse_error, for a number beyond double: it escaped the
// reader as a foreign exception type (and out of `data prepare`'s worker threads).
TEST(CorpusReaderErrors, NumberBeyondDoubleNamesFileAndLine) {
  TempDir dir;
  write_file_atomic(dir / "big.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"x\", \"score\": 1e999}\n");
  std::string message = error_of([&] { read_all({dir / "big.jsonl"}); });
  EXPECT_NE(message.find((dir / "big.jsonl").string() + ":2: invalid JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("1e999"), std::string::npos) << message;
}

// A line has a length limit: a few KB of zstd can decompress to gigabytes without a newline, and
// LineReader's buffer grew without bound (a decompression bomb exhausted memory).
TEST(LineReaderLimit, ALineLongerThanTheLimitIsRefusedBeforeItGrows) {
  TempDir dir;
  const std::string long_line(3 << 20, 'x');
  write_file_atomic(dir / "bomb.jsonl.zst", test::zstd_compress("{\"text\": \"ok\"}\n" + long_line + "\nlast\n", 19));
  EXPECT_LT(fs::file_size(dir / "bomb.jsonl.zst"), 4096u);
  LineReader lines(open_byte_source(dir / "bomb.jsonl.zst"), "bomb.jsonl.zst", size_t{1} << 20);
  std::string line;
  ASSERT_TRUE(lines.next(line));
  EXPECT_EQ(line, "{\"text\": \"ok\"}");
  EXPECT_EQ(error_of([&] { lines.next(line); }),
            "bomb.jsonl.zst:2: a line longer than 1 MiB (1048576 bytes), the limit for one document");
  // Under the limit, the same line is read whole.
  LineReader roomy(open_byte_source(dir / "bomb.jsonl.zst"), "bomb.jsonl.zst", size_t{4} << 20);
  ASSERT_TRUE(roomy.next(line));
  ASSERT_TRUE(roomy.next(line));
  EXPECT_EQ(line.size(), long_line.size());
  ASSERT_TRUE(roomy.next(line));
  EXPECT_EQ(line, "last");
}

TEST(CorpusReaderErrors, MissingOrNonStringTextNamesFileAndLine) {
  TempDir dir;
  write_file_atomic(dir / "a.jsonl", "{\"text\": \"ok\"}\n{\"id\": 1}\n");
  std::string message = error_of([&] { read_all({dir / "a.jsonl"}); });
  EXPECT_NE(message.find("a.jsonl:2: missing field \"text\""), std::string::npos) << message;

  write_file_atomic(dir / "b.jsonl.gz", test::gzip_compress("\n\n{\"text\": 42}\n"));
  message = error_of([&] { read_all({dir / "b.jsonl.gz"}); });
  EXPECT_NE(message.find("b.jsonl.gz:3: field \"text\": expected a string, got number"), std::string::npos)
      << message;

  write_file_atomic(dir / "c.jsonl", "[\"text\"]\n");
  message = error_of([&] { read_all({dir / "c.jsonl"}); });
  EXPECT_NE(message.find("c.jsonl:1: expected a JSON object"), std::string::npos) << message;
}

TEST(CorpusReaderErrors, TruncatedZstdNamesFileAndOffset) {
  TempDir dir;
  std::string body;
  for (int i = 0; i < 200; ++i) body += test::jsonl_line(std::to_string(i), "document number " + std::to_string(i));
  std::string compressed = test::zstd_compress(body);
  write_file_atomic(dir / "cut.jsonl.zst", compressed.substr(0, compressed.size() - 7));
  std::string message = error_of([&] { read_all({dir / "cut.jsonl.zst"}); });
  EXPECT_NE(message.find("cut.jsonl.zst"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated zstd stream"), std::string::npos) << message;
  EXPECT_NE(message.find("byte " + std::to_string(compressed.size() - 7)), std::string::npos) << message;
}

TEST(CorpusReaderErrors, TruncatedGzipNamesFileAndOffset) {
  TempDir dir;
  std::string compressed = test::gzip_compress(test::jsonl_line("a", std::string(5000, 'q')));
  write_file_atomic(dir / "cut.jsonl.gz", compressed.substr(0, compressed.size() / 2));
  std::string message = error_of([&] { read_all({dir / "cut.jsonl.gz"}); });
  EXPECT_NE(message.find("cut.jsonl.gz"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated gzip stream"), std::string::npos) << message;
}

TEST(CorpusReaderErrors, CorruptStreamsNameTheFile) {
  TempDir dir;
  std::string zst = test::zstd_compress(test::jsonl_line("a", "some text"));
  zst[0] ^= 0x55;  // the frame magic
  write_file_atomic(dir / "bad.jsonl.zst", zst);
  std::string message = error_of([&] { read_all({dir / "bad.jsonl.zst"}); });
  EXPECT_NE(message.find("bad.jsonl.zst: corrupt zstd stream near compressed byte"), std::string::npos) << message;

  write_file_atomic(dir / "bad.jsonl.gz", "this is not gzip at all");
  message = error_of([&] { read_all({dir / "bad.jsonl.gz"}); });
  EXPECT_NE(message.find("bad.jsonl.gz: corrupt gzip stream"), std::string::npos) << message;
}

TEST(CorpusReaderErrors, EmptyOrMissingCorpusFolder) {
  TempDir dir;
  fs::create_directories(dir / "empty");
  write_file_atomic(dir / "empty" / "readme.md", "no corpus here");
  std::string message = error_of([&] { list_corpus_files(dir / "empty"); });
  EXPECT_NE(message.find("empty corpus"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "empty").string()), std::string::npos) << message;
  message = error_of([&] { list_corpus_files(dir / "absent"); });
  EXPECT_NE(message.find("absent: no such file or folder"), std::string::npos) << message;
}

}  // namespace
}  // namespace ct
