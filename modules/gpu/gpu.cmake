# The build recipe of the GPU modules: nvcc detection, the GPU runtime
# (modules/gpu), one function that builds a kernel family for a list of
# targets, the generated image table, and the module function. Included from
# modules/CMakeLists.txt before modules/kernels/families.cmake (the family
# list) and the module folders:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu.cmake)
#
# MEMRA_GPU_MODULES: AUTO (build when nvcc >= 12.8 is found), ON (require it),
# OFF. Each family's .cu is compiled ahead of time to a cubin per target and
# embedded into the modules as byte arrays (embed_cubins.cmake: no xxd needed).
# The modules themselves are plain C: they link no CUDA library (the driver
# comes through the host services, cuBLASLt through dlopen), so the build
# needs nvcc but no CUDA runtime. Sets MEMRA_HAVE_GPU_MODULES (parent scope,
# for tests/gpu and tests/gpu_mmq).

set(MEMRA_GPU_TARGETS "90a;120a" CACHE STRING "SM targets the embedded cubins are compiled for")
set(MEMRA_HAVE_GPU_MODULES OFF)
set(MEMRA_HAVE_GPU_MODULES OFF PARENT_SCOPE)

if(MEMRA_GPU_MODULES STREQUAL "OFF")
  message(STATUS "memra: GPU modules disabled (MEMRA_GPU_MODULES=OFF)")
  return()
endif()

find_program(MEMRA_NVCC nvcc
  HINTS ENV CUDACXX ENV CUDA_HOME ENV CUDA_PATH
  PATH_SUFFIXES bin
  PATHS /usr/local/cuda /usr/local/cuda/bin)
set(_memra_gpu_skip "")
if(NOT MEMRA_NVCC)
  set(_memra_gpu_skip "nvcc not found")
else()
  execute_process(COMMAND ${MEMRA_NVCC} --version OUTPUT_VARIABLE _nvcc_out ERROR_QUIET RESULT_VARIABLE _nvcc_rc)
  string(REGEX MATCH "release ([0-9]+)\\.([0-9]+)" _ "${_nvcc_out}")
  set(MEMRA_NVCC_VERSION "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  if(NOT _nvcc_rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    set(_memra_gpu_skip "${MEMRA_NVCC} --version failed")
  elseif(MEMRA_NVCC_VERSION VERSION_LESS 12.8)
    set(_memra_gpu_skip "nvcc ${MEMRA_NVCC_VERSION} is older than 12.8 (no sm_120a)")
  else()
    # the portable module's PTX is assembled by ptxas at build time (a check)
    get_filename_component(_nvcc_dir ${MEMRA_NVCC} DIRECTORY)
    find_program(MEMRA_PTXAS ptxas HINTS ${_nvcc_dir})
    if(NOT MEMRA_PTXAS)
      set(_memra_gpu_skip "no ptxas beside ${MEMRA_NVCC} (the PTX images are checked with it)")
    endif()
  endif()
endif()
if(_memra_gpu_skip)
  if(MEMRA_GPU_MODULES STREQUAL "ON")
    message(FATAL_ERROR "memra: MEMRA_GPU_MODULES=ON but ${_memra_gpu_skip}")
  endif()
  message(STATUS "memra: GPU modules not built: ${_memra_gpu_skip}")
  return()
endif()
message(STATUS "memra: GPU modules: nvcc ${MEMRA_NVCC_VERSION} (${MEMRA_NVCC}), targets ${MEMRA_GPU_TARGETS}")


set(MEMRA_GPU_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR})
set(MEMRA_GPU_KERNELS_DIR ${PROJECT_SOURCE_DIR}/modules/kernels)
set(MEMRA_GPU_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/gpu_images)
file(MAKE_DIRECTORY ${MEMRA_GPU_GEN_DIR})
set_property(GLOBAL PROPERTY MEMRA_GPU_IMAGES "")
set_property(GLOBAL PROPERTY MEMRA_GPU_IMAGE_FILES "")

