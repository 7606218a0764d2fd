/* reports/render_rank.c — a rank's kvscope.rank/1 summary, the last key
 * ("rank") of its kvscope.report/1 document: everything the view across
 * ranks takes from this rank, so that `kvscope report A.json B.json ...`
 * (analyzers/rank_summary.c reads it back) gives the same view as the
 * traces. Keys in docs/report-json.md order; every number in shortest
 * round-trip form, so it reads back to the same double.
 *
 *   kvscope report rank3.json.gz --format json -o r3.json
 */
#include "multirank_impl.h"

static void write_items(struct kvs_jw *w, const struct kvs_analysis *a)
{
    kvs_jw_arr(w);
    size_t c = 0;
    for (size_t i = 0; a->step && i < a->nstep; i++) {
        const struct kvs_step *s = &a->step[i];
        kvs_jw_obj(w);
        kvs_jw_key(w, "index");
        kvs_jw_int(w, s->index);
        kvs_jw_key(w, "start_us");
        kvs_jw_num(w, s->start_us);
        kvs_jw_key(w, "end_us");
        kvs_jw_num(w, s->end_us);
        kvs_jw_key(w, "wall_ms");
        kvs_jw_num(w, s->wall_ms);
        kvs_jw_key(w, "time_ms");
        kvs_jw_num(w, s->time_ms);
        kvs_jw_key(w, "gpu_busy_ms");
        kvs_jw_num(w, s->gpu_busy_ms);
        kvs_jw_key(w, "compute_ms");
        kvs_jw_num(w, s->compute_busy_ms);
        kvs_jw_key(w, "comm_ms");
        kvs_jw_num(w, s->comm_busy_ms);
        kvs_jw_key(w, "exposed_comm_ms");
        kvs_jw_num(w, s->exposed_comm_ms);
        kvs_jw_key(w, "category_ms");
        kvs_json_write_categories(w, s->category_ms);
        /* collectives are sorted by step: this step's are the next ones */
        kvs_jw_key(w, "collectives");
        kvs_jw_arr(w);
        for (; a->collectives && c < a->ncollective && a->collectives[c].step == (int32_t)i; c++) {
            const struct kvs_collective *x = &a->collectives[c];
            kvs_jw_arr_compact(w);
            kvs_jw_int(w, x->name_index);
            kvs_jw_num(w, x->start_us);
            kvs_jw_num(w, x->dur_ms);
            kvs_jw_arr_end(w);
        }
        kvs_jw_arr_end(w);
        kvs_jw_obj_end(w);
    }
    kvs_jw_arr_end(w);
}

void kvs_json_write_rank(struct kvs_jw *w, const struct kvs_analysis *a)
{
    const struct kvs_trace_info *t = &a->trace;
    const struct kvs_steps *s = &a->steps;
    kvs_jw_obj_schema(w, "kvscope.rank/1");
    kvs_jw_key(w, "rank");
    kvs_jw_int_or_null(w, t->rank, t->rank >= 0);
    kvs_jw_key(w, "world_size");
    kvs_jw_int_or_null(w, t->world_size, t->world_size > 0);
    kvs_jw_key(w, "path");
    kvs_jw_str(w, t->path);
    kvs_jw_key(w, "device");
    kvs_jw_str(w, t->device);
    kvs_jw_key(w, "producer");
    kvs_jw_str(w, t->producer);
    kvs_jw_key(w, "devices");
    kvs_jw_int(w, t->gpu_devices);
    kvs_jw_key(w, "clock");
    kvs_jw_obj(w);
    kvs_jw_key(w, "source");
    kvs_jw_str(w, "trace");
    kvs_jw_key(w, "unit");
    kvs_jw_str(w, "us");
    kvs_jw_obj_end(w);
    kvs_jw_key(w, "steps");
    kvs_jw_obj(w);
    kvs_json_write_step_figures(w, s->count, s->mean_ms, s->gpu_ms_per_step, s->gpu_busy_fraction);
    kvs_jw_key(w, "total_gpu_ms");
    kvs_jw_num(w, s->total_gpu_ms);
    kvs_jw_key(w, "compute_ms_per_step");
    kvs_jw_num(w, s->compute_ms_per_step);
    kvs_jw_key(w, "comm_ms_per_step");
    kvs_jw_num(w, s->comm_ms_per_step);
    kvs_jw_key(w, "overlap_ms_per_step");
    kvs_jw_num(w, s->overlap_ms_per_step);
    kvs_jw_obj_end(w);
    kvs_jw_key(w, "collective_names");
    kvs_jw_strs(w, (char *const *)a->collective_names, a->collective_names ? a->ncollective_name : 0,
                false);
    kvs_jw_key(w, "items");
    write_items(w, a);
    kvs_jw_key(w, "findings");
    kvs_jw_arr(w);
    for (size_t i = 0; a->findings && i < a->nfinding; i++) {
        const struct kvs_finding *f = &a->findings[i];
        const struct kvs_group *g =
            f->group >= 0 && a->groups && (size_t)f->group < a->ngroup ? &a->groups[f->group] : NULL;
        kvs_jw_obj(w);
        kvs_jw_key(w, "id");
        kvs_jw_str(w, f->id);
        kvs_jw_key(w, "gpu_ms_per_step");
        kvs_jw_num(w, f->gpu_ms_per_step);
        kvs_jw_key(w, "match");
        kvs_jw_str(w, g && g->has_match ? g->match.label : NULL);
        kvs_jw_obj_end(w);
    }
    kvs_jw_arr_end(w);
    kvs_jw_obj_end(w);
}
