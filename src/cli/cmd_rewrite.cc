// numprobe rewrite <dump> -o <dir>: write a dump again through numprobe's crash-safe writer, in
// the current msprobe schema (legacy api_info files and stack layouts come out in today's form).
#include <cstdio>
#include <filesystem>

#include "cli/subcommand.h"
#include "core/npy.h"
#include "format/dump_writer.h"
#include "numprobe/dump_tree.h"
#include "numprobe/error.h"

namespace fs = std::filesystem;

namespace numprobe::cli {
namespace {

class RewriteCommand : public Subcommand {
 public:
  const char* name() const override { return "rewrite"; }
  const char* summary() const override {
    return "Rewrite a dump (json files and tensors) through numprobe's crash-safe writers";
  }
  std::vector<Flag> flags() override {
    return {
        {"path", "dump.json, rank dir, step dir or dump root", Flag::kString, &path_, true},
        {"-o,--out", "output directory (step/rank layout is kept)", Flag::kString, &out_, true},
        {"--no-finish", "leave dump.journal unassembled, as a writer killed mid-step would",
         Flag::kBool, &no_finish_},
    };
  }

  int run() override {
    fs::path root(path_);
    if (fs::is_regular_file(root)) root = root.parent_path();
    for (const RankLocation& loc : find_rank_dumps(path_)) {
      RankDump d = load_rank_dump(loc);
      fs::path rel = fs::path(loc.dir).lexically_relative(root);
      fs::path dst = fs::path(out_) / (rel.empty() || rel == "." ? fs::path() : rel);
      // Tensors first: a failure there must not leave a journal behind in the output.
      TensorCopy copied = copy_tensors(d, loc.dir, dst.string());
      DumpWriter w(dst.string(), d.dump);
      for (size_t i = 0; i < d.dump.entries.size(); ++i) w.add_entry(d.dump, i);
      if (d.stack) {
        const StackTable& st = *d.stack;
        for (size_t g = 0; g < st.group_frames.size(); ++g) {
          std::vector<std::string> frames;
          for (uint32_t f : st.group_frames[g]) frames.emplace_back(st.strings.get(f));
          for (uint32_t n : st.group_names[g]) w.add_stack(st.strings.get(n), frames);
        }
      }
      if (d.construct) {
        for (const ConstructEdge& e : d.construct->edges) w.add_construct(*d.construct, e);
      }
      if (!no_finish_) w.finish();
      printf("%s -> %s (%zu entries%s", loc.dir.c_str(), dst.string().c_str(), w.entries(),
             no_finish_ ? ", journal left unassembled" : "");
      if (copied.npy + copied.other + copied.missing > 0) {
        printf("; tensors: %zu npy rewritten, %zu other files copied, %zu missing", copied.npy,
               copied.other, copied.missing);
      }
      printf(")\n");
    }
    return 0;
  }

 private:
  struct TensorCopy {
    size_t npy = 0, other = 0, missing = 0;
  };

  // .npy tensors go through numprobe's npy writer (raw-bits bf16/fp8 files take their dtype from
  // the leaf in dump.json); other data files (msprobe's .pt) are copied unchanged.
  static TensorCopy copy_tensors(const RankDump& d, const std::string& src_dir,
                                 const std::string& dst_dir) {
    TensorCopy c;
    const std::string src = src_dir + "/dump_tensor_data/", dst = dst_dir + "/dump_tensor_data/";
    for (const TensorLeaf& t : d.dump.tensors) {
      if (t.data_name == kNoString) continue;
      std::string name(d.dump.str(t.data_name));
      if (name.find('/') != std::string::npos || name == "..") {
        throw InputError(d.dump.path, "data_name must be a plain file name: " + name);
      }
      if (!fs::exists(src + name)) {
        ++c.missing;
        continue;
      }
      fs::create_directories(dst);
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) {
        NpyFile in = NpyFile::open(src + name);
        const NpyHeader& h = in.header();
        const DType dt = resolve_npy_dtype(h, t.dtype);
        if (dt != DType::kUnknown) {
          // Raw-bits files stay raw so that plain numpy still loads them.
          const auto mode =
              h.dtype == DType::kUnknown ? NpyNarrowMode::kRawBits : NpyNarrowMode::kExplicitDescr;
          write_npy(dst + name, in.data(), dt, h.shape, h.fortran_order, mode);
          ++c.npy;
          continue;
        }
      }
      // msprobe's .pt files and descrs numprobe does not decode are copied unchanged.
      fs::copy_file(src + name, dst + name, fs::copy_options::overwrite_existing);
      ++c.other;
    }
    return c;
  }

  std::string path_, out_;
  bool no_finish_ = false;
};

}  // namespace

std::unique_ptr<Subcommand> make_rewrite_command() {
  return std::make_unique<RewriteCommand>();
}

}  // namespace numprobe::cli
