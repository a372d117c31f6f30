/* libprism_cuda_plan.so: runs a tuned CUDA plan (engine/backend/cuda/plan.h, with its PTX; what
 * kernel/library answers with for the "cuda" target) in the caller's process, on the caller's
 * stream and device pointers, through the code prism-runner runs plans with (plan_run.h). For
 * prism.compile(target="cuda") (docs/python.md). Plain C. */
#ifndef PRISM_CUDA_PLAN_LIBRARY_H
#define PRISM_CUDA_PLAN_LIBRARY_H
#ifdef __cplusplus
extern "C" {
#endif

/* Parses the plan, loads its PTX into the current device's primary context and creates a cuBLAS
 * handle where the plan has matmuls. NULL on failure: prism_plan_error() says why (no driver,
 * no device, a malformed plan). */
void* prism_plan_load(const char* plan_text);

/* Runs the plan's steps on `stream` (a CUstream/cudaStream_t; NULL: the default stream) without
 * waiting for them: inputs in parameter order and outputs in return order are device pointers,
 * dense row-major at the plan's dtypes; scratch is allocated and freed in stream order. One run at
 * a time per plan. 0, or nonzero with prism_plan_error() saying why. */
int prism_plan_run(void* plan, const void* const* inputs, void* const* outputs, void* stream);

/* The plan's input and output counts, for a caller that checks what it passes. */
int prism_plan_inputs(const void* plan);
int prism_plan_outputs(const void* plan);

void prism_plan_free(void* plan);

/* This thread's last error; "" when none. */
const char* prism_plan_error(void);

#ifdef __cplusplus
}
#endif
#endif
