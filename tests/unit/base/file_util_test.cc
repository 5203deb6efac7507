// The commit rules every writer shares (base/file_util.h): nothing at the final path until
// commit(), no temporary left behind either way.
#include "base/file_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "numprobe/error.h"

namespace fs = std::filesystem;
using numprobe::base::TempPath;

namespace {

fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() /
               (std::string("numprobe_file_util_") + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TempPath, CommitRenamesOverTheTarget) {
  const fs::path d = fresh_dir("commit");
  const std::string out = (d / "out.db").string();
  std::ofstream(out) << "old";
  {
    TempPath tmp(out, /*durable=*/true);
    EXPECT_NE(tmp.tmp(), out);
    EXPECT_EQ(fs::path(tmp.tmp()).parent_path(), d);  // beside it: the rename stays on one disk
    std::ofstream(tmp.tmp()) << "new";
    EXPECT_EQ(slurp(out), "old");  // untouched until commit
    tmp.commit();
  }
  EXPECT_EQ(slurp(out), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

TEST(TempPath, DestroyedWithoutCommitLeavesTheTargetAndNoTemporary) {
  const fs::path d = fresh_dir("abandon");
  const std::string out = (d / "out.xlsx").string();
  std::ofstream(out) << "old";
  try {
    TempPath tmp(out, /*durable=*/false);
    std::ofstream(tmp.tmp()) << "half";
    throw std::runtime_error("writer failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(slurp(out), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

TEST(TempPath, CommitOfNothingWrittenNamesTheFile) {
  const fs::path d = fresh_dir("missing");
  const std::string out = (d / "out.db").string();
  TempPath tmp(out);
  try {
    tmp.commit();
    FAIL() << "committed a temporary that was never written";
  } catch (const numprobe::Error& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.tmp()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(d);
}

}  // namespace
