#include "tasks/digits.h"

#include <zlib.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace coll::trainer {
namespace {

constexpr size_t kFeatures = 64;

void parseLine(const char* line, const std::string& path, size_t lineno, Dataset* out) {
  std::vector<float> row(kFeatures);
  const char* p = line;
  for (size_t j = 0; j <= kFeatures; ++j) {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p || v < 0 || (j < kFeatures && v > 16) || (j == kFeatures && v > 9))
      throw std::runtime_error("digits: " + path + " line " + std::to_string(lineno) + ": bad field " +
                               std::to_string(j));
    if (j < kFeatures) row[j] = static_cast<float>(v) / 16.0f;
    else out->labels.push_back(static_cast<int>(v));
    p = (*end == ',') ? end + 1 : end;
  }
  size_t r = out->features.rows;
  out->features.resize(r + 1, kFeatures);
  std::copy(row.begin(), row.end(), out->features.row(r));
}

}  // namespace

Dataset loadDigitsShard(const std::string& path, Split split, int rank, int world) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), &gzclose);
  if (!f) throw std::runtime_error("digits: cannot open " + path + " (apt-get install python3-sklearn)");
  Dataset out;
  out.features.resize(0, kFeatures);
  char line[1024];
  size_t lineno = 0, in_split = 0;
  while (gzgets(f.get(), line, sizeof line)) {
    bool is_test = lineno % 5 == 0;
    ++lineno;
    if (is_test != (split == Split::test)) continue;
    if (in_split++ % static_cast<size_t>(world) != static_cast<size_t>(rank)) continue;
    parseLine(line, path, lineno, &out);
  }
  if (lineno != kDigitsTrain + kDigitsTest)
    throw std::runtime_error("digits: " + path + " has " + std::to_string(lineno) + " lines, expected 1797");
  return out;
}

}  // namespace coll::trainer
