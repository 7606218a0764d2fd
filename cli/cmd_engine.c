/* cli/cmd_engine.c — `kvscope engine`: run kvscope's reference GLM-5 decode
 * engine on this GPU with a chosen KV path, print the memory plan, per-step
 * times, tokens/s, bytes moved per step and the roofline; --trace captures
 * the run with libtrace; --tp N runs it tensor-parallel over N GPUs. The run
 * is kvs_engine_run (engine/run.c); this file parses, prints and writes the
 * trace (the summary it prints: engine_summary.c).
 *
 *   kvscope engine --config glm5 --kv-path full-cast --batch 1 --context 4096
 *   kvscope engine --tp 8 --kv-path full-cast --trace full.json.gz
 *   kvscope engine --help
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine_cli.h"
#include "kvscope/check.h"
#include "kvscope/engine.h"
#include "kvscope/engine_gpu.h"
#include "kvscope/engine_run.h"
#include "kvscope/engine_tp.h"
#ifdef KVS_ENGINE_HAVE_TRACE
#include "kvscope/trace.h"
#endif

#define CMD "engine"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kvscope engine [options]\n"
            "\n"
            "Decode greedily with a GLM-5-shaped model (synthetic weights, real dimensions)\n"
            "on this GPU and measure each step. The KV cache is an FP8 e4m3 pool per layer\n"
            "[capacity, 1, 576]; --kv-path picks how attention reads it:\n"
            "  full-cast    every layer casts the WHOLE pool to BF16 (the bug), then attends\n"
            "  active-cast  gather-then-cast of the active tokens only\n"
            "  fp8-direct   attention reads the FP8 pool directly\n"
            "\n"
            "options (--name value, or --name=value):\n"
            "  --config NAME|FILE    glm5 (default), tiny, a config.json path, or a\n"
            "                        checkpoint folder holding one (a pipe works too)\n"
            "  --kv-path PATH        full-cast (default) | active-cast | fp8-direct\n"
            "  --batch B             sequences decoded together (default 1)\n"
            "  --context T           prefilled tokens per sequence (default 4096)\n"
            "  --steps N             timed decode steps (default 16)\n"
            "  --warmup N            untimed steps first (default 2)\n"
            "  --kv-capacity N       KV pool capacity in tokens per layer (default 495552)\n"
            "  --resident-experts R  routed experts kept per MoE layer (default: top-k)\n"
            "  --seed S              synthetic weights, KV rows, first tokens (default 1)\n"
            "  --graph               run each step as one CUDA graph (launch overhead apart)\n"
            "  --scatter             scatter the sequences' KV slots over the pool\n"
            "  --copy-gbps X         device copy rate for the roofline (default: measure)\n"
            "  --trace OUT.json      capture the timed steps with libtrace (.gz compresses;\n"
            "                        - writes it to stdout and everything else to stderr);\n"
            "                        with --tp N > 1 one file per rank, OUT.rank{R}.json\n"
            "                        (or where %%r in the name says); kernels then launch\n"
            "                        without programmatic dependent launch (as KVS_PDL=0)\n"
            "  --tp N                tensor parallel over GPUs 0..N-1 of this machine: one\n"
            "                        thread per GPU, NCCL all-reduce; heads and the MLPs'\n"
            "                        intermediate dims split, the latent KV pool replicated\n"
            "                        (NCCL_NVLS_ENABLE=0 unless set; N must divide the heads)\n"
            "  --quiet               no per-step lines\n"
            "  -h, --help            this help\n"
            "\n"
            "environment (A/B switches of the kernels' launch; anything else is refused):\n"
            "  KVS_PDL=0|1           0: no programmatic dependent launch (default 1)\n"
            "  KVS_MLA_HG=32|64      FP8 MLA decode's head group (default: by KV rows per SM)\n"
            "  KVS_MLA_WAVES=1|2     blocks per SM the MLA split aims at with 32-head groups\n"
            "  KVS_MLA_WG=1|0        FP8 64-head MLA decode on wgmma on or off (default: by size)\n"
            "  KVS_MLA_LAZY=1|0      MLA decode's lazy rescaling from a block's second tile\n"
            "                        (default 1)\n"
            "  KVS_MLA_WGV=0|1|4|5|8|12|16|24|32  the FP8 wgmma MLA kernel's variant, for A/B runs\n"
            "                        (default 0; docs/kernels.md)\n"
            "  NCCL_NVLS_ENABLE      with --tp: kept as set, else 0 (NVLink multicast off)\n"
            "  CUDA_VISIBLE_DEVICES  which GPUs --tp N uses (the first N visible)\n"
            "\n"
            "Left out of GLM-5: the DSA sparse indexer (attention is dense over each\n"
            "sequence's context), the MTP layer. Roofline = bytes moved per step (weights\n"
            "read + KV traffic of the path; docs/engine.md; per rank with --tp) / copy rate.\n"
            "The last line, 'result: key=value ...', is for scripts (bench/engine.sh).\n");
}

/* keeps the last message, so a failure can be said in one line of our own */
static void keep_message(void *user, enum kvs_log_level level, const char *message)
{
    (void)level;
    snprintf((char *)user, 256, "%s", message);
}

