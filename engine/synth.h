/* engine/synth.h — deterministic synthetic values (weights, prefilled KV rows,
 * first tokens) from a seed, identical bit for bit on the CPU and the GPU.
 * Private to the engine; included by plain C and by CUDA (.cu) files.
 *
 * defines: kvs_synth_key, kvs_synth_hash, kvs_synth_unit, kvs_synth_bf16,
 *          kvs_synth_value_bf16, kvs_synth_value_f32, kvs_synth_kv_fp8,
 *          kvs_synth_token
 *
 * A value is a pure function of (seed, tensor id, element index): a 64-bit
 * hash (splitmix64's finaliser) gives 24 random bits, read as a uniform u in
 * [-1, 1) that is exact in float; the value is fmaf(u, amp, offset), one
 * correctly rounded operation on both sides, then rounded to BF16 (nearest
 * even). So the GPU fills 80 GB of weights in milliseconds and the CPU
 * reference regenerates exactly the same numbers for the tiny config.
 */
#ifndef KVSCOPE_ENGINE_SYNTH_H
#define KVSCOPE_ENGINE_SYNTH_H

#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#ifdef __CUDACC__
#define KVS_SYNTH_FN static __host__ __device__ __forceinline__
#else
#define KVS_SYNTH_FN static inline
#endif

KVS_SYNTH_FN uint64_t kvs_synth_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The key of one tensor (or stream of values) under a seed. */
KVS_SYNTH_FN uint64_t kvs_synth_key(uint64_t seed, uint64_t id)
{
    return kvs_synth_mix(kvs_synth_mix(seed + 0x632BE59BD9B4E019ull) ^ (id * 0x9E3779B97F4A7C15ull));
}

KVS_SYNTH_FN uint64_t kvs_synth_hash(uint64_t key, uint64_t i)
{
    return kvs_synth_mix(key + (i + 1) * 0x9E3779B97F4A7C15ull);
}

/* Uniform in [-1, 1), a multiple of 2^-23: exact in float. */
KVS_SYNTH_FN float kvs_synth_unit(uint64_t h)
{
    return (float)((int32_t)(h >> 40) - 8388608) * (1.0f / 8388608.0f);
}

/* Round to nearest even; the inputs here are always finite. */
KVS_SYNTH_FN uint16_t kvs_synth_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

KVS_SYNTH_FN float kvs_synth_value_f32(uint64_t key, uint64_t i, float amp, float offset)
{
    return fmaf(kvs_synth_unit(kvs_synth_hash(key, i)), amp, offset);
}

KVS_SYNTH_FN uint16_t kvs_synth_value_bf16(uint64_t key, uint64_t i, float amp, float offset)
{
    return kvs_synth_bf16(kvs_synth_value_f32(key, i, amp, offset));
}

/* A prefilled KV element: an e4m3 code with a random sign, exponent 3..8
 * (magnitudes 1/16 .. 3.75) and mantissa, never NaN: the scale of an
 * RMS-normalised latent. */
KVS_SYNTH_FN uint8_t kvs_synth_kv_fp8(uint64_t key, uint64_t i)
{
    uint64_t h = kvs_synth_hash(key, i);
    uint32_t sign = (uint32_t)(h & 1u);
    uint32_t e = 3u + (uint32_t)(h >> 8) % 6u; /* 32-bit: a 64-bit % is slow on the GPU */
    uint32_t m = (uint32_t)(h >> 16) & 7u;
    return (uint8_t)(sign << 7 | e << 3 | m);
}

/* Stream ids that are not weight tensors (weights use kvs_model_weight_id). */
/* the pool's background rows (every slot, so a full-pool cast reads data) */
#define KVS_SYNTH_ID_KV(layer) (0x4B56000000000000ull + (uint64_t)(layer))
/* the prefilled context of sequence b: keyed by (layer, b) and position, not
 * by slot, so a sequence's history does not depend on where it is stored */
#define KVS_SYNTH_ID_PREFILL(layer, b)                                                            \
    (0x5046000000000000ull + ((uint64_t)(layer) << 24) + (uint64_t)(b))
#define KVS_SYNTH_ID_TOKENS 0x544F4B454E530000ull

/* The first input token of sequence b. */
KVS_SYNTH_FN int32_t kvs_synth_token(uint64_t seed, int b, int vocab)
{
    return (int32_t)(kvs_synth_hash(kvs_synth_key(seed, KVS_SYNTH_ID_TOKENS), (uint64_t)b) %
                     (uint64_t)vocab);
}

#endif /* KVSCOPE_ENGINE_SYNTH_H */
