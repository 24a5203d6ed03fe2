// COLL_CLONES: build a function twice on x86, AVX2 and baseline, and let the loader pick one
// (GCC function multiversioning), so the library runs on any x86-64 and is fast on the CPUs
// people have. Everything the function calls should be forced inline to be built with it.
//
// target_clones needs ifunc support (glibc); elsewhere the baseline build is all there is.
// -DCOLL_REDUCE_BASELINE_ONLY forces that build on x86 too, so that tests can cover the
// portable code on CPUs that would never run it. ThreadSanitizer builds (tools/sanitize.sh
// thread) take the baseline too: GCC instruments the ifunc resolvers target_clones makes, and
// the dynamic loader runs those before TSan is initialised (every program crashed at start).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#define COLL_X86 1
#endif

#if defined(COLL_X86) && defined(__GNUC__) && defined(__ELF__) && !defined(COLL_REDUCE_BASELINE_ONLY) && \
    !defined(__SANITIZE_THREAD__)
#define COLL_CLONES __attribute__((target_clones("avx2", "default")))
#define COLL_HAVE_X86_PATHS 1
#else
#define COLL_CLONES
#endif
