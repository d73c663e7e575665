#include "app/image_options.h"

#include <cmath>

#include "base/check.h"
#include "models/registry.h"

namespace rt {

ImageSampleOptions image_sample_options(const DataConfig& d, const std::string& model) {
  ImageSampleOptions s;
  s.size = static_cast<int>(d.image_size > 0 ? d.image_size : find_model(model).default_input[1]);
  s.resize = static_cast<int>(d.resize_size > 0 ? d.resize_size : std::lround(s.size * 256.0 / 224.0));
  RT_CHECK(s.resize >= s.size, "data.resize_size = ", s.resize,
           " is smaller than the crop, data.image_size = ", s.size);
  s.crop = {d.crop_scale[0], d.crop_scale[1], d.crop_ratio[0], d.crop_ratio[1]};
  s.random_crop = d.random_crop;
  s.flip = d.flip;
  s.max_pixels = d.max_image_pixels;
  s.crop_region_decode = d.decode != JpegDecode::kWhole;
  s.scaled_decode = d.decode == JpegDecode::kScaled;
  s.channels = static_cast<int>(d.channels);
  RT_CHECK(d.mean.size() == static_cast<size_t>(s.channels) && d.std.size() == d.mean.size(),
           "data.mean and data.std need ", s.channels, " value(s) each for data.channels = ", s.channels, ", got ",
           d.mean.size(), " and ", d.std.size());
  for (size_t c = 0; c < d.mean.size(); ++c) s.mean[c] = d.mean[c], s.std[c] = d.std[c];
  return s;
}

}  // namespace rt
