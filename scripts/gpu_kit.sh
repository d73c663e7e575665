#!/usr/bin/env bash
# Builds the GPU kit: ringtrain and its GPU test executables in Release for one GPU architecture,
# stripped, with every shared library they need that a machine with only an NVIDIA driver, CUDA
# and PyTorch lacks (oneDNN, toml++, libjpeg, protobuf-lite, OpenCL, Open MPI and its runtime:
# mpirun, orted, their plugins and PMIx's), and the four Fashion-MNIST files the training tests
# read, packed as one .tar.xz. scripts/check_gpu.sh runs the check from it on the GPU machine,
# with no build there (docs/gpu.md, "Checking a GPU machine").
#
# usage: scripts/gpu_kit.sh [--arch SM] [--build DIR] [--prebuilt DIR] [--out FILE] [--fast]
#        scripts/gpu_kit.sh --verify KIT_DIR [--cuda-may-be-missing]
#   --arch SM        CUDA architecture to build for (default 90: H100 and H200)
#   --build DIR      the build tree to configure and build (default build-gpu-kit)
#   --prebuilt DIR   take the binaries from this existing CUDA build tree instead of building
#   --out FILE       the packed kit (default DIR/ringtrain-gpu-kit.tar.xz); the unpacked folder is
#                    kept beside it as FILE without .tar.xz
#   --fast           xz -1 instead of -6: twice as fast, about 4% larger (the tests' dry run)
#   --verify KIT     check the kit's library closure: with its lib/ on the library path, every
#                    binary and plugin in it finds each library in the kit, or is one of those the
#                    GPU machine provides (glibc, libstdc++, libgcc_s; CUDA's runtime, cuBLAS,
#                    cuDNN and NCCL, found through KIT/env.sh). With --cuda-may-be-missing a CUDA
#                    library not found is allowed (a machine without CUDA).
# The kit must be built against Open MPI (RINGTRAIN_MPI=openmpi, the default): it carries
# Open MPI's launcher, relocated through OPAL_PREFIX and PMIX_PREFIX (KIT/env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# What the GPU machine provides: the C and C++ runtimes, and the CUDA libraries its toolkit or
# PyTorch's nvidia/*/lib folders hold. Everything else the binaries load is carried.
system_libs='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|linux-vdso|libstdc\+\+|libgcc_s)\.so'
cuda_libs='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl|libnvrtc[a-z-]*|libnvJitLink)\.so'
# Open MPI plugins are kept only where everything they load is carried or provided: no InfiniBand,
# UCX, libfabric or PSM (a single GPU machine's ranks talk over shared memory and TCP).
mpi_plugin_deps='^(libevent_core-2\.1|libevent_pthreads-2\.1|libudev|libhwloc|libopen-pal|libopen-rte|libmpi|libz|libpmix|libnuma|libmunge|libmca_common_sm|libmca_common_monitoring)\.so'
binaries=(ringtrain tests/nn/test_gpu_parity tests/app/test_gpu_training tests/dist/test_gpu_ring bench/powersgd_products)
fashion_mnist=/usr/share/datasets/fashion-mnist
kit_limit_mib=48

die() { echo "gpu_kit: $*" >&2; exit 1; }

# The ELF files of a kit: its binaries, carried libraries and plugins.
kit_elves() { find "$1/bin" "$1/lib" "$1/mpi" -type f \( -perm -u+x -o -name '*.so*' \) -print | sort; }

# The libraries FILE loads as ldd resolves them, into deps_names and deps_paths ("not found" where
# none is). Parsed in bash: a process per line of ldd's took half a minute over a kit on a slow VM.
read_deps() {
  local line rest
  deps_names=() deps_paths=()
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*([^[:space:]]+)\ =\>\ (.*)$ ]] || continue
    deps_names+=("${BASH_REMATCH[1]}")
    rest=${BASH_REMATCH[2]}
    if [[ $rest == "not found"* ]]; then deps_paths+=("not found"); else deps_paths+=("${rest% (0x*}"); fi
  done < <(ldd "$1" 2>&1)
}

