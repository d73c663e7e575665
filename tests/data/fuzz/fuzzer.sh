# Sourced by tests/data/fuzz/fuzz_test.sh and bench/fuzz.sh: builds the libFuzzer targets with
# AddressSanitizer and two of UBSan's checks (clang), and writes each target's seed corpus.
#
# The targets, and the project's sources each one needs beside its own file:
#   decode      decode_image: libjpeg-turbo for JPEGs, stb_image for the rest
#   region      a JPEG's box against its whole decode cropped, at a scale (a differential target)
#   tar         the tar member lister
#   tfrecord    TFRecord framing, then the tf.Example reader on each record
#   tf_example  the tf.Example reader on any bytes
fuzz_targets=(decode region tar tfrecord tf_example)
declare -A fuzz_sources=(
  [decode]="data/image_decode.cpp data/image_headers.cpp data/jpeg_decode.cpp"
  [region]="data/image_decode.cpp data/image_headers.cpp data/jpeg_decode.cpp data/image_transforms.cpp"
  [tar]="data/tar_members.cpp data/read_only_file.cpp"
  [tfrecord]="data/tf_example.cpp data/read_only_file.cpp base/tfrecord.cpp"
  [tf_example]="data/tf_example.cpp data/read_only_file.cpp base/tfrecord.cpp"
)
# AddressSanitizer, and UBSan's array-bounds and signed-overflow checks: memory errors and
# arithmetic a header's declared sizes can break, what a reader must never make (the bounds check
# caught stb_image's JPEG overflow; the overflow check, a PNG of 2^32 - 1 a side in the pixel
# budget's product). Not all of UBSan: stb_image's PNG reader passes memcpy a null buffer with
# length 0 for an empty IDAT chunk, undefined on paper and harmless in fact.
fuzz_flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,bounds,signed-integer-overflow -fno-sanitize-recover=all)

# fuzz_usable: why the targets cannot be built here (empty: they can).
fuzz_usable() {
  command -v clang++ >/dev/null || { echo "no clang++ (scripts/setup.sh installs it)"; return; }
  local probe
  probe=$(mktemp -d)
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
  clang++ -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>/dev/null ||
    echo "clang++ has no libFuzzer runtime (scripts/setup.sh installs libclang-rt-14-dev)"
  rm -rf "$probe"
  /usr/bin/python3 -c "import PIL" 2>/dev/null || echo "/usr/bin/python3 lacks PIL for the seed corpus"
}

# fuzz_build SRC OUT TARGET...: each target as OUT/TARGET_fuzz, every source compiled once.
fuzz_build() {
  local src=$1 out=$2 t f o objs
  shift 2
  mkdir -p "$out/obj"
  for t in "$@"; do
    objs=()
    for f in base/check.cpp ${fuzz_sources[$t]} "tests/data/fuzz/${t}_fuzz.cpp"; do
      o=$out/obj/${f//\//_}.o
      [[ -f $o ]] || clang++ "${fuzz_flags[@]}" -c -I"$src" "$src/$f" -o "$o" || return 1
      objs+=("$o")
    done
    clang++ "${fuzz_flags[@]}" "${objs[@]}" -ljpeg -lz -o "$out/${t}_fuzz" || return 1
  done
}

# fuzz_seeds TARGET DIR: small sound inputs of every kind the target reads, written by Python.
fuzz_seeds() {
  mkdir -p "$2"
  /usr/bin/python3 - "$1" "$2" <<'PY'
import io, os, struct, sys, tarfile
from PIL import Image
target, out = sys.argv[1:]

def put(name, data):
    open(os.path.join(out, name), "wb").write(data)

def image_bytes(img, fmt, **opts):
    b = io.BytesIO()
    img.save(b, fmt, **opts)
    return b.getvalue()

rgb = Image.new("RGB", (13, 7))
rgb.putdata([((x * 37) % 256, (y * 53) % 256, (x * y * 11) % 256) for y in range(7) for x in range(13)])
jpegs = {"baseline.jpg": (rgb, {"quality": 80}), "gray.jpg": (rgb.convert("L"), {}),
         "progressive.jpg": (rgb, {"progressive": True}), "cmyk.jpg": (rgb.convert("CMYK"), {}),
         "444.jpg": (rgb, {"subsampling": 0}), "422.jpg": (rgb, {"subsampling": 1})}
others = {"rgb.png": rgb, "gray.png": rgb.convert("L"), "rgba.png": rgb.convert("RGBA"),
          "palette.png": rgb.convert("P"), "rgb.bmp": rgb, "rgb.tga": rgb, "rgb.gif": rgb}
if target in ("decode", "region"):
    for name, (img, opts) in jpegs.items():
        put(name, image_bytes(img, "JPEG", **opts))
if target == "decode":
    for name, img in others.items():
        put(name, image_bytes(img, name.split(".")[1].upper().replace("JPG", "JPEG")))

# TFRecord: each record is length, masked CRC-32C of the length, data, masked CRC-32C of the data.
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

def field(number, wire, payload):
    return varint(number << 3 | wire) + (varint(len(payload)) + payload if wire == 2 else payload)

def varint(v):
    out = b""
    while True:
        out += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
        v >>= 7
        if not v:
            return out

def example(image, label):
    encoded = field(2, 2, field(1, 2, field(1, 2, image)))             # Feature.bytes_list.value
    labelled = field(2, 2, field(3, 2, field(1, 2, varint(label))))    # Feature.int64_list.value, packed
    entries = field(1, 2, field(1, 2, b"image/encoded") + encoded) + field(1, 2, field(1, 2, b"image/class/label") + labelled)
    return field(1, 2, entries)

examples = [example(image_bytes(rgb, "JPEG"), 3), example(image_bytes(rgb.convert("L"), "PNG"), 1000)]
if target == "tf_example":
    for i, e in enumerate(examples):
        put(f"example{i}", e)
if target == "tfrecord":
    frame = lambda d: struct.pack("<Q", len(d)) + struct.pack("<I", masked(struct.pack("<Q", len(d)))) + d + struct.pack("<I", masked(d))
    put("two.tfrecord", b"".join(frame(e) for e in examples))

if target == "tar":
    for fmt, name in ((tarfile.USTAR_FORMAT, "ustar.tar"), (tarfile.GNU_FORMAT, "gnu.tar"), (tarfile.PAX_FORMAT, "pax.tar")):
        b = io.BytesIO()
        with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
            long_name = "d/" + "long" * (20 if fmt == tarfile.USTAR_FORMAT else 40) + ".jpg"  # ustar: 100 at most
            for member, data in (("n0001.jpg", b"\xff\xd8\xff" * 5), ("n0001.cls", b"7\n"), (long_name, b"x" * 600)):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        put(name, b.getvalue())
PY
}