enum {
    OPT_HELP = 1, OPT_GRAPH, OPT_SCATTER, OPT_QUIET, OPT_CONFIG, OPT_TRACE, OPT_KV_PATH, OPT_BATCH,
    OPT_CONTEXT, OPT_STEPS, OPT_WARMUP, OPT_KV_CAPACITY, OPT_RESIDENT, OPT_SEED, OPT_TP,
    OPT_COPY_GBPS
};
static const struct kvs_cli_opt engine_opts[] = {
    {"--help", "-h", KVS_CLI_SWITCH, 0, 0, OPT_HELP},
    {"--graph", NULL, KVS_CLI_SWITCH, 0, 0, OPT_GRAPH},
    {"--scatter", NULL, KVS_CLI_SWITCH, 0, 0, OPT_SCATTER},
    {"--quiet", NULL, KVS_CLI_SWITCH, 0, 0, OPT_QUIET},
    {"--config", NULL, KVS_CLI_TEXT, 0, 0, OPT_CONFIG},
    {"--trace", NULL, KVS_CLI_TEXT, 0, 0, OPT_TRACE},
    {"--kv-path", NULL, KVS_CLI_TEXT, 0, 0, OPT_KV_PATH},
    {"--batch", NULL, KVS_CLI_INT, 1, 4096, OPT_BATCH},
    {"--context", NULL, KVS_CLI_INT, 0, (1LL << 30) - 1, OPT_CONTEXT}, /* the plan's bound */
    {"--steps", NULL, KVS_CLI_INT, 1, 100000, OPT_STEPS},
    {"--warmup", NULL, KVS_CLI_INT, 0, 1000, OPT_WARMUP},
    {"--kv-capacity", NULL, KVS_CLI_INT, 1, 2147483647.0, OPT_KV_CAPACITY},
    {"--resident-experts", NULL, KVS_CLI_INT, 0, 1024, OPT_RESIDENT},
    {"--seed", NULL, KVS_CLI_INT, 0, 4611686018427387904.0 /* 2^62 */, OPT_SEED},
    {"--tp", NULL, KVS_CLI_INT, 1, KVS_TP_MAX_WORLD, OPT_TP},
    {"--copy-gbps", NULL, KVS_CLI_NUMBER, 1e-3, 1e6, OPT_COPY_GBPS},
    {NULL, NULL, KVS_CLI_SWITCH, 0, 0, 0},
};

/* Reads the command line into *o: KVS_EXIT_OK, a usage error, or -1 once
 * --help is printed. */