verify() {
  local kit=$1 cuda_missing_ok=$2 bad=0 f i magic name path
  [[ -f $kit/env.sh ]] || die "$kit/env.sh: missing (is $kit a kit folder?)"
  # shellcheck source=/dev/null
  source "$kit/env.sh"
  declare -A found=()
  while read -r f; do
    magic=""
    IFS= read -r -n4 magic <"$f" || true
    [[ $magic == $'\x7fELF' ]] || continue  # ELF files only
    read_deps "$f"
    for i in "${!deps_names[@]}"; do
      name=${deps_names[i]} path=${deps_paths[i]}
      if [[ $path == "not found" ]]; then
        if [[ $name =~ $cuda_libs ]] && [[ $cuda_missing_ok == 1 ]]; then continue; fi
        echo "gpu_kit: ${f#"$kit"/}: $name not found" >&2; bad=1
      elif [[ $path == "$kit"/* ]]; then
        :
      elif [[ $name =~ $system_libs ]]; then
        :
      elif [[ $name =~ $cuda_libs ]]; then
        [[ -v found[$name] ]] || found[$name]=$(readlink -f "$path")
      else
        echo "gpu_kit: ${f#"$kit"/}: $name comes from $path, outside the kit" >&2; bad=1
      fi
    done
  done < <(kit_elves "$kit")
  for name in "${!found[@]}"; do echo "  $name -> ${found[$name]}"; done | sort
  [[ $bad == 0 ]] || die "$kit: the library closure is incomplete (above)"
  echo "gpu_kit: $kit: every library is in the kit or provided by the machine"
}

# Copies into $kit/lib every library its ELF files load that the GPU machine does not provide. ldd
# lists a file's whole closure, so after the first pass only the libraries just copied are read
# again, until none is new.
gather_libraries() {
  local kit=$1 f i name path
  local -a todo added
  mapfile -t todo < <(kit_elves "$kit")
  while [[ ${#todo[@]} -gt 0 ]]; do
    added=()
    for f in "${todo[@]}"; do
      read_deps "$f"
      for i in "${!deps_names[@]}"; do
        name=${deps_names[i]} path=${deps_paths[i]}
        [[ $name =~ $system_libs || $name =~ $cuda_libs || -e $kit/lib/$name ]] && continue
        [[ $path == "not found" ]] && die "${f#"$kit"/} needs $name, which this machine does not have either"
        cp -L "$path" "$kit/lib/$name"
        chmod u+w "$kit/lib/$name"
        added+=("$kit/lib/$name")
      done
    done
    todo=("${added[@]}")
  done
}

# Open MPI's launcher and daemon, its plugins and help texts, and PMIx's, laid out for env.sh.
gather_open_mpi() {
  local kit=$1 info plugins pkgdata bindir sysconf pmix_lib pmix_root p name keep
  info=$(ompi_info --parsable --path all) || die "ompi_info failed: the kit needs Open MPI (scripts/setup.sh)"
  plugins=$(sed -n 's/^path:pkglibdir://p' <<<"$info" | head -1)
  pkgdata=$(sed -n 's/^path:pkgdatadir://p' <<<"$info" | head -1)
  bindir=$(sed -n 's/^path:bindir://p' <<<"$info" | head -1)
  sysconf=$(sed -n 's/^path:sysconfdir://p' <<<"$info" | head -1)
  mkdir -p "$kit/mpi/bin" "$kit/mpi/plugins" "$kit/mpi/share" "$kit/mpi/etc" "$kit/mpi/pmix/plugins" "$kit/mpi/pmix/share"
  cp "$bindir/orterun" "$bindir/orted" "$kit/mpi/bin/"
  ln -s orterun "$kit/mpi/bin/mpirun"
  cp -r "$pkgdata/." "$kit/mpi/share/"
  [[ -f $sysconf/openmpi-mca-params.conf ]] && cp "$sysconf/openmpi-mca-params.conf" "$kit/mpi/etc/"
  for p in "$plugins"/*.so; do
    read_deps "$p"
    keep=1
    for name in "${deps_names[@]}"; do
      [[ $name =~ $system_libs || $name =~ $mpi_plugin_deps ]] || keep=0
    done
    if [[ $keep == 1 ]]; then cp "$p" "$kit/mpi/plugins/"; fi
  done
  pmix_lib=$(ldd "$plugins/mca_pmix_ext3x.so" | awk '$1 == "libpmix.so.2" {print $3}')
  [[ -n $pmix_lib ]] || die "cannot find PMIx through Open MPI's mca_pmix_ext3x plugin"
  pmix_root=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
  cp "$pmix_root"/lib/pmix/*.so "$kit/mpi/pmix/plugins/"
  cp -r "$pmix_root/share/pmix/." "$kit/mpi/pmix/share/"
}

write_env() {
  cat >"$1/env.sh" <<'SH'
# Sourced by scripts/check_gpu.sh (or by hand) to run the kit's binaries: the kit's libraries and
# Open MPI, relocated, and the CUDA libraries this machine has, wherever they are.
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# CUDA's runtime, cuBLAS, cuDNN and NCCL: the dynamic linker's own, then the nvidia/*/lib folders
# of PyTorch's wheels (the versions PyTorch itself runs with), then CUDA's toolkit. PyTorch is
# found, not imported (importing it loads CUDA's libraries: seconds), and within 10 s.
cuda_dirs=""
add_cuda_dir() { [[ -d $1 && :$cuda_dirs: != *:$1:* ]] && cuda_dirs=${cuda_dirs:+$cuda_dirs:}$1; return 0; }
wheels=$(timeout 10 ${PYTHON:-python3} -c '
import glob, importlib.util, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
torch = importlib.util.find_spec("torch")  # wherever it is installed, its nvidia/ wheels are beside it
if torch and torch.origin:
    roots.insert(0, os.path.dirname(os.path.dirname(torch.origin)))
print(" ".join(d for r in roots for d in sorted(glob.glob(r + "/nvidia/*/lib"))))' 2>/dev/null)
for want in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$want " && continue
  for d in $wheels /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    if [[ -e $d/$want ]]; then add_cuda_dir "$d"; break; fi
  done
done
export LD_LIBRARY_PATH=$kit/lib${cuda_dirs:+:$cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$kit/mpi OPAL_BINDIR=$kit/mpi/bin OPAL_LIBDIR=$kit/lib OPAL_PKGLIBDIR=$kit/mpi/plugins
export OPAL_PKGDATADIR=$kit/mpi/share OPAL_SYSCONFDIR=$kit/mpi/etc
export PMIX_PREFIX=$kit/mpi/pmix PMIX_PKGLIBDIR=$kit/mpi/pmix/plugins PMIX_PKGDATADIR=$kit/mpi/pmix/share
export PATH=$kit/mpi/bin:$kit/bin:$PATH
export RINGTRAIN_MPI=openmpi RINGTRAIN_MPIEXEC=$kit/mpi/bin/mpirun
# Open MPI's shared-memory transport copies between processes with a call containers often refuse.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# PMIx's shared-memory data store (segments and locks shared between processes) is what a sandbox
# such as gVisor may break; its hash store keeps the same data in each process instead.
export PMIX_MCA_gds=hash
# Without an executable ssh or rsh on PATH (many containers) Open MPI refuses even a job on this
# machine alone; its isolated launcher starts the ranks here, which is all the kit's jobs need.
# (command -v would also name a file that is there but cannot run.)
remote_shell=""
IFS=: read -ra path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do [[ -x $d/ssh || -x $d/rsh ]] && remote_shell=$d/; done
[[ -n $remote_shell || -n ${OMPI_MCA_plm:-} ]] || export OMPI_MCA_plm=isolated
SH
}

arch=90 build=build-gpu-kit prebuilt="" out="" verify_kit="" cuda_missing_ok=0 level=6
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --prebuilt) prebuilt=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --verify) verify_kit=$2; shift 2 ;;
    --cuda-may-be-missing) cuda_missing_ok=1; shift ;;
    --fast) level=1; shift ;;
    *) die "unknown argument '$1' (see the usage at the top of $0)" ;;
  esac
