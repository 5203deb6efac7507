// The XLSX writer: sheet split with a small injected row limit, cells as in the CSV, no formulas.
// The workbook is read back with a minimal zip reader (central directory + zlib inflate).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>

#include "compare/compare_xlsx.h"
#include "numprobe/error.h"
#include "test_support.h"

using namespace numprobe;
using numprobe::testing::msprobe_fixture;
using numprobe::testing::read_csv;
using numprobe::testing::read_file;
using numprobe::testing::scratch_dir;
using numprobe::testing::write_file;

namespace {

uint32_t le(const std::string& s, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s.at(at + i));
  return v;
}

// Every member of a (non-ZIP64) zip archive: name -> uncompressed bytes.
std::map<std::string, std::string> unzip(const std::string& zip) {
  size_t eocd = zip.rfind(std::string("PK\x05\x06", 4));
  if (eocd == std::string::npos) throw std::runtime_error("not a zip");
  const uint32_t count = le(zip, eocd + 10, 2);
  size_t at = le(zip, eocd + 16, 4);
  std::map<std::string, std::string> files;
  for (uint32_t n = 0; n < count; ++n) {
    if (le(zip, at, 4) != 0x02014b50) throw std::runtime_error("bad central directory");
    const uint32_t method = le(zip, at + 10, 2), csize = le(zip, at + 20, 4),
                   usize = le(zip, at + 24, 4), name_len = le(zip, at + 28, 2),
                   extra = le(zip, at + 30, 2), comment = le(zip, at + 32, 2),
                   local = le(zip, at + 42, 4);
    std::string name = zip.substr(at + 46, name_len);
    at += 46 + name_len + extra + comment;
    const size_t data = local + 30 + le(zip, local + 26, 2) + le(zip, local + 28, 2);
    std::string out(usize, '\0');
    if (method == 0) {
      out = zip.substr(data, csize);
    } else {
      z_stream z{};
      if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw std::runtime_error("inflateInit2");
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zip.data() + data));
      z.avail_in = csize;
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = usize;
      const int rc = inflate(&z, Z_FINISH);
      inflateEnd(&z);
      if (rc != Z_STREAM_END) throw std::runtime_error("inflate " + name);
    }
    files[name] = out;
  }
  return files;
}

struct Sheet {
  std::string name;
  std::vector<std::vector<std::string>> rows;  // cell texts; numbers as written; "" where none
  std::vector<std::string> types;              // per row and column: 's' string, 'n' number, ' '
  std::string xml;
};

std::string xml_unescape(std::string s) {
  const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) {
      s.replace(at, std::strlen(from), to);
    }
  }
  return s;
}

// Sheets in workbook order with their cells (inline strings and numbers).
std::vector<Sheet> read_xlsx(const std::string& path) {
  auto files = unzip(read_file(path));
  std::vector<Sheet> sheets;
  const std::string& wb = files.at("xl/workbook.xml");
  std::regex sheet_re("<sheet name=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(wb.begin(), wb.end(), sheet_re); it != std::sregex_iterator();
       ++it) {
    Sheet s;
    s.name = (*it)[1];
    s.xml = files.at("xl/worksheets/sheet" + std::to_string(sheets.size() + 1) + ".xml");
    std::regex row_re("<row [^>]*>(.*?)</row>");
    std::regex cell_re(
        "<c r=\"([A-Z]+)[0-9]+\"[^>]*?( t=\"inlineStr\")?>(?:<is><t[^>]*>([^<]*)</t></is>|<v>("
        "[^<]*)</v>)</c>");
    for (auto r = std::sregex_iterator(s.xml.begin(), s.xml.end(), row_re);
         r != std::sregex_iterator(); ++r) {
      std::string body = (*r)[1];
      std::vector<std::string> cells;
      std::string types;
      for (auto c = std::sregex_iterator(body.begin(), body.end(), cell_re);
           c != std::sregex_iterator(); ++c) {
        size_t col = 0;
        for (char ch : (*c)[1].str()) col = col * 26 + static_cast<size_t>(ch - 'A' + 1);
        --col;
        if (cells.size() <= col) {
          cells.resize(col + 1);
          types.resize(col + 1, ' ');
        }
        const bool str = (*c)[2].matched;
        cells[col] = xml_unescape(str ? (*c)[3].str() : (*c)[4].str());
        types[col] = str ? 's' : 'n';
      }
      s.rows.push_back(cells);
      s.types.push_back(types);
    }
    sheets.push_back(std::move(s));
  }
  return sheets;
}

PairResult synthetic_statistics() {
  CompareReport r = compare_dumps(msprobe_fixture("synthetic_edge_cases/statistics/npu"),
                                  msprobe_fixture("synthetic_edge_cases/statistics/bench"));
  EXPECT_EQ(r.pairs.size(), 1u);
  return std::move(r.pairs.at(0));
}

