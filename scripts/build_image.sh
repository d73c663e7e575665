#!/usr/bin/env bash
# Builds ringtrain's container image from container/Dockerfile with podman, or docker where there is
# no podman (docs/launch.md, "The container image").
#
# usage: scripts/build_image.sh [--cuda] [--tag TAG] [BUILD OPTION ...]
#   --cuda        build the CUDA backend (build argument CUDA=1; unverified, see the Dockerfile)
#   --tag TAG     the image's name (default ringtrain:latest)
#   BUILD OPTION  passed on to `podman build` or `docker build`, e.g. --build-arg BASE=IMAGE,
#                 --build-arg JOBS=2, --build-arg FASHION_MNIST=0
set -euo pipefail
cd "$(dirname "$0")/.."

tag=ringtrain:latest
args=()
while (($#)); do
  case "$1" in
    --cuda) args+=(--build-arg CUDA=1); shift ;;
    --tag) tag=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

engine=$(command -v podman || command -v docker) || { echo "build_image: neither podman nor docker found" >&2; exit 1; }
exec "$engine" build -f container/Dockerfile -t "$tag" ${args[@]+"${args[@]}"} .  # bash < 4.4: empty under set -u
