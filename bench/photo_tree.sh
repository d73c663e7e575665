# Sourced by the image benchmarks: photo_tree IMAGES prints the path of a folder of IMAGES
# ImageNet-sized JPEGs (500x375, quality 90) made once from the sample photos of Debian's
# python3-skimage and python3-sklearn: from the installed packages, else from the packages' files
# (apt-get download, unpacked into /tmp, nothing installed).
photo_tree() {
  local images=$1 python=/usr/bin/python3
  local photos=(/usr/lib/python3/dist-packages/skimage/data /usr/lib/python3/dist-packages/sklearn/datasets/images)
  if [[ ! -d ${photos[0]} ]]; then
    local cache=/tmp/ringtrain_debian_photos
    if [[ ! -d $cache/x ]]; then
      mkdir -p "$cache" && (cd "$cache" && apt-get download python3-skimage python3-sklearn > /dev/null 2>&1 &&
                            for d in *.deb; do dpkg -x "$d" x; done)
    fi
    photos=("$cache/x${photos[0]}" "$cache/x${photos[1]}")
  fi
  local tree=/tmp/ringtrain_photo_tree_$images
  [[ -d $tree ]] || $python bench/make_photo_tree.py "${photos[@]}" "$tree" --images "$images" >&2
  echo "$tree"
}
