// Function multiversioning for hot loops: SHOAL_CPU_CLONES compiles a function for baseline
// x86-64 and for AVX2, and the loader picks the version the CPU supports. Elsewhere it is empty,
// and under the sanitizers, whose runtimes are not ready when the loader resolves the versions.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define SHOAL_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SHOAL_CPU_CLONES
#endif
