/* Native strided copies for the NumPy backend's plan (optional: without it the plan uses
 * np.copyto and Python copy threads).
 *
 * Why native: Slice, Concat and Pad are pure data movement, and NumPy runs one inner loop per
 * row of a strided copy (about 30 ns each), so short rows (a last-axis JOIN, a padding's
 * border columns) run far below memory bandwidth; and a Python copy thread sleeps between
 * runs, so handing it work costs a wake-up (70-80 us on a 2-core VM). Here a move is
 * analysed once into pointers, shape and strides (dimensions coalesced), each row is a typed
 * loop (from 8 MB streamed where that runs faster, timed), and copy threads spin for a while after each batch, as onnxruntime's pool
 * does, before they sleep. The GIL is released while copying.
 *
 * Program(lists, stream=None, roots=None, *, threads=len(lists) up to MAX_THREADS): lists of
 * (destination, source) arrays, the source broadcastable to the destination (same item
 * size); calling it runs the lists on the calling thread and up to ``threads - 1`` copy
 * threads, each thread taking the next list as it frees up and running it in order, and
 * returns when all are done. The lists must be independent: none writes what another reads
 * or writes. The arrays are held by the program; their memory must stay where it is while
 * the program is
 * used. With ``roots`` (item r: None, or (address, size) of a buffer the moves were built
 * over) the program is relocatable: each call names where every root lies now,
 * ``program(addresses)``, and moves between those buffers instead (a plan's inputs and
 * outputs, bound per run, need no views rebuilt). Its calls must not overlap. ``slots``
 * (item r: where in ``addresses`` root r's address is; r by default) lets a program of a
 * few roots read a plan's list of all of them: a program given every root of a plan cost
 * each call, and each build, time in proportion to the plan's size.
 *
 * Replay(...): a compiled plan's whole run in one call (see ``replay_call``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <limits.h>
#include <string.h>

#define MAX_RANK 16
#define MAX_WORKERS 15
/* how long a copy thread spins for the next batch before it sleeps */
#define SPIN_NS 2000000LL

/* ------------------------------------------------------------------ platform */

/* Threads, locks, a clock and two counters per copy thread: pthreads where there are, Win32
 * on Windows (mingw too, whose pthreads are a separate DLL). Atomics are C11's where the
 * compiler has them; MSVC has them only behind /experimental:c11atomics, so there the few
 * operations used are winnt.h's ordered reads and writes. */
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <process.h>

typedef SRWLOCK Mutex;
typedef CONDITION_VARIABLE Cond;
#define MUTEX_INIT SRWLOCK_INIT
#define mutex_init(m) InitializeSRWLock(m)
#define mutex_lock(m) AcquireSRWLockExclusive(m)
#define mutex_trylock(m) (TryAcquireSRWLockExclusive(m) != 0) /* 1: taken */
#define mutex_unlock(m) ReleaseSRWLockExclusive(m)
#define cond_init(c) InitializeConditionVariable(c)
#define cond_wait(c, m) SleepConditionVariableSRW(c, m, INFINITE, 0)
#define cond_signal(c) WakeConditionVariable(c)
#define thread_yield() SwitchToThread()
typedef unsigned Thread; /* its id: the handle is closed at once */
typedef unsigned thread_result;
#define THREAD_CALL __stdcall

/* 0 when started: a thread nobody joins (the CRT's start, so it may use the CRT). */
static int start_detached(Thread *thread, thread_result(THREAD_CALL *run)(void *), void *arg) {
    const uintptr_t handle = _beginthreadex(NULL, 0, run, arg, 0, thread);
    if (!handle) return -1;
    CloseHandle((HANDLE)handle);
    return 0;
}

/* The CPUs this process may run on (its affinity mask; where its threads span several
 * processor groups, of more than 64 CPUs, the mask reads 0: then every active CPU). */
static int usable_cpus(void) {
    DWORD_PTR process, system;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &process, &system) || !process) {
        const DWORD active = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
        return active > 0 ? (int)(active < INT_MAX ? active : INT_MAX) : 1;
    }
    int count = 0;
    for (; process; process &= process - 1) count++;
    return count;
}

static long long now_ns(void) {
    LARGE_INTEGER t, f;
    QueryPerformanceFrequency(&f); /* fixed at boot, and read without entering the kernel */
    QueryPerformanceCounter(&t);
    /* in two parts: ticks * 1e9 would overflow after 15 minutes up at 10 MHz */
    return t.QuadPart / f.QuadPart * 1000000000LL + t.QuadPart % f.QuadPart * 1000000000LL /
                                                        f.QuadPart;
}
#else
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

typedef pthread_mutex_t Mutex;
typedef pthread_cond_t Cond;
#define MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define mutex_init(m) pthread_mutex_init(m, NULL)
#define mutex_lock(m) pthread_mutex_lock(m)
#define mutex_trylock(m) (pthread_mutex_trylock(m) == 0) /* 1: taken */
#define mutex_unlock(m) pthread_mutex_unlock(m)
#define cond_init(c) pthread_cond_init(c, NULL)
#define cond_wait(c, m) pthread_cond_wait(c, m)
#define cond_signal(c) pthread_cond_signal(c)
#define thread_yield() sched_yield()
typedef pthread_t Thread;
typedef void *thread_result;
#define THREAD_CALL

static int start_detached(Thread *thread, thread_result (*run)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const int failed = pthread_create(thread, &attr, run, arg);
    pthread_attr_destroy(&attr);
    return failed;
}

/* The CPUs the calling thread may run on (a container's or taskset's limit, not the
 * host's); 1 if it cannot be read. */
static int usable_cpus(void) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
#endif
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)(online < INT_MAX ? online : INT_MAX) : 1;
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
#endif

#ifdef _MSC_VER
/* 32 bits: one plain load or store on every Windows target (x86 too); the counters are only
 * compared for equality, so they may wrap. */
typedef volatile LONG Counter;
typedef unsigned long count_t;
#define load_relaxed(p) ((count_t)ReadNoFence(p))
#define load_acquire(p) ((count_t)ReadAcquire(p))
#define store_release(p, v) WriteRelease(p, (LONG)(v))
#define store_fenced(p, v) InterlockedExchange(p, (LONG)(v))
#define take_next(p) ((count_t)InterlockedIncrement(p) - 1)
/* 1 when *p held ``old`` and now holds ``want`` */
#define swap_if(p, old, want) \
    (InterlockedCompareExchange(p, (LONG)(want), (LONG)(old)) == (LONG)(old))
#else
#include <stdatomic.h>
typedef _Atomic uint64_t Counter;
typedef uint64_t count_t;
#define load_relaxed(p) atomic_load_explicit(p, memory_order_relaxed)
#define load_acquire(p) atomic_load_explicit(p, memory_order_acquire)
#define store_release(p, v) atomic_store_explicit(p, v, memory_order_release)
#define store_fenced(p, v) atomic_store(p, v)
#define take_next(p) atomic_fetch_add_explicit(p, 1, memory_order_relaxed)
static inline int swap_if(Counter *p, count_t old, count_t want) {
    return atomic_compare_exchange_strong(p, &old, want);
}
#endif

#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define RELAX() __asm__ __volatile__("yield")
#elif defined(_WIN32)
#define RELAX() YieldProcessor() /* MSVC: pause on x86, yield on ARM64 */
#else
#define RELAX() ((void)0)
#endif

/* SSE2: GCC and clang say so; MSVC has it on every x64 target (ARM64EC only emulates it) and
 * on x86 by default (/arch:SSE2). */
