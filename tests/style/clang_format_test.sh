#!/usr/bin/env bash
# Every C++ and CUDA source of the repository is formatted as .clang-format says. Only with
# clang-format 14 (Debian 12's, which setup.sh installs): other versions place some breaks
# differently, and a check that fails on a tool's version would say nothing about the code.
# usage: clang_format_test.sh SOURCE_DIR      (exit 77 = skipped)
set -u
src=$1
command -v clang-format > /dev/null || { echo "clang-format not installed (bash scripts/setup.sh installs it)"; exit 77; }
version=$(clang-format --version | grep -o 'version [0-9]*' | cut -d' ' -f2)
[[ $version == 14 ]] || { echo "clang-format $version, not 14: the style check needs Debian 12's"; exit 77; }
cd "$src" || exit 1
files=$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' 2>/dev/null) ||
  files=$(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print)
# shellcheck disable=SC2086
if ! out=$(clang-format --dry-run --Werror $files 2>&1); then
  echo "$out" | grep 'error:' | head -20
  echo "not formatted: $(echo "$out" | grep -c 'error:') place(s); clang-format -i FILE fixes a file"
  exit 1
fi
echo "$(echo "$files" | wc -w) files formatted as .clang-format says"
