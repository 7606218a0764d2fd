/* kernels/bench/mla_fp8s_model.c — a CPU model of the precision of S on FP8
 * tensor cores with Q split into e4m3 hi + lo (the S8 / S8H variants of the
 * wgmma MLA kernel, kernels/cuda/mla_wgmma.cuh), against the double
 * reference, on the inputs of the gpu test (test_kernels_mla.c: q U(-1, 1)
 * in BF16, k = e4m3(U(-2, 2)), 64 heads x 576 dims; optionally its three
 * planted rows ~45 log2 units above the rest). Written to decide, before a
 * GPU run, whether the variants can pass the 1e-2 (out) and 1e-3 (lse)
 * checks, and how many accumulators they need.
 *
 *   build/kernels/mla_fp8s_model [ctx [scale [spikes [seed]]]]   (default: the table below)
 *
 * Modelled: hi = e4m3(x), lo = e4m3(x - hi), x = q * scale * log2(e) * c with
 * c the head's power of two (largest |x| in (224, 448]); each k32 wgmma adds
 * its 32 exact products to the accumulator in blocks of 16, every term
 * aligned to the largest exponent among them and the accumulator and
 * truncated to 2^-14 of it, the sum truncated to 13 fraction bits (the
 * tensor core's FP22 accumulation as published, modelled pessimistically);
 * accumulators summed in f32; P rounded to f16, V exact, out rounded to
 * BF16. Schemes: "one" (one accumulator a k-slice of 288 dims, two slices
 * summed: a plain port), "two" (k-steps alternating over two accumulators a
 * slice: S8), "heads" (all 576 dims, four accumulators in rotation: S8H),
 * and today's f16 Q (K exact, f32 sums) for scale.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvscope/kernels.h" /* defines: kvs_float_to_fp8, kvs_fp8_to_float, bf16 converters */