#if defined(__SSE2__) || (defined(_M_X64) && !defined(_M_ARM64EC)) || \
    (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#define HAS_SSE2 1
#endif

#if defined(__GNUC__) || defined(__clang__)
/* items read and written at any byte, through pointers of other types */
#define LOOSE __attribute__((aligned(1), may_alias))
#define MUL_OVERFLOWS(a, b, r) __builtin_mul_overflow(a, b, r)
#define ADD_OVERFLOWS(a, b, r) __builtin_add_overflow(a, b, r)
#else
/* MSVC assumes no type-based aliasing, and its targets (x86, x64, ARM64) load unaligned */
#define LOOSE
/* as the builtins, for the Py_ssize_t sizes they are used on: 1 (and *r unset) on overflow */
static inline int mul_overflows(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *r) {
    if (a > 0 ? (b > 0 ? a > PY_SSIZE_T_MAX / b : b < PY_SSIZE_T_MIN / a)
              : (b > 0 ? a < PY_SSIZE_T_MIN / b : a != 0 && b < PY_SSIZE_T_MAX / a))
        return 1;
    *r = a * b;
    return 0;
}
static inline int add_overflows(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *r) {
    if (b > 0 ? a > PY_SSIZE_T_MAX - b : a < PY_SSIZE_T_MIN - b) return 1;
    *r = a + b;
    return 0;
}
#define MUL_OVERFLOWS(a, b, r) mul_overflows(a, b, r)
#define ADD_OVERFLOWS(a, b, r) add_overflows(a, b, r)
#endif

typedef uint16_t LOOSE u16;
typedef uint32_t LOOSE u32;
typedef uint64_t LOOSE u64;

/* ------------------------------------------------------------------ moves */

typedef struct {
    char *dst;
    const char *src;
    Py_ssize_t itemsize;
    Py_ssize_t rows; /* product of the outer dimensions */
    int rank;        /* >= 1 after coalescing */
    int stream;      /* rows written with non-temporal stores */
    int piece;       /* in lockstep: its slab one contiguous run on both sides (``piece``) */
    int lane;        /* in lockstep: its slab 16 bytes of one row (``lane``) */
    Py_ssize_t shape[MAX_RANK];
    Py_ssize_t dstride[MAX_RANK];
    Py_ssize_t sstride[MAX_RANK];
    /* in a lockstep group: the strides of the group's leading axes, not in the above */
    Py_ssize_t lead_dstride[MAX_RANK];
    Py_ssize_t lead_sstride[MAX_RANK];
    /* relocatable: the root buffer each pointer lies in (-1: fixed) and its offset there */
    int droot, sroot;
    Py_ssize_t doff, soff;
} Move;

/* Moves run one after another (lead 0), or in lockstep: for each index of their ``lead``
 * leading axes (the same sizes in every move) each move's slab there, in order. A JOIN's
 * inputs then fill each output row together, and a padding's interior and borders are done
 * row by row, while the row is in cache. */
typedef struct {
    Py_ssize_t first, count; /* moves[first:first + count] */
    int lead;
    Py_ssize_t slabs; /* product of the leading sizes */
    Py_ssize_t lead_shape[MAX_RANK];
} Group;

/* ------------------------------------------------------------------ one row */

#define TYPED_ROW(T)                                                              \
    static void row_##T(char *d, const char *s, Py_ssize_t n, Py_ssize_t ds,      \
                        Py_ssize_t ss) {                                          \
        const Py_ssize_t z = (Py_ssize_t)sizeof(T);                               \
        if (ss == 0) {                                                            \
            const T v = *(const T *)s;                                            \
            if (ds == z) {                                                        \
                T *dd = (T *)d;                                                   \
                for (Py_ssize_t i = 0; i < n; i++) dd[i] = v;                     \
            } else {                                                              \
                for (Py_ssize_t i = 0; i < n; i++) *(T *)(d + i * ds) = v;        \
            }                                                                     \
        } else if (ds == z && ss == z) {                                          \
            T *dd = (T *)d;                                                       \
            const T *sp = (const T *)s;                                           \
            for (Py_ssize_t i = 0; i < n; i++) dd[i] = sp[i];                     \
        } else if (ds == z && ss == -z) {                                         \
            T *dd = (T *)d;                                                       \
            const T *sr = (const T *)s - (n - 1);                                 \
            for (Py_ssize_t i = 0; i < n; i++) dd[i] = sr[n - 1 - i];             \
        } else if (ds == z && ss % z == 0) {                                      \
            T *dd = (T *)d;                                                       \
            const T *sp = (const T *)s;                                           \
            const Py_ssize_t step = ss / z;                                       \
            for (Py_ssize_t i = 0; i < n; i++) dd[i] = sp[i * step];              \
        } else {                                                                  \
            for (Py_ssize_t i = 0; i < n; i++)                                    \
                *(T *)(d + i * ds) = *(const T *)(s + i * ss);                    \
        }                                                                         \
    }

typedef uint8_t u8;
TYPED_ROW(u8)
TYPED_ROW(u16)
TYPED_ROW(u32)
TYPED_ROW(u64)

/* Streaming rows: the destination written with non-temporal stores, 16 bytes at a time, so a
 * copy larger than the last-level cache does not first read every destination line it is
 * about to overwrite (write-allocate moves 3 bytes per byte copied, streaming 2; glibc's
 * memcpy avoids it the same way for large copies). Scalar before the first and after the
 * last aligned 16 bytes; the caller fences before it says the batch is done. */
#ifdef HAS_SSE2
#include <emmintrin.h>
#define STREAMS 1

static inline __m128i reverse_u8(__m128i v) {
    v = _mm_shufflelo_epi16(v, 0x1B);
    v = _mm_shufflehi_epi16(v, 0x1B);
    v = _mm_shuffle_epi32(v, 0x4E);
    return _mm_or_si128(_mm_slli_epi16(v, 8), _mm_srli_epi16(v, 8));
}
static inline __m128i reverse_u16(__m128i v) {
    v = _mm_shufflelo_epi16(v, 0x1B);
    v = _mm_shufflehi_epi16(v, 0x1B);
    return _mm_shuffle_epi32(v, 0x4E);
}
static inline __m128i reverse_u32(__m128i v) { return _mm_shuffle_epi32(v, 0x1B); }
static inline __m128i reverse_u64(__m128i v) { return _mm_shuffle_epi32(v, 0x4E); }
/* items 0, 2, ... of a, then of b: a step-2 slice's selection, in SSE2 (each item widened
 * to twice its size, its bits in the low half, then packed back exactly) */
static inline __m128i evens_u8(__m128i a, __m128i b) {
    const __m128i low = _mm_set1_epi16(0x00FF);
    return _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
}
static inline __m128i evens_u16(__m128i a, __m128i b) {
    return _mm_packs_epi32(_mm_srai_epi32(_mm_slli_epi32(a, 16), 16),
                           _mm_srai_epi32(_mm_slli_epi32(b, 16), 16));
}
static inline __m128i evens_u32(__m128i a, __m128i b) {
    return _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), 0x88));
}
static inline __m128i evens_u64(__m128i a, __m128i b) { return _mm_unpacklo_epi64(a, b); }

