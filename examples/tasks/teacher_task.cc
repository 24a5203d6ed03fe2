#include "tasks/teacher_task.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace coll::trainer {
namespace {

// The examples live on a 16-dimensional latent space: the features are a fixed random linear
// embedding of the latent point, and the teacher labels the latent point (16 -> 32 tanh
// units -> classes, argmax). A teacher over 256 independent features left a student at 70 %
// test accuracy (it memorised the noise of the features the teacher ignored); on a
// low-dimensional latent a few thousand examples pin the teacher's function down.
constexpr size_t kLatent = 16, kTeacherHidden = 32;

// splitmix64: a counter-based generator, so any example can be made without its predecessors.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from (stream, index).
float uniform(uint64_t stream, uint64_t index) {
  return static_cast<float>(static_cast<double>(mix(mix(stream) ^ index) >> 11) * 0x1.0p-52 - 1.0);
}

struct Teacher {
  const TeacherSpec& s;
  std::vector<float> embed, w1, w2;  // inputs x latent, latent x hidden, hidden x classes

  explicit Teacher(const TeacherSpec& spec)
      : s(spec), embed(spec.inputs * kLatent), w1(kLatent * kTeacherHidden), w2(kTeacherHidden * spec.classes) {
    // Scales keep the features near unit range and the hidden units neither saturated nor
    // near zero (uniform [-1, 1) has variance 1/3).
    const float scale_embed = std::sqrt(3.0f / kLatent), scale1 = 1.7f * std::sqrt(3.0f / kLatent);
    for (size_t i = 0; i < embed.size(); ++i) embed[i] = scale_embed * uniform(s.seed * 8 + 1, i);
    for (size_t i = 0; i < w1.size(); ++i) w1[i] = scale1 * uniform(s.seed * 8 + 2, i);
    for (size_t i = 0; i < w2.size(); ++i) w2[i] = uniform(s.seed * 8 + 3, i);
  }

  void features(const float* z, float* x) const {
    for (size_t i = 0; i < s.inputs; ++i) {
      float v = 0;
      for (size_t k = 0; k < kLatent; ++k) v += embed[i * kLatent + k] * z[k];
      x[i] = v;
    }
  }

  int label(const float* z) const {
    float h[kTeacherHidden];
    for (size_t j = 0; j < kTeacherHidden; ++j) {
      float a = 0;
      for (size_t k = 0; k < kLatent; ++k) a += z[k] * w1[k * kTeacherHidden + j];
      h[j] = std::tanh(a);
    }
    int best = 0;
    float best_score = -1e30f;
    for (size_t c = 0; c < s.classes; ++c) {
      float score = 0;
      for (size_t j = 0; j < kTeacherHidden; ++j) score += h[j] * w2[j * s.classes + c];
      if (score > best_score) best_score = score, best = static_cast<int>(c);
    }
    return best;
  }
};

}  // namespace

Dataset makeTeacherShard(const TeacherSpec& spec, Split split, int rank, int world) {
  const Teacher teacher(spec);
  const size_t total = split == Split::train ? spec.train_examples : spec.test_examples;
  const uint64_t stream = spec.seed * 8 + (split == Split::train ? 4 : 5);
  const size_t w = static_cast<size_t>(world), r = static_cast<size_t>(rank);
  const size_t mine = total / w + (r < total % w ? 1 : 0);
  Dataset out;
  out.features.resize(mine, spec.inputs);
  out.labels.reserve(mine);
  float z[kLatent];
  for (size_t k = 0; k < mine; ++k) {
    const size_t example = k * w + r;
    for (size_t i = 0; i < kLatent; ++i) z[i] = uniform(stream, example * kLatent + i);
    teacher.features(z, &out.features.data[k * spec.inputs]);
    out.labels.push_back(teacher.label(z));
  }
  return out;
}

}  // namespace coll::trainer
