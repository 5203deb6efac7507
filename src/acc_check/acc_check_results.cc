// The two CSV files of an acc-check run, appended API by API so an interrupted run resumes.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/csv.h"
#include "base/file_util.h"
#include "base/mapped_file.h"
#include "numprobe/acc_check.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

constexpr std::string_view kResultPrefix = "accuracy_checking_result_";
constexpr std::string_view kDetailsPrefix = "accuracy_checking_details_";

std::string guarded(std::string_view v) {
  return csv_starts_like_formula(v) ? "'" + std::string(v) : std::string(v);
}

void append_row(std::string& out, const std::vector<std::string>& cells) {
  std::string line;
  for (const std::string& c : cells) csv_append_cell(line, c);
  if (line.empty()) line = "\"\"";  // a lone empty cell must not read back as no row
  out += line;
  out += '\n';
}

// Appends bytes to a file in one write, so a killed process leaves whole rows or none of them.
void append_file(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot open " + path + " for appending: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int e = errno;
      ::close(fd);
      throw Error("cannot write " + path + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  ::close(fd);
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  base::MappedFile f(path);
  return csv_parse(std::string_view(f.data() ? f.data() : "", f.size()), path);
}

std::vector<std::string> detail_cells(const std::string& subject, const AccColumns& c) {
  auto num = [](const std::optional<double>& v) { return acc_format_number(v); };
  const auto blank = [](const std::string& s) { return s.empty() ? std::string(" ") : s; };
  return {guarded(subject),
          blank(c.bench_dtype),
          blank(c.device_dtype),
          blank(c.shape),
          num(c.cosine),
          num(c.max_abs_err),
          num(c.rel_err_hundredth),
          num(c.rel_err_thousandth),
          num(c.rel_err_ten_thousandth),
          num(c.error_rate),
          num(c.eb),
          num(c.rmse),
          num(c.small_value_err_ratio),
          num(c.max_rel_err),
          num(c.mean_rel_err),
          num(c.inf_nan_error_ratio),
          num(c.rel_err_ratio),
          num(c.abs_err_ratio),
          num(c.max_ulp_error),
          num(c.mean_ulp_error),
          num(c.ulp_error_proportion),
          acc_status_name(c.status),
          guarded(c.message)};
}

// "Functional.gelu.0.forward.output.1" -> "Functional.gelu.0".
std::string_view api_of_subject(std::string_view subject) {
  for (std::string_view tag : {".forward.output.", ".backward.output."}) {
    const size_t at = subject.rfind(tag);
    if (at != std::string_view::npos) return subject.substr(0, at);
  }
  return subject;
}

void check_header(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<std::string>& header, const std::string& path) {
  if (rows.empty() || rows.front() != header)
    throw InputError(path, "not an acc-check result file: the first row is not msprobe's header (" +
                               header.front() + ", ...)");
}

}  // namespace

const std::vector<std::string>& acc_result_header() {
  static const std::vector<std::string> h = {"API name", "Forward Test Success",
                                             "Backward Test Success", "Message"};
  return h;
}

const std::vector<std::string>& acc_details_header() {
  static const std::vector<std::string> h = {"API Name",
                                             "Bench Dtype",
                                             "DEVICE Dtype",
                                             "Shape",
                                             "余弦相似度",
                                             "最大绝对误差",
                                             "双百指标",
                                             "双千指标",
                                             "双万指标",
                                             "二进制一致错误率",
                                             "误差均衡性",
                                             "均方根误差",
                                             "小值域错误占比",
                                             "相对误差最大值",
                                             "相对误差平均值",
                                             "inf/nan错误率",
                                             "相对误差错误率",
                                             "绝对误差错误率",
                                             "ULP误差最大值",
                                             "ULP误差平均值",
                                             "ULP误差大于阈值占比",
                                             "Status",
                                             "Message"};
  return h;
}

AccResultFiles AccResultFiles::create(const std::string& out_dir) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  AccResultFiles f;
  const std::string dir = out_dir.empty() ? "." : out_dir;
  f.result_path_ = dir + "/" + std::string(kResultPrefix) + stamp + ".csv";
  f.details_path_ = dir + "/" + std::string(kDetailsPrefix) + stamp + ".csv";
  std::string r, d;
  append_row(r, acc_result_header());
  append_row(d, acc_details_header());
  base::write_file_atomic(f.result_path_, r);
  base::write_file_atomic(f.details_path_, d);
  return f;
}

AccResultFiles AccResultFiles::resume(const std::string& result_csv, bool drop_unfinished) {
  AccResultFiles f;
  f.result_path_ = result_csv;
  const size_t slash = result_csv.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : result_csv.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? result_csv : result_csv.substr(slash + 1);
  if (base.compare(0, kResultPrefix.size(), kResultPrefix) != 0)
    throw InputError(result_csv, "-csv_path must name an " + std::string(kResultPrefix) +
                                     "{timestamp}.csv file");
  f.details_path_ = dir + std::string(kDetailsPrefix) + base.substr(kResultPrefix.size());

  const auto rows = read_csv(result_csv);
  check_header(rows, acc_result_header(), result_csv);
  for (size_t i = 1; i < rows.size(); ++i)
    if (!rows[i].empty()) f.done_.push_back(rows[i][0]);
  std::sort(f.done_.begin(), f.done_.end());
  f.done_.erase(std::unique(f.done_.begin(), f.done_.end()), f.done_.end());

  if (!drop_unfinished) return f;
  // Keep only the details of finished APIs: a run killed between the two appends left details
  // of an API the result file does not list, and that API runs again.
  std::string kept;
  append_row(kept, acc_details_header());
  if (base::file_exists(f.details_path_)) {
    const auto details = read_csv(f.details_path_);
    check_header(details, acc_details_header(), f.details_path_);
    for (size_t i = 1; i < details.size(); ++i)
      if (!details[i].empty() && f.done(api_of_subject(details[i][0])))
        append_row(kept, details[i]);
  }
  base::write_file_atomic(f.details_path_, kept);
  return f;
}

bool AccResultFiles::done(std::string_view api) const {
  return std::binary_search(done_.begin(), done_.end(), api);
}

void AccResultFiles::write(const std::string& api, AccStatus fwd, AccStatus bwd,
                           const std::vector<AccColumns>& forward,
                           const std::vector<AccColumns>& backward, const std::string& message) {
  std::string details;
  for (size_t i = 0; i < forward.size(); ++i)
    append_row(details, detail_cells(api + ".forward.output." + std::to_string(i), forward[i]));
  for (size_t i = 0; i < backward.size(); ++i)
    append_row(details, detail_cells(api + ".backward.output." + std::to_string(i), backward[i]));
  append_file(details_path_, details);

  std::string result;
  append_row(result, {guarded(api), acc_status_name(fwd), acc_status_name(bwd), guarded(message)});
  append_file(result_path_, result);
  done_.insert(std::upper_bound(done_.begin(), done_.end(), api), api);
}

}  // namespace numprobe