static int parse_args(int argc, char **argv, struct kvs_engine_opts *o)
{
    static const struct kvs_cli_opt *const tables[] = {engine_opts, NULL};
    for (int i = 1; i < argc; i++) {
        struct kvs_cli_arg arg;
        int rc = kvs_cli_next(CMD, argc, argv, &i, tables, &arg);
        if (rc != KVS_EXIT_OK)
            return rc;
        if (!arg.opt)
            return kvs_cli_usage_error(CMD, "unexpected argument '%s'", arg.text);
        switch (arg.opt->id) {
        case OPT_HELP: usage(stdout); return -1;
        case OPT_GRAPH: o->graph = 1; break;
        case OPT_SCATTER: o->scatter = 1; break;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_CONFIG: o->config = arg.text; break;
        case OPT_TRACE: o->trace = arg.text; break;
        case OPT_KV_PATH:
            if (kvs_kv_path_parse(arg.text, &o->path) != KVS_STATUS_OK)
                return kvs_cli_usage_error(CMD, "--kv-path is full-cast, active-cast or "
                                                "fp8-direct, not '%s'", arg.text);
            break;
        case OPT_BATCH: o->batch = arg.n; break;
        case OPT_CONTEXT: o->context = arg.n; break;
        case OPT_STEPS: o->steps = arg.n; break;
        case OPT_WARMUP: o->warmup = arg.n; break;
        case OPT_KV_CAPACITY: o->capacity = arg.n; break;
        case OPT_RESIDENT: o->resident = arg.n; break;
        case OPT_SEED: o->seed = arg.n; break;
        case OPT_TP: o->tp = arg.n; break;
        case OPT_COPY_GBPS: o->copy_gbps = arg.x; break;
        }
    }
    return KVS_EXIT_OK;
}

#ifdef KVS_ENGINE_HAVE_TRACE
enum kvs_status kvs_engine_cli_trace_facts(const struct kvs_engine_opts *o,
                                           const struct kvs_engine_params *p,
                                           const struct kvs_engine_run_summary *f,
                                           struct kvs_trace *tr)
{
    struct kvs_engine_run_facts facts = {0};
    facts.config = p->model.name;
    facts.path = p->path;
    facts.batch = p->batch;
    facts.context = o->context;
    facts.kv_capacity = p->kv_capacity;
    facts.layers = p->model.layers;
    facts.tp = o->tp > 1 ? (int)o->tp : 1;
    facts.graph = p->graph;
    facts.steps = f->steps;
    facts.bytes = f->bytes;
    facts.copy_gbps = f->copy_gbps;
    facts.step_ms = f->step_ms;
    char json[1024];
    if (kvs_engine_run_facts_json(&facts, json, sizeof json) >= sizeof json)
        return KVS_STATUS_LIMIT;
    return kvs_trace_set_extra(tr, "kvscope.engine", json);
}

enum kvs_status kvs_engine_cli_write_trace(const struct kvs_engine_opts *o, struct kvs_trace *tr,
                                           const char *path, const struct kvs_trace_part *part)
{
    if (strcmp(path, "-") || o->stdout_fd < 0)
        return kvs_trace_write_part(tr, path, part);
    fflush(stdout);
    dup2(o->stdout_fd, STDOUT_FILENO);
    enum kvs_status st = kvs_trace_write_part(tr, path, part);
    fflush(stdout);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    return st;
}
#endif

// ----------------------------------------------------------------------------
// run

static void print_header(const struct kvs_engine_opts *o, const struct kvs_model_config *c)
{
    printf("kvscope engine: %s, kv-path %s, batch %lld, context %lld, %lld steps (+%lld warm-up), "
           "KV capacity %lld tokens, seed %lld%s%s\n",
           c->name, kvs_kv_path_name(o->path), o->batch, o->context, o->steps, o->warmup,
           o->capacity, o->seed, o->graph ? ", CUDA graph" : "", o->scatter ? ", scattered slots" : "");
    printf("synthetic weights and KV rows; left out: the DSA sparse indexer (attention is dense "
           "over each sequence's context%s), the MTP layer\n",
           c->index_topk ? "; the config's index_topk is not applied" : "");
}

/* What the run's hooks need: the command line and the capture, if any. */
struct run_ctx {
    const struct kvs_engine_opts *o;
    struct kvs_trace *tr;
};

static void on_ready(void *user, int world)
{
    const struct kvs_engine_opts *o = ((struct run_ctx *)user)->o;
    if (o->tp) {
        const char *nvls = getenv("NCCL_NVLS_ENABLE");
        printf("tensor parallel: %d rank%s on GPUs 0..%d, one thread each, NCCL all-reduce "
               "(NCCL_NVLS_ENABLE=%s)\n",
               world, world == 1 ? "" : "s", world - 1, nvls ? nvls : "unset");
        fflush(stdout);
    }
    if (o->quiet)
        return;
    if (o->tp)
        printf("%6s %10s %10s %12s %14s %10s\n", "step", "ms", "tokens/s", "kv-prep ms",
               "all-reduce ms", "active");
    else
        printf("%6s %10s %10s %12s %10s\n", "step", "ms", "tokens/s", "kv-prep ms", "active");
}

