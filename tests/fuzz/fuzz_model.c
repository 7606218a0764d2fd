/* tests/fuzz/fuzz_model.c — libFuzzer harness for the model-config parser
 * (analyzers/models.c, a Hugging Face config.json through cJSON), and for
 * shape matching driven by whatever numbers a config holds: each config that
 * parses is used to analyse a small fixed trace of KV-cache casts (full
 * buffer and active rows, MLA and GQA layouts, an index gather).
 *
 *   tests/fuzz/run.sh model 60
 *   build-fuzz/tests/fuzz/fuzz_model -dict=tests/fuzz/model.dict CORPUS_DIR
 *
 * Checks: a parse gives OK (num_hidden_layers > 0) or PARSE /
 * INVALID_ARGUMENT with an error message; the analysis with that model is OK.
 */
#include "analyze_input.h"
#include "fuzz_common.h"
#include "models.h"

#define OP(ts, ext, dims, types)                                                                  \
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":1,\"tid\":1,\"ts\":" #ts     \
    ",\"dur\":5,\"args\":{\"External id\":" #ext ",\"Input Dims\":" dims                           \
    ",\"Input type\":" types "}},"
#define KERNEL(ts, ext)                                                                           \
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"direct_copy_kernel_cuda\",\"pid\":0,\"tid\":7,"   \
    "\"ts\":" #ts ",\"dur\":3,\"args\":{\"External id\":" #ext ",\"device\":0,\"stream\":7}},"

static const char trace[] =
    "{\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H200\"}],\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,"
    "\"ts\":0,\"dur\":1000,\"args\":{}},"
    OP(10, 1, "[[131072,1,576],[131072,1,576]]", "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]")
    KERNEL(11, 1)
    OP(20, 2, "[[131072,1,576],[131072,1,576]]", "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]")
    KERNEL(21, 2)
    OP(30, 3, "[[1024,1,576],[1024,1,576]]", "[\"c10::BFloat16\",\"c10::Float8_e4m3fn\"]")
    KERNEL(31, 3)
    OP(40, 4, "[[8192,8,128],[8192,8,128]]", "[\"c10::BFloat16\",\"float\"]")
    KERNEL(41, 4)
    OP(50, 5, "[[4096,1,656],[4096,1,656],[]]", "[\"float\",\"c10::Float8_e4m3fn\",\"Scalar\"]")
    KERNEL(51, 5)
    OP(60, 6, "[[1024],[131072,576]]", "[\"long int\",\"c10::BFloat16\"]")
    KERNEL(61, 6)
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"layer 0\",\"pid\":1,\"tid\":1,"
    "\"ts\":5,\"dur\":50,\"args\":{}}"
    "]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_log log;
    struct kvs_logger lg = fuzz_logger(&log);
    struct kvs_model m;
    enum kvs_status st = kvs_model_parse((const char *)data, size, "fuzz config.json", &lg, &m);
    FUZZ_CHECK(st == KVS_STATUS_OK || st == KVS_STATUS_PARSE || st == KVS_STATUS_INVALID_ARGUMENT,
               "status %d (%s)", (int)st, kvs_status_str(st));
    if (st != KVS_STATUS_OK) {
        FUZZ_CHECK(log.errors > 0, "status %d without a message", (int)st);
        return 0;
    }
    FUZZ_CHECK(m.layers > 0, "a model with %d layers", m.layers);
    snprintf(m.name, sizeof m.name, "fuzz");

    struct kvs_analyze_input in;
    memset(&in, 0, sizeof in);
    in.path = "model-fuzz.json";
    in.data = trace;
    in.len = sizeof trace - 1;
    in.in_memory = true;
    in.model = &m;
    struct kvs_analysis_options opt;
    kvs_analysis_options_init(&opt);
    struct fuzz_log alog;
    opt.log = fuzz_logger(&alog);
    static const int64_t capacities[] = {0, 131072, 4096, 1};
    opt.kv_capacity = capacities[size % 4];
    opt.batch = (int)(size / 4 % 3);
    struct kvs_analysis *a = NULL;
    st = kvs_analyze_input(&in, &opt, &a);
    FUZZ_CHECK(st == KVS_STATUS_OK, "analysis with the model: status %d: %s", (int)st, alog.last_error);
    FUZZ_CHECK(a->num_layers == m.layers, "num_layers %d, model %d", a->num_layers, m.layers);
    kvs_analysis_free(a);
    return 0;
}
