# The kernel families: one memra_gpu_family() call per image (gpu/gpu.cmake),
# the C launchers of every family, and the JIT text of fp8blk. This list is
# the only place that names the images: the generated table memra__gpu_images
# (images.h) is made from it, and the runtime's loader reads that table.
# Included from modules/CMakeLists.txt after gpu/gpu.cmake, when it built
# the runtime:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/kernels/families.cmake)
#
# Flags. The load-time families (convert, dequant, fp8_act, fp8_weight) are
# built with -fmad=false: no product is fused into an add (the host reference
# rounds each). mmq and fp8blk are built without it: the GEMM fold is an FFMA by
# design, and the quantisers spell their roundings out with __fdiv_rn /
# __fmul_rn (no product is ever added to anything there).
#
# fp8blk (one source, the MMA chosen by FP8BLK_MMA): image fp8blk is e4m3
# mma.sync (=0) for 89 / 90a and kind::f8f6f4 (=1) for 120a / 121a; image
# fp8blk_mx is kind::mxf8f6f4 (=2) for 120a / 121a. Its text, includes
# inlined, is embedded as memra__fp8blk_src so the modules compile it for the
# device's target through host->jit at init (kernels/fp8blk/fp8blk_jit.c);
# the cubins are the fallback when NVRTC is missing or the compile fails.
# NVRTC's defaults match the nvcc line (-O3, fmad on), so both give the same code.
#
# The portable module (modules/portable): convert, dequant, fp8_act,
# fp8_weight and mmq also as SASS for MEMRA_GPU_PORTABLE_TARGETS (default
# 80;86;89, plain sm_XY cubins) and as PTX for compute_80, which the driver
# compiles at load for any cc >= 8.0 without its own cubin (A100 ... B200,
# Jetson Thor, and an H200 forced to MEMRA_ARCH=cuda). Every PTX image is
# assembled by ptxas for sm_80 and sm_90 at build time (gpu.cmake): PTX the
# driver would refuse fails the build, not the load. fp8blk has no portable
# image (its MMAs are e4m3 / f8f6f4 only).
if(NOT MEMRA_HAVE_GPU_MODULES)
  return()
endif()

set(_sm90_targets "")
set(_sm120_targets "")
foreach(_t IN LISTS MEMRA_GPU_TARGETS)
  if(_t MATCHES "^12[01]a$")
    list(APPEND _sm120_targets ${_t})
  elseif(_t MATCHES "^(89|90a)$")
    list(APPEND _sm90_targets ${_t})
  endif()
endforeach()

set(MEMRA_GPU_PORTABLE_TARGETS "80;86;89" CACHE STRING "SM targets of the portable module's cubins (its PTX is compute_80)")
set(_portable_targets "")
foreach(_t IN LISTS MEMRA_GPU_PORTABLE_TARGETS)
  if(NOT _t IN_LIST MEMRA_GPU_TARGETS)
    list(APPEND _portable_targets ${_t})
  endif()
endforeach()
foreach(_f convert dequant fp8_act fp8_weight)
  memra_gpu_family(${_f} SOURCE ${_f}/${_f}.cu TARGETS ${MEMRA_GPU_TARGETS} ${_portable_targets} PTX 80 FLAGS -fmad=false)
endforeach()
memra_gpu_family(mmq SOURCE mmq/mmq.cu TARGETS ${MEMRA_GPU_TARGETS} ${_portable_targets} PTX 80)
foreach(_t IN LISTS MEMRA_GPU_TARGETS)
  if(_t IN_LIST _sm120_targets)
    memra_gpu_family(fp8blk SOURCE fp8blk/fp8blk_gemm.cu TARGETS ${_t} DEFINES FP8BLK_MMA=1)
    memra_gpu_family(fp8blk_mx SOURCE fp8blk/fp8blk_gemm.cu TARGETS ${_t} DEFINES FP8BLK_MMA=2)
  elseif(_t IN_LIST _sm90_targets)
    memra_gpu_family(fp8blk SOURCE fp8blk/fp8blk_gemm.cu TARGETS ${_t} DEFINES FP8BLK_MMA=0)
  endif()
endforeach()
# w16 (gemm_w16's wgmma tile, setmaxnreg): sm_90a only, for the sm90 module
if("90a" IN_LIST MEMRA_GPU_TARGETS)
  memra_gpu_family(w16 SOURCE w16/w16.cu TARGETS 90a)
endif()
memra_gpu_embed_images()
memra_gpu_embed_source(memra__fp8blk_src fp8blk/fp8blk_gemm.cu)

# The C launchers of every family (ops, argument checks, plans), on the runtime.
set(_k ${CMAKE_CURRENT_LIST_DIR})
add_library(memra_gpu_kernels OBJECT
  ${_k}/convert/convert_ops.c ${_k}/dequant/dequant_ops.c ${_k}/fp8_weight/fp8_weight_ops.c
  ${_k}/fp8_act/fp8_act_ops.c ${_k}/blas/blas_ops.c
  ${_k}/mmq/mmq_ops.c ${_k}/w16/w16_ops.c ${_k}/fp8blk/fp8blk_ops.c ${_k}/fp8blk/fp8blk_jit.c ${memra__fp8blk_src_FILE})
target_include_directories(memra_gpu_kernels PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/modules)
target_compile_definitions(memra_gpu_kernels PRIVATE _GNU_SOURCE)
target_link_libraries(memra_gpu_kernels PRIVATE memra_warnings)
set_target_properties(memra_gpu_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
