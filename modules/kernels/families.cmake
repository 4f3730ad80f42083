# The MMQ-family GPU modules (issues 6 and 7): mmq (MMQ floor + accumulator
# probe, any CUDA cc >= 8.0 with an image), fp8blk (block-128 FP8 GEMM, sm_90a
# variant, scoring below sm90) and sm120 (cc 12.x). Included from
# modules/CMakeLists.txt AFTER gpu.cmake, whose variables and targets it uses:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/mmq.cmake)
#
# Kernel images (cubins embedded as byte arrays by cuda/embed_cubins.cmake,
# tabled as memra__mmq_images):
#   mmq        cuda/mmq.cu                              every MEMRA_GPU_TARGETS entry
#   fp8blk     cuda/fp8blk_gemm.cu -DFP8BLK_MMA=0 (e4m3) for 90a, =1 (kind::f8f6f4) for 120a
#   fp8blk_mx  cuda/fp8blk_gemm.cu -DFP8BLK_MMA=2 (kind::mxf8f6f4)     for 120a
# Unlike the shared kernels these are built without -fmad=false: the GEMM fold
# is an FFMA by design, and the quantisers spell their roundings out with
# __fdiv_rn / __fmul_rn (no product is ever added to anything there).
#
# JIT source: the text of cuda/fp8blk_gemm.cu with its "*.cuh" includes
# inlined is embedded as memra__fp8blk_src (mmq/embed_source.cmake, a byte
# array), so the modules declare it as jit_sources and compile it for the
# device's target through host->jit at init (mmq/fp8blk_jit.c); the cubins
# above are the fallback when NVRTC is missing or the compile fails. NVRTC's
# defaults match the nvcc line below (-O3, fmad on), so both give the same code.
if(NOT MEMRA_HAVE_GPU_MODULES)
  return()
endif()

set(_mmq_cuda ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
set(_mmq_gen ${CMAKE_CURRENT_BINARY_DIR}/mmq_images)
file(MAKE_DIRECTORY ${_mmq_gen})
file(GLOB _mmq_headers ${_mmq_cuda}/common/*.cuh)

set(_mmq_cubins "")
set(_mmq_list "")
# memra_mmq_cubin(family source target [nvcc defines...])
function(memra_mmq_cubin family source target)
  set(_cubin ${_mmq_gen}/${family}.sm_${target}.cubin)
  add_custom_command(OUTPUT ${_cubin}
    COMMAND ${MEMRA_NVCC} -cubin -O3 -std=c++17 -Xptxas=-warn-spills ${ARGN}
            -gencode=arch=compute_${target},code=sm_${target}
            -o ${_cubin} ${_mmq_cuda}/${source}
    DEPENDS ${_mmq_cuda}/${source} ${_mmq_headers}
    COMMENT "nvcc ${source} ${ARGN} -> ${family} sm_${target} cubin"
    VERBATIM)
  set(_mmq_cubins ${_mmq_cubins} ${_cubin} PARENT_SCOPE)
  set(_mmq_list "${_mmq_list}${family}|sm_${target}|${_cubin}\n" PARENT_SCOPE)
endfunction()

foreach(_t IN LISTS MEMRA_GPU_TARGETS)
  memra_mmq_cubin(mmq mmq/mmq.cu ${_t})
  if(_t MATCHES "^12[01]a$")
    memra_mmq_cubin(fp8blk fp8blk/fp8blk_gemm.cu ${_t} -DFP8BLK_MMA=1)
    memra_mmq_cubin(fp8blk_mx fp8blk/fp8blk_gemm.cu ${_t} -DFP8BLK_MMA=2)
  elseif(_t MATCHES "^(89|90a)$")
    memra_mmq_cubin(fp8blk fp8blk/fp8blk_gemm.cu ${_t} -DFP8BLK_MMA=0)
  endif()
endforeach()

# The generated table is renamed so it can sit next to memra__gpu_images.
memra_embed_image_table(memra_mmq_images ${_mmq_gen} "${_mmq_list}" ${_mmq_cubins})
target_compile_definitions(memra_mmq_images PRIVATE
  memra__gpu_images=memra__mmq_images memra__gpu_image_count=memra__mmq_image_count)

# The fp8blk_gemm.cu text for the JIT.
add_custom_command(OUTPUT ${_mmq_gen}/fp8blk_src.c
  COMMAND ${CMAKE_COMMAND} -DIN=${_mmq_cuda}/fp8blk/fp8blk_gemm.cu -DOUT=${_mmq_gen}/fp8blk_src.c -DVAR=memra__fp8blk_src
          -P ${CMAKE_CURRENT_SOURCE_DIR}/gpu/embed_source.cmake
  DEPENDS ${_mmq_cuda}/fp8blk/fp8blk_gemm.cu ${_mmq_headers} ${CMAKE_CURRENT_SOURCE_DIR}/gpu/embed_source.cmake
  COMMENT "embedding the fp8blk_gemm.cu source for the JIT"
  VERBATIM)

# The C side shared by the three modules (context, loader, ops, JIT sources).
add_library(memra_mmq_common OBJECT
  ${CMAKE_CURRENT_SOURCE_DIR}/gpu/loader.c ${_mmq_cuda}/mmq/mmq_ops.c
  ${_mmq_cuda}/fp8blk/fp8blk_jit.c ${_mmq_gen}/fp8blk_src.c)
target_include_directories(memra_mmq_common PUBLIC ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(memra_mmq_common PRIVATE memra_warnings)
target_link_libraries(memra_mmq_common INTERFACE Threads::Threads)
set_target_properties(memra_mmq_common PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)

# The driver table alone, for the modules that do not carry the shared GPU code.
add_library(memra_mmq_cu OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/gpu/cu.c)
target_include_directories(memra_mmq_cu PUBLIC ${PROJECT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/gpu)
target_link_libraries(memra_mmq_cu PRIVATE memra_warnings)
set_target_properties(memra_mmq_cu PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)

memra_add_gpu_module(mmq SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/mmq/mmq_module.c
  LIBS memra_mmq_common memra_mmq_images memra_mmq_cu)
memra_add_gpu_module(fp8blk SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fp8blk/fp8blk_module.c
  LIBS memra_mmq_common memra_mmq_images memra_mmq_cu)

# sm120 carries the shared GPU code too (cuBLASLt, load-time kernels), which
# brings its own copy of the driver table (cu.c).
memra_add_gpu_module(sm120 SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/sm120/sm120_module.c
  LIBS memra_gpu_common memra_gpu_images memra_mmq_common memra_mmq_images)

set(MEMRA_HAVE_MMQ_MODULES ON PARENT_SCOPE)