#define STREAM_ROW(T)                                                                     \
    static void stream_##T(char *d, const char *s, Py_ssize_t n, Py_ssize_t ss) {         \
        const Py_ssize_t z = (Py_ssize_t)sizeof(T), per = 16 / (Py_ssize_t)sizeof(T);    \
        Py_ssize_t i = 0;                                                                 \
        for (; i < n && ((uintptr_t)(d + i * z) & 15); i++)                               \
            *(T *)(d + i * z) = *(const T *)(s + i * ss);                                 \
        if (ss == z) {                                                                    \
            for (; i + per <= n; i += per)                                                \
                _mm_stream_si128((__m128i *)(d + i * z),                                  \
                                 _mm_loadu_si128((const __m128i *)(s + i * z)));          \
        } else if (ss == -z) { /* last chunk first: the source is read upwards, 64 bytes \
                                * a turn while there are 4 chunks left */                \
            const Py_ssize_t first = i, chunks = (n - i) / per;                           \
            Py_ssize_t k = chunks - 1;                                                    \
            for (; k >= 3; k -= 4) {                                                      \
                const Py_ssize_t at = first + (k - 3) * per;                              \
                const char *from = s - (at + 4 * per - 1) * z; /* chunk k's source */     \
                const __m128i a = _mm_loadu_si128((const __m128i *)from);                 \
                const __m128i b = _mm_loadu_si128((const __m128i *)(from + 16));          \
                const __m128i c = _mm_loadu_si128((const __m128i *)(from + 32));          \
                const __m128i e = _mm_loadu_si128((const __m128i *)(from + 48));          \
                _mm_stream_si128((__m128i *)(d + at * z + 48), reverse_##T(a));           \
                _mm_stream_si128((__m128i *)(d + at * z + 32), reverse_##T(b));           \
                _mm_stream_si128((__m128i *)(d + at * z + 16), reverse_##T(c));           \
                _mm_stream_si128((__m128i *)(d + at * z), reverse_##T(e));                \
            }                                                                             \
            for (; k >= 0; k--) {                                                         \
                const Py_ssize_t at = first + k * per;                                    \
                _mm_stream_si128(                                                         \
                    (__m128i *)(d + at * z),                                              \
                    reverse_##T(_mm_loadu_si128((const __m128i *)(s - (at + per - 1) * z)))); \
            }                                                                             \
            i = first + chunks * per;                                                     \
        } else if (ss == 2 * z) { /* every other item: two loads, one shuffle; the      \
                                   * loads end at the next item taken, so not the last; \
                                   * 64 bytes written a turn while there are more */     \
            for (; i + 4 * per < n; i += 4 * per) {                                       \
                const char *from = s + i * ss;                                            \
                const __m128i a = _mm_loadu_si128((const __m128i *)from);                 \
                const __m128i b = _mm_loadu_si128((const __m128i *)(from + 16));          \
                const __m128i c = _mm_loadu_si128((const __m128i *)(from + 32));          \
                const __m128i e = _mm_loadu_si128((const __m128i *)(from + 48));          \
                const __m128i f = _mm_loadu_si128((const __m128i *)(from + 64));          \
                const __m128i g = _mm_loadu_si128((const __m128i *)(from + 80));          \
                const __m128i h = _mm_loadu_si128((const __m128i *)(from + 96));          \
                const __m128i k = _mm_loadu_si128((const __m128i *)(from + 112));         \
                _mm_stream_si128((__m128i *)(d + i * z), evens_##T(a, b));                \
                _mm_stream_si128((__m128i *)(d + i * z + 16), evens_##T(c, e));           \
                _mm_stream_si128((__m128i *)(d + i * z + 32), evens_##T(f, g));           \
                _mm_stream_si128((__m128i *)(d + i * z + 48), evens_##T(h, k));           \
            }                                                                             \
            for (; i + per < n; i += per)                                                 \
                _mm_stream_si128((__m128i *)(d + i * z),                                  \
                                 evens_##T(_mm_loadu_si128((const __m128i *)(s + i * ss)), \
                                           _mm_loadu_si128(                               \
                                               (const __m128i *)(s + i * ss + 16))));     \
        } else if (ss == 0) { /* a broadcast value: one register, stored again and again */ \
            union { __m128i v; T e[16 / sizeof(T)]; } t;                                  \
            for (Py_ssize_t j = 0; j < per; j++) t.e[j] = *(const T *)s;                  \
            for (; i + per <= n; i += per) _mm_stream_si128((__m128i *)(d + i * z), t.v); \
        } else {                                                                          \
            union { __m128i v; T e[16 / sizeof(T)]; } t;                                  \
            for (; i + per <= n; i += per) {                                              \
                for (Py_ssize_t j = 0; j < per; j++)                                      \
                    t.e[j] = *(const T *)(s + (i + j) * ss);                              \
                _mm_stream_si128((__m128i *)(d + i * z), t.v);                            \
            }                                                                             \
        }                                                                                 \
        for (; i < n; i++) *(T *)(d + i * z) = *(const T *)(s + i * ss);                  \
    }

STREAM_ROW(u8)
STREAM_ROW(u16)
STREAM_ROW(u32)
STREAM_ROW(u64)
#else
#define STREAMS 0
#endif

/* A contiguous run of bytes, 64 a turn: every row contiguous on both sides, and in lockstep
 * a move's whole slab (a last-axis JOIN's input row) without the general row's dispatch; an
 * 8-input JOIN of 128-byte pieces ran at 0.6x a memcpy through ``row`` and at a memcpy as a
 * loop like this one. */
static inline void piece(char *d, const char *s, Py_ssize_t n, int stream) {
    Py_ssize_t i = 0;
#if STREAMS
    if (stream) {
        for (; i < n && ((uintptr_t)(d + i) & 15); i++) d[i] = s[i];
        for (; i + 64 <= n; i += 64) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
            const __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
            const __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
            const __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
            _mm_stream_si128((__m128i *)(d + i), a);
            _mm_stream_si128((__m128i *)(d + i + 16), b);
            _mm_stream_si128((__m128i *)(d + i + 32), c);
            _mm_stream_si128((__m128i *)(d + i + 48), e);
        }
        for (; i + 16 <= n; i += 16)
            _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
    } else {
        for (; i + 16 <= n; i += 16)
            _mm_storeu_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
    }
    for (; i < n; i++) d[i] = s[i];
#else
    (void)stream;
    memcpy(d, s, (size_t)n);
    (void)i;
#endif
}

/* Rows of at least this many bytes (in lockstep: slabs of this many bytes per move) are
 * streamed in a streaming program; shorter ones ran slower streamed (an 8-input JOIN of
 * 128-byte rows: 12 GB/s streamed, 18 cached; of 512-byte rows: 24 streamed, 19 cached). */
#define STREAM_ROW_BYTES 128

static inline void row_as(const Move *m, char *d, const char *s, int stream) {
    const int last = m->rank - 1;
    const Py_ssize_t n = m->shape[last], ds = m->dstride[last], ss = m->sstride[last];
    const Py_ssize_t z = m->itemsize;
    if (ds == z && ss == z) { /* one run: 64 bytes a turn (the typed loops below: 16) */
        piece(d, s, n * z, stream);
        return;
    }
#if STREAMS
    if (stream && ds == z) {
        switch (z) {
        case 1: stream_u8(d, s, n, ss); return;
        case 2: stream_u16(d, s, n, ss); return;
        case 4: stream_u32(d, s, n, ss); return;
        case 8: stream_u64(d, s, n, ss); return;
        }
    }
#endif
    switch (z) { /* not memcpy: glibc's rep movsb runs at a fraction of this on some CPUs */
    case 1: row_u8(d, s, n, ds, ss); return;
    case 2: row_u16(d, s, n, ds, ss); return;
    case 4: row_u32(d, s, n, ds, ss); return;
    case 8: row_u64(d, s, n, ds, ss); return;
    default:
        for (Py_ssize_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, (size_t)z);
    }
}

static inline void row(const Move *m, char *d, const char *s) { row_as(m, d, s, m->stream); }

static void run_move(const Move *m, char *d, const char *s) {
    if (m->rows == 1) { /* one row: a slab of a lockstep group, often */
        row(m, d, s);
        return;
    }
    Py_ssize_t index[MAX_RANK];
    const int outer = m->rank - 1;
    memset(index, 0, sizeof(Py_ssize_t) * (size_t)outer);
    for (Py_ssize_t r = 0; r < m->rows; r++) {
        row(m, d, s);
        for (int k = outer - 1; k >= 0; k--) { /* the next row: an odometer */
            d += m->dstride[k];
            s += m->sstride[k];
            if (++index[k] < m->shape[k]) break;
            d -= m->dstride[k] * m->shape[k];
            s -= m->sstride[k] * m->shape[k];
            index[k] = 0;
        }
    }
}

/* Merge a group's leading axes where every move steps through them as one (a JOIN's rows
 * above its axis usually are), so a slab's offsets take one product per move, not one per
 * leading axis. */
static void coalesce_lead(Group *g, Move *moves) {
    int kept = 0;
    for (int k = 0; k < g->lead; k++) {
        int merge = kept > 0;
        for (Py_ssize_t j = g->first; merge && j < g->first + g->count; j++) {
            const Move *m = &moves[j];
            merge = m->lead_dstride[kept - 1] == m->lead_dstride[k] * g->lead_shape[k] &&
                    m->lead_sstride[kept - 1] == m->lead_sstride[k] * g->lead_shape[k];
        }
        for (Py_ssize_t j = g->first; j < g->first + g->count; j++) {
            Move *m = &moves[j];
            if (merge) {
                m->lead_dstride[kept - 1] = m->lead_dstride[k];
                m->lead_sstride[kept - 1] = m->lead_sstride[k];
            } else {
                m->lead_dstride[kept] = m->lead_dstride[k];
                m->lead_sstride[kept] = m->lead_sstride[k];
            }
        }
        if (merge) {
            g->lead_shape[kept - 1] *= g->lead_shape[k];
        } else {
            g->lead_shape[kept] = g->lead_shape[k];
            kept++;
        }
    }
    g->lead = kept;
}

/* 16 contiguous destination bytes from any source steps (a padding's border of 16 bytes:
 * reflected, repeated, filled): gathered in a register and written with one store, streamed
 * where the row is and the bytes are aligned; the general row's dispatch cost 15% of a 128 MB
 * padding, two borders a row. */
static inline void lane(const Move *m, char *d, const char *s) {
#if STREAMS
    if (!m->stream || ((uintptr_t)d & 15)) {
        row(m, d, s);
        return;
    }
    const Py_ssize_t ss = m->sstride[0];
    union { __m128i v; uint8_t b[16]; uint16_t h[8]; uint32_t w[4]; uint64_t q[2]; } t;
    switch (m->itemsize) {
    case 1: for (int i = 0; i < 16; i++) t.b[i] = *(const u8 *)(s + i * ss); break;
    case 2: for (int i = 0; i < 8; i++) t.h[i] = *(const u16 *)(s + i * ss); break;
    case 4: for (int i = 0; i < 4; i++) t.w[i] = *(const u32 *)(s + i * ss); break;
    default: for (int i = 0; i < 2; i++) t.q[i] = *(const u64 *)(s + i * ss); break;
    }
    _mm_stream_si128((__m128i *)d, t.v);
#else
    row(m, d, s);
#endif
}

static void run_group(const Group *g, const Move *moves) {
    const Move *first = moves + g->first, *end = first + g->count;
    if (!g->lead) {
        for (const Move *m = first; m < end; m++) run_move(m, m->dst, m->src);
        return;
    }
    Py_ssize_t index[MAX_RANK] = {0};
    const int last = g->lead - 1;
    for (Py_ssize_t t = 0; t < g->slabs; t++) {
        for (const Move *m = first; m < end; m++) {
            Py_ssize_t doff = 0, soff = 0;
            for (int k = 0; k <= last; k++) {
                doff += index[k] * m->lead_dstride[k];
                soff += index[k] * m->lead_sstride[k];
            }
            if (m->piece)
                piece(m->dst + doff, m->src + soff, m->shape[0] * m->itemsize, m->stream);
            else if (m->lane)
                lane(m, m->dst + doff, m->src + soff);
            else
                run_move(m, m->dst + doff, m->src + soff);
        }
        for (int k = last; k >= 0 && ++index[k] == g->lead_shape[k]; k--) index[k] = 0;
    }
}

static void run_groups(const Group *groups, Py_ssize_t count, const Move *moves) {
    for (Py_ssize_t i = 0; i < count; i++) run_group(&groups[i], moves);
#if STREAMS
    _mm_sfence(); /* streamed stores are visible before the batch is said to be done */
#endif
}

/* One call's lists, each taken whole by the next of its threads (the caller and its copy
 * threads) to free up: the lists are independent, so any thread may run any of them. Cut
 * finer than the threads, a thread that finishes early takes more, rather than wait on a
 * slower one (a VM's two vCPUs run at different speeds from moment to moment). */
typedef struct {
    const Group *groups;
    const Py_ssize_t *starts; /* list k is groups[starts[k]:starts[k + 1]] */
    const Move *moves;
    count_t nlists;
    Counter next; /* the next list to take */
} Share;

static void take_lists(Share *share) {
    for (count_t k; (k = take_next(&share->next)) < share->nlists;)
        run_groups(share->groups + share->starts[k], share->starts[k + 1] - share->starts[k],
                   share->moves);
}

/* ------------------------------------------------------------------ analysis */

/* A strided view with its format, to tell object arrays; an exporter that cannot word its
 * format (NumPy, for ml_dtypes' bfloat16 or float8: plain bytes) is asked without it. */
static int holds_references(PyObject *obj) { /* an array whose dtype says so (hasobject) */
    PyObject *dtype = PyObject_GetAttrString(obj, "dtype");
    PyObject *flag = dtype ? PyObject_GetAttrString(dtype, "hasobject") : NULL;
    int result = flag ? PyObject_IsTrue(flag) : 0;
    Py_XDECREF(flag);
    Py_XDECREF(dtype);
    PyErr_Clear();
    return result > 0;
}

static int get_view(PyObject *obj, Py_buffer *view, int flags) {
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_STRIDES | PyBUF_FORMAT) == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_BufferError))
        return -1;
    PyErr_Clear();
    if (holds_references(obj)) { /* a record with an object field beside an unworded one */
        PyErr_SetString(PyExc_TypeError, "object arrays hold references, not plain bytes");
        return -1;
    }
    return PyObject_GetBuffer(obj, view, flags | PyBUF_STRIDES);
}

static int holds_objects(const Py_buffer *view) {
    return view->format && strchr(view->format, 'O') != NULL;
}

/* The move as pointers and coalesced dimensions; -1 with an exception set when it is not a
 * copy this module makes (NumPy's error for the same copy is raised by the caller). On
 * success the two buffers stay exported in ``views`` (released by the Program): memory that
 * could move, a bytearray resized, cannot while the pointers are kept. */
static int analyse(PyObject *pair, Move *m, Group *g, Py_buffer *views) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "a move is a (destination, source) tuple");
        return -1;
    }
    Py_buffer dv, sv;
    if (get_view(PyTuple_GET_ITEM(pair, 0), &dv, PyBUF_WRITABLE) < 0) return -1;
    if (get_view(PyTuple_GET_ITEM(pair, 1), &sv, 0) < 0) {
        PyBuffer_Release(&dv);
        return -1;
    }
    int result = -1;
    if (holds_objects(&dv) || holds_objects(&sv)) { /* references: copied by NumPy */
        PyErr_SetString(PyExc_TypeError, "object arrays hold references, not plain bytes");
        goto done;
    }
    if (dv.itemsize != sv.itemsize) {
        PyErr_Format(PyExc_TypeError, "item sizes differ: destination %zd, source %zd",
                     dv.itemsize, sv.itemsize);
        goto done;
    }
    if (dv.ndim > MAX_RANK || sv.ndim > dv.ndim) {
        PyErr_Format(PyExc_ValueError, "ranks %d <- %d: at most %d, source not above",
                     dv.ndim, sv.ndim, MAX_RANK);
        goto done;
    }
    if (dv.ndim < g->lead) {
        PyErr_Format(PyExc_ValueError, "rank %d below the group's %d leading axes", dv.ndim,
                     g->lead);
        goto done;
    }
    m->dst = (char *)dv.buf;
    m->src = (const char *)sv.buf;
    m->itemsize = dv.itemsize;
    m->rows = 1;
    int rank = 0;
    const int lead = dv.ndim - sv.ndim;
    for (int k = 0; k < dv.ndim; k++) {
        Py_ssize_t n = dv.shape[k], ss = 0;
        if (k >= lead) {
            Py_ssize_t sn = sv.shape[k - lead];
            if (sn != n && sn != 1) {
                PyErr_Format(PyExc_ValueError, "source dimension %d of size %zd does not "
                             "broadcast to %zd", k - lead, sn, n);
                goto done;
            }
            ss = sn == 1 ? 0 : sv.strides[k - lead];
        }
        if (k < g->lead) { /* run in lockstep by the group */
            if (m != NULL && g->count && g->lead_shape[k] != n) {
                PyErr_Format(PyExc_ValueError, "leading axis %d: size %zd, the group's %zd",
                             k, n, g->lead_shape[k]);
                goto done;
            }
            g->lead_shape[k] = n;
            m->lead_dstride[k] = dv.strides[k];
            m->lead_sstride[k] = ss;
            continue;
        }
        if (n == 0) { /* nothing to copy */
            m->rows = 0;
            m->rank = 1;
            m->shape[0] = 0;
            m->dstride[0] = m->sstride[0] = m->itemsize;
            result = 0;
            goto keep;
        }
        if (n == 1) continue;
        if (rank > 0) {
            const int p = rank - 1; /* merge with the previous dimension where it is one run */
            if (m->dstride[p] == dv.strides[k] * n && m->sstride[p] == ss * n) {
                m->shape[p] *= n;
                m->dstride[p] = dv.strides[k];
                m->sstride[p] = ss;
                continue;
            }
        }
        m->shape[rank] = n;
        m->dstride[rank] = dv.strides[k];
        m->sstride[rank] = ss;
        rank++;
    }
    if (rank == 0) { /* one element */
        m->shape[0] = 1;
        m->dstride[0] = m->sstride[0] = m->itemsize;
        rank = 1;
    }
    m->rank = rank;
    for (int k = 0; k < rank - 1; k++) m->rows *= m->shape[k];
    result = 0;
keep:
    views[0] = dv;
    views[1] = sv;
    return result;
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&dv);
    return result;
}

