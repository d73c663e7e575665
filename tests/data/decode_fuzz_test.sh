#!/usr/bin/env bash
# Builds tests/data/decode_fuzz.cpp with clang's libFuzzer, AddressSanitizer and UBSan's bounds
# check, runs it once over a seed corpus of small images in every format the
# pipeline reads (made here with Pillow) plus the file that found stb_image's overflow (a JPEG
# behind fill bytes), then fuzzes for SECONDS (default 10). Any crash or sanitizer report fails.
# usage: decode_fuzz_test.sh SOURCE_DIR [SECONDS]      (exit 77 = skipped)
set -u
src=$1 seconds=${2:-10}
python=/usr/bin/python3
command -v clang++ > /dev/null || { echo "SKIP: no clang++ (scripts/setup.sh installs it)"; exit 77; }
$python -c "import PIL" 2> /dev/null || { echo "SKIP: $python lacks PIL for the seed corpus"; exit 77; }
work=$(mktemp -d /tmp/ringtrain_fuzz_XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$work/probe.cpp"
clang++ -fsanitize=fuzzer "$work/probe.cpp" -o "$work/probe" 2> /dev/null ||
  { echo "SKIP: clang++ has no libFuzzer runtime (scripts/setup.sh installs libclang-rt-14-dev)"; exit 77; }
# AddressSanitizer and UBSan's array-bounds check: memory errors, what a decoder must never make
# (the bounds check caught stb_image's JPEG overflow). Not all of UBSan: stb_image's PNG reader
# passes memcpy a null buffer with length 0 for an empty IDAT chunk, undefined on paper and
# harmless in fact, and such findings would fail CI at random.
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,bounds -fno-sanitize-recover=all -I"$src" \
  "$src/tests/data/decode_fuzz.cpp" "$src/data/image_decode.cpp" "$src/data/image_headers.cpp" "$src/data/jpeg_decode.cpp" "$src/base/check.cpp" \
  -ljpeg -lz -o "$work/decode_fuzz" || { echo "FAIL: the fuzz target does not build"; exit 1; }
mkdir -p "$work/seeds" "$work/corpus"
$python - "$work/seeds" << 'PY' || { echo "FAIL: no seed corpus"; exit 1; }
import io, os, sys
from PIL import Image
out = sys.argv[1]
rgb = Image.new("RGB", (13, 7))
rgb.putdata([((x * 37) % 256, (y * 53) % 256, (x * y * 11) % 256) for y in range(7) for x in range(13)])
saves = {
    "rgb.png": (rgb, {}), "gray.png": (rgb.convert("L"), {}), "rgba.png": (rgb.convert("RGBA"), {}),
    "palette.png": (rgb.convert("P"), {}), "rgb.bmp": (rgb, {}), "rgb.tga": (rgb, {}), "rgb.gif": (rgb, {}),
    "baseline.jpg": (rgb, {"quality": 80}), "gray.jpg": (rgb.convert("L"), {}),
    "progressive.jpg": (rgb, {"progressive": True}), "cmyk.jpg": (rgb.convert("CMYK"), {}),
    "444.jpg": (rgb, {"subsampling": 0}), "422.jpg": (rgb, {"subsampling": 1}),
}
for name, (img, opts) in saves.items():
    img.save(os.path.join(out, name), **opts)
# The finding: fill bytes before the JPEG marker, which only stb_image's JPEG decoder took for one.
jpg = open(os.path.join(out, "baseline.jpg"), "rb").read()
open(os.path.join(out, "fill_bytes_then_jpeg"), "wb").write(b"\xff" * 8 + jpg[:150])
PY
"$work/decode_fuzz" -runs=0 "$work/seeds" > "$work/seeds.log" 2>&1 || { cat "$work/seeds.log"; echo "FAIL: a seed"; exit 1; }
"$work/decode_fuzz" -max_total_time="$seconds" -seed=1 -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$work/" "$work/corpus" "$work/seeds" > "$work/fuzz.log" 2>&1 ||
  { tail -40 "$work/fuzz.log"; echo "FAIL: the fuzzer found an input (above)"; exit 1; }
echo "PASS: $(ls "$work/seeds" | wc -l) seeds and $(grep -o 'Done [0-9]* runs' "$work/fuzz.log" | tail -1) of fuzzing without a finding"
