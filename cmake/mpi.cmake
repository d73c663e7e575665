# Which MPI to build against and launch the tests with. Debian installs Open MPI and MPICH side by
# side (mpicc.openmpi, mpirun.openmpi; mpicc.mpich, mpiexec.hydra); elsewhere the plain names are
# used, and the library found must be of the implementation asked for.
set(RINGTRAIN_MPI openmpi CACHE STRING "MPI implementation to build against and test under: openmpi or mpich")
set_property(CACHE RINGTRAIN_MPI PROPERTY STRINGS openmpi mpich)
if(RINGTRAIN_MPI STREQUAL "openmpi")
  set(rt_mpi_suffix openmpi)
  set(rt_mpi_launchers mpirun.openmpi mpirun)
  set(rt_mpi_macro OMPI_MAJOR_VERSION)
elseif(RINGTRAIN_MPI STREQUAL "mpich")
  set(rt_mpi_suffix mpich)
  set(rt_mpi_launchers mpiexec.hydra mpiexec.mpich mpiexec)
  set(rt_mpi_macro MPICH_VERSION)
else()
  message(FATAL_ERROR "RINGTRAIN_MPI = \"${RINGTRAIN_MPI}\": expected openmpi or mpich")
endif()
# FindMPI caches what it found: another MPI in the same build tree would mix the two.
if(DEFINED RINGTRAIN_MPI_CONFIGURED AND NOT RINGTRAIN_MPI_CONFIGURED STREQUAL RINGTRAIN_MPI)
  message(FATAL_ERROR "this build tree was configured with RINGTRAIN_MPI = ${RINGTRAIN_MPI_CONFIGURED}; for "
                      "${RINGTRAIN_MPI} use another build folder, or cmake --fresh")
endif()

if(NOT MPI_C_COMPILER)
  find_program(rt_mpicc NAMES mpicc.${rt_mpi_suffix} mpicc)
  if(rt_mpicc)
    set(MPI_C_COMPILER ${rt_mpicc})
  endif()
endif()
if(NOT MPIEXEC_EXECUTABLE)
  find_program(rt_mpiexec NAMES ${rt_mpi_launchers})
  if(rt_mpiexec)
    set(MPIEXEC_EXECUTABLE ${rt_mpiexec})
  endif()
endif()
find_package(MPI REQUIRED COMPONENTS C)
include(CheckSymbolExists)
unset(RINGTRAIN_MPI_HEADER_IS_${RINGTRAIN_MPI} CACHE)  # asked afresh: the wrapper may have changed
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
check_symbol_exists(${rt_mpi_macro} mpi.h RINGTRAIN_MPI_HEADER_IS_${RINGTRAIN_MPI})
unset(CMAKE_REQUIRED_INCLUDES)
if(NOT RINGTRAIN_MPI_HEADER_IS_${RINGTRAIN_MPI})
  message(FATAL_ERROR "RINGTRAIN_MPI = ${RINGTRAIN_MPI}, but the mpi.h of ${MPI_C_COMPILER} (${MPI_C_INCLUDE_DIRS}) "
                      "does not define ${rt_mpi_macro}: install that MPI (scripts/setup.sh), or name its compiler "
                      "wrapper with -DMPI_C_COMPILER=, in a fresh build folder (cmake --fresh)")
endif()
set(RINGTRAIN_MPI_CONFIGURED ${RINGTRAIN_MPI} CACHE INTERNAL "the MPI this build tree is configured for")
# What the mpi-labelled tests and scripts/mpi_launch.sh launch with.
set(RINGTRAIN_MPI_TEST_ENV "RINGTRAIN_MPI=${RINGTRAIN_MPI}" "RINGTRAIN_MPIEXEC=${MPIEXEC_EXECUTABLE}")
