// CaptureSession end to end, without torch: entries submitted on the driving thread are written by
// the background writer into <dump_path>/step<S>/rank[<R>]/{dump.json, stack.json, construct.json}
// (and dump_tensor_data/*.npy), readable by numprobe's own readers.
#include "capture/capture_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capture/capture_record.h"
#include "core/npy.h"
#include "core/stats.h"
#include "format/dump_render.h"
#include "format/dump_writer.h"
#include "numprobe/dtype.h"
#include "numprobe/dump.h"
#include "numprobe/error.h"
#include "numprobe/stack_construct.h"
#include "test_support.h"

namespace fs = std::filesystem;
using numprobe::capture::CaptureConfig;
using numprobe::capture::CaptureSession;
using numprobe::capture::EntryRecord;
using numprobe::capture::Level;
using numprobe::capture::StackFrame;
using numprobe::capture::Task;
using numprobe::testing::read_file;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

namespace {

// A single-process capture writes step{N}/proc{pid} (msprobe's name); this test process is that
// process.
const std::string kProc = "proc" + std::to_string(::getpid());

CaptureConfig config_in(const std::string& dir) {
  CaptureConfig c;
  c.dump_path = dir + "/dump";
  return c;
}

// {"input_args": [tensor with Max = Min = v], "input_kwargs": {}, "output": [{"type": "int",
// "value": 1}]}
// A float32 leaf of shape [1] holding v.
void add_scalar_leaf(EntryRecord& r, double v) {
  numprobe::capture::TensorLeaf& t = r.tensor();
  t.dtype = "torch.float32";
  t.shape = {1};
  t.has_stats = true;
  t.stats.count = 1;
  t.stats.max = t.stats.min = t.stats.sum = v;
  t.stats.sumsq = v * v;
}

EntryRecord entry(const std::string& name, double v = 1.0) {
  EntryRecord r;
  r.name = name;
  r.begin_dict();
  r.key("input_args");
  r.begin_list();
  add_scalar_leaf(r, v);
  r.end();
  r.key("input_kwargs");
  r.begin_dict();
  r.end();
  r.key("output");
  r.begin_list();
  r.typed("int");
  r.integer(1);
  r.end();
  r.end();
  return r;
}

std::vector<std::string> entry_names(const numprobe::DumpFile& d) {
  std::vector<std::string> out;
  for (size_t i = 0; i < d.entries.size(); ++i) out.emplace_back(d.entry_name(i));
  return out;
}

std::vector<std::string> names_in(const std::string& rank_dir) {
  return entry_names(numprobe::read_dump_json(rank_dir + "/dump.json"));
}

using Names = std::vector<std::string>;

CaptureSession::Frames frames(std::vector<StackFrame> f) {
  return std::make_shared<const std::vector<StackFrame>>(std::move(f));
}

// Names of each stack.json group, and its frames.
struct Group {
  Names names;
  Names frames;
};
std::vector<Group> stack_groups(const std::string& rank_dir) {
  numprobe::StackTable t = numprobe::read_stack_json(rank_dir + "/stack.json");
  std::vector<Group> out;
  for (size_t g = 0; g < t.group_names.size(); ++g) {
    Group grp;
    for (uint32_t n : t.group_names[g]) grp.names.emplace_back(t.strings.get(n));
    for (uint32_t f : t.group_frames[g]) grp.frames.emplace_back(t.strings.get(f));
    out.push_back(std::move(grp));
  }
  return out;
}

}  // namespace

TEST(CaptureSession, WritesTheStepRankFiles) {
  std::string dir = scratch_dir("capture_session_basic");
  CaptureSession s(config_in(dir));
  EXPECT_FALSE(s.active());
  s.start();
  EXPECT_TRUE(s.active());
  const std::string rank_dir = dir + "/dump/step0/" + kProc;
  EXPECT_EQ(s.rank_dir(), rank_dir);
  EntryRecord first = entry("Functional.conv2d.0.forward", 2.5);
  EntryRecord kept = first;
  s.submit(std::move(first));
  s.submit(entry("Tensor.add.0.forward"));
  s.submit(entry("Functional.relu.0.forward"));
  s.stop();
  EXPECT_FALSE(s.active());

  numprobe::DumpFile d = numprobe::read_dump_json(rank_dir + "/dump.json");
  EXPECT_EQ(entry_names(d), (Names{"Functional.conv2d.0.forward", "Tensor.add.0.forward",
                                   "Functional.relu.0.forward"}));
  EXPECT_EQ(d.task(), "statistics");
  EXPECT_EQ(d.level(), "L1");
  EXPECT_EQ(d.framework_name(), "pytorch");
  EXPECT_FALSE(d.dump_data_dir().has_value());
  // The entry is written as render_entry_record renders it.
  EXPECT_EQ(numprobe::format::render_entry_body(d, 0),
            numprobe::capture::render_entry_record(kept));
  EXPECT_TRUE(numprobe::read_stack_json(rank_dir + "/stack.json").group_names.empty());
  EXPECT_TRUE(numprobe::read_construct_json(rank_dir + "/construct.json").edges.empty());
  EXPECT_FALSE(fs::exists(rank_dir + "/" + numprobe::kJournalFileName));
  EXPECT_FALSE(fs::exists(rank_dir + "/dump_tensor_data"));
  EXPECT_EQ(s.stats().entries, 3u);
  EXPECT_EQ(s.stats().tensor_files, 0u);
  EXPECT_TRUE(s.writer_error().empty());
}

