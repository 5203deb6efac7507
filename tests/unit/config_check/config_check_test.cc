// config-check's engine (src/config_check): the pack zip reader, Python's float repr, difflib's
// ratio, and the checks on small in-memory packs. The end-to-end runs are
// tests/python/test_config_check.py.
#include <gtest/gtest.h>
#include <zlib.h>

#include <initializer_list>
#include <map>
#include <string>
#include <utility>

#include "config_check/config_compare.h"
#include "config_check/pack_zip.h"
#include "config_check/sequence_ratio.h"
#include "numprobe/error.h"

namespace numprobe::configcheck {
namespace {

// Little-endian fields {value, bytes} appended to out.
void put(std::string& out, std::initializer_list<std::pair<uint64_t, int>> fields) {
  for (const auto& [v, n] : fields)
    for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A zip of stored members, as Python's zipfile writes it with ZIP_STORED.
std::string stored_zip(const std::map<std::string, std::string>& members) {
  std::string body, dir;
  for (const auto& [name, data] : members) {
    const uint64_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    const uint64_t size = data.size(), name_size = name.size(), local = body.size();
    // flags, method, time and date, CRC, both sizes, name and extra lengths: both headers
    const auto common = [&](std::string& out) {
      put(out, {{0, 2}, {0, 2}, {0, 4}, {crc, 4}, {size, 4}, {size, 4}, {name_size, 2}, {0, 2}});
    };
    put(body, {{0x04034b50, 4}, {20, 2}});
    common(body);
    body += name + data;
    put(dir, {{0x02014b50, 4}, {20, 2}, {20, 2}});
    common(dir);
    put(dir, {{0, 2}, {0, 2}, {0, 2}, {0, 4}, {local, 4}});  // comment, disk, attributes, offset
    dir += name;
  }
  std::string out = body + dir;
  put(out, {{0x06054b50, 4},
            {0, 4},
            {members.size(), 2},
            {members.size(), 2},
            {dir.size(), 4},
            {body.size(), 4},
            {0, 2}});
  return out;
}

TEST(ConfigPackZip, ReadsStoredMembersAndRefusesBrokenOnes) {
  const std::string zip = stored_zip({{"env", "{}"}, {"pip", "torch=2\n"}});
  const auto members = read_zip_members(zip, "p.zip");
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members.at("pip"), "torch=2\n");
  for (size_t cut : {size_t{0}, size_t{10}, zip.size() / 2, zip.size() - 1}) {
    try {
      read_zip_members(zip.substr(0, cut), "cut.zip");
      FAIL() << "a zip cut at " << cut << " was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.zip"), std::string::npos) << e.what();
    }
  }
  std::string bad_crc = zip;
  bad_crc[bad_crc.find("torch=2")] = 'T';
  EXPECT_THROW(read_zip_members(bad_crc, "crc.zip"), InputError);
}

TEST(ConfigPythonFloat, MatchesPythonRepr) {
  EXPECT_EQ(python_float(0.1), "0.1");
  EXPECT_EQ(python_float(1.0), "1.0");
  EXPECT_EQ(python_float(1e-4), "0.0001");
  EXPECT_EQ(python_float(1.25e-6), "1.25e-06");
  EXPECT_EQ(python_float(100000.0), "100000.0");
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(-2.5), "-2.5");
  EXPECT_EQ(python_float(0.048841275320799585), "0.048841275320799585");
}

TEST(ConfigSequenceRatio, MatchesDifflib) {
  // difflib.SequenceMatcher(None, a, b).ratio() in CPython 3.11
  EXPECT_DOUBLE_EQ(sequence_ratio("", ""), 1.0);
  EXPECT_DOUBLE_EQ(sequence_ratio("abcd", "bcde"), 0.75);
  EXPECT_DOUBLE_EQ(sequence_ratio("seq_length", "seq_len"), 2.0 * 7 / 17);
  EXPECT_DOUBLE_EQ(sequence_ratio("learning_rate", "learning_rates"), 2.0 * 13 / 27);
}

std::map<std::string, std::string> base_members(const std::string& lr, const std::string& algo) {
  return {{"env", "{\"NCCL_ALGO\": \"" + algo + "\"}"},
          {"pip", "torch=2.1\nnumpy=1.26\n"},
          {"hyperparameters/hyperparameters_static.json", "{\"lr\": \"" + lr + "\", \"tp\": 4}"}};
}

const CheckTable& table(const std::vector<CheckTable>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t;
  throw Error("no table " + name);
}

TEST(ConfigCompare, ReportsEnvAndHyperparametersAndSkipsMissingChecks) {
  const Pack a("a.zip", base_members("1e-4", "Ring"));
  auto b_members = base_members("2e-4", "Ring");
  b_members["env"] = "{\"ASCEND_RT_VISIBLE_DEVICES\": \"0\", \"HCCL_ALGO\": \"Tree\"}";
  b_members["hyperparameters/hyperparameters_static.json"] =
      "{\"learning_rate\": \"2e-4\", \"tensor_model_parallel_size\": 4}";
  const Pack b("b.zip", b_members);
  const auto ts = compare_packs(a, b, "pytorch");
  ASSERT_EQ(ts.size(), 6u);
  const auto& env = table(ts, "env");
  ASSERT_EQ(env.status, "error");
  ASSERT_FALSE(env.rows.empty());
  EXPECT_EQ(env.rows[0][0].text, "NCCL_ALGO");  // a CUDA pack against an Ascend one
  EXPECT_EQ(env.rows[0][1].text, "HCCL_ALGO");
  const auto& hyper = table(ts, "hyperparameters");
  ASSERT_EQ(hyper.rows.size(), 1u);
  EXPECT_EQ(hyper.rows[0][2].text, "learning_rate");
  EXPECT_EQ(hyper.rows[0][5].text, "mapping");
  EXPECT_EQ(table(ts, "pip").status, "pass");
  EXPECT_EQ(table(ts, "weights").status, "skipped");
  const auto same = compare_packs(a, a, "pytorch");
  EXPECT_EQ(table(same, "env").status, "pass");
  EXPECT_EQ(table(same, "hyperparameters").status, "pass");
}

TEST(ConfigCompare, BadMembersNameThePackAndTheMember) {
  auto members = base_members("1", "Ring");
  members["weights/stepX/rank0/weight.json"] = "{}";
  const Pack bad("bad.zip", members);
  try {
    compare_packs(bad, bad, "pytorch");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.zip"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("weights/stepX"), std::string::npos);
  }
  members = base_members("1", "Ring");
  members["env"] = "{not json";
  EXPECT_THROW(compare_packs(Pack("j.zip", members), Pack("j.zip", members), "pytorch"),
               InputError);
}

}  // namespace
}  // namespace numprobe::configcheck
