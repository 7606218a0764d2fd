/* tests/test_opcost.c — bytes and FLOPs per call of each op family
 * (analyzers/opcost.c) against numbers worked out by hand from the shapes,
 * each written out beside its case (docs/analysis.md, "Bytes and FLOPs by op
 * family"). Shapes are as PyTorch / kvscope's engine record them; several
 * are taken from the shared and bundled traces.
 *
 *   meson test -C build test_opcost
 */
#include <stdio.h>
#include <string.h>

#include "kvs_test.h"
#include "opcost.h"

static void cost(const char *op, const char *dims, const char *types, struct kvs_op_cost *c)
{
    char key[1024];
    struct kvs_shape s;
    int n = snprintf(key, sizeof key, "%s\x1f%s", dims, types);
    kvs_shape_parse(key, (size_t)n, &s);
    kvs_op_cost_of(op, &s, c);
}

#define BF "\"c10::BFloat16\""
#define F8 "\"c10::Float8_e4m3fn\""

static void check(const char *op, const char *dims, const char *types, const char *family,
                  double bytes, double flops, const char *precision)
{
    struct kvs_op_cost c;
    cost(op, dims, types, &c);
    const char *f = kvs_op_family_name(c.family);
    KVS_CHECK_MSG(family ? f && !strcmp(f, family) : !f, "%s: family %s, want %s", op, f ? f : "unknown",
                  family ? family : "unknown");
    KVS_CHECK_MSG(c.bytes == bytes, "%s %s: bytes %.0f, want %.0f", op, dims, c.bytes, bytes);
    KVS_CHECK_MSG(c.flops == flops, "%s %s: flops %.0f, want %.0f", op, dims, c.flops, flops);
    KVS_CHECK_MSG(precision ? c.precision && !strcmp(c.precision, precision) : !c.precision,
                  "%s: precision %s, want %s", op, c.precision ? c.precision : "none",
                  precision ? precision : "none");
}