// "Functional.relu.<i>.forward" with a leaf of value i. Even entries have a second leaf with an
// md5 and a file name, odd ones do not: a reused leaf must not keep them.
static void fill_relu_entry(EntryRecord& r, int i) {
  r.name = "Functional.relu." + std::to_string(i) + ".forward";
  r.begin_dict();
  r.key("input_args");
  r.begin_list();
  add_scalar_leaf(r, i);
  if (i % 2 == 0) {
    numprobe::capture::TensorLeaf& u = r.tensor();
    u.dtype = "torch.int64";
    u.shape = {2, 2};
    u.crc32 = static_cast<uint32_t>(i);
    u.data_name = "x" + std::to_string(i) + ".npy";
  }
  r.end();
  r.end();
}

TEST(CaptureSession, RecycledRecordsWriteOnlyTheirOwnEntry) {
  // new_record() hands out the buffers of entries already written: every entry built in one must
  // come out exactly as the same entry built in a fresh record.
  std::string dir = scratch_dir("capture_session_recycle");
  CaptureSession s(config_in(dir));
  s.start();
  std::vector<std::string> expected;
  Names names;
  for (int i = 0; i < 300; ++i) {
    EntryRecord fresh;
    fill_relu_entry(fresh, i);
    expected.push_back(numprobe::capture::render_entry_record(fresh));
    names.push_back(fresh.name);
    EntryRecord r = s.new_record();
    fill_relu_entry(r, i);
    s.submit(std::move(r));
    if (i % 50 == 49) s.flush();  // written: their records go back to the pool
  }
  s.stop();
  numprobe::DumpFile d = numprobe::read_dump_json(dir + "/dump/step0/" + kProc + "/dump.json");
  ASSERT_EQ(entry_names(d), names);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(numprobe::format::render_entry_body(d, i), expected[i]) << names[i];
}

// Records and jobs are cached per recording thread: a second session on the same thread starts
// from a clean cache, and entries recorded on another thread arrive as well, each one whole.
TEST(CaptureSession, PerThreadCachesServeLaterSessionsAndOtherThreads) {
  for (int round = 0; round < 2; ++round) {
    std::string dir = scratch_dir("capture_session_cache" + std::to_string(round));
    CaptureSession s(config_in(dir));
    s.start();
    Names names;
    std::vector<std::string> expected;
    for (int i = 0; i < 300; ++i) {
      EntryRecord fresh;
      fill_relu_entry(fresh, i);
      names.push_back(fresh.name);
      expected.push_back(numprobe::capture::render_entry_record(fresh));
    }
    auto record = [&](int from, int to) {
      for (int i = from; i < to; ++i) {
        EntryRecord r = s.new_record();
        fill_relu_entry(r, i);
        s.submit(std::move(r));
      }
    };
    record(0, 100);
    s.flush();  // their records go back to the pool, for either thread to take
    std::thread other(record, 100, 200);
    other.join();
    s.flush();
    record(200, 300);
    s.stop();
    numprobe::DumpFile d = numprobe::read_dump_json(dir + "/dump/step0/" + kProc + "/dump.json");
    ASSERT_EQ(entry_names(d), names);
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(numprobe::format::render_entry_body(d, i), expected[i]) << names[i];
  }
}

TEST(CaptureSession, CounterSlotsRestartEachStep) {
  std::string dir = scratch_dir("capture_session_slots");
  CaptureSession s(config_in(dir));
  s.start();
  CaptureSession::CounterSlot slot = s.counter_slot("Functional.relu");
  EXPECT_EQ(CaptureSession::next_count(slot), 0);
  EXPECT_EQ(s.next_count("Functional.relu"), 1);
  EXPECT_EQ(CaptureSession::next_count(slot), 2);
  s.advance_step();
  EXPECT_EQ(s.counter_slot("Functional.relu"), slot);
  EXPECT_EQ(CaptureSession::next_count(slot), 0);
  EXPECT_EQ(s.next_count("Functional.relu"), 1);
  CaptureSession other(config_in(dir + "/other"));
  EXPECT_NE(other.id(), s.id());
  s.stop();
}

