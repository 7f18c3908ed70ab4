#include "hal/sim/sim_random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "hal/sim/sim_floats.h"
#include "hal/sim/sim_memory.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/random_task_shape.h"
#include "proto/acl/status_macros.h"

namespace hal::sim {
namespace {

// Philox4x32's multipliers and key increments (Salmon et al., SC'11).
constexpr uint32_t kMultiplier0 = 0xD2511F53;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kKeyStep0 = 0x9E3779B9;
constexpr uint32_t kKeyStep1 = 0xBB67AE85;
constexpr int kRounds = 10;
constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kTruncation = 2.0;  // truncated normal: within 2 standard deviations

absl::Status Invalid(const std::string& message) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat("aclrtRandomNumAsync: ", message));
}

bool IsFloatType(int32_t data_type) {
  return data_type == ACL_FLOAT || data_type == ACL_FLOAT16 || data_type == ACL_BF16;
}

bool IsSignedType(int32_t data_type) {
  return data_type == ACL_INT32 || data_type == ACL_INT64;
}

// The value of a number of `data_type` given as its little-endian bits.
double FloatOf(uint64_t bits, int32_t data_type) {
  if (data_type == ACL_FLOAT16) return HalfToDouble(static_cast<uint16_t>(bits));
  if (data_type == ACL_BF16) return Bf16ToFloat(static_cast<uint16_t>(bits));
  float value;
  const uint32_t word = static_cast<uint32_t>(bits);
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

uint64_t FloatBits(double value, int32_t data_type) {
  if (data_type == ACL_FLOAT16) return DoubleToHalf(value);
  if (data_type == ACL_BF16) return FloatToBf16(static_cast<float>(value));
  const float narrow = static_cast<float>(value);
  uint32_t word;
  std::memcpy(&word, &narrow, sizeof(word));
  return word;
}

// An integer of `data_type` in 64 bits: sign-extended (int32) or
// zero-extended (uint32).
uint64_t IntegerOf(uint64_t bits, int32_t data_type) {
  if (data_type == ACL_INT32) return static_cast<uint64_t>(int64_t{static_cast<int32_t>(bits)});
  if (data_type == ACL_UINT32) return static_cast<uint32_t>(bits);
  return bits;
}

// A parameter's value, as bits (read from device memory if it is held there).
uint64_t Read(const RandomParameter& parameter) {
  if (!parameter.at.has_value()) return parameter.value;
  uint64_t bits = 0;
  std::memcpy(&bits, SimBytes(*parameter.at), parameter.size);  // little-endian host
  return bits;
}

// The distribution's parameters, judged by value.
absl::Status CheckValues(const RandomNumbers& task, uint64_t first, uint64_t second) {
  switch (task.function) {
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK: {
      const double ratio = FloatOf(first, task.data_type);
      if (!(ratio >= 0.0 && ratio <= 1.0)) {
        return Invalid(absl::StrCat("the dropout ratio ", ratio, " is not in [0, 1]"));
      }
      return absl::OkStatus();
    }
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS: {
      if (IsFloatType(task.data_type)) {
        const double min = FloatOf(first, task.data_type), max = FloatOf(second, task.data_type);
        if (!std::isfinite(min) || !std::isfinite(max) || min > max) {
          return Invalid(absl::StrCat("uniform min ", min, " and max ", max,
                                      " must be finite with min <= max"));
        }
        return absl::OkStatus();
      }
      const uint64_t min = IntegerOf(first, task.data_type);
      const uint64_t max = IntegerOf(second, task.data_type);
      const bool ordered = IsSignedType(task.data_type)
                               ? static_cast<int64_t>(min) < static_cast<int64_t>(max)
                               : min < max;
      if (!ordered) return Invalid("uniform integers need min < max (max is excluded)");
      return absl::OkStatus();
    }
    default: {  // the normal distributions
      const double mean = FloatOf(first, task.data_type), stddev = FloatOf(second, task.data_type);
      if (!std::isfinite(mean) || !std::isfinite(stddev) || stddev < 0.0) {
        return Invalid(absl::StrCat("normal mean ", mean, " and stddev ", stddev,
                                    " must be finite with stddev >= 0"));
      }
      return absl::OkStatus();
    }
  }
}

std::array<uint32_t, 4> Block(uint64_t counter_low, uint64_t counter_high, uint64_t index,
                              uint64_t seed) {
  const uint64_t low = counter_low + index;
  const uint64_t high = counter_high + (low < counter_low ? 1 : 0);
  return Philox({static_cast<uint32_t>(low), static_cast<uint32_t>(low >> 32),
                 static_cast<uint32_t>(high), static_cast<uint32_t>(high >> 32)},
                {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

double UnitInterval(uint32_t word) { return (word >> 8) * (1.0 / (1 << 24)); }  // [0, 1)

// Two standard normal values from two words (Box-Muller).
std::array<double, 2> StandardNormals(uint32_t a, uint32_t b) {
  const double u1 = (static_cast<double>(a) + 1.0) / 4294967296.0;  // (0, 1]
  const double u2 = static_cast<double>(b) / 4294967296.0;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  return {radius * std::cos(kTwoPi * u2), radius * std::sin(kTwoPi * u2)};
}

double TruncatedStandardNormal(const std::array<uint32_t, 4>& words) {
  for (int pair = 0; pair < 2; ++pair) {
    for (double z : StandardNormals(words[2 * pair], words[2 * pair + 1])) {
      if (std::fabs(z) <= kTruncation) return z;
    }
  }
  return StandardNormals(words[0], words[1])[0] < 0 ? -kTruncation : kTruncation;
}

}  // namespace

std::array<uint32_t, 4> Philox(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      key[0] += kKeyStep0;
      key[1] += kKeyStep1;
    }
    const uint64_t product0 = uint64_t{kMultiplier0} * counter[0];
    const uint64_t product1 = uint64_t{kMultiplier1} * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key[0],
               static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key[1],
               static_cast<uint32_t>(product0)};
  }
  return counter;
}