static void on_step(void *user, const struct kvs_engine_run_step *s)
{
    const struct kvs_engine_opts *o = ((struct run_ctx *)user)->o;
    const struct kvs_engine_step_info *i0 = &s->info[0];
    if (o->quiet)
        return;
    if (o->tp)
        printf("%5s%d %10.3f %10.1f %12.3f %14.3f %10lld%s\n", s->timed ? "" : "w", i0->step,
               s->slowest_ms, (double)o->batch * 1000.0 / s->slowest_ms, i0->kv_ms,
               i0->allreduce_ms, (long long)i0->active, i0->graph ? "  graph" : "");
    else
        printf("%5s%d %10.3f %10.1f %12.3f %10lld%s\n", s->timed ? "" : "w", i0->step, i0->ms,
               (double)o->batch * 1000.0 / i0->ms, i0->kv_ms, (long long)i0->active,
               i0->graph ? "  graph" : "");
}

#ifdef KVS_ENGINE_HAVE_TRACE
static enum kvs_status on_timed_begin(void *user)
{
    struct kvs_trace *tr = ((struct run_ctx *)user)->tr;
    return tr ? kvs_trace_start(tr) : KVS_STATUS_OK;
}

static enum kvs_status on_timed_end(void *user)
{
    struct kvs_trace *tr = ((struct run_ctx *)user)->tr;
    return tr ? kvs_trace_stop(tr) : KVS_STATUS_OK;
}

/* One file, or one per rank out of the one capture (CUPTI records the
 * process), each with the run's facts. */
static enum kvs_status write_traces(const struct kvs_engine_opts *o,
                                    const struct kvs_engine_params *p,
                                    const struct kvs_engine_run_summary *s, struct kvs_trace *tr)
{
    /* the run's facts and byte model into the trace ("kvscope.engine") */
    KVS_TRY(kvs_engine_cli_trace_facts(o, p, s, tr));
    if (!o->tp) {
        KVS_TRY(kvs_engine_cli_write_trace(o, tr, o->trace, NULL));
        printf("trace: %s (steps are ProfilerStep#N ranges)\n", o->trace);
        return KVS_STATUS_OK;
    }
    const int W = s->world;
    for (int r = 0; r < W; r++) {
        char out[4096];
        if (kvs_trace_rank_path(o->trace, r, W, out, sizeof out) != 0)
            return KVS_STATUS_INVALID_ARGUMENT;
        uint32_t tid = s->rank_tid[r];
        struct kvs_trace_part part = {s->rank_device[r], &tid, 1, r == 0, r, W, "nccl"};
        KVS_TRY(kvs_engine_cli_write_trace(o, tr, out, &part));
        printf("trace: %s (rank %d of %d, GPU %d; steps are ProfilerStep#N ranges)\n", out, r, W,
               part.device);
    }
    return KVS_STATUS_OK;
}
#endif

/* NVLink multicast (NVLS) stays off: NCCL reads NCCL_NVLS_ENABLE when the
 * communicators are made, so it is set here, before the run and before any
 * rank thread exists (setenv is process-wide state). The engine library
 * writes no environment: this program does (engine --help says so). */
static void nvls_off(const struct kvs_logger *lg)
{
    const char *v = getenv("NCCL_NVLS_ENABLE");
    if (!v) {
        setenv("NCCL_NVLS_ENABLE", "0", 0);
        kvs_log(lg, KVS_LOG_INFO, "NCCL_NVLS_ENABLE=0 set in this process's environment: NVLink "
                                  "multicast (NVLS) stays off");
    } else {
        kvs_log(lg, strcmp(v, "0") ? KVS_LOG_WARN : KVS_LOG_INFO,
                "NCCL_NVLS_ENABLE=%s kept as set by the user%s", v,
                strcmp(v, "0") ? " (kvscope runs with NVLink multicast off otherwise)" : "");
    }
}