static uint64_t g_st = 12345;
static uint64_t rnd(void)
{
    uint64_t z = (g_st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float unif(float lo, float hi) { return lo + (hi - lo) * (float)((rnd() >> 40) * 0x1p-24); }
static double trunc13(double x)
{
    int e;
    double m = frexp(x, &e);
    return x == 0 ? 0 : ldexp(trunc(m * 16384.0) / 16384.0, e);
}
static float round_f16(float x)
{
    int e;
    frexpf(x, &e);
    float ulp = ldexpf(1.f, e - 11 < -24 ? -24 : e - 11);
    return x == 0 ? 0 : nearbyintf(x / ulp) * ulp;
}
static float e4m3(float x) { return kvs_fp8_to_float(kvs_float_to_fp8(x)); }

/* acc += k . q over dims d0..d0+31, as one k32 wgmma */
static double wgmma_k32(double acc, const float *k, const float *q, int d0)
{
    for (int x0 = d0; x0 < d0 + 32; x0 += 16) {
        double t[17];
        int n = 0, emax = -100000;
        t[n++] = acc;
        for (int d = x0; d < x0 + 16; d++)
            t[n++] = (double)k[d] * q[d];
        for (int i = 0; i < n; i++)
            if (t[i] != 0) {
                int e;
                frexp(t[i], &e);
                emax = e > emax ? e : emax;
            }
        double ulp = ldexp(1.0, emax - 14), s = 0;
        for (int i = 0; i < n; i++)
            s += trunc(t[i] / ulp) * ulp;
        acc = trunc13(s);
    }
    return acc;
}

/* one score in units of c: scheme 0 one, 1 two, 2 heads */
static double score(int scheme, const float *k, const float *hi, const float *lo)
{
    const int slices = scheme == 2 ? 1 : 2, steps = scheme == 2 ? 18 : 9;
    const int nacc = scheme == 0 ? 1 : scheme == 1 ? 2 : 4;
    float total = 0.f;
    for (int sl = 0; sl < slices; sl++) {
        double acc[4] = {0, 0, 0, 0};
        for (int j = 0; j < steps; j++) {
            double *a = &acc[j % nacc];
            int d0 = sl * 288 + 32 * j;
            *a = wgmma_k32(*a, k, hi, d0);
            *a = wgmma_k32(*a, k, lo, d0);
        }
        total += (float)(((float)acc[0] + (float)acc[1]) + ((float)acc[2] + (float)acc[3]));
    }
    return total;
}

enum { H = 64, D = 576, S = 4 }; /* S: three schemes + today's f16 Q */

static void run(int n, float scale, int spikes)
{
    float *q = malloc(sizeof(float) * H * D), *k = malloc(sizeof(float) * (size_t)n * D);
    double *s = malloc(sizeof(double) * n * (S + 1));
    for (int i = 0; i < H * D; i++)
        q[i] = kvs_bf16_to_float(kvs_float_to_bf16(unif(-1.f, 1.f)));
    for (size_t i = 0; i < (size_t)n * D; i++)
        k[i] = e4m3(unif(-2.f, 2.f));
    const int tok[3] = {69 % n, 6500 % n, n - 1}, head[3] = {0, 37, 63};
    for (int p = 0; spikes && p < 3; p++)
        for (int d = 0; d < D; d++)
            k[(size_t)tok[p] * D + d] = e4m3(q[head[p] * D + d] < 0 ? -1.75f : 1.75f);
    double num[S] = {0}, den = 0, lse_err[S] = {0};
    const float sl2 = scale * 1.4426950408889634f;
    for (int h = 0; h < H; h++) {
        const float *qh = q + h * D;
        float mx = 0, hi[576], lo[576], q16[576];
        for (int d = 0; d < D; d++)
            mx = fmaxf(mx, fabsf(qh[d] * sl2));
        int ex;
        frexpf(448.f / mx, &ex);
        const float c = ldexpf(1.f, ex - 1);
        for (int d = 0; d < D; d++) {
            float x = qh[d] * sl2 * c;
            hi[d] = e4m3(x), lo[d] = e4m3(x - hi[d]), q16[d] = round_f16(qh[d] * sl2);
        }
        double m[S + 1];
        for (int v = 0; v <= S; v++)
            m[v] = -INFINITY;
        for (int t = 0; t < n; t++) {
            const float *kt = k + (size_t)t * D;
            double ref = 0, f16 = 0;
            for (int d = 0; d < D; d++)
                ref += (double)qh[d] * kt[d], f16 += (double)q16[d] * kt[d];
            double *st = s + (size_t)t * (S + 1);
            st[0] = ref * scale; /* natural units */
            for (int v = 0; v < 3; v++)
                st[1 + v] = score(v, kt, hi, lo) / c; /* log2 units */
            st[4] = (float)f16;
            for (int v = 0; v <= S; v++)
                m[v] = st[v] > m[v] ? st[v] : m[v];
        }
        static double o[S + 1][512];
        double l[S + 1] = {0};
        memset(o, 0, sizeof o);
        for (int t = 0; t < n; t++) {
            const float *kt = k + (size_t)t * D;
            for (int v = 0; v <= S; v++) {
                double x = s[(size_t)t * (S + 1) + v] - m[v];
                double p = v == 0 ? exp(x) : round_f16((float)exp2(x));
                l[v] += p;
                for (int d = 0; d < 512; d++)
                    o[v][d] += p * kt[d];
            }
        }
        const double lref = m[0] + log(l[0]);
        for (int d = 0; d < 512; d++) {
            double r = kvs_bf16_to_float(kvs_float_to_bf16((float)(o[0][d] / l[0])));
            den += r * r;
            for (int v = 0; v < S; v++) {
                double g = kvs_bf16_to_float(kvs_float_to_bf16((float)(o[v + 1][d] / l[v + 1])));
                num[v] += (g - r) * (g - r);
            }
        }
        for (int v = 0; v < S; v++) {
            double e = fabs(m[v + 1] * 0.6931471805599453 + log(l[v + 1]) - lref) / fmax(1.0, fabs(lref));
            lse_err[v] = e > lse_err[v] ? e : lse_err[v];
        }
    }
    static const char *names[S] = {"one", "two (S8)", "heads (S8H)", "f16 Q (today)"};
    printf("| %d | %g | %s |", n, scale, spikes ? "yes" : "no");
    for (int v = 0; v < S; v++)
        printf(" %s %.2g / %.2g |", names[v], sqrt(num[v] / den), lse_err[v]);
    printf("\n");
    free(q), free(k), free(s);
}

int main(int argc, char **argv)
{
    printf("| ctx | scale | spikes | out normalized error / lse relative error, per scheme |\n"
           "|---|---|---|---|\n");
    if (argc > 4)
        g_st = strtoull(argv[4], NULL, 0);
    if (argc > 1) {
        run(atoi(argv[1]), argc > 2 ? (float)atof(argv[2]) : 0.0625f, argc > 3 ? atoi(argv[3]) : 0);
        return 0;
    }
    run(4097, 0.0625f, 0);
    run(4097, 0.5f, 0);
    run(8400, 0.5f, 0);
    run(12000, 0.0625f, 1);
    return 0;
}