static void test_matmul(void)
{
    /* [1,6144] x [6144,2048] bf16: 2MNK = 2*1*2048*6144; 12,288 + 25,165,824 + out 4,096 */
    check("aten::mm", "[[1, 6144], [6144, 2048]]", "[" BF ", " BF "]", "matmul", 25182208, 25165824, "bf16");
    /* addmm(bias [1024], [8944,1024], [1024,1024]): 2*8944*1024*1024; 2,048 + 18,317,312 +
     * 2,097,152 + out 18,317,312 (the Qwen H100 trace's) */
    check("aten::addmm", "[[1024], [8944, 1024], [1024, 1024], [], []]",
          "[" BF ", " BF ", " BF ", \"Scalar\", \"Scalar\"]", "matmul", 38733824, 18756927488.0, "bf16");
    /* bmm [64,1,192] x [64,192,512] (the MLA trace's absorption): 2*64*1*512*192;
     * 24,576 + 12,582,912 + out 65,536 */
    check("aten::bmm", "[[64, 1, 192], [64, 192, 512]]", "[" BF ", " BF "]", "matmul", 12673024, 12582912, "bf16");
    /* baddbmm(self [4,8,32], [4,8,16], [4,16,32]) float: 2*4*8*32*16; 4,096 + 2,048 + 8,192 + out 4,096 */
    check("aten::baddbmm", "[[4, 8, 32], [4, 8, 16], [4, 16, 32], [], []]",
          "[\"float\", \"float\", \"float\", \"Scalar\", \"Scalar\"]", "matmul", 18432, 32768, "fp32");
    /* linear(x [1,6144], w [2048,6144], no bias): as mm; the absent bias is no tensor */
    check("aten::linear", "[[1, 6144], [2048, 6144], []]", "[" BF ", " BF ", \"\"]", "matmul", 25182208,
          25165824, "bf16");
    /* with a bias [2048]: + 4,096 bytes */
    check("aten::linear", "[[1, 6144], [2048, 6144], [2048]]", "[" BF ", " BF ", " BF "]", "matmul",
          25186304, 25165824, "bf16");
    /* x [2,3,64] float: M = 6; 2*6*128*64; 1,536 + 32,768 + out 6*128*4 = 3,072 */
    check("aten::linear", "[[2, 3, 64], [128, 64]]", "[\"float\", \"float\"]", "matmul", 37376, 98304, "fp32");
    /* matmul broadcast: [4,1,8,16] x [3,16,32] -> [4,3,8,32]: 2*12*8*32*16; 2,048 + 6,144 + 12,288 */
    check("aten::matmul", "[[4, 1, 8, 16], [3, 16, 32]]", "[\"float\", \"float\"]", "matmul", 20480, 98304, "fp32");
    /* [16] x [16,32]: a vector, M = 1: 2*32*16; 64 + 2,048 + out 128 */
    check("aten::matmul", "[[16], [16, 32]]", "[\"float\", \"float\"]", "matmul", 2240, 1024, "fp32");
    /* batch dims 2 vs 3 do not broadcast: unknown */
    check("aten::matmul", "[[2, 8, 16], [3, 16, 32]]", "[\"float\", \"float\"]", "matmul", -1, -1, NULL);
    /* K mismatch: unknown, not zero */
    check("aten::mm", "[[2, 3], [4, 5]]", "[\"float\", \"float\"]", "matmul", -1, -1, NULL);
    /* _scaled_mm FP8 [16,4096] x [4096,1024] with two float scales (rank 0, 4 bytes each):
     * 2*16*1024*4096; 65,536 + 4,194,304 + 8 + BF16 out 16*1024*2 = 32,768 */
    check("aten::_scaled_mm", "[[16, 4096], [4096, 1024], [], [], [], [], [], []]",
          "[" F8 ", " F8 ", \"float\", \"float\", \"\", \"\", \"Scalar\", \"Scalar\"]", "matmul", 4292616,
          134217728, "fp8");
    /* _grouped_mm tokens [64,2048] x experts [8,2048,1024], offsets [8] int: 2*64*2048*1024;
     * 262,144 + 33,554,432 (64 rows can reach all 8) + 32 + out 64*1024*2 = 131,072 */
    check("aten::_grouped_mm", "[[64, 2048], [8, 2048, 1024], [8]]", "[" BF ", " BF ", \"int\"]", "matmul",
          33947680, 268435456, "bf16");
    /* the H200 MLA trace's experts: 2 tokens [2,1024] x [8,1024,512]: 2*2*1024*512; at most
     * 2 of the 8 experts' weights read: 4,096 + 2/8 x 8,388,608 + 32 + out 2,048 */
    check("aten::_grouped_mm", "[[2, 1024], [8, 1024, 512], [8]]", "[" BF ", " BF ", \"int\"]", "matmul",
          2103328, 2097152, "bf16");
    /* kvscope's engine: linear_multi x [1,6144] over weights 2048 + 512 + 64 rows: N = 2624;
     * 2*6144*2624; 12,288 + 32,243,712 + out 5,248 */
    check("kvs::linear_multi", "[[1, 6144], [2048, 6144], [512, 6144], [64, 6144]]",
          "[" BF ", " BF ", " BF ", " BF "]", "matmul", 32261248, 32243712, "bf16");
    /* linear_per_head x [1,64,192], per-head weights [64,512,192]: 2*1*64*512*192;
     * 24,576 + 12,582,912 + out 65,536 */
    check("kvs::linear_per_head", "[[1, 64, 192], [64, 512, 192]]", "[" BF ", " BF "]", "matmul", 12673024,
          12582912, "bf16");
    /* router_linear: float logits: [1,6144] x [256,6144]: 2*256*6144; 12,288 + 3,145,728 + 1,024 */
    check("kvs::router_linear", "[[1, 6144], [256, 6144]]", "[" BF ", " BF "]", "matmul", 3159040, 3145728, "bf16");
    /* lm_head: float logits [1,6144] x [154880,6144]: 2*154880*6144; 12,288 +
     * 1,903,165,440 + 619,520 */
    check("kvs::lm_head", "[[1, 6144], [154880, 6144]]", "[" BF ", " BF "]", "matmul", 1903797248,
          1903165440, "bf16");
    /* moe_experts: 1 token through 9 experts of gate/up [4096,6144] + down [6144,2048]:
     * 2*9*(25,165,824 + 12,582,912); x + out 24,576, ids 36, all 9 experts' weights
     * 452,984,832 + 226,492,416 */
    check("kvs::moe_experts", "[[1, 6144], [1, 9], [9, 4096, 6144], [9, 6144, 2048]]",
          "[" BF ", \"int\", " BF ", " BF "]", "matmul", 679501860, 679477248, "bf16");
    /* dims without dtypes (an emit_nvtx range): FLOPs known, bytes not */
    check("aten::mm", "[[2, 3], [3, 4]]", "", "matmul", -1, 48, NULL);
}