TEST(CompareXlsx, SheetsSplitAtTheRowLimitWithTheHeaderRepeated) {
  PairResult p = synthetic_statistics();
  ASSERT_EQ(p.rows.size(), 37u);
  const std::string dir = scratch_dir("xlsx_split");
  write_compare_xlsx(dir + "/r.xlsx", p, false, XlsxOptions{5});  // header + 4 rows per sheet
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.xlsx.tmp"));
  std::vector<Sheet> sheets = read_xlsx(dir + "/r.xlsx");
  ASSERT_EQ(sheets.size(), 10u);  // 9 full sheets + 1 row
  const std::vector<std::string> header = compare_table_header(p, false);
  write_file(dir + "/r.csv", render_compare_csv(p, false));
  const auto csv = read_csv(dir + "/r.csv");
  size_t next = 0;
  for (size_t s = 0; s < sheets.size(); ++s) {
    EXPECT_EQ(sheets[s].name, s == 0 ? "result" : "result_" + std::to_string(s + 1));
    ASSERT_GE(sheets[s].rows.size(), 2u);
    EXPECT_LE(sheets[s].rows.size(), 5u);
    EXPECT_EQ(sheets[s].rows[0], header);
    for (size_t r = 1; r < sheets[s].rows.size(); ++r, ++next) {
      // Names continue in order: no row lost or repeated at a sheet boundary.
      EXPECT_EQ(sheets[s].rows[r].at(0), csv.rows.at(next).at(0)) << s << " " << r;
    }
  }
  EXPECT_EQ(next, 37u);
  EXPECT_EQ(sheets.back().rows.size(), 2u);
}

TEST(CompareXlsx, ExactlyFullSheetsAddNoEmptySheet) {
  PairResult p = synthetic_statistics();
  p.rows.resize(8);
  const std::string dir = scratch_dir("xlsx_full");
  write_compare_xlsx(dir + "/r.xlsx", p, false, XlsxOptions{5});
  std::vector<Sheet> sheets = read_xlsx(dir + "/r.xlsx");
  ASSERT_EQ(sheets.size(), 2u);
  EXPECT_EQ(sheets[1].rows.size(), 5u);
  // The smallest limit: one data row per sheet.
  write_compare_xlsx(dir + "/r2.xlsx", p, false, XlsxOptions{2});
  EXPECT_EQ(read_xlsx(dir + "/r2.xlsx").size(), 8u);
  // Without rows: the header alone.
  p.rows.clear();
  write_compare_xlsx(dir + "/r3.xlsx", p, false);
  sheets = read_xlsx(dir + "/r3.xlsx");
  ASSERT_EQ(sheets.size(), 1u);
  EXPECT_EQ(sheets[0].rows.size(), 1u);
}

TEST(CompareXlsx, RejectsALimitWithoutRoomForData) {
  PairResult p = synthetic_statistics();
  const std::string dir = scratch_dir("xlsx_bad");
  EXPECT_THROW(write_compare_xlsx(dir + "/r.xlsx", p, false, XlsxOptions{1}), Error);
  EXPECT_THROW(write_compare_xlsx(dir + "/r.xlsx", p, false, XlsxOptions{1048577}), Error);
  EXPECT_THROW(write_compare_xlsx(dir + "/missing/r.xlsx", p, false), Error);
  EXPECT_FALSE(std::filesystem::exists(dir + "/r.xlsx"));
}

TEST(CompareXlsx, CellsAreTheCsvTextsNumbersAsNumbers) {
  PairResult p = synthetic_statistics();
  const std::string dir = scratch_dir("xlsx_cells");
  write_compare_xlsx(dir + "/r.xlsx", p, false);
  write_file(dir + "/r.csv", render_compare_csv(p, false));
  const auto csv = read_csv(dir + "/r.csv");
  std::vector<Sheet> sheets = read_xlsx(dir + "/r.xlsx");
  ASSERT_EQ(sheets.size(), 1u);
  ASSERT_EQ(sheets[0].rows.size(), csv.rows.size() + 1);
  EXPECT_EQ(sheets[0].xml.find("<f>"), std::string::npos);  // no formula anywhere
  const size_t npu_max = csv.column("NPU max"), rel = csv.column("MaxRelativeErr"),
               name = csv.column("NPU Name");
  std::vector<TableCell> cells;
  size_t numbers = 0;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    compare_table_row(p, p.rows[r], false, cells);
    std::vector<std::string> x = sheets[0].rows[r + 1];
    std::string types = sheets[0].types[r + 1];
    x.resize(csv.rows[r].size());  // trailing blank cells
    types.resize(csv.rows[r].size(), ' ');
    for (size_t c = 0; c < x.size(); ++c) {
      const std::string& want = csv.rows[r][c];
      SCOPED_TRACE(csv.rows[r][name] + " column " + csv.header[c] + " = " + want);
      if (types[c] == 'n') {  // the same value to libxlsxwriter's 16 significant digits
        ++numbers;
        EXPECT_TRUE(cells[c].numeric);
        EXPECT_NEAR(std::stod(x[c]), std::stod(want), std::fabs(std::stod(want)) * 1e-15);
      } else {
        EXPECT_EQ(types[c], want.empty() ? ' ' : 's');
        EXPECT_EQ(x[c], want);
      }
      // A metric cell that is a plain number is a number; "nan", "inf", "N/A", "0.0%": text.
      const bool plain =
          !want.empty() && want.find_first_not_of("0123456789.-e+") == std::string::npos;
      EXPECT_EQ(types[c] == 'n', cells[c].numeric && plain);
    }
    EXPECT_EQ(types[name], 's');
    EXPECT_EQ(types[rel], 's');
  }
  EXPECT_GT(numbers, 37u * 8);
  // The npu_overflow output: NPU max is inf, so text.
  size_t overflow = 0;
  while (overflow < csv.rows.size() &&
         csv.rows[overflow][name] != "Functional.npu_overflow.0.forward.output.0") {
    ++overflow;
  }
  ASSERT_LT(overflow, csv.rows.size());
  EXPECT_EQ(sheets[0].types[overflow + 1][npu_max], 's');
  EXPECT_EQ(sheets[0].rows[overflow + 1][npu_max], "inf");
}

}  // namespace
