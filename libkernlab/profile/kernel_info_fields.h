/* The scalar fields of kl_plugin_kernel_info, once: the worker writes them
 * to JSON (op_profile.c), the library reads and writes them back
 * (profile.c). X(field) per field; grid and block are arrays, apart. */
#ifndef KL_KERNEL_INFO_FIELDS_H
#define KL_KERNEL_INFO_FIELDS_H

#define KL_KERNEL_INFO_FIELDS(X)                                               \
  X(dynamic_smem)                                                              \
  X(registers)                                                                 \
  X(static_smem)                                                               \
  X(local_bytes)                                                               \
  X(max_threads_per_block)                                                     \
  X(active_blocks_per_sm)                                                      \
  X(sms)                                                                       \
  X(warp_size)                                                                 \
  X(max_threads_per_sm)                                                        \
  X(max_blocks_per_sm)                                                         \
  X(regs_per_sm)                                                               \
  X(smem_per_sm)                                                               \
  X(reserved_smem_per_block)

#endif /* KL_KERNEL_INFO_FIELDS_H */
