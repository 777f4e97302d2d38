// safetensors writing and validated reading, and the model checkpoint folder.
#include <gmock/gmock.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "model/tiny_model.h"
#include "test_support.h"
#include "util/files.h"
#include "util/folder_checksums.h"

namespace ct {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using test::error_of;

// A file with the given header text and data bytes.
void write_raw(const fs::path& path, const std::string& header, size_t data_bytes) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += header;
  bytes += std::string(data_bytes, '\x01');
  write_file_atomic(path, bytes);
}

TEST(Safetensors, RoundTripWithMetadata) {
  test::TempDir dir;
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<int32_t> b = {4, -5, 6};
  SafetensorsWriter w;
  w.add("a", "F32", {2, 3}, a.data());
  w.add("b", "I32", {3}, b.data());
  w.set_metadata("step", "12");
  w.write(dir / "x.safetensors");

  SafetensorsFile f(dir / "x.safetensors");
  EXPECT_EQ(f.metadata_value("step"), "12");
  ASSERT_EQ(f.entries().size(), 2u);
  std::vector<float> a2(6);
  f.read(f.expect("a", "F32", {2, 3}), a2.data());
  EXPECT_EQ(a2, a);
  std::vector<int32_t> b2(3);
  f.read(f.expect("b", "I32", {3}), b2.data());
  EXPECT_EQ(b2, b);
  // The header length is a multiple of 8 so the data starts aligned.
  std::string raw = read_file(dir / "x.safetensors");
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_NE(error_of([&] { f.expect("a", "F32", {3, 2}); }).find("field 'shape'"), std::string::npos);
  EXPECT_NE(error_of([&] { f.expect("a", "F64", {2, 3}); }).find("field 'dtype'"), std::string::npos);
  EXPECT_NE(error_of([&] { f.expect("c", "F32", {1}); }).find("missing tensor 'c'"), std::string::npos);
}

TEST(Safetensors, RejectsBadHeadersNamingTheField) {
  test::TempDir dir;
  const fs::path p = dir / "bad.safetensors";
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})", 8);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("tensor 'w': field 'data_offsets'"), std::string::npos);
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", 16);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("need 16"), std::string::npos);
  write_raw(p, R"({"w": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 2]}})", 2);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("field 'dtype'"), std::string::npos);
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("field 'shape'"), std::string::npos);
  write_raw(p, R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("overlap"), std::string::npos);
  write_raw(p, "{not json", 0);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("invalid JSON"), std::string::npos);
  write_raw(p, "{\"__metadata__\": " + std::string(1000, '[') + std::string(1000, ']') + "}", 0);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("header: invalid JSON at byte 273: arrays/objects nested deeper"),
            std::string::npos);
  // A number beyond double: nlohmann throws out_of_range (not parse_error), which escaped.
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [1e999], "data_offsets": [0, 4]}})", 4);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("header: invalid JSON"), std::string::npos);
  // A dimension that is not an exact integer (nlohmann would cast 1e300 with undefined behaviour).
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [1e300], "data_offsets": [0, 4]}})", 4);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("tensor 'w': field 'shape'[0]: expected an integer"),
            std::string::npos);
  write_raw(p, R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4);
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("field 'shape'[0]"), std::string::npos);
  // a header length larger than the file
  std::string bytes(8, '\0');
  uint64_t n = 1000;
  std::memcpy(bytes.data(), &n, 8);
  write_file_atomic(p, bytes + "{}");
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("header length 1000"), std::string::npos);
  write_file_atomic(p, "abc");
  EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("at least 8"), std::string::npos);
}

TEST(ModelCheckpoint, SaveLoadGivesTheSameModel) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  ModelConfig c = test::tiny_config();
  GPT model(*backend, c);
  test::randomize_parameters(model, 21);
  save_model(model, dir.path(), {{"step", "5"}});
  EXPECT_TRUE(fs::exists(dir / "config.json"));
  SafetensorsFile f(dir / "model.safetensors");
  EXPECT_EQ(f.metadata_value("step"), "5");
  EXPECT_EQ(f.entries().front().name, "transformer.wte.weight");
  EXPECT_EQ(f.expect("lm_head.weight", "F32", {256, 32}).name, "lm_head.weight");

  auto loaded = load_model(*backend, dir.path());
  std::vector<int32_t> x, y;
  test::random_batch(2, 16, c.vocab_size, 6, x, y);
  EXPECT_EQ(loaded->forward(x.data(), y.data(), 2, 16), model.forward(x.data(), y.data(), 2, 16));
}