TEST(CaptureSession, HeaderFollowsTheConfig) {
  std::string dir = scratch_dir("capture_session_header");
  CaptureConfig c = config_in(dir);
  c.task = Task::kOverflowCheck;
  c.level = Level::kL0;
  CaptureSession s(c);
  s.start();
  s.submit(entry("Module.fc.Linear.forward.0"));
  s.stop();
  numprobe::DumpFile d = numprobe::read_dump_json(dir + "/dump/step0/" + kProc + "/dump.json");
  EXPECT_EQ(d.task(), "overflow_check");
  EXPECT_EQ(d.level(), "L0");
  EXPECT_FALSE(d.dump_data_dir().has_value());
}

// The MindSpore front names its framework; a step reopened by a second start() keeps it.
TEST(CaptureSession, HeaderNamesTheFrontsFramework) {
  std::string dir = scratch_dir("capture_session_framework");
  CaptureSession s(config_in(dir));
  s.set_framework("mindspore");
  s.start();
  s.submit(entry("Cell.fc.Dense.forward.0"));
  s.stop();
  s.start();
  s.submit(entry("Functional.gelu.0.forward"));
  s.stop();
  numprobe::DumpFile d = numprobe::read_dump_json(dir + "/dump/step0/" + kProc + "/dump.json");
  EXPECT_EQ(d.framework_name(), "mindspore");
  EXPECT_EQ(d.framework(), numprobe::Framework::kMindSpore);
  EXPECT_EQ(d.entries.size(), 2u);
}

TEST(CaptureSession, RankDirectory) {
  std::string dir = scratch_dir("capture_session_rank");
  CaptureSession s(config_in(dir));
  EXPECT_EQ(s.rank(), -1);
  s.set_rank(3);
  EXPECT_EQ(s.rank(), 3);
  s.start();
  EXPECT_EQ(s.rank_dir(), dir + "/dump/step0/rank3");
  s.submit(entry("Functional.relu.0.forward"));
  s.stop();
  EXPECT_EQ(names_in(dir + "/dump/step0/rank3"), (Names{"Functional.relu.0.forward"}));
  EXPECT_FALSE(fs::exists(dir + "/dump/step0/" + kProc));
}

TEST(CaptureSession, SetStepPicksTheStepDirectory) {
  std::string dir = scratch_dir("capture_session_set_step");
  CaptureSession s(config_in(dir));
  s.set_step(5);
  EXPECT_EQ(s.step(), 5);
  s.start();
  s.submit(entry("Functional.relu.0.forward"));
  s.stop();
  EXPECT_EQ(names_in(dir + "/dump/step5/" + kProc), (Names{"Functional.relu.0.forward"}));
}

TEST(CaptureSession, RelativeDumpPathIsMadeAbsolute) {
  CaptureConfig c;
  c.dump_path = "./some/dump";
  CaptureSession s(c);
  EXPECT_EQ(s.config().dump_path, (fs::current_path() / "some/dump").string());
  EXPECT_EQ(s.rank_dir(), s.config().dump_path + "/step0/" + kProc);
}

TEST(CaptureSession, AdvanceStepResetsCountersAndMovesOn) {
  std::string dir = scratch_dir("capture_session_advance");
  CaptureSession s(config_in(dir));
  s.start();
  EXPECT_EQ(s.next_count("Functional.relu"), 0);
  EXPECT_EQ(s.next_count("Functional.relu"), 1);
  EXPECT_EQ(s.next_count("Tensor.add"), 0);
  s.submit(entry("Functional.relu.0.forward"));
  s.submit(entry("Functional.relu.1.forward"));
  s.advance_step();
  EXPECT_EQ(s.step(), 1);
  EXPECT_TRUE(s.active());  // stays started
  // Step 0's files are complete when advance_step returns.
  EXPECT_EQ(names_in(dir + "/dump/step0/" + kProc),
            (Names{"Functional.relu.0.forward", "Functional.relu.1.forward"}));
  EXPECT_FALSE(fs::exists(dir + "/dump/step0/" + kProc + "/" + numprobe::kJournalFileName));
  EXPECT_EQ(s.next_count("Functional.relu"), 0);
  EXPECT_EQ(s.next_count("Tensor.add"), 0);
  EXPECT_EQ(s.rank_dir(), dir + "/dump/step1/" + kProc);
  s.submit(entry("Functional.relu.0.forward", 7));
  s.stop();
  EXPECT_EQ(names_in(dir + "/dump/step1/" + kProc), (Names{"Functional.relu.0.forward"}));
  EXPECT_EQ(names_in(dir + "/dump/step0/" + kProc).size(), 2u);
  EXPECT_EQ(s.stats().entries, 3u);
}