# memra_gpu_family(IMAGE SOURCE <file.cu, relative to modules/kernels>
#                  TARGETS <90a 120a ...> [PTX <80 ...>] [FLAGS <nvcc flags>]
#                  [DEFINES <NAME=VALUE ...>])
# One kernel image per target: a cubin (sm_XY) for each of TARGETS, and PTX
# (compute_XY, which the driver compiles for the GPU at hand) for each of PTX.
# Each image is tabled as {IMAGE, "sm_XY" | "compute_XY"} in memra__gpu_images
# (images.h), the table the runtime's loader reads: the family list is this
# file's callers, nothing else keeps it. Dependencies: the source's folder and
# kernels/common (headers).
function(memra_gpu_family image)
  cmake_parse_arguments(F "" "SOURCE" "TARGETS;PTX;FLAGS;DEFINES" ${ARGN})
  set(_src ${MEMRA_GPU_KERNELS_DIR}/${F_SOURCE})
  get_filename_component(_dir ${_src} DIRECTORY)
  file(GLOB _headers ${_dir}/*.h ${_dir}/*.cuh ${MEMRA_GPU_KERNELS_DIR}/common/*.cuh ${MEMRA_GPU_KERNELS_DIR}/common/*.h)
  set(_defs "")
  foreach(_d IN LISTS F_DEFINES)
    list(APPEND _defs -D${_d})
  endforeach()
  get_property(_list GLOBAL PROPERTY MEMRA_GPU_IMAGES)
  get_property(_files GLOBAL PROPERTY MEMRA_GPU_IMAGE_FILES)
  foreach(_kind cubin ptx)
    if(_kind STREQUAL "cubin")
      set(_targets ${F_TARGETS})
    else()
      set(_targets ${F_PTX})
    endif()
    foreach(_arch IN LISTS _targets)
      if(_kind STREQUAL "cubin")
        set(_name sm_${_arch})
        set(_code sm_${_arch})
      else()
        set(_name compute_${_arch})
        set(_code compute_${_arch})
      endif()
      set(_out ${MEMRA_GPU_GEN_DIR}/${image}.${_name}.${_kind})
      set(_check "")
      if(_kind STREQUAL "ptx")
        # the PTX must assemble for the oldest and a newer target, as the
        # driver's JIT will do at load
        set(_check COMMAND ${MEMRA_PTXAS} -arch=sm_80 -o ${_out}.sm_80.check ${_out}
                   COMMAND ${MEMRA_PTXAS} -arch=sm_90 -o ${_out}.sm_90.check ${_out})
      endif()
      add_custom_command(OUTPUT ${_out}
        COMMAND ${MEMRA_NVCC} -${_kind} -O3 -std=c++17 ${F_FLAGS} -Xptxas=-warn-spills ${_defs}
                -gencode=arch=compute_${_arch},code=${_code}
                -o ${_out} ${_src}
        ${_check}
        DEPENDS ${_src} ${_headers}
        COMMENT "nvcc ${F_SOURCE} ${_defs} -> ${image} ${_name}"
        VERBATIM)
      list(APPEND _files ${_out})
      string(APPEND _list "${image}|${_name}|${_out}\n")
    endforeach()
  endforeach()
  set_property(GLOBAL PROPERTY MEMRA_GPU_IMAGES "${_list}")
  set_property(GLOBAL PROPERTY MEMRA_GPU_IMAGE_FILES "${_files}")
endfunction()

# memra_gpu_embed_images(): after every memra_gpu_family call, the OBJECT
# library memra_gpu_images holding every image as a byte array in one
# generated table (embed_cubins.cmake).
function(memra_gpu_embed_images)
  get_property(_list GLOBAL PROPERTY MEMRA_GPU_IMAGES)
  get_property(_files GLOBAL PROPERTY MEMRA_GPU_IMAGE_FILES)
  set(_gen ${MEMRA_GPU_GEN_DIR})
  file(WRITE ${_gen}/images.list.in "${_list}")
  configure_file(${_gen}/images.list.in ${_gen}/images.list COPYONLY)
  add_custom_command(OUTPUT ${_gen}/memra_gpu_images.c
    COMMAND ${CMAKE_COMMAND} -DOUT=${_gen}/memra_gpu_images.c -DLIST=${_gen}/images.list
            -P ${MEMRA_GPU_RUNTIME_DIR}/embed_cubins.cmake
    DEPENDS ${_files} ${_gen}/images.list ${MEMRA_GPU_RUNTIME_DIR}/embed_cubins.cmake ${MEMRA_GPU_RUNTIME_DIR}/embed.cmake
    COMMENT "embedding the GPU kernel images"
    VERBATIM)
  add_library(memra_gpu_images OBJECT ${_gen}/memra_gpu_images.c)
  target_include_directories(memra_gpu_images PUBLIC ${MEMRA_GPU_RUNTIME_DIR})
  set_target_properties(memra_gpu_images PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
endfunction()

# memra_gpu_embed_source(VAR SOURCE): the text of a family's .cu (relative to
# modules/kernels) with its quoted includes inlined, as the byte array VAR in
# the generated ${VAR}.c (embed_source.cmake), for the JIT. Returns the file
# in ${VAR}_FILE.
function(memra_gpu_embed_source var source)
  set(_src ${MEMRA_GPU_KERNELS_DIR}/${source})
  get_filename_component(_dir ${_src} DIRECTORY)
  file(GLOB _headers ${_dir}/*.h ${_dir}/*.cuh ${MEMRA_GPU_KERNELS_DIR}/common/*.cuh ${MEMRA_GPU_KERNELS_DIR}/common/*.h)
  set(_out ${MEMRA_GPU_GEN_DIR}/${var}.c)
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -DIN=${_src} -DOUT=${_out} -DVAR=${var}
            -P ${MEMRA_GPU_RUNTIME_DIR}/embed_source.cmake
    DEPENDS ${_src} ${_headers} ${MEMRA_GPU_RUNTIME_DIR}/embed_source.cmake ${MEMRA_GPU_RUNTIME_DIR}/embed.cmake
    COMMENT "embedding ${source} for the JIT"
    VERBATIM)
  set(${var}_FILE ${_out} PARENT_SCOPE)
endfunction()

# A GPU module: one MODULE library in the module folder, exporting only its
# entry point, linking libdl (and libpthread) and nothing of the core or of
# CUDA. Every GPU module links the one runtime (memra_gpu_runtime: driver
# table, context, loader, launches, cuBLASLt), the kernel families' launchers
# (memra_gpu_kernels) and the embedded images; the linker keeps what the
# module's op table reaches.
#   memra_add_gpu_module(NAME SOURCES src...)
function(memra_add_gpu_module name)
  cmake_parse_arguments(M "" "" "SOURCES" ${ARGN})
  add_library(memra_${name} MODULE ${M_SOURCES})
  target_link_libraries(memra_${name} PRIVATE memra_gpu_kernels memra_gpu_runtime memra_gpu_images memra_warnings
                        ${CMAKE_DL_LIBS} Threads::Threads)
  target_include_directories(memra_${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/modules)
  set_target_properties(memra_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${MEMRA_MODULE_OUTPUT_DIR})
  target_link_options(memra_${name} PRIVATE -Wl,--no-undefined)
  install(TARGETS memra_${name} LIBRARY DESTINATION ${MEMRA_MODULE_INSTALL_DIR})
endfunction()

# The runtime itself (plain C).
add_library(memra_gpu_runtime OBJECT
  ${MEMRA_GPU_RUNTIME_DIR}/cu.c ${MEMRA_GPU_RUNTIME_DIR}/gpu.c ${MEMRA_GPU_RUNTIME_DIR}/loader.c
  ${MEMRA_GPU_RUNTIME_DIR}/lt.c)
target_include_directories(memra_gpu_runtime PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/modules)
target_compile_definitions(memra_gpu_runtime PRIVATE _GNU_SOURCE)
target_link_libraries(memra_gpu_runtime PRIVATE memra_warnings)
set_target_properties(memra_gpu_runtime PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)

set(MEMRA_HAVE_GPU_MODULES ON)
set(MEMRA_HAVE_GPU_MODULES ON PARENT_SCOPE)
