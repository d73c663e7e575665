# Sourced (not run) by the shell tests that train on Fashion-MNIST, and by bench/same_behaviour.sh:
#   source "$src/tests/support/fashion_mnist.sh"
#   require_fashion_mnist                             # exit 77 (skipped) unless it is installed
#   fashion_mnist_subset "$work/data" 512 256 || exit 1
#   common=(--config "$src/configs/fashion_mnist.toml" ... "${subset_data[@]}")
# shellcheck shell=bash

# Where scripts/setup.sh installs it (Debian's dataset-fashion-mnist), the configs' data.dir.
fashion_mnist=/usr/share/datasets/fashion-mnist
fashion_mnist_support=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Whether Fashion-MNIST is installed.
have_fashion_mnist() { [[ -f $fashion_mnist/train-images-idx3-ubyte.gz ]]; }

# Ends the test as skipped (exit 77, what the tests' SKIP_RETURN_CODE says) unless it is installed.
require_fashion_mnist() {
  have_fashion_mnist || { echo "SKIP: Fashion-MNIST not installed in $fashion_mnist"; exit 77; }
}

# fashion_mnist_folders DIR [LIMIT]: exports Fashion-MNIST as PNG class folders into DIR (train/
# and val/, LIMIT images per split, all without) with /usr/bin/python3; exits 77 (skipped) where
# that python lacks numpy or PIL for the export.
fashion_mnist_folders() {
  local python=/usr/bin/python3 limit=()
  [[ $# -ge 2 ]] && limit=(--limit "$2")
  $python -c "import numpy, PIL" 2> /dev/null || { echo "SKIP: $python lacks numpy or PIL for the export"; exit 77; }
  $python "$fashion_mnist_support/../../datasets/fashion_mnist_to_folders.py" "$1" "${limit[@]}" > /dev/null
}

# subset_data_args DIR: sets the array subset_data to the --set arguments that read the IDX subset
# in DIR (as fashion_mnist_subset writes it) instead of the whole data set.
subset_data_args() {
  # shellcheck disable=SC2034  # read by the scripts that source this file
  subset_data=(--set data.dir="$1" --set data.train_images=train-images-idx3-ubyte
               --set data.train_labels=train-labels-idx1-ubyte --set data.test_images=t10k-images-idx3-ubyte
               --set data.test_labels=t10k-labels-idx1-ubyte)
}

# fashion_mnist_subset DIR TRAIN TEST: writes the first TRAIN training and TEST test samples to DIR
# (created; it must not exist) as uncompressed IDX files, and sets subset_data for it. Fails as
# tests/support/idx_subset.py does.
fashion_mnist_subset() {
  python3 "$fashion_mnist_support/idx_subset.py" "$fashion_mnist" "$1" "$2" "$3" || return
  subset_data_args "$1"
}