/* ------------------------------------------------------------------ copy threads */

typedef struct {
    Thread thread;
    Counter go;      /* the batch asked for */
    Counter entered; /* the last batch resolved: begun by the thread, or called off by the caller */
    Counter done;    /* the batch finished */
    Share *share;
    Mutex lock;
    Cond wake;
    int sleeping;
} Worker;

/* A program writing at least this many bytes may stream its rows (None for ``stream``);
 * below, the output is better left in cache for its reader. Whether it does is measured, not
 * read from the CPU: a VM's reported cache size can be the host's (seen: 256 MB reported,
 * 32 MB present; and 260 MB reported where copies of 16 MB ran 1.5x faster cached and of
 * 128 MB faster streamed). It times both ways in blocks of ``TUNE_BLOCK`` calls, all but
 * the first of each timed, in two rounds: a block streamed, then one cached, and the faster
 * for now; then that way for two blocks and the other for one, and from then on the way whose
 * fastest call of the second round was faster (the kept way's last block against the other's).
 * Two rounds, since a program's first calls run slower whatever the way (a 16 MB Concat:
 * 1.1-1.5 ms for its first 8-10 calls, then 0.5-0.9, faulting no page), which decided the
 * first round alone by which block came later: an 8-input axis-0 Concat kept cached stores in
 * 3 of 3 tunings where, warmed, streamed took 0.72 ms and cached 0.95. In blocks, not in
 * turns: a cached copy is fast only while its output is in cache, which a streamed turn
 * between evicts (in turns, every 16 MB padding timed streamed as the faster). */
static const Py_ssize_t stream_bytes = 8 << 20;
#define TUNE_BLOCK 4
/* the tuning's calls: two blocks of the first round, three of the second */
#define TUNE_CALLS (5 * TUNE_BLOCK)

static Worker workers[MAX_WORKERS];
/* At most this many CPUs' worth of threads a call (0: no limit): a cgroup's CPU quota, which
 * ``threads.py`` reads and sets (``limit_cpus``). A container limited so (``docker --cpus=2``)
 * has every CPU of its host in its affinity, and copy threads past its quota stall a call as
 * copy threads past its CPUs do: the others spin waiting for the one descheduled. */
static volatile int cpu_limit;

/* The most threads a call runs on: its thread's CPUs, within ``cpu_limit``. */
static int call_cpus(void) {
    const int cpus = usable_cpus(), limit = cpu_limit;
    return limit > 0 && limit < cpus ? limit : cpus;
}
static int started;
/* batches called off since the module loaded (``called_off()``: what a test can see) */
static Counter calls_off;
/* one batch at a time uses the copy threads; another runs on its own thread */
static Mutex pool = MUTEX_INIT;

static thread_result THREAD_CALL work(void *arg) {
    Worker *w = (Worker *)arg;
    for (count_t seen = 0;;) {
        long long until = 0;
        for (unsigned spins = 0; load_acquire(&w->go) == seen; spins++) {
            if ((spins & 1023) == 0) {
                long long t = now_ns();
                if (!until) until = t + SPIN_NS;
                if (t > until) {
                    mutex_lock(&w->lock);
                    w->sleeping = 1;
                    while (load_acquire(&w->go) == seen) cond_wait(&w->wake, &w->lock);
                    w->sleeping = 0;
                    mutex_unlock(&w->lock);
                    break;
                }
            }
            RELAX();
        }
        /* batches are asked for one at a time, each resolved before the next: by this
         * thread beginning it, or by its caller, done first, calling it off (then this thread
         * must not touch its ``Share``, gone with the caller's frame) */
        seen = load_acquire(&w->go);
        if (swap_if(&w->entered, seen - 1, seen)) {
            take_lists(w->share);
            store_release(&w->done, seen);
        }
    }
    return 0;
}

/* Start copy threads up to ``count``; how many there are. Called with ``pool`` held. */
static int ensure_workers(int count) {
    while (started < count) {
        Worker *w = &workers[started];
        store_fenced(&w->go, 0);
        store_fenced(&w->entered, 0);
        store_fenced(&w->done, 0);
        w->sleeping = 0;
        mutex_init(&w->lock);
        cond_init(&w->wake);
        if (start_detached(&w->thread, work, w)) break;
        started++;
    }
    return started;
}

#ifndef _WIN32 /* no fork there */
/* In a forked child the parent's copy threads do not exist. */
static void forget_workers(void) {
    started = 0;
    Mutex fresh = MUTEX_INIT;
    pool = fresh;
}
#endif

/* ------------------------------------------------------------------ Program */

typedef struct {
    PyObject_HEAD
    PyObject *lists; /* keeps the arrays alive */
    Py_buffer *views; /* each move's destination and source, exported while the moves point in */
    Py_ssize_t nviews;
    Move *moves;
    Group *groups;
    Py_ssize_t *starts; /* list k is groups[starts[k]:starts[k + 1]] */
    Py_ssize_t nlists;
    int threads; /* at most this many run the lists, each taking the next (``Share``) */
    Py_ssize_t nbytes;
    Py_ssize_t nmoves; /* for ``relocate`` */
    int nroots; /* relocatable: each call says where roots[0:nroots] lie (``relocate``) */
    Py_ssize_t *slots; /* root r's address is item slots[r] of a call's addresses */
    Py_ssize_t span;   /* a call's addresses have at least this many items */
    int busy;   /* a relocating call is running: another would move its pointers */
    /* stream None at ``stream_bytes`` or more: each move's ``stream`` when streaming (the
     * moves' own say the current way), calls left to time (the first, untimed, too), each
     * way's fastest call of the round so far in ns (0 cached, 1 streamed; 0: not timed yet),
     * and the way the first round found faster */
    unsigned char *streamed;
    int tuning;
    int running; /* calls in flight */
    long long fastest[2];
    int kept;
} Program;

