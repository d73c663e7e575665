#!/usr/bin/env bash
# Installs the Debian packages ringtrain builds, tests and trains with. Idempotent: packages
# already present are skipped, so a second run does nothing and needs no network.
# RINGTRAIN_SETUP=build installs only what configuring and building ringtrain needs (the
# container's build stage, container/Dockerfile); RINGTRAIN_NO_ORACLE=1 leaves out PyTorch.
set -euo pipefail

# python3: tests/CMakeLists.txt asks for it at configure time, even when only ringtrain is built.
build_pkgs=(cmake g++ make pkg-config zlib1g-dev openmpi-bin libopenmpi-dev libdnnl-dev
            libtomlplusplus-dev libxxhash-dev nlohmann-json3-dev libstb-dev libjpeg62-turbo-dev libgtest-dev
            libgmock-dev libprotobuf-dev libboost-dev python3)
# MPICH beside Open MPI (the default): cmake -DRINGTRAIN_MPI=mpich builds and tests against it.
mpich_pkgs=(mpich libmpich-dev)
data_pkgs=(dataset-fashion-mnist)
# gnuplot draws the scaling sweep's chart (bench/scaling_sweep.sh), which a test runs.
bench_pkgs=(gnuplot-nox)
# The TensorBoard tests read event files back with Python's protobuf, from a .proto protoc compiles.
tensorboard_test_pkgs=(python3-protobuf protobuf-compiler)
# The TFRecord tests write tf.Examples with that protobuf and their framing CRCs with crcmod.
tfrecord_test_pkgs=(python3-crcmod)
# The style check (ctest -L style, tests/style/clang_format_test.sh) formats with clang-format 14.
style_pkgs=(clang-format)
# The fuzz targets' test (tests/data/fuzz/fuzz_test.sh) builds with clang's libFuzzer.
fuzz_pkgs=(clang libclang-rt-14-dev)
# PyTorch is only the independent oracle of the comparison tests (run with /usr/bin/python3), and
# the peer bench/cpu_vs_torch.py times; it calls whatever libblas.so.3 is installed, and OpenBLAS
# runs its fully connected layers about 3x faster than the reference BLAS. The benchmark runs
# PyTorch on tcmalloc, as PyTorch's CPU tuning advice has it: glibc's malloc maps and unmaps each
# large tensor every step, and the page faults cost PyTorch up to 3.9x (docs/results).
oracle_pkgs=(python3-torch python3-torchvision libopenblas0-pthread libtcmalloc-minimal4)
# A one-node Slurm for `ctest -L slurm`; its pmix plugin loads libpmix.so, which only libpmix-dev has.
slurm_pkgs=(slurm-wlm munge libpmix-dev)

case "${RINGTRAIN_SETUP:-all}" in
  all)
    want=("${build_pkgs[@]}" "${mpich_pkgs[@]}" "${data_pkgs[@]}" "${bench_pkgs[@]}" "${tensorboard_test_pkgs[@]}"
          "${tfrecord_test_pkgs[@]}" "${style_pkgs[@]}" "${fuzz_pkgs[@]}" "${slurm_pkgs[@]}")
    if [[ "${RINGTRAIN_NO_ORACLE:-0}" != 1 ]]; then want+=("${oracle_pkgs[@]}"); fi ;;
  build) want=("${build_pkgs[@]}") ;;
  *) echo "setup: RINGTRAIN_SETUP=${RINGTRAIN_SETUP}: expected all or build" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#want[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
