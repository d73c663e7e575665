# oneDNN by header and library: Debian's dnnl-config.cmake also demands OpenCL, which the CPU
# engine does not need. Defines DNNL::dnnl and dnnl_VERSION; requires 2.x (the op-descriptor API).
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(DNNL_LIBRARY dnnl)
if(NOT DNNL_INCLUDE_DIR OR NOT DNNL_LIBRARY)
  message(FATAL_ERROR "oneDNN not found: install libdnnl-dev (scripts/setup.sh does)")
endif()
file(STRINGS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _dnnl_ver REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
string(REGEX REPLACE ".*MAJOR +([0-9]+).*MINOR +([0-9]+).*PATCH +([0-9]+).*" "\\1.\\2.\\3" dnnl_VERSION "${_dnnl_ver}")
if(NOT dnnl_VERSION MATCHES "^2\\.")
  message(FATAL_ERROR "oneDNN ${dnnl_VERSION} found; ringtrain's CPU ops use the 2.x API (Debian 12's libdnnl-dev 2.6)")
endif()
add_library(DNNL::dnnl UNKNOWN IMPORTED)
set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION "${DNNL_LIBRARY}"
                      INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}")