/* Which of the roots ([low, low + size), a root of size 0 taken as 1 byte) holds ``p``, and
 * its offset there; -1 where none does (a fill value, a constant: fixed). */
static int resolve(const char *p, char *const *low, const Py_ssize_t *size, int nroots,
                   Py_ssize_t *offset) {
    for (int r = 0; r < nroots; r++) {
        if (low[r] && p >= low[r] && p < low[r] + (size[r] > 0 ? size[r] : 1)) {
            *offset = p - low[r];
            return r;
        }
    }
    *offset = 0;
    return -1;
}

/* Every relocatable pointer moved to its root's base in this call. */
static void relocate(Program *self, char *const *bases) {
    for (Py_ssize_t j = 0; j < self->nmoves; j++) {
        Move *m = &self->moves[j];
        if (m->droot >= 0) m->dst = bases[m->droot] + m->doff;
        if (m->sroot >= 0) m->src = bases[m->sroot] + m->soff;
    }
}

/* A new tuple of a sequence's items: PySequence_Tuple gives a tuple back as it is, and the
 * Program rewrites the tuples it holds, which must not be the caller's. */
static PyObject *fresh_tuple(PyObject *sequence) {
    PyObject *items = PySequence_Fast(sequence, "a sequence is needed");
    if (!items) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject *tuple = PyTuple_New(n);
    if (tuple)
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(tuple, i, Py_NewRef(PySequence_Fast_GET_ITEM(items, i)));
    Py_DECREF(items);
    return tuple;
}

/* ``roots``: None, or a sequence whose item r is None (root r is not relocated) or
 * (address, size) of the memory the moves were built over; fills ``low``/``size``. */
static int parse_roots(PyObject *roots, char ***low, Py_ssize_t **size, int *nroots) {
    *low = NULL;
    *size = NULL;
    *nroots = 0;
    if (roots == Py_None) return 0;
    PyObject *seq = PySequence_Tuple(roots);
    if (!seq) return -1;
    const Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > INT_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "too many roots");
        Py_DECREF(seq);
        return -1;
    }
    *low = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    *size = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    if (!*low || !*size) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *item = PyTuple_GET_ITEM(seq, r);
        if (item == Py_None) continue;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "a root is None or (address, size)");
            goto fail;
        }
        (*low)[r] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(item, 0));
        (*size)[r] = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
        if (PyErr_Occurred()) goto fail;
        if (!(*low)[r] || (*size)[r] < 0) {
            PyErr_SetString(PyExc_ValueError, "a root's address is not 0 and its size not negative");
            goto fail;
        }
    }
    Py_DECREF(seq);
    *nroots = (int)n;
    return 0;
fail:
    Py_DECREF(seq);
    PyMem_Free(*low);
    PyMem_Free(*size);
    *low = NULL;
    *size = NULL;
    return -1;
}

static void program_dealloc(Program *self) {
    for (Py_ssize_t i = 0; i < self->nviews; i++) PyBuffer_Release(&self->views[i]);
    PyMem_Free(self->views);
    Py_XDECREF(self->lists);
    PyMem_Free(self->moves);
    PyMem_Free(self->groups);
    PyMem_Free(self->starts);
    PyMem_Free(self->slots);
    PyMem_Free(self->streamed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ``slots``: None (root r at item r), or one index a root into a call's addresses. */
static int parse_slots(PyObject *given, int nroots, Py_ssize_t **slots, Py_ssize_t *span) {
    *slots = PyMem_Calloc((size_t)(nroots ? nroots : 1), sizeof(Py_ssize_t));
    if (!*slots) {
        PyErr_NoMemory();
        return -1;
    }
    *span = nroots;
    if (given == Py_None) {
        for (int r = 0; r < nroots; r++) (*slots)[r] = r;
        return 0;
    }
    PyObject *seq = PySequence_Fast(given, "slots are a sequence of indices");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != nroots) {
        PyErr_Format(PyExc_ValueError, "%d slots expected (one a root), got %zd", nroots,
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return -1;
    }
    *span = 0;
    for (int r = 0; r < nroots; r++) {
        const Py_ssize_t slot = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, r));
        if (slot < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a slot is negative");
            Py_DECREF(seq);
            return -1;
        }
        (*slots)[r] = slot;
        if (slot >= *span) *span = slot + 1;
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *given, *stream = Py_None, *roots = Py_None, *slots = Py_None;
    Py_ssize_t threads = 0;
    static char *names[] = {"lists", "stream", "roots", "slots", "threads", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO$n:Program", names, &given, &stream,
                                     &roots, &slots, &threads))
        return NULL;
    if (slots != Py_None && roots == Py_None) {
        PyErr_SetString(PyExc_TypeError, "slots place roots: give the roots too");
        return NULL;
    }
    if (stream != Py_None && stream != Py_True && stream != Py_False) {
        PyErr_SetString(PyExc_TypeError, "stream is None (by size), True or False");
        return NULL;
    }
    char **root_low;
    Py_ssize_t *root_size;
    int nroots;
    if (parse_roots(roots, &root_low, &root_size, &nroots) < 0) return NULL;
    PyObject *lists = fresh_tuple(given);
    if (!lists) {
        PyMem_Free(root_low);
        PyMem_Free(root_size);
        return NULL;
    }
    Py_ssize_t nlists = PyTuple_GET_SIZE(lists);
    if (!threads) threads = nlists < MAX_WORKERS + 1 ? nlists : MAX_WORKERS + 1; /* one each */
    if (nlists < 1 || threads < 1 || threads > MAX_WORKERS + 1) {
        if (nlists < 1)
            PyErr_SetString(PyExc_ValueError, "lists of moves: at least 1, got 0");
        else
            PyErr_Format(PyExc_ValueError, "1 to %d threads run the lists of moves, got %zd",
                         MAX_WORKERS + 1, threads);
        Py_DECREF(lists);
        PyMem_Free(root_low);
        PyMem_Free(root_size);
        return NULL;
    }
    Program *self = (Program *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(lists);
        PyMem_Free(root_low);
        PyMem_Free(root_size);
        return NULL;
    }
    self->nroots = nroots;
    if (parse_slots(slots, nroots, &self->slots, &self->span) < 0) goto fail;
    self->nlists = nlists;
    self->threads = (int)(threads < nlists ? threads : nlists);
    self->starts = PyMem_Calloc((size_t)nlists + 1, sizeof(Py_ssize_t));
    Py_ssize_t ngroups = 0, nmoves = 0;
    for (Py_ssize_t k = 0; k < nlists; k++) { /* each list as a tuple of items */
        PyObject *old = PyTuple_GET_ITEM(lists, k);
        PyObject *list = fresh_tuple(old);
        if (!list) goto fail;
        PyTuple_SET_ITEM(lists, k, list); /* a tuple we made: replace in place */
        Py_DECREF(old);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(list); i++) {
            PyObject *item = PyTuple_GET_ITEM(list, i);
            ngroups++;
            if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 &&
                PyLong_Check(PyTuple_GET_ITEM(item, 0))) { /* (lead, moves): a group */
                PyObject *group = PySequence_Tuple(PyTuple_GET_ITEM(item, 1));
                if (!group) goto fail;
                PyObject *made = PyTuple_Pack(2, PyTuple_GET_ITEM(item, 0), group);
                Py_DECREF(group);
                if (!made) goto fail;
                PyTuple_SET_ITEM(list, i, made);
                Py_DECREF(item);
                nmoves += PyTuple_GET_SIZE(PyTuple_GET_ITEM(made, 1));
            } else {
                nmoves++;
            }
        }
    }
    self->lists = lists;
    self->moves = PyMem_Calloc((size_t)(nmoves ? nmoves : 1), sizeof(Move));
    self->groups = PyMem_Calloc((size_t)(ngroups ? ngroups : 1), sizeof(Group));
    self->views = PyMem_Calloc((size_t)(2 * nmoves + 2), sizeof(Py_buffer));
    if (!self->starts || !self->moves || !self->groups || !self->views) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t at = 0, moved = 0;
    for (Py_ssize_t k = 0; k < nlists; k++) {
        PyObject *list = PyTuple_GET_ITEM(lists, k);
        self->starts[k] = at;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(list); i++, at++) {
            PyObject *item = PyTuple_GET_ITEM(list, i);
            Group *g = &self->groups[at];
            g->first = moved;
            g->slabs = 1;
            PyObject *pairs = NULL;
            if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 &&
                PyLong_Check(PyTuple_GET_ITEM(item, 0))) {
                long lead = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
                if (lead < 0 || lead > MAX_RANK) {
                    if (!PyErr_Occurred())
                        PyErr_Format(PyExc_ValueError, "a group's lead %ld is not 0 to %d",
                                     lead, MAX_RANK);
                    goto fail;
                }
                g->lead = (int)lead;
                pairs = PyTuple_GET_ITEM(item, 1);
            }
            const Py_ssize_t count = pairs ? PyTuple_GET_SIZE(pairs) : 1;
            for (Py_ssize_t j = 0; j < count; j++, moved++) {
                PyObject *pair = pairs ? PyTuple_GET_ITEM(pairs, j) : item;
                Move *m = &self->moves[moved];
                if (analyse(pair, m, g, &self->views[self->nviews]) < 0) goto fail;
                self->nviews += 2;
                m->droot = resolve(m->dst, root_low, root_size, nroots, &m->doff);
                m->sroot = resolve(m->src, root_low, root_size, nroots, &m->soff);
                g->count++;
                if (j == 0)
                    for (int a = 0; a < g->lead; a++) g->slabs *= g->lead_shape[a];
            }
            if (g->lead) coalesce_lead(g, self->moves);
            for (Py_ssize_t j = g->first; j < moved; j++) {
                Move *m = &self->moves[j];
                Py_ssize_t bytes; /* saturated: zero-stride destinations can be huge */
                if (MUL_OVERFLOWS(g->slabs, m->rows, &bytes) ||
                    MUL_OVERFLOWS(bytes, m->shape[m->rank - 1], &bytes) ||
                    MUL_OVERFLOWS(bytes, m->itemsize, &bytes) ||
                    ADD_OVERFLOWS(self->nbytes, bytes, &self->nbytes))
                    self->nbytes = PY_SSIZE_T_MAX;
                m->piece = g->lead > 0 && m->rows == 1 && m->rank == 1 &&
                           m->dstride[0] == m->itemsize && m->sstride[0] == m->itemsize;
                m->lane = STREAMS && g->lead > 0 && !m->piece && m->rows == 1 && m->rank == 1 &&
                          m->dstride[0] == m->itemsize && m->shape[0] * m->itemsize == 16 &&
                          (m->itemsize == 1 || m->itemsize == 2 || m->itemsize == 4 ||
                           m->itemsize == 8);
            }
        }
    }
    self->starts[nlists] = at;
    const int streaming = stream == Py_True || (stream == Py_None && self->nbytes >= stream_bytes);
    for (Py_ssize_t k = 0; STREAMS && streaming && k < at; k++) {
        /* In lockstep, all of a group's moves or none, by the bytes a slab writes per move:
         * their rows share cache lines, and a line written partly streamed and partly cached
         * costs more than either (a padding's 16-byte borders cached beside its streamed
         * interior ran at a quarter of a memcpy; all streamed, at a memcpy). */
        const Group *g = &self->groups[k];
        Py_ssize_t slab = 0;
        for (Py_ssize_t j = g->first; j < g->first + g->count; j++) {
            Move *m = &self->moves[j];
            const Py_ssize_t row = m->shape[m->rank - 1] * m->itemsize;
            m->stream = row >= STREAM_ROW_BYTES;
            Py_ssize_t bytes; /* saturated, as nbytes is */
            if (MUL_OVERFLOWS(m->rows, row, &bytes) ||
                ADD_OVERFLOWS(slab, bytes, &slab))
                slab = PY_SSIZE_T_MAX;
        }
        const int all = slab >= STREAM_ROW_BYTES * g->count;
        for (Py_ssize_t j = g->first; g->lead && j < g->first + g->count; j++)
            self->moves[j].stream = all;
    }
    if (STREAMS && streaming && stream == Py_None && at) { /* by size: measured (see above) */
        self->streamed = PyMem_Malloc((size_t)moved);
        if (!self->streamed) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t j = 0; j < moved; j++)
            self->streamed[j] = (unsigned char)self->moves[j].stream;
        self->tuning = TUNE_CALLS;
    }
    self->nmoves = moved;
    PyMem_Free(root_low);
    PyMem_Free(root_size);
    return (PyObject *)self;