static void test_attention(void)
{
    /* SDPA with GQA: q [1,32,1,128], k, v [1,8,8192,128]: 2*32*1*8192*(128+128);
     * 8,192 + 16,777,216 x 2 + out 8,192 */
    check("aten::scaled_dot_product_attention", "[[1, 32, 1, 128], [1, 8, 8192, 128], [1, 8, 8192, 128], [], [], []]",
          "[" BF ", " BF ", " BF ", \"\", \"Scalar\", \"Scalar\"]", "attention", 33570816, 134217728, "bf16");
    /* a static cache: D_qk 192, D_v 128 over 8192 slots: 2*16*8192*(192+128);
     * q 6,144 + k 50,331,648 + v 33,554,432 + out 4,096 */
    check("aten::_scaled_dot_product_efficient_attention",
          "[[1, 16, 1, 192], [1, 16, 8192, 192], [1, 16, 8192, 128], [], [], [], []]",
          "[" BF ", " BF ", " BF ", \"\", \"Scalar\", \"Scalar\", \"\"]", "attention", 83896320, 83886080, "bf16");
    /* the flash op's [B,L,H,D] (the Qwen H100 trace's prefill): 2*(16*16)*559*559*(64+64);
     * 3 x 18,317,312 + out 18,317,312 */
    check("aten::_flash_attention_forward", "[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [], []]",
          "[" BF ", " BF ", " BF ", \"\", \"\"]", "attention", 73269248, 20478754816.0, "bf16");
    /* cuDNN's SDPA forward (the H200 GQA static-cache trace): q [1,16,1,64], k, v
     * [1,16,8192,64] (repeat_kv expanded), mask [1,1,1,8192]: 2*16*8192*(64+64);
     * 2,048 + 2 x 16,777,216 + 16,384 + out 2,048 */
    check("aten::_cudnn_attention_forward", "[[1, 16, 1, 64], [1, 16, 8192, 64], [1, 16, 8192, 64], [1, 1, 1, 8192], [], []]",
          "[" BF ", " BF ", " BF ", " BF ", \"Scalar\", \"Scalar\"]", "attention", 33574912, 33554432, "bf16");
    /* varlen [total, H, D]: the sequences' lengths are not in the dims: unknown */
    check("flash_attn::_flash_attn_forward", "[[600, 16, 64], [600, 16, 64], [600, 16, 64]]",
          "[" BF ", " BF ", " BF "]", "attention", -1, -1, NULL);
    /* kvscope's MLA decode over 4,099 of 495,552 rows (the full-cast engine trace):
     * 2*64*4099*(576+512); q 65,536 + rope 8,192 + starts 8 + tokens 16,396 +
     * rows read 4099*576*2 = 4,722,048 + out 65,536 */
    check("kvs::mla_decode", "[[1, 64, 512], [1, 64, 64], [495552, 1, 576], [2], [4099]]",
          "[" BF ", " BF ", " BF ", \"int\", \"int\"]", "attention", 4877716, 570843136, "bf16");
}