TEST(CaptureSession, AdvanceStepWhileStoppedStaysStopped) {
  std::string dir = scratch_dir("capture_session_advance_stopped");
  CaptureSession s(config_in(dir));
  s.advance_step();
  EXPECT_EQ(s.step(), 1);
  EXPECT_FALSE(s.active());
  s.stop();
  EXPECT_FALSE(fs::exists(dir + "/dump"));
}

TEST(CaptureSession, StepSelection) {
  std::string dir = scratch_dir("capture_session_steps");
  CaptureConfig c = config_in(dir);
  c.steps = {1};
  CaptureSession s(c);
  // What a hook does: check active() before any work.
  auto hook = [&](const std::string& name) {
    if (s.active()) s.submit(entry(name));
  };
  s.start();
  EXPECT_FALSE(s.active());
  EXPECT_FALSE(s.finished_for_good());
  hook("Functional.relu.0.forward");
  s.advance_step();
  EXPECT_EQ(s.step(), 1);
  EXPECT_TRUE(s.active());
  hook("Functional.relu.0.forward");
  hook("Functional.relu.1.forward");
  s.advance_step();
  EXPECT_EQ(s.step(), 2);
  EXPECT_FALSE(s.active());
  EXPECT_TRUE(s.finished_for_good());
  hook("Functional.relu.0.forward");
  s.stop();
  EXPECT_FALSE(fs::exists(dir + "/dump/step0"));
  EXPECT_FALSE(fs::exists(dir + "/dump/step2"));
  EXPECT_EQ(names_in(dir + "/dump/step1/" + kProc),
            (Names{"Functional.relu.0.forward", "Functional.relu.1.forward"}));
}

TEST(CaptureSession, RankSelection) {
  std::string dir = scratch_dir("capture_session_ranks");
  CaptureConfig c = config_in(dir);
  c.ranks = {1};
  {
    CaptureSession s(c);
    s.set_rank(0);
    s.start();
    EXPECT_FALSE(s.active());
    s.stop();
  }
  {
    CaptureSession s(c);
    s.set_rank(1);
    s.start();
    EXPECT_TRUE(s.active());
    s.stop();
  }
  {
    // Not distributed counts as rank 0.
    CaptureSession s(c);
    s.start();
    EXPECT_FALSE(s.active());
    s.stop();
  }
  EXPECT_FALSE(fs::exists(dir + "/dump"));
}

TEST(CaptureSession, StartStopTwiceInAStepAppends) {
  std::string dir = scratch_dir("capture_session_rounds");
  CaptureConfig c = config_in(dir);
  c.level = Level::kMix;
  CaptureSession s(c);
  const std::string src = dir + "/train.py";
  write_file(src, "import torch\ny = model(x)\nloss = y.sum()\n");
  auto f1 = frames({{src, 2, "<module>"}});
  auto f2 = frames({{src, 3, "<module>"}});
  EntryRecord a = entry("Module.fc.Linear.forward.0", 1);
  EntryRecord a_copy = a;

  s.start();
  s.submit(std::move(a), f1, true, std::nullopt);
  s.submit(entry("Functional.linear.0.forward", 2), f1, true, "Module.fc.Linear.forward.0");
  s.stop();
  const std::string rank_dir = dir + "/dump/step0/" + kProc;
  ASSERT_EQ(names_in(rank_dir).size(), 2u);

  s.start();
  s.submit(entry("Tensor.sum.0.forward", 3), f2, true, std::nullopt);
  s.submit(entry("Functional.linear.1.forward", 4), f1, true, "Module.fc.Linear.forward.0");
  s.stop();

  s.start();
  s.add_construct("Module.fc.Linear.forward.1", std::nullopt);
  s.stop();

  numprobe::DumpFile d = numprobe::read_dump_json(rank_dir + "/dump.json");
  EXPECT_EQ(entry_names(d), (Names{"Module.fc.Linear.forward.0", "Functional.linear.0.forward",
                                   "Tensor.sum.0.forward", "Functional.linear.1.forward"}));
  EXPECT_EQ(d.task(), "statistics");
  EXPECT_EQ(d.level(), "mix");
  // Entries of the earlier round are carried over unchanged.
  EXPECT_EQ(numprobe::format::render_entry_body(d, 0),
            numprobe::capture::render_entry_record(a_copy));

  auto groups = stack_groups(rank_dir);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, (Names{"Module.fc.Linear.forward.0", "Functional.linear.0.forward",
                                    "Functional.linear.1.forward"}));
  EXPECT_EQ(groups[1].names, (Names{"Tensor.sum.0.forward"}));
  EXPECT_EQ(groups[1].frames, (Names{"File " + src + ", line 3, in <module>, \n loss = y.sum()"}));

  numprobe::ConstructTable ct = numprobe::read_construct_json(rank_dir + "/construct.json");
  EXPECT_EQ(ct.edges.size(), 5u);
  EXPECT_EQ(ct.parent_of("Module.fc.Linear.forward.0"), std::optional<std::string_view>(""));
  EXPECT_EQ(ct.parent_of("Functional.linear.1.forward"),
            std::optional<std::string_view>("Module.fc.Linear.forward.0"));
  EXPECT_EQ(ct.parent_of("Module.fc.Linear.forward.1"), std::optional<std::string_view>(""));
  EXPECT_EQ(s.stats().entries, 4u);
}