fail:
    PyMem_Free(root_low);
    PyMem_Free(root_size);
    if (!self->lists) Py_DECREF(lists);
    Py_DECREF(self);
    return NULL;
}

/* Every move written as when streaming (``on``) or cached. */
static void set_streaming(Program *self, int on) {
    for (Py_ssize_t j = 0; j < self->nmoves; j++)
        self->moves[j].stream = on ? self->streamed[j] : 0;
}

static void run_lists(Program *self);

/* Run the lists; while tuning, the calls of its two rounds (see ``stream_bytes``), each
 * block's first untimed. The counts change with the GIL held; a call made while another of
 * the same program runs (another thread's) neither times nor switches, so no move's way
 * changes under a running copy (a program only ever called so keeps streaming, as every
 * program of 8 MB did before). */
static void program_run(Program *self) {
    self->running++;
    if (!self->tuning || self->running > 1) {
        run_lists(self);
        self->running--;
        return;
    }
    const int turn = TUNE_CALLS - self->tuning, block = turn / TUNE_BLOCK;
    const int first = turn % TUNE_BLOCK == 0;
    /* blocks: 0 streamed, 1 cached; 2 and 3 the kept way (3 timed), 4 the other */
    const int on = block == 0 ? 1 : block == 1 ? 0 : block < 4 ? self->kept : !self->kept;
    if (first && block != 3) set_streaming(self, on);
    const long long start = now_ns();
    run_lists(self);
    const long long took = now_ns() - start;
    if (--self->running) return; /* another call began meanwhile: not timed alone */
    if (!first && block != 2 && (!self->fastest[on] || took < self->fastest[on]))
        self->fastest[on] = took;
    if (turn == 2 * TUNE_BLOCK - 1) { /* the first round's end: the faster for now */
        self->kept = self->fastest[1] <= self->fastest[0];
        self->fastest[0] = self->fastest[1] = 0;
    }
    if (--self->tuning == 0) set_streaming(self, self->fastest[1] <= self->fastest[0]);
}

/* Run the lists (the GIL released): here and on up to ``threads - 1`` copy threads, each
 * taking the next list as it frees up; no more threads than the CPUs this thread may run on,
 * since a copy thread without a CPU of its own stalls the call: the others spin waiting for
 * it (measured on 2 vCPUs, a 16 MB Concat: 0.86 ms on 2 threads, 4.0 ms on 3, 8.1 ms on
 * 8). Without the copy threads (another batch holds them), all here. A copy thread that
 * has not begun when every list is taken (asleep, or its CPU running other work) is called
 * off, not waited for: on the loaded 2-vCPU VM, waiting for one to wake took 64 us to 2 ms,
 * and a 16 MB Concat on 2 threads 4.5-5.3 ms against 1.9-2.4 called off. */
static void run_lists(Program *self) {
    int helpers = self->threads - 1;
    if (helpers > 0) {
        const int cpus = call_cpus();
        if (helpers > cpus - 1) helpers = cpus - 1;
    }
    Share share = {self->groups, self->starts, self->moves, (count_t)self->nlists, 0};
    Py_BEGIN_ALLOW_THREADS
    int pooled = helpers > 0 && mutex_trylock(&pool);
    int handed = pooled ? ensure_workers(helpers) : 0;
    if (handed > helpers) handed = helpers;
    count_t batch[MAX_WORKERS];
    for (int k = 0; k < handed; k++) {
        Worker *w = &workers[k];
        w->share = &share;
        batch[k] = load_relaxed(&w->go) + 1;
        mutex_lock(&w->lock);
        store_release(&w->go, batch[k]);
        if (w->sleeping) cond_signal(&w->wake);
        mutex_unlock(&w->lock);
    }
    take_lists(&share);
    for (int k = 0; k < handed; k++) {
        /* a thread that has not begun (asleep, or not given a CPU yet) is not waited for:
         * every list is taken */
        if (swap_if(&workers[k].entered, batch[k] - 1, batch[k])) {
            take_next(&calls_off);
            continue;
        }
        for (unsigned spins = 0; load_acquire(&workers[k].done) != batch[k]; spins++) {
            if (spins > 100000) thread_yield();
            else RELAX();
        }
    }
    if (pooled) mutex_unlock(&pool);
    Py_END_ALLOW_THREADS
}

/* The program at ``bases`` (item r: where root r lies now; items of roots not relocated are
 * ignored), then run; -1 with an exception set if it is running already (its pointers are
 * shared by the call in flight). */
static int program_run_at(Program *self, char *const *bases) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a relocatable Program is already running (calls must not overlap)");
        return -1;
    }
    self->busy = 1;
    relocate(self, bases);
    program_run(self);
    self->busy = 0;
    return 0;
}