done
if [[ -n $verify_kit ]]; then
  verify "$(cd "$verify_kit" && pwd)" "$cuda_missing_ok"
  exit 0
fi

if [[ -z $prebuilt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRINGTRAIN_CUDA=ON -DRINGTRAIN_MPI=openmpi \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "${binaries[@]##*/}"
  prebuilt=$build
fi
archs=$(grep -ho 'sm_[0-9a-z]*' "$prebuilt/nn/CMakeFiles/rt_nn.dir/flags.make" 2>/dev/null | sort -u | tr '\n' ' ')
[[ " $archs" == *" sm_$arch "* ]] || echo "gpu_kit: warning: $prebuilt is built for ${archs:-no CUDA architecture}, not sm_$arch" >&2
grep -q '^RINGTRAIN_MPI:STRING=openmpi$' "$prebuilt/CMakeCache.txt" ||
  die "$prebuilt is not built against Open MPI (RINGTRAIN_MPI=openmpi), whose launcher the kit carries"
[[ -n $out ]] || out=$prebuilt/ringtrain-gpu-kit.tar.xz
[[ $out == *.tar.xz ]] || die "--out $out: expected a name ending in .tar.xz"
kit=${out%.tar.xz}
rm -rf "$kit" "$out"
mkdir -p "$kit/bin" "$kit/lib" "$kit/data"
for b in "${binaries[@]}"; do
  [[ -x $prebuilt/$b ]] || die "$prebuilt/$b: not built (a build with CUDA makes it)"
  cp "$prebuilt/$b" "$kit/bin/"
  strip --strip-unneeded "$kit/bin/$(basename "$b")"
done
gather_open_mpi "$kit"
gather_libraries "$kit"
[[ -f $fashion_mnist/train-images-idx3-ubyte.gz ]] || die "$fashion_mnist: Fashion-MNIST is not installed (scripts/setup.sh)"
mkdir -p "$kit/data/fashion-mnist"
cp "$fashion_mnist"/*-ubyte.gz "$kit/data/fashion-mnist/"
write_env "$kit"
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "cuda architectures $archs"
} >"$kit/VERSION"
verify "$(cd "$kit" && pwd)" 1
# The five binaries each hold the same CUDA kernels (a few MiB): a dictionary that spans all of
# them packs those once, where xz's own (1 MiB at -1, 8 MiB at -6) would pack them five times. Sorted
# by name, bin/ (about 33 MiB) comes first, within xz's first block; the blocks pack in parallel,
# each on a core (on 2 cores about twice as fast as one block, and no larger).
tar -C "$(dirname "$kit")" --sort=name -cf - "$(basename "$kit")" |
  xz -T0 --block-size=40MiB --lzma2=preset="$level",dict=40MiB >"$out"
size=$(stat -c %s "$out")
echo "gpu_kit: $out: $((size / 1024 / 1024)) MiB ($size bytes; unpacked $(du -sm "$kit" | cut -f1) MiB)"
[[ $size -le $((kit_limit_mib * 1024 * 1024)) ]] || die "$out is over ${kit_limit_mib} MiB"