TEST(CaptureSession, StackFramesAreRenderedAndGrouped) {
  std::string dir = scratch_dir("capture_session_stacks");
  const std::string src = dir + "/model.py";
  write_file(src,
             "class Net:\n"
             "    def forward(self, x):\n"
             "        return torch.relu(x)   \n"
             "\treturn\tx\t\r\n"
             "\n");
  CaptureSession s(config_in(dir));
  // Innermost frame first, as msprobe lists them.
  auto shared = frames({{src, 3, "forward"}, {src, 2, "<module>"}});
  auto other = frames({{src, 4, "train"}});
  auto blank = frames({{src, 5, "blank"}});
  // Same content as `shared` in another object: still one group.
  auto same_again = frames({{src, 3, "forward"}, {src, 2, "<module>"}});
  s.start();
  s.submit(entry("Functional.relu.0.forward"), shared);
  s.submit(entry("Functional.relu.1.forward"), shared);
  s.submit(entry("Tensor.add.0.forward"), other);
  s.submit(entry("Functional.relu.2.forward"), same_again);
  s.submit(entry("Tensor.mul.0.forward"), blank);
  s.submit(entry("Tensor.sub.0.forward"));  // no stack
  s.stop();
  const std::string rank_dir = dir + "/dump/step0/" + kProc;

  auto groups = stack_groups(rank_dir);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].names, (Names{"Functional.relu.0.forward", "Functional.relu.1.forward",
                                    "Functional.relu.2.forward"}));
  EXPECT_EQ(groups[0].frames,
            (Names{"File " + src + ", line 3, in forward, \n return torch.relu(x)",
                   "File " + src + ", line 2, in <module>, \n def forward(self, x):"}));
  EXPECT_EQ(groups[1].names, (Names{"Tensor.add.0.forward"}));
  EXPECT_EQ(groups[1].frames, (Names{"File " + src + ", line 4, in train, \n return\tx"}));
  // A blank source line: msprobe's code_context is ["\n"], stripped to "".
  EXPECT_EQ(groups[2].names, (Names{"Tensor.mul.0.forward"}));
  EXPECT_EQ(groups[2].frames, (Names{"File " + src + ", line 5, in blank, \n "}));

  // The raw text: msprobe's de-duplicated layout, json.dump(indent=1).
  std::string text = read_file(rank_dir + "/stack.json");
  EXPECT_EQ(text.rfind("{\n \"0\": [\n  [\n   \"Functional.relu.0.forward\",\n", 0), 0u) << text;
  EXPECT_NE(text.find("   \"File " + src + ", line 3, in forward, \\n return torch.relu(x)\",\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\\n return\\tx\""), std::string::npos) << text;
}

// msprobe (analyze_api_call_stack: `if not code: continue`) leaves out frames whose source line
// cannot be read (a missing file, <string>, <stdin>): no "File ..., \n " line with empty code.
TEST(CaptureSession, FramesWithoutSourceAreLeftOutAsMsprobeDoes) {
  std::string dir = scratch_dir("capture_session_no_source");
  const std::string src = dir + "/model.py";
  write_file(src, "y = f(x)\n");
  CaptureSession s(config_in(dir));
  s.start();
  s.submit(entry("Functional.relu.0.forward"),
           frames({{dir + "/missing.py", 3, "f"}, {"<string>", 1, "<module>"}, {src, 1, "g"}}));
  s.stop();
  auto groups = stack_groups(dir + "/dump/step0/" + kProc);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].frames, (Names{"File " + src + ", line 1, in g, \n y = f(x)"}));
}

TEST(CaptureSession, NoStacksWithoutExtraInfo) {
  std::string dir = scratch_dir("capture_session_no_extra_info");
  const std::string src = dir + "/model.py";
  write_file(src, "y = f(x)\n");
  CaptureConfig c = config_in(dir);
  c.extra_info = false;
  c.level = Level::kMix;
  CaptureSession s(c);
  s.start();
  s.submit(entry("Functional.relu.0.forward"), frames({{src, 1, "g"}}), true,
           "Module.a.A.forward.0");
  s.stop();
  const std::string rank_dir = dir + "/dump/step0/" + kProc;
  EXPECT_EQ(names_in(rank_dir).size(), 1u);
  EXPECT_TRUE(stack_groups(rank_dir).empty());
  EXPECT_TRUE(numprobe::read_construct_json(rank_dir + "/construct.json").edges.empty());
}