static PyObject *program_call(Program *self, PyObject *args, PyObject *kwargs) {
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "a Program takes no keyword arguments");
        return NULL;
    }
    const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (!self->nroots) {
        if (nargs) {
            PyErr_SetString(PyExc_TypeError, "a Program built without roots takes no arguments");
            return NULL;
        }
        program_run(self);
        Py_RETURN_NONE;
    }
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "a relocatable Program takes the roots' addresses");
        return NULL;
    }
    PyObject *given = PySequence_Fast(PyTuple_GET_ITEM(args, 0), "addresses are a sequence");
    if (!given) return NULL;
    if (PySequence_Fast_GET_SIZE(given) < self->span) {
        PyErr_Format(PyExc_ValueError, "at least %zd root addresses expected, got %zd",
                     self->span, PySequence_Fast_GET_SIZE(given));
        Py_DECREF(given);
        return NULL;
    }
    char **bases = PyMem_Calloc((size_t)self->nroots, sizeof(char *));
    if (!bases) {
        Py_DECREF(given);
        return PyErr_NoMemory();
    }
    PyObject **items = PySequence_Fast_ITEMS(given);
    int failed = 0;
    for (int r = 0; r < self->nroots && !failed; r++) {
        PyObject *item = items[self->slots[r]];
        if (item == Py_None) continue;
        bases[r] = PyLong_AsVoidPtr(item);
        failed = PyErr_Occurred() != NULL;
    }
    /* a root some move lies in must be given (named by its item in the addresses) */
    for (Py_ssize_t j = 0; j < self->nmoves && !failed; j++) {
        const Move *m = &self->moves[j];
        if ((m->droot >= 0 && !bases[m->droot]) || (m->sroot >= 0 && !bases[m->sroot])) {
            const int r = m->droot >= 0 && !bases[m->droot] ? m->droot : m->sroot;
            PyErr_Format(PyExc_ValueError, "root %zd is moved from or to but has no address",
                         self->slots[r]);
            failed = 1;
        }
    }
    if (!failed) failed = program_run_at(self, bases) < 0;
    PyMem_Free(bases);
    Py_DECREF(given);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyObject *program_nbytes(Program *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *program_streams(Program *self, void *closure) {
    (void)closure;
    if (self->tuning) Py_RETURN_NONE;
    for (Py_ssize_t j = 0; j < self->nmoves; j++)
        if (self->moves[j].stream) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *program_threads(Program *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(self->threads);
}

static PyObject *program_lists(Program *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->nlists);
}

static PyGetSetDef program_getset[] = {
    {"nbytes", (getter)program_nbytes, NULL, "destination bytes written per call", NULL},
    {"threads", (getter)program_threads, NULL, "the most threads that run its lists", NULL},
    {"lists", (getter)program_lists, NULL, "lists of moves, each taken whole by one thread",
     NULL},
    {"streams", (getter)program_streams, NULL,
     "whether it writes with non-temporal stores (None: still timing both ways)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "backends.numpy._copies.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = (destructor)program_dealloc,
    .tp_call = (ternaryfunc)program_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lists of (destination, source) copies, analysed once; call to run them, "
              "list 0 on this thread and list k on copy thread k.",
    .tp_new = program_new,
    .tp_getset = program_getset,
};

/* ------------------------------------------------------------------ Replay */

/* A compiled plan's run, when nothing in it needs Python: check the feeds and bound outputs,
 * take pooled buffers for the other outputs, say where every per-run root lies, and run the
 * programs. Python's own path does the same in a few hundred bytecodes, which when a run's
 * megabytes have evicted them from cache cost 150-250 us a run (measured on a 2-core VM); so
 * do the checks here and give up (None) on anything unusual, for Python's path to run it or
 * to say precisely what is wrong. */

/* An ndarray's leading fields, as NumPy's C API lays them out (``PyArrayObject_fields``, the
 * same from NumPy 1.7 to 2.x); read directly, since the dtype attribute and the buffer
 * protocol go through code a cold run pays for (checked at ``Replay``'s creation on a probe
 * array: a layout that differs disables the replay). */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} ArrayFields;

#define ARRAY_C_CONTIGUOUS 0x0001
#define ARRAY_WRITEABLE 0x0400

typedef struct {
    PyObject *name;
    PyObject *dtype;
    Py_ssize_t itemsize;
    int ndim;
    Py_ssize_t shape[MAX_RANK];
    int root;          /* -1: no DML node reads it (checked, not bound) */
    PyObject *factory; /* outputs: makes a fresh array of the output's dtype and shape */
    PyObject *pool;    /* outputs: a list of such arrays, reused once only it holds them */
} Port;

typedef struct {
    PyObject_HEAD
    Port *ports; /* inputs, then outputs */
    Py_ssize_t ninputs, noutputs;
    PyObject *programs; /* a tuple of Programs, run in order */
    int nroots;
    int most; /* the most roots a program relocates: its bases are gathered by its slots */
    char **fixed; /* where each root lies when no port binds it (a plan's own buffers) */
    PyObject *acquire, *release; /* the plan's lock's methods */
    PyObject *array_type; /* feeds and outputs of exactly the probe's type are taken */
    Py_ssize_t limit;     /* pooled arrays kept per output */
    PyObject *keep;       /* what ``fixed`` points into (the plan's buffers), kept alive */
} Replay;

static void replay_clear_ports(Replay *self) {
    for (Py_ssize_t i = 0; self->ports && i < self->ninputs + self->noutputs; i++) {
        Port *p = &self->ports[i];
        Py_XDECREF(p->name);
        Py_XDECREF(p->dtype);
        Py_XDECREF(p->factory);
        Py_XDECREF(p->pool);
    }
    PyMem_Free(self->ports);
    self->ports = NULL;
}

static void replay_dealloc(Replay *self) {
    replay_clear_ports(self);
    Py_XDECREF(self->programs);
    PyMem_Free(self->fixed);
    Py_XDECREF(self->acquire);
    Py_XDECREF(self->release);
    Py_XDECREF(self->array_type);
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* (name, dtype, shape, root) for an input; (name, dtype, shape, root, factory) an output */
static int parse_port(PyObject *item, Port *p, int output, int nroots) {
    const Py_ssize_t want = output ? 5 : 4;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != want) {
        PyErr_Format(PyExc_TypeError, "a port is a tuple of %zd", want);
        return -1;
    }
    PyObject *shape = PyTuple_GET_ITEM(item, 2);
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "a port's shape is a tuple of at most %d sizes", MAX_RANK);
        return -1;
    }
    p->ndim = (int)PyTuple_GET_SIZE(shape);
    for (int k = 0; k < p->ndim; k++) {
        p->shape[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        if (p->shape[k] < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a size is negative");
            return -1;
        }
    }
    long root = PyLong_AsLong(PyTuple_GET_ITEM(item, 3));
    if (root == -1 && PyErr_Occurred()) return -1;
    if (root < -1 || root >= nroots || (output && root < 0)) {
        PyErr_Format(PyExc_ValueError, "root %ld is not one of the %d roots", root, nroots);
        return -1;
    }
    p->root = (int)root;
    p->name = Py_NewRef(PyTuple_GET_ITEM(item, 0));
    p->dtype = Py_NewRef(PyTuple_GET_ITEM(item, 1));
    PyObject *itemsize = PyObject_GetAttrString(p->dtype, "itemsize");
    if (!itemsize) return -1;
    p->itemsize = PyLong_AsSsize_t(itemsize);
    Py_DECREF(itemsize);
    if (p->itemsize < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a negative item size");
        return -1;
    }
    if (output) {
        p->factory = Py_NewRef(PyTuple_GET_ITEM(item, 4));
        p->pool = PyList_New(0);
        if (!p->pool) return -1;
    }
    return 0;
}

/* The probe, np.empty((2, 3), np.float32) made by the caller, read through ``ArrayFields``
 * agrees with what its attributes and buffer say; else a ValueError. */
static int probe_layout(PyObject *probe) {
    Py_buffer view;
    if (PyObject_GetBuffer(probe, &view, PyBUF_RECORDS_RO) < 0) return -1;
    const ArrayFields *a = (const ArrayFields *)probe;
    PyObject *dtype = PyObject_GetAttrString(probe, "dtype");
    int same = dtype && view.ndim == 2 && view.shape[0] == 2 && view.shape[1] == 3 &&
               view.itemsize == 4 && a->data == (char *)view.buf && a->nd == 2 &&
               a->dimensions[0] == 2 && a->dimensions[1] == 3 && a->strides[0] == 12 &&
               a->strides[1] == 4 && a->descr == dtype &&
               (a->flags & (ARRAY_C_CONTIGUOUS | ARRAY_WRITEABLE)) ==
                   (ARRAY_C_CONTIGUOUS | ARRAY_WRITEABLE);
    Py_XDECREF(dtype);
    PyBuffer_Release(&view);
    if (PyErr_Occurred()) return -1;
    if (!same) {
        PyErr_SetString(PyExc_ValueError, "this NumPy's arrays are not laid out as expected");
        return -1;
    }
    return 0;
}

/* 1 when ``obj`` is an array of exactly the probe's type, the port's dtype and shape,
 * C-contiguous (and writable for an output), its bytes in [*low, *high); 0 when it is not;
 * -1 on error. */
static int take_array(Replay *self, PyObject *obj, const Port *p, int writable, char **low,
                      char **high) {
    if ((PyObject *)Py_TYPE(obj) != self->array_type) return 0;
    const ArrayFields *a = (const ArrayFields *)obj;
    const int need = ARRAY_C_CONTIGUOUS | (writable ? ARRAY_WRITEABLE : 0);
    if ((a->flags & need) != need || a->nd != p->ndim) return 0;
    Py_ssize_t n = p->itemsize;
    for (int k = 0; k < p->ndim; k++) {
        if (a->dimensions[k] != p->shape[k]) return 0;
        n *= p->shape[k];
    }
    if (a->descr != p->dtype) { /* not the same object: an equal dtype will do */
        const int same = PyObject_RichCompareBool(a->descr, p->dtype, Py_EQ);
        if (same <= 0) return same;
    }
    *low = a->data;
    *high = a->data + n;
    return 1;
}