TEST(ModelCheckpoint, WrongShapeIsRejectedBeforeLoading) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  ModelConfig c = test::tiny_config();
  GPT model(*backend, c);
  model.initialize(1);
  save_model(model, dir.path());
  ModelConfig wider = c;
  wider.n_embd = 64;
  GPT other(*backend, wider);
  const std::string e = error_of([&] { load_model_weights(other, dir / "model.safetensors"); });
  EXPECT_NE(e.find("model.safetensors: tensor 'transformer.wte.weight': field 'shape'"), std::string::npos) << e;
  ModelConfig deeper = c;
  deeper.n_layer = 2;
  deeper.attention_layers = {true, false};
  GPT shallower(*backend, deeper);
  EXPECT_NE(error_of([&] { load_model_weights(shallower, dir / "model.safetensors"); }).find("unexpected tensor"),
            std::string::npos);
}

// A config.json that claims a model larger than model.safetensors can hold is refused before the
// model is allocated (a few bytes of JSON could otherwise ask for gigabytes).
TEST(ModelCheckpoint, ConfigLargerThanTheWeightsFileIsRefusedBeforeAllocating) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  GPT model(*backend, test::tiny_config());
  model.initialize(1);
  save_model(model, dir.path());
  Json config = read_json_file(dir / "config.json");
  config["n_embd"] = 4096;
  config["n_layer"] = 3;
  config["n_head"] = 4;
  config["n_kv_head"] = 2;
  config.erase("padded_vocab_size");
  write_file_atomic(dir / "config.json", config.dump());
  const std::string e = error_of([&] { load_model(*backend, dir.path()); });
  EXPECT_NE(e.find("model.safetensors: "), std::string::npos) << e;
  EXPECT_NE(e.find("bytes cannot hold the"), std::string::npos) << e;
}

// A bf16 checkpoint (as other trainers save weights) is refused naming the tensor and its dtype, with
// what to do, not with a byte count (the file is half the size F32 weights need).
TEST(ModelCheckpoint, ABf16CheckpointIsRefusedNamingTheTensorAndTheCast) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  GPT model(*backend, test::tiny_config());
  model.initialize(1);
  save_model(model, dir.path());
  std::vector<std::vector<uint16_t>> halves;
  for (const Parameter& p : model.parameters()) halves.emplace_back(static_cast<size_t>(p.spec.shape.numel()), 0x3f80);
  SafetensorsWriter writer;
  size_t i = 0;
  for (const Parameter& p : model.parameters()) {
    std::vector<int64_t> shape(p.spec.shape.dims.begin(), p.spec.shape.dims.begin() + p.spec.shape.ndim);
    writer.add(p.spec.name, "BF16", shape, halves[i++].data());
  }
  writer.write(dir / "model.safetensors");
  const std::string expected = (dir / "model.safetensors").string() +
                               ": tensor 'transformer.wte.weight': field 'dtype': BF16 is not supported: cast the "
                               "checkpoint to float32 (F32)";
  const std::string e = error_of([&] { load_model(*backend, dir.path()); });
  EXPECT_THAT(e, HasSubstr(expected));
  EXPECT_THAT(error_of([&] { load_model_weights(model, dir / "model.safetensors"); }), HasSubstr(expected));
}

// Issue 42: with SHA256SUMS beside them, a changed byte in config.json or model.safetensors is an error
// naming the file, where the reader accepted it before (a weight's sign; a space of config.json
// turned into a tab).
TEST(ModelCheckpoint, AChangedByteIsRefusedNamingTheFile) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  GPT model(*backend, test::tiny_config());
  test::randomize_parameters(model, 4);
  save_model(model, dir.path());
  write_folder_checksums(dir.path());
  ASSERT_NE(load_model(*backend, dir.path()), nullptr);

  test::flip_byte(dir / "model.safetensors", -1);
  EXPECT_THAT(error_of([&] { load_model(*backend, dir.path()); }),
              HasSubstr((dir / "model.safetensors").string() + ": SHA-256 "));
  EXPECT_THAT(error_of([&] { load_model_weights(model, dir / "model.safetensors"); }),
              HasSubstr((dir / "model.safetensors").string() + ": SHA-256 "));
  test::flip_byte(dir / "model.safetensors", -1);  // back as written

  const int64_t space = static_cast<int64_t>(read_file(dir / "config.json").find("\n ")) + 1;
  test::flip_byte(dir / "config.json", space, ' ' ^ '\t');
  EXPECT_THAT(error_of([&] { load_model(*backend, dir.path()); }),
              AllOf(HasSubstr((dir / "config.json").string() + ": SHA-256 "), HasSubstr(" recorded in ")));
  EXPECT_THAT(error_of([&] { load_model_config(dir.path()); }),
              HasSubstr((dir / "config.json").string() + ": SHA-256 "));
}