TEST(CaptureSession, ConstructEdgesForMixNotForL1) {
  for (Level level : {Level::kMix, Level::kL1}) {
    const bool mix = level == Level::kMix;
    std::string dir =
        scratch_dir(mix ? "capture_session_construct_mix" : "capture_session_construct_l1");
    CaptureConfig c = config_in(dir);
    c.level = level;
    CaptureSession s(c);
    s.start();
    s.submit(entry("Module.fc.Linear.forward.0"), nullptr, true, std::nullopt);
    s.submit(entry("Functional.linear.0.forward"), nullptr, true, "Module.fc.Linear.forward.0");
    s.submit(entry("Tensor.add.0.forward"));  // has_parent false: no edge
    s.stop();
    const std::string rank_dir = dir + "/dump/step0/" + kProc;
    std::string text = read_file(rank_dir + "/construct.json");
    if (mix) {
      EXPECT_EQ(text,
                "{\n \"Module.fc.Linear.forward.0\": null,\n"
                " \"Functional.linear.0.forward\": \"Module.fc.Linear.forward.0\"\n}");
      numprobe::ConstructTable ct = numprobe::read_construct_json(rank_dir + "/construct.json");
      EXPECT_EQ(ct.parent_of("Functional.linear.0.forward"),
                std::optional<std::string_view>("Module.fc.Linear.forward.0"));
      EXPECT_EQ(ct.parent_of("Tensor.add.0.forward"), std::nullopt);
    } else {
      EXPECT_EQ(text, "{}");
    }
    EXPECT_EQ(names_in(rank_dir).size(), 3u);
  }
}

TEST(CaptureSession, PendingTensorDataIsWrittenAsNpy) {
  std::string dir = scratch_dir("capture_session_tensor");
  CaptureConfig c = config_in(dir);
  c.task = Task::kTensor;
  c.level = Level::kMix;
  CaptureSession s(c);
  s.start();
  const std::string rank_dir = dir + "/dump/step0/" + kProc;

  auto values = std::make_shared<std::vector<float>>(
      std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f});
  std::weak_ptr<std::vector<float>> watch = values;
  auto bf16 = std::make_shared<std::vector<uint16_t>>();
  for (float v : {1.0f, -0.25f, 96.0f, 0.5f}) bf16->push_back(numprobe::float_to_bf16(v));

  EntryRecord r;
  r.name = "Functional.relu.0.forward";
  r.begin_dict();
  r.key("input_args");
  r.begin_list();
  {
    numprobe::capture::TensorLeaf& t = r.tensor();
    t.dtype = "torch.float32";
    t.shape = {2, 3};
    t.has_stats = true;
    t.stats = numprobe::compute_stats(values->data(), values->size(), numprobe::DType::kF32);
    t.data_name = "Functional.relu.0.forward.input.0.npy";
    t.pending.owner = values;
    t.pending.data = values->data();
    t.pending.dtype = numprobe::DType::kF32;
  }
  {
    numprobe::capture::TensorLeaf& t = r.tensor();
    t.dtype = "torch.bfloat16";
    t.shape = {4};
    t.has_stats = true;
    t.data_name = "Functional.relu.0.forward.input.1.npy";
    t.pending.owner = bf16;
    t.pending.data = bf16->data();
    t.pending.dtype = numprobe::DType::kBF16;
  }
  {
    // A data_name without bytes (saved elsewhere): no file from the session.
    numprobe::capture::TensorLeaf& t = r.tensor();
    t.dtype = "torch.float32";
    t.shape = {1};
    t.data_name = "Functional.relu.0.forward.input.2.npy";
  }
  r.end();
  r.end();
  s.submit(std::move(r));
  values.reset();
  bf16.reset();
  s.stop();

  // The bytes are released once written.
  EXPECT_TRUE(watch.expired());
  const std::string tdir = rank_dir + "/dump_tensor_data";
  {
    numprobe::NpyFile f = numprobe::NpyFile::open(tdir + "/Functional.relu.0.forward.input.0.npy");
    EXPECT_EQ(f.header().dtype, numprobe::DType::kF32);
    EXPECT_EQ(f.header().shape, (std::vector<int64_t>{2, 3}));
    EXPECT_FALSE(f.header().fortran_order);
    ASSERT_EQ(f.header().element_count, 6u);
    const float* p = static_cast<const float*>(f.data());
    EXPECT_EQ(std::vector<float>(p, p + 6),
              (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f}));
  }
  {
    numprobe::NpyFile f = numprobe::NpyFile::open(tdir + "/Functional.relu.0.forward.input.1.npy");
    EXPECT_EQ(f.header().dtype, numprobe::DType::kBF16);
    EXPECT_EQ(f.header().shape, (std::vector<int64_t>{4}));
    ASSERT_EQ(f.header().element_count, 4u);
    const uint16_t* p = static_cast<const uint16_t*>(f.data());
    EXPECT_EQ(numprobe::bf16_to_float(p[0]), 1.0f);
    EXPECT_EQ(numprobe::bf16_to_float(p[1]), -0.25f);
    EXPECT_EQ(numprobe::bf16_to_float(p[2]), 96.0f);
    EXPECT_EQ(numprobe::bf16_to_float(p[3]), 0.5f);
  }
  EXPECT_FALSE(fs::exists(tdir + "/Functional.relu.0.forward.input.2.npy"));
  EXPECT_EQ(s.stats().tensor_files, 2u);
  EXPECT_EQ(s.stats().tensor_bytes, 6u * 4 + 4u * 2);

  numprobe::DumpFile d = numprobe::read_dump_json(rank_dir + "/dump.json");
  EXPECT_EQ(d.task(), "tensor");
  EXPECT_EQ(d.level(), "mix");
  ASSERT_TRUE(d.dump_data_dir().has_value());
  EXPECT_EQ(*d.dump_data_dir(), tdir);
  ASSERT_EQ(d.tensors.size(), 3u);
  EXPECT_EQ(d.str(d.tensors[0].data_name), "Functional.relu.0.forward.input.0.npy");
  EXPECT_EQ(d.tensors[0].max.v, 7.0);
  EXPECT_EQ(d.tensors[0].min.v, -2.0);
}

