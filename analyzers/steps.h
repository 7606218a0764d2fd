/* steps.h — find the steps of a trace and measure each one.
 *
 * defines: struct kvs_step_matcher, kvs_step_matcher_init, kvs_step_matcher_free,
 *          kvs_step_matcher_is_op_step, kvs_steps_find, kvs_steps_measure
 *
 * Steps are ranges on the CPU timeline: `ProfilerStep#N` (cpu_op or
 * user_annotation), else user/NVTX ranges named like "step", "decode_step 3",
 * "iteration 7"; --step-regex replaces both. Overlapping or nested matches
 * keep the outermost. Per step: wall time, GPU busy time (the union of GPU
 * activity intervals clipped to the step's window, per device, summed over
 * devices), GPU time by category; each activity also gets the step in which
 * it was launched. Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_STEPS_H
#define KVS_ANALYZERS_STEPS_H

#include <regex.h>
#include <stdbool.h>

#include "ctx.h"

struct kvs_step_matcher {
    bool user;                 /* --step-regex given */
    regex_t re;                /* the user's, or the fallback "step" names */
    bool have_re;
};

/* regex NULL: defaults. KVS_STATUS_INVALID_ARGUMENT (logged) for a bad regex. */
enum kvs_status kvs_step_matcher_init(struct kvs_step_matcher *m, const char *regex,
                                      const struct kvs_logger *lg);
void kvs_step_matcher_free(struct kvs_step_matcher *m);

/* For the reader: keep this cpu_op as a possible step range? */
bool kvs_step_matcher_is_op_step(void *matcher, const char *name);

enum kvs_status kvs_steps_find(struct kvs_ctx *c, struct kvs_step_matcher *m);

/* needs gpu_launch and gpu_cat; fills gpu_step, step_busy_ns, step_cat_ns,
 * trace_busy_ns, cat_ns */
enum kvs_status kvs_steps_measure(struct kvs_ctx *c);

/* the step containing time ts (ns), or -1 */
int32_t kvs_step_at(const struct kvs_ctx *c, int64_t ts);

#endif
