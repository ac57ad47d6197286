/* The CUDA launch calls, runtime and driver, whose CUPTI callbacks
 * kernlab enables: the worker's timer (their records give each kernel
 * record its launch's correlation id) and the observation's injection
 * library (each launch's arguments). One list for both, so a new launch
 * API is added once. Include after <cupti.h>. */
#ifndef KL_CUPTI_LAUNCH_IDS_H
#define KL_CUPTI_LAUNCH_IDS_H

static const CUpti_CallbackId kl__launch_runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
static const CUpti_CallbackId kl__launch_driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
#define KL_LAUNCH_IDS(list) (sizeof(list) / sizeof((list)[0]))

#endif /* KL_CUPTI_LAUNCH_IDS_H */
