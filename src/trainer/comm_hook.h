// Gradient-communication hooks (DDP's comm hooks): how one bucket's gradients travel.
//
// launch() starts the communication of a bucket's gradients, in place in `grads`, and returns
// its Work; complete() runs on the training thread after that Work finished, before the
// optimizer reads the gradients. Gradients leave complete() as the sum or the average over
// replicas, as the hook's Reduction says (average is what makes N replicas step like one
// replica on the global batch; sum suits optimizers that scale by the world size themselves).
// Hooks may keep per-bucket state; setup() sees the bucket plan first.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "coll/communicator.h"
#include "trainer/bucketer.h"

namespace coll::trainer {

enum class Reduction { sum, average };

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual void setup(const std::vector<Bucket>& buckets) {}
  virtual Work launch(Communicator& comm, const Bucket& bucket, std::span<float> grads) = 0;
  virtual void complete(const Bucket& bucket, std::span<float> grads) {}
};

// The default: one float32 all-reduce per bucket, in place.
class AllreduceHook : public CommHook {
 public:
  explicit AllreduceHook(Reduction reduction = Reduction::average) : reduction_(reduction) {}
  Work launch(Communicator& comm, const Bucket& bucket, std::span<float> grads) override;

 private:
  Reduction reduction_;
};

// Halves the bytes on the wire: gradients are rounded to float16 or bfloat16, all-reduced in
// that type (coll accumulates 16-bit types in float32 at each reduction) and widened back.
// bfloat16 keeps float32's range (no overflow of large gradients) with 8 bits of mantissa;
// float16 keeps 11 bits but overflows above 65504.
class CompressHook : public CommHook {
 public:
  CompressHook(DataType wire_type, Reduction reduction = Reduction::average);
  void setup(const std::vector<Bucket>& buckets) override;
  Work launch(Communicator& comm, const Bucket& bucket, std::span<float> grads) override;
  void complete(const Bucket& bucket, std::span<float> grads) override;

 private:
  DataType wire_type_;
  Reduction reduction_;
  std::vector<std::vector<uint16_t>> wire_;  // per bucket
};

std::unique_ptr<CommHook> makeCommHook(const std::string& name, Reduction reduction);  // "none", "fp16", "bf16"

}  // namespace coll::trainer