TEST(CaptureSession, TensorDirIsCreatedOnDemand) {
  std::string dir = scratch_dir("capture_session_tensor_dir");
  CaptureSession s(config_in(dir));
  s.set_rank(2);
  s.start();
  std::string t = s.tensor_dir();
  EXPECT_EQ(t, dir + "/dump/step0/rank2/dump_tensor_data");
  EXPECT_TRUE(fs::is_directory(t));
  s.stop();
}

// numprobe_env.json's route: the writer thread writes a side file into the rank directory it was
// queued for, also for a step that dumps no entry, and never over a file already there.
TEST(CaptureSession, SideFilesAreWrittenByTheWriterOnce) {
  std::string dir = scratch_dir("capture_session_side_file");
  CaptureSession s(config_in(dir));
  s.start();
  s.write_side_file("side.json", "{\"first\": 1}\n");
  s.stop();  // no entry: no dump.json, the side file all the same
  const std::string rank_dir = dir + "/dump/step0/" + kProc;
  EXPECT_EQ(read_file(rank_dir + "/side.json"), "{\"first\": 1}\n");
  EXPECT_FALSE(fs::exists(rank_dir + "/dump.json"));
  s.start();
  s.write_side_file("side.json", "{\"second\": 2}\n");
  s.submit(entry("Functional.relu.0.forward"));
  s.advance_step();  // queued for step 0: written there, whatever the step is when it runs
  s.stop();
  s.flush();
  EXPECT_EQ(read_file(rank_dir + "/side.json"), "{\"first\": 1}\n");
  EXPECT_EQ(names_in(rank_dir), (Names{"Functional.relu.0.forward"}));
  EXPECT_FALSE(fs::exists(dir + "/dump/step1/" + kProc + "/side.json"));
}

TEST(CaptureSession, SideFileErrorSurfacesAsTheWritersNamingThePath) {
  std::string dir = scratch_dir("capture_session_side_file_error");
  CaptureConfig c;
  c.dump_path = dir + "/a_file";
  write_file(c.dump_path, "not a directory");
  CaptureSession s(c);
  s.start();
  s.write_side_file("side.json", "{}\n");
  try {
    s.stop();  // waits for the writer (async finish off)
    ADD_FAILURE() << "stop() did not throw";
  } catch (const numprobe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a_file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.start(), numprobe::Error);  // and again from the next start()
}

TEST(CaptureSession, DestructorCompletesTheFiles) {
  std::string dir = scratch_dir("capture_session_dtor");
  {
    CaptureSession s(config_in(dir));
    s.start();
    s.submit(entry("Functional.relu.0.forward"));
    s.submit(entry("Functional.relu.1.forward"));
  }
  const std::string rank_dir = dir + "/dump/step0/" + kProc;
  EXPECT_EQ(names_in(rank_dir), (Names{"Functional.relu.0.forward", "Functional.relu.1.forward"}));
  EXPECT_TRUE(fs::exists(rank_dir + "/stack.json"));
  EXPECT_TRUE(fs::exists(rank_dir + "/construct.json"));
  EXPECT_FALSE(fs::exists(rank_dir + "/" + numprobe::kJournalFileName));
}