/* The run (kvs_engine_run, engine/run.c) with --trace's capture around its
 * timed steps, then the trace files and the summary. */
static int run_and_print(const struct kvs_engine_opts *o, const struct kvs_engine_params *p,
                         double copy)
{
    struct run_ctx ctx = {o, NULL};
    struct kvs_engine_run_hooks hooks = {&ctx, on_ready, NULL, on_step, NULL};
#ifdef KVS_ENGINE_HAVE_TRACE
    if (o->trace) {
        struct kvs_trace_config tc;
        kvs_trace_config_init(&tc);
        if (kvs_trace_create(&tc, &ctx.tr) != KVS_STATUS_OK)
            return KVS_EXIT_FAILURE;
        hooks.timed_begin = on_timed_begin;
        hooks.timed_end = on_timed_end;
    }
#endif
    struct kvs_engine_run_summary s;
    enum kvs_status st =
        kvs_engine_run(p, (int)o->warmup, (int)o->steps, (int)o->tp, copy, &hooks, &s);
#ifdef KVS_ENGINE_HAVE_TRACE
    if (ctx.tr && st == KVS_STATUS_OK)
        st = write_traces(o, p, &s, ctx.tr);
    kvs_trace_free(ctx.tr);
#endif
    if (st != KVS_STATUS_OK) {
        fprintf(stderr, "kvscope engine: %s\n", kvs_status_str(st));
        return o->tp && st == KVS_STATUS_INVALID_ARGUMENT ? KVS_EXIT_USAGE : KVS_EXIT_FAILURE;
    }
    kvs_engine_cli_print_summary(o, p, &s);
    return KVS_EXIT_OK;
}

