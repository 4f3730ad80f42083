# The CUDA modules (modules/cuda shared code, modules/sm90), built only when
# nvcc is found. Included from modules/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/gpu.cmake)
#
# MEMRA_GPU_MODULES: AUTO (build when nvcc >= 12.8 is found), ON (require it),
# OFF. The kernels of modules/cuda/*.cu are compiled ahead of time to cubins for
# every target of MEMRA_GPU_TARGETS and embedded into each GPU module as byte
# arrays (embed_cubins.cmake: no xxd needed). The modules themselves are plain
# C: they link no CUDA library (the driver comes through the host services,
# cuBLASLt through dlopen), so the build needs nvcc but no CUDA runtime.
# Sets MEMRA_HAVE_GPU_MODULES (parent scope, for tests/gpu).

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

# ---- kernels: .cu -> cubin per target -> one generated C file -------------------
set(_cuda_dir ${CMAKE_CURRENT_SOURCE_DIR}/gpu)
set(_kernels_dir ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
set(_gen_dir ${CMAKE_CURRENT_BINARY_DIR}/gpu_images)
file(MAKE_DIRECTORY ${_gen_dir})
set(MEMRA_GPU_FAMILIES convert dequant fp8_act fp8_weight) # = MEMRA__GPU_FAMILY_LIST in cuda/images.h
file(GLOB _cuda_headers ${_kernels_dir}/common/*.cuh)
set(_cubins "")
set(_image_list "")
foreach(_family IN LISTS MEMRA_GPU_FAMILIES)
  foreach(_arch IN LISTS MEMRA_GPU_TARGETS)
    set(_cubin ${_gen_dir}/${_family}.sm_${_arch}.cubin)
    # -fmad=false: no product is fused into an add (the host reference rounds each).
    add_custom_command(OUTPUT ${_cubin}
      COMMAND ${MEMRA_NVCC} -cubin -O3 -std=c++17 -fmad=false -Xptxas=-warn-spills
              -gencode=arch=compute_${_arch},code=sm_${_arch}
              -o ${_cubin} ${_kernels_dir}/${_family}/${_family}.cu
      DEPENDS ${_kernels_dir}/${_family}/${_family}.cu ${_cuda_headers}
      COMMENT "nvcc ${_family}.cu -> sm_${_arch} cubin"
      VERBATIM)
    list(APPEND _cubins ${_cubin})
    string(APPEND _image_list "${_family}|sm_${_arch}|${_cubin}\n")
  endforeach()
endforeach()
# memra_embed_image_table(TARGET GEN_DIR LIST_TEXT CUBINS...): an OBJECT library
# TARGET holding every cubin of LIST_TEXT ("family|sm_XY|path" lines) as byte
# arrays in one generated table (cuda/embed_cubins.cmake: no xxd needed).
function(memra_embed_image_table target gen_dir list_text)
  file(WRITE ${gen_dir}/images.list.in "${list_text}")
  configure_file(${gen_dir}/images.list.in ${gen_dir}/images.list COPYONLY)
  add_custom_command(OUTPUT ${gen_dir}/${target}.c
    COMMAND ${CMAKE_COMMAND} -DOUT=${gen_dir}/${target}.c -DLIST=${gen_dir}/images.list
            -P ${CMAKE_CURRENT_SOURCE_DIR}/gpu/embed_cubins.cmake
    DEPENDS ${ARGN} ${gen_dir}/images.list ${CMAKE_CURRENT_SOURCE_DIR}/gpu/embed_cubins.cmake
    COMMENT "embedding the cubins of ${target}"
    VERBATIM)
  add_library(${target} OBJECT ${gen_dir}/${target}.c)
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/gpu)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
endfunction()

# The embedded images, alone (the gpu-build test reads them too).
memra_embed_image_table(memra_gpu_images ${_gen_dir} "${_image_list}" ${_cubins})

# The shared C code of the GPU modules: driver table, image loading, cuBLASLt, ops.
add_library(memra_gpu_common OBJECT
  ${_cuda_dir}/cu.c ${_cuda_dir}/gpu.c ${_cuda_dir}/lt.c ${_kernels_dir}/blas/blas_ops.c)
target_include_directories(memra_gpu_common PUBLIC ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR} ${_cuda_dir})
target_compile_definitions(memra_gpu_common PRIVATE _GNU_SOURCE)
target_link_libraries(memra_gpu_common PRIVATE memra_warnings)
set_target_properties(memra_gpu_common PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)

# A GPU module: one MODULE library in the module folder, exporting only its
# entry point, linking libdl and nothing of the core or of CUDA.
#   memra_add_gpu_module(NAME SOURCES src... LIBS object-libraries...)
function(memra_add_gpu_module name)
  cmake_parse_arguments(M "" "" "SOURCES;LIBS" ${ARGN})
  add_library(memra_${name} MODULE ${M_SOURCES})
  target_link_libraries(memra_${name} PRIVATE ${M_LIBS} memra_warnings ${CMAKE_DL_LIBS})
  target_include_directories(memra_${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/modules)
  set_target_properties(memra_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${MEMRA_MODULE_OUTPUT_DIR})
  target_link_options(memra_${name} PRIVATE -Wl,--no-undefined)
  install(TARGETS memra_${name} LIBRARY DESTINATION ${MEMRA_MODULE_INSTALL_DIR})
endfunction()

memra_add_gpu_module(sm90 SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/sm90/sm90_module.c
  LIBS memra_gpu_common memra_gpu_images)

set(MEMRA_HAVE_GPU_MODULES ON)
set(MEMRA_HAVE_GPU_MODULES ON PARENT_SCOPE)