static PyObject *replay_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *inputs, *outputs, *programs, *fixed, *lock, *probe, *keep = Py_None;
    Py_ssize_t limit = 4;
    static char *names[] = {"inputs", "outputs", "programs", "bases", "lock", "probe", "limit",
                            "keep", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!O!OO|nO:Replay", names, &PyTuple_Type,
                                     &inputs, &PyTuple_Type, &outputs, &PyTuple_Type, &programs,
                                     &PyTuple_Type, &fixed, &lock, &probe, &limit, &keep))
        return NULL;
    if (limit < 0 || PyTuple_GET_SIZE(fixed) > INT_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "limit is negative, or too many bases");
        return NULL;
    }
    if (probe_layout(probe) < 0) return NULL;
    const int nroots = (int)PyTuple_GET_SIZE(fixed);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(programs); i++) {
        PyObject *program = PyTuple_GET_ITEM(programs, i);
        if (Py_TYPE(program) != &ProgramType) {
            PyErr_SetString(PyExc_TypeError, "programs are Programs");
            return NULL;
        }
        if (((Program *)program)->span > nroots) {
            PyErr_Format(PyExc_ValueError,
                         "a program reads %zd root addresses, the replay binds %d",
                         ((Program *)program)->span, nroots);
            return NULL;
        }
    }
    Replay *self = (Replay *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->ninputs = PyTuple_GET_SIZE(inputs);
    self->noutputs = PyTuple_GET_SIZE(outputs);
    self->ports = PyMem_Calloc((size_t)(self->ninputs + self->noutputs + 1), sizeof(Port));
    if (!self->ports) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < self->ninputs + self->noutputs; i++) {
        const int output = i >= self->ninputs;
        PyObject *item = PyTuple_GET_ITEM(output ? outputs : inputs,
                                          output ? i - self->ninputs : i);
        if (parse_port(item, &self->ports[i], output, nroots) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->fixed = PyMem_Calloc((size_t)(nroots ? nroots : 1), sizeof(char *));
    if (!self->fixed) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (int r = 0; r < nroots; r++) {
        PyObject *item = PyTuple_GET_ITEM(fixed, r);
        self->fixed[r] = item == Py_None ? NULL : PyLong_AsVoidPtr(item);
        if (PyErr_Occurred()) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->programs = Py_NewRef(programs);
    self->nroots = nroots;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(programs); i++) {
        const int n = ((Program *)PyTuple_GET_ITEM(programs, i))->nroots;
        if (n > self->most) self->most = n;
    }
    self->acquire = PyObject_GetAttrString(lock, "acquire");
    self->release = PyObject_GetAttrString(lock, "release");
    if (!self->acquire || !self->release) {
        Py_DECREF(self);
        return NULL;
    }
    self->array_type = Py_NewRef((PyObject *)Py_TYPE(probe));
    self->limit = limit;
    self->keep = Py_NewRef(keep);
    return (PyObject *)self;
}

static int overlaps(const char *a, const char *b, const char *c, const char *d) {
    return a < d && c < b && a < b && c < d; /* empty ranges share nothing */
}

static PyObject *replay_call(Replay *self, PyObject *args, PyObject *kwargs) {
    PyObject *feeds, *bound = Py_None;
    static char *names[] = {"feeds", "outputs", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Replay", names, &feeds, &bound))
        return NULL;
    if (!PyDict_CheckExact(feeds) || PyDict_GET_SIZE(feeds) != self->ninputs) Py_RETURN_NONE;
    if (bound != Py_None && !PyDict_CheckExact(bound)) Py_RETURN_NONE;
    const Py_ssize_t nports = self->ninputs + self->noutputs;
    PyObject *result = NULL, *values = PyTuple_New(nports);
    char **bases = PyMem_Calloc((size_t)(self->nroots ? self->nroots : 1), sizeof(char *));
    char **local = PyMem_Calloc((size_t)(self->most ? self->most : 1), sizeof(char *));
    char **low = PyMem_Calloc((size_t)(nports ? nports : 1), 2 * sizeof(char *));
    if (!values || !bases || !local || !low) {
        if (values) PyErr_NoMemory();
        goto done;
    }
    char **high = low + nports;
    Py_ssize_t given = 0;
    for (Py_ssize_t i = 0; i < nports; i++) {
        const Port *p = &self->ports[i];
        const int output = i >= self->ninputs;
        PyObject *obj = NULL;
        if (!output || bound != Py_None) {
            obj = PyDict_GetItemWithError(output ? bound : feeds, p->name);
            if (!obj && PyErr_Occurred()) goto done;
        }
        if (!obj) {
            if (!output) goto fallback; /* a feed missing */
            continue;                   /* an output to take from the pool */
        }
        given += output;
        const int taken = take_array(self, obj, p, output, &low[i], &high[i]);
        if (taken < 0) goto done;
        if (!taken) goto fallback;
        for (Py_ssize_t j = 0; output && j < i; j++) /* inputs, and outputs bound before */
            if (overlaps(low[i], high[i], low[j], high[j])) goto fallback;
        PyTuple_SET_ITEM(values, i, Py_NewRef(obj));
    }
    if (bound != Py_None && given != PyDict_GET_SIZE(bound)) goto fallback; /* unknown names */
    for (Py_ssize_t i = self->ninputs; i < nports; i++) { /* the rest from the pools */
        if (PyTuple_GET_ITEM(values, i)) continue;
        const Port *p = &self->ports[i];
        PyObject *obj = NULL;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(p->pool) && !obj; k++) {
            PyObject *pooled = PyList_GET_ITEM(p->pool, k);
            if (Py_REFCNT(pooled) != 1) continue; /* a caller or a view holds it */
            /* the array itself went to a caller, who may have changed its flags, shape or
             * dtype in place (``setflags(write=False)``) before dropping it: such a one is
             * dropped from the pool, not handed out again unlike its port */
            const int fits = take_array(self, pooled, p, 1, &low[i], &high[i]);
            if (fits < 0) goto done;
            if (fits) {
                obj = Py_NewRef(pooled);
            } else if (PySequence_DelItem(p->pool, k--) < 0) {
                goto done;
            }
        }
        if (!obj) {
            obj = PyObject_CallNoArgs(p->factory);
            if (!obj) goto done;
            if (PyList_GET_SIZE(p->pool) < self->limit && PyList_Append(p->pool, obj) < 0) {
                Py_DECREF(obj);
                goto done;
            }
        }
        PyTuple_SET_ITEM(values, i, obj);
        const int taken = take_array(self, obj, p, 1, &low[i], &high[i]);
        if (taken <= 0) {
            if (!taken)
                PyErr_SetString(PyExc_TypeError, "an output factory made an array unlike its port");
            goto done;
        }
    }
    memcpy(bases, self->fixed, sizeof(char *) * (size_t)self->nroots);
    for (Py_ssize_t i = 0; i < nports; i++)
        if (self->ports[i].root >= 0) bases[self->ports[i].root] = low[i];
    PyObject *locked = PyObject_CallNoArgs(self->acquire);
    if (!locked) goto done;
    Py_DECREF(locked);
    int failed = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(self->programs) && !failed; k++) {
        Program *program = (Program *)PyTuple_GET_ITEM(self->programs, k);
        for (int r = 0; r < program->nroots; r++) local[r] = bases[program->slots[r]];
        if (program->nroots) failed = program_run_at(program, local) < 0;
        else program_run(program);
    }
    PyObject *released = PyObject_CallNoArgs(self->release);
    if (!released || failed) {
        Py_XDECREF(released);
        goto done;
    }
    Py_DECREF(released);
    result = PyDict_New();
    for (Py_ssize_t i = self->ninputs; result && i < nports; i++) {
        if (PyDict_SetItem(result, self->ports[i].name, PyTuple_GET_ITEM(values, i)) < 0)
            Py_CLEAR(result);
    }
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(values);
    PyMem_Free(bases);
    PyMem_Free(local);
    PyMem_Free(low);
    return result;
}

static PyTypeObject ReplayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "backends.numpy._copies.Replay",
    .tp_basicsize = sizeof(Replay),
    .tp_dealloc = (destructor)replay_dealloc,
    .tp_call = (ternaryfunc)replay_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A plan's run in one call: replay(feeds, outputs=None) -> {output: array}, or "
              "None where Python's path must run it.",
    .tp_new = replay_new,
};

/* address(array): where its element 0 lies, as the plan keys its views by (NumPy's
 * __array_interface__ builds a dict to say it: 1.7 us, against 0.1 here). */
static PyObject *copies_address(PyObject *self, PyObject *obj) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_STRIDES) < 0) return NULL;
    PyObject *at = PyLong_FromVoidPtr(view.buf);
    PyBuffer_Release(&view);
    return at;
}

static PyObject *copies_usable_cpus(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(call_cpus());
}

static PyObject *copies_limit_cpus(PyObject *self, PyObject *arg) {
    (void)self;
    const long limit = PyLong_AsLong(arg);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (limit < 0 || limit > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "limit_cpus takes a count of CPUs, or 0 for none");
        return NULL;
    }
    cpu_limit = (int)limit;
    Py_RETURN_NONE;
}

static PyObject *copies_called_off(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong((unsigned long long)load_relaxed(&calls_off));
}

static PyMethodDef functions[] = {
    {"address", copies_address, METH_O, "the address of an array's element 0"},
    {"called_off", copies_called_off, METH_NOARGS,
     "how many times a call has called off a copy thread that had not begun its batch"},
    {"usable_cpus", copies_usable_cpus, METH_NOARGS,
     "the CPUs the calling thread may run on, within limit_cpus: the most threads a program's "
     "call uses"},
    {"limit_cpus", copies_limit_cpus, METH_O,
     "at most this many threads a call from now on (a CPU quota; 0: no limit)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_copies", "Native strided copies for the NumPy backend's plan.",
    -1, functions, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__copies(void) {
    if (PyType_Ready(&ProgramType) < 0 || PyType_Ready(&ReplayType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0) {
        Py_DECREF(&ProgramType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ReplayType);
    if (PyModule_AddObject(m, "Replay", (PyObject *)&ReplayType) < 0) {
        Py_DECREF(&ReplayType);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "MAX_THREADS", MAX_WORKERS + 1);
    PyModule_AddIntConstant(m, "STREAM_BYTES", (long)stream_bytes);
    PyModule_AddIntConstant(m, "STREAMS", STREAMS);
    PyModule_AddIntConstant(m, "TUNE_CALLS", TUNE_CALLS);
#ifndef _WIN32
    pthread_atfork(NULL, NULL, forget_workers);
#endif
    return m;
}
