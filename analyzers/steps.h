/* steps.h — find the steps of a trace and measure each one.
 *
 * defines: kvs_step_name_parse, kvs_step_time_ns, kvs_step_at, struct kvs_step_matcher, kvs_step_matcher_init,
 *          kvs_step_matcher_free, kvs_step_matcher_is_op_step, kvs_steps_find, kvs_steps_measure,
 *          struct kvs_keyed_ival, kvs_busy_by_key, struct kvs_kiv_list, kvs_kiv_add,
 *          kvs_kiv_reserve, kvs_kiv_busy, kvs_kiv_free
 *
 * Steps are ranges on the CPU timeline: serving engines' step ranges (vLLM
 * `execute_..._context_N(..)_generation_M(..)`, SGLang `step[DECODE bs=32]`:
 * they carry the step's kind, batch and tokens), else `ProfilerStep#N`
 * (cpu_op or user_annotation), else user/NVTX ranges named like "step",
 * "decode_step 3", "iteration 7"; --step-regex replaces all three.
 * Overlapping or nested matches keep the outermost. GPU work belongs to the
 * step in which it was launched (its runtime call, or its graph launch, lies
 * in the step's CPU range), wherever it runs. Per step: wall time, GPU busy
 * time (the union of its activities' intervals per device, summed over
 * devices), the span of its GPU work, GPU time by category. kvs_busy_by_key measures the same union for subsets of
 * the activities (a group's, a kernel's). Private to analyzers/.
 */
#ifndef KVS_ANALYZERS_STEPS_H
#define KVS_ANALYZERS_STEPS_H

#include <regex.h>
#include <stdbool.h>

#include "tables.h"

/* true when name is a vLLM or SGLang step range; *d then says what it holds */
bool kvs_step_name_parse(const char *name, struct kvs_step_desc *d);

/* Step names are matched on this many leading bytes (each distinct name
 * once); --step-regex refuses back-references. docs/reliability.md. */
#define KVS_STEP_NAME_MATCH 256

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

/* Fills the step table's v, n and source from the records (the ranges m
 * keeps, their kinds from their names). */
enum kvs_status kvs_steps_find(const struct kvs_trace_data *t, struct kvs_step_matcher *m,
                               const struct kvs_logger *lg, struct kvs_step_table *steps);

/* needs the activities' launch and cat; fills their step and the rest of
 * the step table: busy_ns, cat_ns, gpu_first/last,
 * trace_busy_ns, trace_cat_ns, and the busy time of communication and of
 * the rest (comm_ns, compute_ns, trace_comm_ns, trace_compute_ns) */
enum kvs_status kvs_steps_measure(const struct kvs_trace_data *t, struct kvs_activity_table *act,
                                  struct kvs_step_table *steps);

/* step k's time (after kvs_steps_measure): the larger of its CPU range and
 * the span of the GPU work it launched */
int64_t kvs_step_time_ns(const struct kvs_step_table *steps, size_t k);
/* the step containing time ts (ns), or -1 */
int32_t kvs_step_at(const struct kvs_step_table *steps, int64_t ts);

/* A GPU activity's interval, tagged with what it belongs to (a group, a
 * kernel name). */
struct kvs_keyed_ival {
    uint32_t key;
    int32_t device;
    int64_t start, end;
};

/* Sorts v and adds to busy[key] the measure of the union of key's intervals
 * on each device, summed over devices: its share of the GPU's busy time, in
 * which activities of one key overlapping on several streams count once (so
 * it never exceeds the trace's busy time). */
void kvs_busy_by_key(struct kvs_keyed_ival *v, size_t n, int64_t *busy);

/* The same in 16 bytes an interval (not 24) while every one added fits:
 * key below 2^24, device 0-255, length below 2^32 (as the GPU work of any
 * trace seen); the list widens to struct kvs_keyed_ival at the first that
 * does not. The sums are the same either way. */
struct kvs_kiv {
    int64_t start;
    uint32_t len;
    uint32_t kd; /* key << 8 | device */
};
struct kvs_kiv_list {
    struct kvs_kiv *c;        /* while compact */
    struct kvs_keyed_ival *w; /* once wide */
    size_t n, cap;
};
int kvs_kiv_reserve(struct kvs_kiv_list *l, size_t cap); /* 0, or -1: no memory */
int kvs_kiv_grow(struct kvs_kiv_list *l);
int kvs_kiv_widen(struct kvs_kiv_list *l);
/* Append [start, end) (end >= start) keyed key on device: 0, or -1 when memory ran out */
static inline int kvs_kiv_add(struct kvs_kiv_list *l, uint32_t key, int32_t device, int64_t start, int64_t end)
{
    if (l->n == l->cap && kvs_kiv_grow(l) < 0)
        return -1;
    if (!l->w && (key >= (1u << 24) || device < 0 || device > 255 || (uint64_t)(end - start) > UINT32_MAX) &&
        kvs_kiv_widen(l) < 0)
        return -1;
    if (l->w)
        l->w[l->n++] = (struct kvs_keyed_ival){key, device, start, end};
    else
        l->c[l->n++] = (struct kvs_kiv){start, (uint32_t)(end - start), key << 8 | (uint32_t)device};
    return 0;
}
/* kvs_busy_by_key over the list's intervals (sorted in place) */
void kvs_kiv_busy(struct kvs_kiv_list *l, int64_t *busy);
void kvs_kiv_free(struct kvs_kiv_list *l);

#endif