// Issue 42: a NaN or Inf weight, written as such (SHA256SUMS agrees), is refused naming the tensor and
// the element; here in a padding row of wte (vocab 200 padded to 256), which no token ever reads.
TEST(ModelCheckpoint, ANonFiniteWeightIsRefusedNamingTheTensor) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  GPT model(*backend, test::tiny_config());
  test::randomize_parameters(model, 4);
  std::vector<float> wte(256 * 32);
  Parameter& p = model.parameters().front();
  ASSERT_EQ(p.spec.name, "transformer.wte.weight");
  backend->download(wte.data(), DType::f32, p.value);
  wte[250 * 32 + 3] = std::numeric_limits<float>::quiet_NaN();
  backend->upload(p.value, wte.data(), DType::f32);
  save_model(model, dir.path());
  write_folder_checksums(dir.path());
  EXPECT_THAT(error_of([&] { load_model(*backend, dir.path()); }),
              HasSubstr((dir / "model.safetensors").string() +
                        ": tensor 'transformer.wte.weight': element [250, 3] (flat index 8003) is nan"));
  wte[250 * 32 + 3] = 0.0f;
  wte[7] = -std::numeric_limits<float>::infinity();
  backend->upload(p.value, wte.data(), DType::f32);
  save_model(model, dir.path());
  write_folder_checksums(dir.path());
  EXPECT_THAT(error_of([&] { load_model_weights(model, dir / "model.safetensors"); }),
              HasSubstr("model.safetensors: tensor 'transformer.wte.weight': element [0, 7] (flat index 7) is -inf"));
}

// config.json carries what a Hugging Face-style loader recognises it by; configs from before load too,
// and another model's type is refused, naming the field.
TEST(ModelConfigLimits, ModelTypeAndArchitecturesAreWrittenCheckedAndOptional) {
  Json j = to_json(test::tiny_config());
  EXPECT_EQ(j["model_type"], "clocktrain-gpt");
  EXPECT_EQ(j["architectures"], Json::array({"ClocktrainGPT"}));
  EXPECT_EQ(to_json(model_config_from_json(j, "config.json")), j);
  j.erase("model_type");
  j.erase("architectures");
  EXPECT_EQ(model_config_from_json(j, "config.json").n_layer, test::tiny_config().n_layer);
  j["model_type"] = "llama";
  EXPECT_THAT(error_of([&] { model_config_from_json(j, "config.json"); }),
              HasSubstr("config.json: field 'model_type': expected \"clocktrain-gpt\", got \"llama\""));
  j.erase("model_type");
  j["architectures"] = Json::array({"GPT2LMHeadModel"});
  EXPECT_THAT(error_of([&] { model_config_from_json(j, "config.json"); }), HasSubstr("field 'architectures'"));
}

// Fields beyond the limits would overflow the parameter count (int64) or ask for huge rotary tables.
TEST(ModelConfigLimits, FieldsBeyondTheLimitsAreRefused) {
  Json j = to_json(test::tiny_config());
  j["n_embd"] = int64_t{1} << 40;
  j["n_head"] = 4;
  j.erase("padded_vocab_size");
  EXPECT_NE(error_of([&] { model_config_from_json(j, "config.json"); })
                .find("config.json: field 'n_embd': expected a positive integer up to 65536"),
            std::string::npos);
  j = to_json(test::tiny_config());
  j["sequence_len"] = int64_t{1} << 40;
  EXPECT_NE(error_of([&] { model_config_from_json(j, "config.json"); }).find("field 'sequence_len'"), std::string::npos);
  j = to_json(test::tiny_config());
  j["n_layer"] = 2.5;
  EXPECT_NE(error_of([&] { model_config_from_json(j, "config.json"); }).find("field 'n_layer': expected an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace ct