static void test_bytes_only(void)
{
    /* embedding [151936,1024] x ids [16,559] long: 8,944 rows read and written 2*8944*2048
     * + ids 71,552; no FLOPs */
    check("aten::embedding", "[[151936, 1024], [16, 559], [], [], []]",
          "[" BF ", \"long int\", \"Scalar\", \"Scalar\", \"Scalar\"]", "embedding", 36706176, -1, NULL);
    /* index_select(table, dim, index [8944]) */
    check("aten::index_select", "[[151936, 1024], [], [8944]]", "[" BF ", \"Scalar\", \"long int\"]",
          "embedding", 36706176, -1, NULL);
    /* layer_norm [16,559,1024] with weight and bias: in 18,317,312 + 2 x 2,048 + out 18,317,312 */
    check("aten::layer_norm", "[[16, 559, 1024], [], [1024], [1024], [], []]",
          "[" BF ", \"ScalarList\", " BF ", " BF ", \"Scalar\", \"Scalar\"]", "norm", 36638720, -1, NULL);
    /* add_rms_norm(x, r, w): reads 3 x 12,288 (w 6144 x 2), writes x and h 2 x 12,288 */
    check("kvs::add_rms_norm", "[[1, 6144], [1, 6144], [6144]]", "[" BF ", " BF ", " BF "]", "norm", 61440, -1, NULL);
    /* mul with broadcast [16,16,559,64] x [1,1,559,64]: 18,317,312 + 71,552 + out 18,317,312 */
    check("aten::mul", "[[16, 16, 559, 64], [1, 1, 559, 64]]", "[" BF ", " BF "]", "elementwise", 36706176, -1, NULL);
    /* add [16,559,1] float + a Python double: the scalar (8 bytes) promotes nothing:
     * 35,776 + 8 + out 35,776 */
    check("aten::add", "[[16, 559, 1], [], []]", "[\"float\", \"double\", \"Scalar\"]", "elementwise", 71560, -1, NULL);
    /* in place: add_ [1,6144] += [1,6144]: 2 x 12,288 read + 12,288 written */
    check("aten::add_", "[[1, 6144], [1, 6144], []]", "[" BF ", " BF ", \"Scalar\"]", "elementwise", 36864, -1, NULL);
    /* a comparison writes bools: [16,559] long 71,552 + out 8,944 */
    check("aten::eq", "[[16, 559], []]", "[\"long int\", \"Scalar\"]", "elementwise", 80496, -1, NULL);
    /* swiglu [1,24576] -> [1,12288]: 49,152 + 24,576 */
    check("kvs::swiglu", "[[1, 24576]]", "[" BF "]", "elementwise", 73728, -1, NULL);
    /* a reduction: its input only, 16*559*1024*4 */
    check("aten::mean", "[[16, 559, 1024], [], [], []]", "[\"float\", \"ScalarList\", \"Scalar\", \"\"]",
          "reduction", 36634624, -1, NULL);
    /* copies are sized by their copy/cast groups (groups.c), not here */
    check("aten::copy_", "[[16, 16], [16, 16], []]", "[" BF ", " BF ", \"Scalar\"]", "copy", -1, -1, NULL);
    /* no formula: unknown, never zero */
    check("aten::cat", "[[[1, 559, 32], [1, 559, 32]], []]", "[\"TensorList\", \"Scalar\"]", NULL, -1, -1, NULL);
    check("aten::_weird_op", "[[4, 4]]", "[\"float\"]", NULL, -1, -1, NULL);
    struct kvs_op_cost c;
    kvs_op_cost_of("aten::mm", NULL, &c); /* no shapes recorded */
    KVS_CHECK(c.bytes < 0 && c.flops < 0 && c.family == KVS_OPF_MATMUL);
}

int main(int argc, char **argv)
{
    static const struct kvs_test tests[] = {
        {"matmul", test_matmul},
        {"attention", test_attention},
        {"bytes_only", test_bytes_only},
        {NULL, NULL},
    };
    return kvs_test_main(argc, argv, tests);
}
