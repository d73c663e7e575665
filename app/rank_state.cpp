// Note [Rank state] in rank_state.h.
#include "app/rank_state.h"

#include "base/check.h"
#include "nn/tensor.h"

namespace rt {
namespace {

// Marks a rank file whose Q's are k x m (columns one after another); earlier files had none.
constexpr const char* kQLayoutKey = "powersgd_q";
constexpr const char* kQLayout = "k x m";

}  // namespace

std::string rank_state_path(const std::string& checkpoint, int rank, int ranks) {
  constexpr std::string_view kSuffix = ".safetensors";
  RT_CHECK(checkpoint.size() > kSuffix.size() &&
               checkpoint.compare(checkpoint.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0,
           "'", checkpoint, "' is not a .safetensors checkpoint");
  return str_cat(checkpoint.substr(0, checkpoint.size() - kSuffix.size()), ".rank", rank, "-of-", ranks, kSuffix);
}

StFile powersgd_state(PowerSgdBuckets& compression, const std::vector<std::string>& names) {
  compression.state_to_host();
  StFile f;
  f.metadata.emplace_back(kQLayoutKey, kQLayout);
  for (const PowerSgdBuckets::Tensor& t : compression.tensors()) {
    const PowerSgdMatrix& x = t.matrix;
    f.tensors.emplace_back("powersgd.error." + names.at(t.param), make_f32_tensor({x.n, x.m}, t.error.data()));
    f.tensors.emplace_back("powersgd.q." + names.at(t.param), make_f32_tensor({x.k, x.m}, t.q.data()));
  }
  compression.release_host_state();
  return f;
}

void load_powersgd_state(PowerSgdBuckets& compression, const std::vector<std::string>& names, const StFile& file,
                         const std::string& source) {
  RT_CHECK(file.meta(kQLayoutKey) == kQLayout, source, ": saved by a ringtrain from before 2026-11-28, which kept ",
           "PowerSGD's Q's as m x k; remove the checkpoints' rank files (*.rank*-of-*.safetensors) beside it to ",
           "resume with every rank's errors and Q's afresh");
  for (PowerSgdBuckets::Tensor& t : compression.tensors()) {
    const PowerSgdMatrix& x = t.matrix;
    for (auto [key, into, shape] : {std::tuple{"powersgd.error.", &t.error, std::vector<int64_t>{x.n, x.m}},
                                    std::tuple{"powersgd.q.", &t.q, std::vector<int64_t>{x.k, x.m}}}) {
      const std::string name = key + names.at(t.param);
      const StTensor* saved = file.find(name);
      RT_CHECK(saved != nullptr, source, ": no '", name, "'; the run that saved it compressed other tensors");
      RT_CHECK(saved->shape == shape, source, ": '", name, "' is ", shape_str(saved->shape), ", expected ",
               shape_str(shape), " (another dist.powersgd_rank?)");
      *into = as_f32(*saved, source + ": " + name);
    }
  }
  compression.state_from_host();
}

void SavedPowerSgd::save(StFile& into) {
  StFile state = powersgd_state(compression_, names_);
  into.metadata.insert(into.metadata.end(), state.metadata.begin(), state.metadata.end());
  for (auto& t : state.tensors) into.tensors.push_back(std::move(t));
}

void SavedPowerSgd::load(const StFile& from, const std::string& source) {
  load_powersgd_state(compression_, names_, from, source);
}

std::string SavedPowerSgd::afresh(int64_t missing, int ranks, const std::string& example) {
  if (!resumed_ || resumed_->step <= start_step_) return "";  // no compressed step was made
  return str_cat("PowerSGD's errors and Q's start afresh: ", missing, " of ", ranks,
                 " ranks have no file of their own beside the checkpoint, like ", example,
                 " (saved at another rank count, or without compression)");
}

}  // namespace rt
