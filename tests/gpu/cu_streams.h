/* The driver entry points a GPU test needs for its own streams, CUDA-graph
 * captures and host functions (test_gpu_experts, test_gpu_shadow,
 * test_gpu_stress): one table,
 * `cu`, filled by cu_streams_open() from the test's own dlopen of libcuda
 * (cu_test.h), so memra is checked from outside. */
#ifndef MEMRA_TEST_CU_STREAMS_H
#define MEMRA_TEST_CU_STREAMS_H

#include "gpu/cu_test.h"

typedef int CUresult;
typedef void *CUstream, *CUgraph, *CUgraphExec, *CUcontext;
static struct {
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, int);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
    CUresult (*cuLaunchHostFunc)(CUstream, void (*)(void *), void *); /* a host function in stream order */
} cu;

static inline void cu_streams_open(void)
{
    void *h = cu_test_open();
#define CU_STREAMS_SYM(name) CU_TEST_SYM(h, cu, name)
    CU_STREAMS_SYM(cuCtxSetCurrent) CU_STREAMS_SYM(cuStreamCreate) CU_STREAMS_SYM(cuStreamDestroy_v2)
    CU_STREAMS_SYM(cuStreamSynchronize) CU_STREAMS_SYM(cuStreamBeginCapture_v2) CU_STREAMS_SYM(cuStreamEndCapture)
    CU_STREAMS_SYM(cuGraphInstantiateWithFlags) CU_STREAMS_SYM(cuGraphLaunch) CU_STREAMS_SYM(cuGraphExecDestroy)
    CU_STREAMS_SYM(cuGraphDestroy) CU_STREAMS_SYM(cuLaunchHostFunc)
#undef CU_STREAMS_SYM
}

#endif
