#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "format/dump_render.h"
#include "format/dump_writer.h"
#include "format/journal.h"
#include "numprobe/dump.h"
#include "numprobe/dump_tree.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace numprobe;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_file;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

namespace {

const std::string kQuick = "quick_start_resnet50_gpu_mix_statistics/step0/proc2016/";

// Replays a fixture rank dir through DumpWriter: entries, then stacks and construct edges in the
// order they appear in the files.
void replay(const std::string& src_dir, DumpWriter& w, size_t max_entries = SIZE_MAX) {
  DumpFile d = read_dump_json(src_dir + "dump.json");
  StackTable st = read_stack_json(src_dir + "stack.json");
  ConstructTable ct = read_construct_json(src_dir + "construct.json");
  for (size_t i = 0; i < d.entries.size() && i < max_entries; ++i) w.add_entry(d, i);
  for (size_t g = 0; g < st.group_frames.size(); ++g) {
    std::vector<std::string> frames;
    for (uint32_t f : st.group_frames[g]) frames.emplace_back(st.strings.get(f));
    for (uint32_t n : st.group_names[g]) w.add_stack(st.strings.get(n), frames);
  }
  for (const ConstructEdge& e : ct.edges) w.add_construct(ct, e);
}

TEST(DumpWriter, FinishReproducesMsprobeFilesExactly) {
  std::string src = msprobe_fixture(kQuick);
  std::string out = scratch_dir("writer_exact");
  {
    DumpFile header = read_dump_json(src + "dump.json");
    DumpWriter w(out, header);
    replay(src, w);
    EXPECT_TRUE(fs::exists(out + "/dump.journal"));
    w.finish();
  }
  EXPECT_FALSE(fs::exists(out + "/dump.journal"));
  for (const char* f : {"dump.json", "stack.json", "construct.json"}) {
    EXPECT_EQ(read_file(out + "/" + f), read_file(src + f)) << f;
  }
}

TEST(DumpWriter, HeaderFromFieldsMatchesMsprobeLayout) {
  std::string out = scratch_dir("writer_header");
  DumpHeader h;
  h.task = "tensor";
  h.level = "L1";
  h.dump_data_dir = "/x/dump_tensor_data";
  DumpWriter w(out, h);
  w.finish();
  EXPECT_EQ(read_file(out + "/dump.json"),
            "{\n \"task\": \"tensor\",\n \"level\": \"L1\",\n \"framework\": \"pytorch\",\n"
            " \"dump_data_dir\": \"/x/dump_tensor_data\",\n \"data\": {}\n}");
  EXPECT_EQ(read_file(out + "/stack.json"), "{}");
  EXPECT_EQ(read_file(out + "/construct.json"), "{}");
}

// A journal a dead writer left must be recovered first; one a live writer holds is that writer's:
// a second writer and `numprobe recover` both refuse it (recovering would remove the journal
// under its writer and lose every later record).
TEST(DumpWriter, RefusesToOverwriteAJournal) {
  std::string out = scratch_dir("writer_refuse");
  auto refusal = [&] {
    try {
      DumpWriter second(out, DumpHeader{});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  {
    DumpWriter first(out, DumpHeader{});
    first.add_entry("Functional.relu.0.forward", "{}");
    EXPECT_NE(refusal().find("another writer is writing"), std::string::npos);
    try {
      recover_rank_dir(out);
      FAIL() << "recovered a live journal";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("still writing"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::exists(out + "/dump.journal"));
  }  // closed unfinished: what a writer that died leaves
  EXPECT_NE(refusal().find("numprobe recover"), std::string::npos);
  EXPECT_EQ(recover_rank_dir(out).entries, 1u);
}

TEST(DumpWriter, CrashThenRecoverLosesNothing) {
  std::string src = msprobe_fixture(kQuick);
  std::string out = scratch_dir("writer_crash");
  {
    DumpFile header = read_dump_json(src + "dump.json");
    DumpWriter w(out, header);
    replay(src, w);
    // No finish(): the destructor closes the journal like a killed process would.
  }
  EXPECT_FALSE(fs::exists(out + "/dump.json"));
  // Readers assemble in memory.
  auto ranks = find_rank_dumps(out);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_TRUE(ranks[0].has_journal);
  RankDump rd = load_rank_dump(ranks[0]);
  EXPECT_TRUE(rd.recovered_from_journal);
  EXPECT_EQ(rd.dump.entries.size(), 760u);
  // recover writes the files, identical to msprobe's.
  RecoverReport r = recover_rank_dir(out);
  EXPECT_TRUE(r.had_journal);
  EXPECT_EQ(r.entries, 760u);
  EXPECT_EQ(r.bytes_dropped, 0u);
  for (const char* f : {"dump.json", "stack.json", "construct.json"}) {
    EXPECT_EQ(read_file(out + "/" + f), read_file(src + f)) << f;
  }
  EXPECT_FALSE(fs::exists(out + "/dump.journal"));
  EXPECT_FALSE(recover_rank_dir(out).had_journal);
}

TEST(DumpWriter, HeldRecordsReachTheJournalTogetherAndAllOfThemAreKept) {
  std::string src = msprobe_fixture(kQuick);
  std::string out = scratch_dir("writer_held");
  const std::string journal = out + "/dump.journal";
  {
    DumpFile header = read_dump_json(src + "dump.json");
    DumpWriter w(out, header);
    const auto header_only = fs::file_size(journal);
    w.hold_writes();
    w.add_entry(header, 0);
    w.add_entry(header, 1);
    EXPECT_EQ(fs::file_size(journal), header_only);  // held, not yet written
    w.write_held();
    const auto two = fs::file_size(journal);
    EXPECT_GT(two, header_only);
    w.add_entry(header, 2);  // not holding any more: written at once
    EXPECT_GT(fs::file_size(journal), two);
    w.hold_writes();
    replay(src, w);  // the fixture's records are far over 64 KiB: written as the buffer fills
    EXPECT_GT(fs::file_size(journal), two + (64u << 10));
    // No write_held(): the destructor writes what is held, then closes like a crash.
  }
  RankDump rd = load_rank_dump(find_rank_dumps(out).at(0));
  EXPECT_TRUE(rd.recovered_from_journal);
  EXPECT_EQ(rd.dump.entries.size(), 760u);  // entries 0-2 were repeated: the first record wins
  RecoverReport r = recover_rank_dir(out);
  EXPECT_EQ(r.bytes_dropped, 0u);
  for (const char* f : {"dump.json", "stack.json", "construct.json"}) {
    EXPECT_EQ(read_file(out + "/" + f), read_file(src + f)) << f;
  }
}

TEST(DumpWriter, JournalCutAtRandomBytesRecoversAPrefix) {
  std::string src = msprobe_fixture(kQuick);
  std::string base = scratch_dir("writer_cut_base");
  {
    DumpFile header = read_dump_json(src + "dump.json");
    DumpWriter w(base, header);
    replay(src, w, 200);
  }
  std::string journal = read_file(base + "/dump.journal");
  DumpFile full = read_dump_json(src + "dump.json");
  std::mt19937_64 rng(42);
  std::vector<size_t> cuts{0, 8, 9, 20, journal.size() - 1};
  for (int i = 0; i < 25; ++i) cuts.push_back(rng() % journal.size());
  size_t last_entries = 0;
  for (size_t cut : cuts) {
    std::string dir = scratch_dir("writer_cut");
    write_file(dir + "/dump.journal", journal.substr(0, cut));
    RecoverReport r = recover_rank_dir(dir);
    EXPECT_EQ(r.bytes_total, cut);
    // What was kept ends on a record boundary: the magic, or the end of an intact record.
    if (cut >= 8) {
      EXPECT_GE(cut - r.bytes_dropped, 8u) << cut;
      EXPECT_EQ(r.records == 0, cut - r.bytes_dropped == 8) << cut;
    } else {
      // Regression (review): a journal cut inside its magic is an empty journal, not an error
      // that blocks recovery and every later writer.
      EXPECT_EQ(r.records, 0u);
    }
    DumpFile d = read_dump_json(dir + "/dump.json");
    ASSERT_LE(d.entries.size(), 200u);
    // Every recovered entry is complete and equal to the original.
    for (size_t e = 0; e < d.entries.size(); ++e) {
      ASSERT_EQ(d.entry_name(e), full.entry_name(e));
      ASSERT_EQ(format::render_entry_body(d, e), format::render_entry_body(full, e));
    }
    EXPECT_NO_THROW(read_stack_json(dir + "/stack.json"));
    EXPECT_NO_THROW(read_construct_json(dir + "/construct.json"));
    if (cut == journal.size() - 1) last_entries = d.entries.size();
  }
  EXPECT_EQ(last_entries, 200u);  // only the last stack/construct record was torn
}

TEST(DumpWriter, CorruptedRecordStopsRecoveryThere) {
  std::string src = msprobe_fixture(kQuick);
  std::string base = scratch_dir("writer_flip_base");
  {
    DumpFile header = read_dump_json(src + "dump.json");
    DumpWriter w(base, header);
    replay(src, w, 50);
  }
  std::string journal = read_file(base + "/dump.journal");
  // Damage a byte inside the 26th entry record.
  DumpFile d0 = read_dump_json(src + "dump.json");
  size_t at = journal.find(std::string(d0.entry_name(25)));
  ASSERT_NE(at, std::string::npos);
  journal[at + 40] ^= 0x40;
  std::string dir = scratch_dir("writer_flip");
  write_file(dir + "/dump.journal", journal);
  RecoverReport r = recover_rank_dir(dir);
  EXPECT_GT(r.bytes_dropped, 0u);
  EXPECT_NE(r.detail.find("checksum"), std::string::npos) << r.detail;
  DumpFile d = read_dump_json(dir + "/dump.json");
  EXPECT_EQ(d.entries.size(), 25u);
}

TEST(DumpWriter, NotAJournal) {
  std::string dir = scratch_dir("writer_notjournal");
  write_file(dir + "/dump.journal", "{\"task\": 1}");
  try {
    recover_rank_dir(dir);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a numprobe journal"), std::string::npos);
  }
}

}  // namespace

namespace {

// Regression (review): finish() used to take an existing dump.json for "already assembled" and
// throw the new records away.
TEST(DumpWriter, SecondRunIntoTheSameDirectoryReplacesTheFirst) {
  std::string dir = scratch_dir("writer_rerun");
  {
    DumpWriter w(dir, DumpHeader{});
    w.add_entry("Functional.relu.0.forward", "{}");
    w.finish();
  }
  {
    DumpWriter w(dir, DumpHeader{});
    w.add_entry("Functional.gelu.0.forward", "{}");
    w.add_entry("Functional.gelu.1.forward", "{}");
    w.finish();
  }
  DumpFile d = read_dump_json(dir + "/dump.json");
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entry_name(0), "Functional.gelu.0.forward");
}

// Regression (review): a journal damaged under a running writer made finish() commit a truncated
// dump and delete the only full copy of the records. finish() now builds the files from the
// records it was given, never from the journal: damage there cannot truncate them.
TEST(DumpWriter, FinishCommitsEveryRecordWhateverHappenedToTheJournal) {
  std::string dir = scratch_dir("writer_damaged");
  DumpWriter w(dir, DumpHeader{});
  w.add_entry("Functional.relu.0.forward", "{}");
  {
    std::string j = read_file(dir + "/dump.journal");
    write_file(dir + "/dump.journal", j + "garbage-tail");
  }
  w.add_entry("Functional.relu.1.forward", "{}");
  w.finish();
  EXPECT_FALSE(fs::exists(dir + "/dump.journal"));
  DumpFile d = read_dump_json(dir + "/dump.json");
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entry_name(1), "Functional.relu.1.forward");
}

// finish() builds nothing from the journal, so when it fails the journal is the only full copy:
// it must stay, and dump.json must not be committed.
TEST(DumpWriter, FailedFinishCommitsNoDumpAndKeepsTheJournal) {
  std::string dir = scratch_dir("writer_finish_fails");
  DumpWriter w(dir, DumpHeader{});
  w.add_entry("Functional.relu.0.forward", "{}");
  fs::create_directories(dir + "/stack.json.tmp");  // stack.json cannot be written
  EXPECT_THROW(w.finish(), Error);
  EXPECT_FALSE(fs::exists(dir + "/dump.json"));
  EXPECT_TRUE(fs::exists(dir + "/dump.journal"));
  fs::remove_all(dir + "/stack.json.tmp");
  RecoverReport r = recover_rank_dir(dir);
  EXPECT_EQ(r.entries, 1u);
  EXPECT_TRUE(fs::exists(dir + "/dump.json"));
}

// A writer that cannot start leaves no journal behind (else every later writer would refuse the
// directory); one that stops unfinished leaves its journal and no dump.json.tmp fragment.
TEST(DumpWriter, ConstructorFailureLeavesNoJournalAndCrashLeavesNoFragment) {
  std::string dir = scratch_dir("writer_ctor_fails");
  fs::create_directories(dir + "/dump.json.tmp");  // dump.json.tmp cannot be created
  EXPECT_THROW(DumpWriter(dir, DumpHeader{}), Error);
  EXPECT_FALSE(fs::exists(dir + "/dump.journal"));
  fs::remove_all(dir + "/dump.json.tmp");
  {
    DumpWriter w(dir, DumpHeader{});
    w.add_entry("Functional.relu.0.forward", "{}");
    EXPECT_TRUE(fs::exists(dir + "/dump.json.tmp"));
  }
  EXPECT_FALSE(fs::exists(dir + "/dump.json.tmp"));
  EXPECT_TRUE(fs::exists(dir + "/dump.journal"));
  EXPECT_EQ(recover_rank_dir(dir).entries, 1u);
}

// A journal cut between a stack record and the references to it keeps what came before.
TEST(DumpWriter, JournalCutAfterASharedStackRecoversTheEntriesBeforeTheCut) {
  const std::vector<std::string> frames{"File a.py, line 1, in f, \n x = 1"};
  std::string dir = scratch_dir("writer_stack_cut");
  {
    DumpWriter w(dir, DumpHeader{});
    for (int i = 0; i < 3; ++i) {
      const std::string name = "Functional.relu." + std::to_string(i) + ".forward";
      w.add_entry(name, "{}");
      w.add_stack(name, frames, 9);
    }
  }
  const std::string j = read_file(dir + "/dump.journal");
  // Inside the last record: entry 2's stack reference.
  const size_t cut = j.rfind("Functional.relu.2.forward");
  write_file(dir + "/dump.journal", j.substr(0, cut));
  RecoverReport r = recover_rank_dir(dir);
  EXPECT_GT(r.bytes_dropped, 0u);
  EXPECT_EQ(r.entries, 3u);
  StackTable t = read_stack_json(dir + "/stack.json");
  ASSERT_EQ(t.group_names.size(), 1u);
  EXPECT_EQ(t.group_names[0].size(), 2u);  // entries 0 and 1
}

// Entries sharing a stack: the journal holds its frames once (later entries name the first), and
// both finish() and recovery from the journal give the same stack.json.
TEST(DumpWriter, SharedStacksAreJournaledOnceAndRecoveredWhole) {
  const std::vector<std::string> a{"File a.py, line 1, in f, \n x = 1",
                                   "File a.py, line 9, in <module>, \n f()"};
  const std::vector<std::string> b{"File b.py, line 2, in g, \n y = 2"};
  auto write = [&](const std::string& dir, bool finish) {
    DumpWriter w(dir, DumpHeader{});
    for (int i = 0; i < 4; ++i) {
      const std::string name = "Functional.relu." + std::to_string(i) + ".forward";
      w.add_entry(name, "{}");
      w.add_stack(name, i == 2 ? b : a, i == 2 ? 2 : 1);  // keyed by the caller
    }
    w.add_entry("Functional.gelu.0.forward", "{}");
    w.add_stack("Functional.gelu.0.forward", a);  // unkeyed: found by its frames
    if (finish) w.finish();
  };
  const std::string finished = scratch_dir("writer_stack_finish");
  const std::string crashed = scratch_dir("writer_stack_crash");
  write(finished, true);
  write(crashed, false);
  const std::string journal = read_file(crashed + "/dump.journal");
  size_t copies = 0;
  for (size_t p = journal.find(a[1]); p != std::string::npos; p = journal.find(a[1], p + 1))
    ++copies;
  EXPECT_EQ(copies, 1u);
  RecoverReport r = recover_rank_dir(crashed);
  EXPECT_EQ(r.bytes_dropped, 0u);
  EXPECT_EQ(r.stacks, 5u);
  const std::string stack_json = read_file(finished + "/stack.json");
  EXPECT_EQ(read_file(crashed + "/stack.json"), stack_json);
  StackTable t = read_stack_json(finished + "/stack.json");
  ASSERT_EQ(t.group_names.size(), 2u);
  EXPECT_EQ(t.group_names[0].size(), 4u);  // relu 0, 1, 3 and gelu 0
  EXPECT_EQ(t.group_names[1].size(), 1u);
}

}  // namespace

namespace numprobe::format {
namespace {

// Journals of version 1 (no stack references) are read as before.
TEST(JournalReader, ReadsVersionOneJournals) {
  std::string j(kJournalMagicV1, sizeof kJournalMagicV1);
  encode_record(j, kRecHeader, {"task", "\"statistics\"", "data", ""});
  encode_record(j, kRecEntry, {"Functional.relu.0.forward", "{}"});
  encode_record(j, kRecStack, {"Functional.relu.0.forward", "File a.py, line 1, in f, \n x"});
  AssembledDump d = assemble_journal_bytes(j.data(), j.size(), "v1.journal");
  EXPECT_EQ(d.report.bytes_dropped, 0u);
  EXPECT_EQ(d.report.entries, 1u);
  EXPECT_EQ(d.report.stacks, 1u);
  EXPECT_NE(d.dump_json.find("\"task\": \"statistics\""), std::string::npos);
}

}  // namespace
}  // namespace numprobe::format