static int engine_run(const struct kvs_engine_opts *o)
{
    struct kvs_engine_params p;
    kvs_engine_params_init(&p);
    /* the kernels' A/B switches come from the environment here, never
     * inside the kernels (engine --help lists them) */
    if (kvs_kernel_opts_parse(&p.kernels, getenv, &p.log) != KVS_STATUS_OK)
        return kvs_cli_usage_error(CMD, "a kernel switch in the environment has a value it "
                                        "does not take (see above; engine --help lists them)");
    /* A captured run launches every kernel plainly: with programmatic
     * dependent launch (kernels/src/pdl_impl.cuh) a kernel starts early and
     * waits inside for the one before it, so its trace record would span
     * that wait too and the report would charge it to the wrong op. */
    if (o->trace)
        p.kernels.no_pdl = 1;
    if (kvs_model_config_load(o->config, &p.model, &p.log) != KVS_STATUS_OK)
        return KVS_EXIT_USAGE;
    p.path = o->path;
    p.batch = (int)o->batch;
    p.context_len = o->context;
    p.steps = (int)(o->steps + o->warmup);
    p.kv_capacity = o->capacity;
    p.seed = (uint64_t)o->seed;
    p.graph = o->graph;
    p.resident_experts = (int)o->resident;
    p.scatter = o->scatter;
    p.tp_world = (int)o->tp;
    p.visible_devices = getenv("CUDA_VISIBLE_DEVICES"); /* named if it hides every GPU */
    print_header(o, &p.model);

    /* the split and the plan first, before anything is allocated; with --tp
     * the plan is one rank's */
    char text[4096];
    struct kvs_tp_plan tp;
    if (kvs_tp_plan_init(&p.model, o->tp ? (int)o->tp : 1, &tp, &p.log) != KVS_STATUS_OK)
        return kvs_cli_usage_error(CMD, "--tp %lld does not split %s evenly (see above)", o->tp,
                                   p.model.name);
    if (o->tp) {
        kvs_tp_plan_describe(&tp, text, sizeof text);
        fputs(text, stdout);
    }
    struct kvs_run_shape shape;
    struct kvs_mem_plan plan;
    if (kvs_engine_plan(&p, &shape, &plan) != KVS_STATUS_OK)
        return KVS_EXIT_USAGE;
    kvs_mem_plan_format(&plan, &tp.rank, &shape, text, sizeof text);
    fputs(text, stdout);
    struct kvs_expert_map em;
    if (kvs_expert_map_init(&p.model, p.resident_experts, &em) != KVS_STATUS_OK)
        return kvs_cli_usage_error(CMD, "--resident-experts must lie in [top-k %d, %d]",
                                   p.model.topk, p.model.n_routed_experts);
    kvs_expert_map_describe(&em, &p.model, p.batch, text, sizeof text);
    fputs(text, stdout);

    /* the GPU before any GPU work: on a machine without one, CUDA's own
     * words ("CUDA driver version is insufficient for CUDA runtime
     * version" at a cudaMalloc deep inside) do not say what is missing */
    int gpus = 0;
    char why[256] = "";
    struct kvs_logger keep = {keep_message, why, KVS_LOG_ERROR};
    kvs_engine_gpu_count(&gpus, p.visible_devices, &keep);
    if (gpus < 1) { /* with --tp too: "needs 2 GPUs; sees 0" would hide why */
        fprintf(stderr, "kvscope engine: no NVIDIA GPU is usable here (%s); the engine needs one "
                        "(kvscope report and compare do not)\n",
                why[0] ? why : "CUDA sees no device");
        return KVS_EXIT_FAILURE;
    }
    if (o->tp > gpus)
        return kvs_cli_usage_error(CMD, "--tp %lld needs %lld GPUs; this process sees %d "
                                        "(CUDA_VISIBLE_DEVICES decides which)",
                                   o->tp, o->tp, gpus);

    /* the plan against each GPU it needs before the copy-rate probe's 2 GiB
     * (a misfit is said before any allocation); the engine checks
     * again when it allocates */
    for (int d = 0; d < (o->tp ? (int)o->tp : 1); d++)
        if (kvs_engine_check_fit(&plan, &shape, d, &p.log) != KVS_STATUS_OK)
            return KVS_EXIT_FAILURE;

    double copy = o->copy_gbps;
    if (copy <= 0.0) {
        if (kvs_engine_copy_rate(1ull << 30, 9, &copy, &p.log) != KVS_STATUS_OK)
            return KVS_EXIT_FAILURE;
        printf("device-to-device copy rate: %.0f GB/s (measured: 1 GiB cudaMemcpy, median of 9, "
               "bytes read + written)\n", copy);
    } else {
        printf("device-to-device copy rate: %.0f GB/s (--copy-gbps)\n", copy);
    }
    fflush(stdout);
    if (o->tp)
        nvls_off(&p.log);
    return run_and_print(o, &p, copy);
}

int kvs_cmd_engine(int argc, char **argv)
{
    /* line by line, so that an error (stderr) comes after the plan and the
     * header it refers to when both go into one file or pipe */
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct kvs_engine_opts o = {0};
    o.config = "glm5";
    o.path = KVS_KV_PATH_FULL_CAST;
    o.batch = 1;
    o.context = 4096;
    o.steps = 16;
    o.warmup = 2;
    o.capacity = 495552;
    o.seed = 1;
    o.stdout_fd = -1;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return KVS_EXIT_OK;
    if (rc != KVS_EXIT_OK)
        return rc;
    if (o.trace && o.tp > 1 && !strcmp(o.trace, "-"))
        return kvs_cli_usage_error(CMD, "--trace - (stdout) holds one trace; --tp %lld writes one "
                                        "per rank: give a file name", o.tp);
#ifndef KVS_ENGINE_HAVE_TRACE
    if (o.trace)
        return kvs_cli_usage_error(CMD, "--trace needs libtrace's capture, which this build "
                                        "lacks");
#endif
    /* before the run, not after minutes of it */
    if ((rc = kvs_cli_output_dir_check(CMD, "--trace", o.trace)) != KVS_EXIT_OK)
        return rc;
    /* --trace -: the trace alone on stdout (`| kvscope report -`), so the
     * plan, steps and summary go to stderr */
    if (o.trace && !strcmp(o.trace, "-")) {
        fflush(stdout);
        o.stdout_fd = dup(STDOUT_FILENO);
        if (o.stdout_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
            perror("kvscope engine: --trace -");
            return KVS_EXIT_FAILURE;
        }
    }
    return engine_run(&o);
}