absl::Status CheckRandomNumbers(const RandomNumbers& task) {
  ACL_RETURN_IF_ERROR(acld::CheckRandomTaskShape(
      {task.function, task.data_type, task.seed.size, task.count.size, task.first.size,
       task.second.size}));
  const bool two = task.function != ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK;
  if (!task.first.at.has_value() && !(two && task.second.at.has_value())) {
    return CheckValues(task, task.first.value, task.second.value);
  }
  return absl::OkStatus();
}

absl::StatusOr<RandomDraw> RandomDraw::Start(const RandomNumbers& task) {
  RandomDraw draw;
  draw.task_ = task;
  draw.seed_ = Read(task.seed);
  draw.count_ = Read(task.count);
  draw.first_ = Read(task.first);
  draw.second_ = Read(task.second);
  ACL_RETURN_IF_ERROR(CheckValues(task, draw.first_, draw.second_));
  const std::optional<uint64_t> bytes =
      acld::RandomResultBytes(task.function, task.data_type, draw.count_);
  if (!bytes.has_value() || *bytes > task.result_room) {
    return Invalid(absl::StrCat(draw.count_, " numbers do not fit the ", task.result_room,
                                " bytes from randomResultAddr to the end of what the caller may "
                                "write there"));
  }
  std::memcpy(draw.counter_, SimBytes(task.counter), sizeof(draw.counter_));
  return draw;
}

void RandomDraw::Generate(uint64_t first, uint64_t end) const {
  end = std::min(end, count_);
  if (first >= end) return;
  const RandomNumbers& task = task_;
  uint8_t* out = SimBytes(task.result);
  const uint64_t element = acld::RandomElementBytes(task.data_type);

  if (task.function == ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK) {
    const double ratio = FloatOf(first_, task.data_type);
    // The bytes of [first, end): a piece starts on a byte (kRandomPieceNumbers).
    std::memset(out + first / 8, 0, (end + 7) / 8 - first / 8);
    for (uint64_t i = first; i < end; ++i) {
      const uint32_t word = Block(counter_[0], counter_[1], i, seed_)[0];
      if (UnitInterval(word) >= ratio) out[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    }
    return;
  }
  for (uint64_t i = first; i < end; ++i) {
    const std::array<uint32_t, 4> words = Block(counter_[0], counter_[1], i, seed_);
    uint64_t bits;
    if (task.function == ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS && !IsFloatType(task.data_type)) {
      // Integers, [min, max): the range fits 64 bits since min < max.
      const uint64_t min = IntegerOf(first_, task.data_type);
      const uint64_t range = IntegerOf(second_, task.data_type) - min;
      const uint64_t word = (uint64_t{words[1]} << 32) | words[0];
      bits = min + static_cast<uint64_t>((static_cast<unsigned __int128>(word) * range) >> 64);
    } else {
      const double a = FloatOf(first_, task.data_type);
      const double b = FloatOf(second_, task.data_type);
      double value;
      switch (task.function) {
        case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS:
          value = a + UnitInterval(words[0]) * (b - a);
          break;
        case ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS:
          value = a + b * StandardNormals(words[0], words[1])[0];
          break;
        default:
          value = a + b * TruncatedStandardNormal(words);
          break;
      }
      bits = FloatBits(value, task.data_type);
    }
    std::memcpy(out + i * element, &bits, element);  // little-endian host
  }
}

absl::Status GenerateRandomNumbers(const RandomNumbers& task) {
  ACL_ASSIGN_OR_RETURN(RandomDraw draw, RandomDraw::Start(task));
  draw.Generate(0, draw.count());
  return absl::OkStatus();
}

}  // namespace hal::sim
