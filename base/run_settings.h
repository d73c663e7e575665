// The run's settings that take one of a fixed set of values, as the enums the config holds and
// nn, data and dist take as they are; each with its names as the config file spells them. What
// each value does is said where the config's schema explains its key (config/config_schema.h).
#pragma once

#include "base/named_enum.h"

namespace rt {

enum class DataSource { kIdx, kImageFolder, kSynthetic, kShards, kTfRecord };  // data.source
enum class TailPolicy { kDrop, kPad };                                         // data.tail
enum class BadFilePolicy { kSkip, kError };                                    // data.on_bad_file
enum class JpegDecode { kRegion, kScaled, kWhole };                            // data.decode
enum class Device { kCpu, kCuda };                                             // train.device
enum class ConvAlgorithm { kDirect, kWinograd };                               // train.conv_algorithm
// train.precision; Note [Mixed precision] in nn/ops/cuda/gpu_layout.h.
enum class Precision { kFp32, kTf32, kBf16, kFp16 };
enum class CudnnGraphUse { kNever, kWhereFaster, kAlways };        // train.cudnn_graph
enum class ScheduleKind { kConstant, kStep, kCosine, kPoly };      // schedule.kind
enum class OptimizerKind { kSgd, kLars };                          // train.optimizer
enum class Allreduce { kRing, kMpi, kNccl };                       // dist.allreduce
enum class TransportChoice { kAuto, kShm, kTcp, kMpi };            // dist.transport
enum class Hierarchy { kAuto, kFlat, kTwoLevel };                  // dist.hierarchy
enum class Wire { kFp32, kFp16, kBf16 };                           // dist.wire
enum class Compression { kNone, kPowerSgd };                       // dist.compression
enum class Autotune { kAuto, kOn, kOff, kReplay };                 // dist.autotune
enum class ProgressMode { kAuto, kBar, kLines, kNone };            // log.progress
enum class MlperfDivision { kClosed, kOpen };                      // mlperf.submission_division
enum class MlperfStatus { kOnprem, kCloud, kPreview, kResearch };  // mlperf.submission_status

// Whether a compression keeps state per gradient bucket (PowerSGD's errors and Q's follow the
// buckets it was made with), so that the buckets cannot change under it: the one place that says
// so for the config's rules, the tuner and the trainer.
inline bool fixes_buckets(Compression c) { return c != Compression::kNone; }

// The sources whose samples are image files, decoded and augmented by worker threads.
inline bool decodes_images(DataSource s) {
  return s == DataSource::kImageFolder || s == DataSource::kShards || s == DataSource::kTfRecord;
}

template <>
struct EnumNames<DataSource> {
  static constexpr std::array<std::string_view, 5> names{"idx", "imagefolder", "synthetic", "shards", "tfrecord"};
};
template <>
struct EnumNames<TailPolicy> {
  static constexpr std::array<std::string_view, 2> names{"drop", "pad"};
};
template <>
struct EnumNames<BadFilePolicy> {
  static constexpr std::array<std::string_view, 2> names{"skip", "error"};
};
template <>
struct EnumNames<JpegDecode> {
  static constexpr std::array<std::string_view, 3> names{"region", "scaled", "whole"};
};
template <>
struct EnumNames<Device> {
  static constexpr std::array<std::string_view, 2> names{"cpu", "cuda"};
};
template <>
struct EnumNames<ConvAlgorithm> {
  static constexpr std::array<std::string_view, 2> names{"direct", "winograd"};
};
template <>
struct EnumNames<Precision> {
  static constexpr std::array<std::string_view, 4> names{"fp32", "tf32", "bf16", "fp16"};
};
template <>
struct EnumNames<CudnnGraphUse> {
  static constexpr std::array<std::string_view, 3> names{"off", "where_faster", "always"};
};
template <>
struct EnumNames<ScheduleKind> {
  static constexpr std::array<std::string_view, 4> names{"constant", "step", "cosine", "poly"};
};
template <>
struct EnumNames<OptimizerKind> {
  static constexpr std::array<std::string_view, 2> names{"sgd", "lars"};
};
template <>
struct EnumNames<Allreduce> {
  static constexpr std::array<std::string_view, 3> names{"ring", "mpi", "nccl"};
};
template <>
struct EnumNames<TransportChoice> {
  static constexpr std::array<std::string_view, 4> names{"auto", "shm", "tcp", "mpi"};
};
template <>
struct EnumNames<Hierarchy> {
  static constexpr std::array<std::string_view, 3> names{"auto", "flat", "two_level"};
};
template <>
struct EnumNames<Wire> {
  static constexpr std::array<std::string_view, 3> names{"fp32", "fp16", "bf16"};
};
template <>
struct EnumNames<Compression> {
  static constexpr std::array<std::string_view, 2> names{"none", "powersgd"};
};
template <>
struct EnumNames<Autotune> {
  static constexpr std::array<std::string_view, 4> names{"auto", "on", "off", "replay"};
};
template <>
struct EnumNames<ProgressMode> {
  static constexpr std::array<std::string_view, 4> names{"auto", "bar", "lines", "none"};
};
template <>
struct EnumNames<MlperfDivision> {
  static constexpr std::array<std::string_view, 2> names{"closed", "open"};
};
template <>
struct EnumNames<MlperfStatus> {
  static constexpr std::array<std::string_view, 4> names{"onprem", "cloud", "preview", "research"};
};

}  // namespace rt
