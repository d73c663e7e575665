#!/usr/bin/env bash
# Note [Huge pages for the tests] (tests/CMakeLists.txt): CTest gives every test GLIBC_TUNABLES,
# and glibc's malloc takes it (a misspelt or unknown tunable is ignored without a word): the
# mapping of a 64 MiB malloc carries the kernel's "hg" flag (MADV_HUGEPAGE) in /proc/self/smaps,
# whether or not huge pages were free. Skips (77) where the kernel has no THP.
set -u
[[ ${GLIBC_TUNABLES:-} == glibc.malloc.hugetlb=1 ]] || { echo "FAIL: GLIBC_TUNABLES is '${GLIBC_TUNABLES:-}'"; exit 1; }
[[ -r /sys/kernel/mm/transparent_hugepage/enabled ]] || { echo "SKIP: this kernel has no THP"; exit 77; }
flags=$(/usr/bin/python3 - <<'PY'
import ctypes
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
p = libc.malloc(64 << 20)
inside = False
for line in open("/proc/self/smaps"):
    head = line.split()[0]
    if "-" in head and not head.endswith(":"):
        lo, hi = (int(x, 16) for x in head.split("-"))
        inside = lo <= p < hi
    elif inside and line.startswith("VmFlags:"):
        print(line.strip())
PY
)
if [[ " $flags " == *" hg "* ]]; then
  echo "PASS: a 64 MiB malloc is advised as huge pages ($flags)"
else
  echo "FAIL: a 64 MiB malloc is not advised as huge pages ('$flags'): glibc did not take GLIBC_TUNABLES=$GLIBC_TUNABLES"
  exit 1
fi