TEST(CaptureSession, WriterErrorSurfacesFromStop) {
  std::string dir = scratch_dir("capture_session_writer_error");
  CaptureConfig c;
  c.dump_path = dir + "/a_file";
  write_file(c.dump_path, "not a directory");
  CaptureSession s(c);
  s.start();
  s.submit(entry("Functional.relu.0.forward"));
  try {
    s.stop();
    ADD_FAILURE() << "stop() did not throw";
  } catch (const numprobe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("numprobe capture"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(s.writer_error().empty());
  // The destructor swallows a repeated error.
}

TEST(CaptureSession, WriterErrorSurfacesFromAdvanceStep) {
  std::string dir = scratch_dir("capture_session_writer_error_advance");
  CaptureConfig c;
  c.dump_path = dir + "/a_file";
  write_file(c.dump_path, "x");
  CaptureSession s(c);
  s.start();
  s.submit(entry("Functional.relu.0.forward"));
  EXPECT_THROW(s.advance_step(), numprobe::Error);
}

TEST(CaptureSession, ManyEntriesKeepSubmissionOrder) {
  std::string dir = scratch_dir("capture_session_many");
  CaptureSession s(config_in(dir));
  s.start();
  Names expect;
  for (int i = 0; i < 700; ++i) {
    std::string name = "Functional.relu." + std::to_string(i) + ".forward";
    expect.push_back(name);
    s.submit(entry(name, i));
  }
  s.stop();
  numprobe::DumpFile d = numprobe::read_dump_json(dir + "/dump/step0/" + kProc + "/dump.json");
  EXPECT_EQ(entry_names(d), expect);
  ASSERT_EQ(d.tensors.size(), 700u);
  EXPECT_EQ(d.tensors[699].max.v, 699.0);
  EXPECT_GE(s.stats().queue_high_water, 1u);
}

TEST(CaptureSession, FlushLeavesARecoverableJournal) {
  std::string dir = scratch_dir("capture_session_flush");
  CaptureSession s(config_in(dir));
  s.start();
  s.submit(entry("Functional.relu.0.forward"));
  s.submit(entry("Functional.relu.1.forward"));
  s.flush();
  const std::string rank_dir = dir + "/dump/step0/" + kProc;
  const std::string journal = rank_dir + "/" + numprobe::kJournalFileName;
  ASSERT_TRUE(fs::exists(journal));
  EXPECT_FALSE(fs::exists(rank_dir + "/dump.json"));
  numprobe::AssembledDump a = numprobe::assemble_journal(journal);
  EXPECT_EQ(a.report.entries, 2u);
  numprobe::DumpFile d = numprobe::parse_dump_json(a.dump_json, "assembled.json");
  EXPECT_EQ(entry_names(d), (Names{"Functional.relu.0.forward", "Functional.relu.1.forward"}));
  s.stop();
  EXPECT_FALSE(fs::exists(journal));
  EXPECT_EQ(names_in(rank_dir).size(), 2u);
}

TEST(CaptureSession, NextCountIsThreadSafe) {
  std::string dir = scratch_dir("capture_session_counters");
  CaptureSession s(config_in(dir));
  constexpr int kThreads = 4, kEach = 500;
  std::vector<std::vector<int64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) got[t].push_back(s.next_count("Functional.relu"));
    });
  }
  for (auto& th : threads) th.join();
  std::vector<int64_t> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int64_t>(i));
}

TEST(CaptureSession, SubmitFromSeveralThreads) {
  std::string dir = scratch_dir("capture_session_threads");
  CaptureSession s(config_in(dir));
  s.start();
  constexpr int kThreads = 4, kEach = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i)
        s.submit(entry("Functional.t" + std::to_string(t) + "." + std::to_string(i) + ".forward"));
    });
  }
  for (auto& th : threads) th.join();
  s.stop();
  Names names = names_in(dir + "/dump/step0/" + kProc);
  ASSERT_EQ(names.size(), static_cast<size_t>(kThreads * kEach));
  // Each thread's entries keep their order.
  for (int t = 0; t < kThreads; ++t) {
    std::string prefix = "Functional.t" + std::to_string(t) + ".";
    int next = 0;
    for (const auto& n : names) {
      if (n.rfind(prefix, 0) == 0) {
        EXPECT_EQ(n, prefix + std::to_string(next) + ".forward");
        ++next;
      }
    }
    EXPECT_EQ(next, kEach);
  }
}

TEST(CaptureSession, GradProbeIsNotACaptureTask) {
  CaptureConfig cfg;
  cfg.task = numprobe::capture::Task::kGradProbe;
  cfg.dump_path = numprobe::testing::scratch_dir("session_grad_probe");
  try {
    CaptureSession s(cfg);
    FAIL() << "a capture session accepted task grad_probe";
  } catch (const numprobe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("monitor(model)"), std::string::npos) << e.what();
  }
}
