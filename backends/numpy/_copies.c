/* Native strided copies for the NumPy backend's plan (optional: without it the plan uses
 * np.copyto and Python copy threads).
 *
 * Why native: Slice, Concat and Pad are pure data movement, and NumPy runs one inner loop per
 * row of a strided copy (about 30 ns each), so short rows (a last-axis JOIN, a padding's
 * border columns) run far below memory bandwidth; and a Python copy thread sleeps between
 * runs, so handing it work costs a wake-up (70-80 us on a 2-core VM). Here a move is
 * analysed once into pointers, shape and strides (dimensions coalesced), each row is a typed
 * loop (streamed from 8 MB), and copy threads spin for a while after each batch, as onnxruntime's pool
 * does, before they sleep. The GIL is released while copying.
 *
 * Program(lists, stream=None): lists of (destination, source) arrays, the source broadcastable to the
 * destination (same item size); calling it runs list 0 on the calling thread and list k on
 * copy thread k, every list in order, and returns when all are done. The arrays are held by
 * the program; their memory must stay where it is while the program is used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MAX_RANK 16
#define MAX_WORKERS 15
/* how long a copy thread spins for the next batch before it sleeps */
#define SPIN_NS 2000000LL

#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define RELAX() __asm__ __volatile__("yield")
#else
#define RELAX() ((void)0)
#endif

typedef uint16_t __attribute__((aligned(1), may_alias)) u16;
typedef uint32_t __attribute__((aligned(1), may_alias)) u32;
typedef uint64_t __attribute__((aligned(1), may_alias)) u64;

typedef struct {
    char *dst;
    const char *src;
    Py_ssize_t itemsize;
    Py_ssize_t rows; /* product of the outer dimensions */
    int rank;        /* >= 1 after coalescing */
    int stream;      /* rows written with non-temporal stores */
    Py_ssize_t shape[MAX_RANK];
    Py_ssize_t dstride[MAX_RANK];
    Py_ssize_t sstride[MAX_RANK];
    /* in a lockstep group: the strides of the group's leading axes, not in the above */
    Py_ssize_t lead_dstride[MAX_RANK];
    Py_ssize_t lead_sstride[MAX_RANK];
} Move;

/* Moves run one after another (lead 0), or in lockstep: for each index of their ``lead``
 * leading axes (the same sizes in every move) each move's slab there, in order. A JOIN's
 * inputs then fill each output row together, and a padding's interior and borders are done
 * row by row, while the row is in cache. */
typedef struct {
    Py_ssize_t first, count; /* moves[first:first + count] */
    int lead;
    int pieces;       /* in lockstep, each move's slab one contiguous run on both sides */
    int staged;       /* in lockstep, streamed: each slab assembled in a buffer (``stage_group``) */
    char *span;       /* staged: where slab 0's destination starts */
    Py_ssize_t span_bytes;
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
#ifdef __SSE2__
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
        } else if (ss == -z) { /* last chunk first: the source is read upwards */         \
            const Py_ssize_t first = i, chunks = (n - i) / per;                           \
            for (Py_ssize_t k = chunks - 1; k >= 0; k--) {                                \
                const Py_ssize_t at = first + k * per;                                    \
                _mm_stream_si128(                                                         \
                    (__m128i *)(d + at * z),                                              \
                    reverse_##T(_mm_loadu_si128((const __m128i *)(s - (at + per - 1) * z)))); \
            }                                                                             \
            i = first + chunks * per;                                                     \
        } else if (ss == 2 * z) { /* every other item: two loads, one shuffle; the      \
                                   * loads end at the next item taken, so not the last */ \
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

/* Rows of at least this many bytes (in lockstep: slabs of this many bytes per move) are
 * streamed in a streaming program; shorter ones ran slower streamed (an 8-input JOIN of
 * 128-byte rows: 12 GB/s streamed, 18 cached; of 512-byte rows: 24 streamed, 19 cached). */
#define STREAM_ROW_BYTES 128

static inline void row_as(const Move *m, char *d, const char *s, int stream) {
    const int last = m->rank - 1;
    const Py_ssize_t n = m->shape[last], ds = m->dstride[last], ss = m->sstride[last];
    const Py_ssize_t z = m->itemsize;
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

/* A contiguous run of bytes: the slab of a lockstep move whose row is contiguous on both
 * sides (a last-axis JOIN's input row), copied without the general row's dispatch; an 8-input
 * JOIN of 128-byte pieces ran at 0.6x a memcpy through ``row`` and at a memcpy as a loop like
 * this one. */
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

/* A streamed lockstep group whose moves each write one contiguous run per slab, the runs
 * tiling one span of at most this many bytes with no gap, and whose sources lie outside every
 * slab's destination, assembles each slab in a buffer with cached stores, then streams the
 * span whole: a padding's row (16-byte borders beside its interior) streamed piece by piece
 * ran at 0.9x a memcpy, its interior alone at 1.0x. */
#define STAGE_BYTES 4096

/* [low, high) of the bytes a move touches on one side over all slabs of its group */
static void extent(const Group *g, const char *base, const Py_ssize_t *lead_stride,
                   Py_ssize_t n, Py_ssize_t stride, Py_ssize_t z, const char **low,
                   const char **high) {
    const char *lo = base + (stride < 0 ? (n - 1) * stride : 0);
    const char *hi = base + (stride > 0 ? (n - 1) * stride : 0) + z;
    for (int k = 0; k < g->lead; k++) {
        const Py_ssize_t reach = (g->lead_shape[k] - 1) * lead_stride[k];
        if (reach < 0) lo += reach; else hi += reach;
    }
    *low = lo;
    *high = hi;
}

static void stage_group(Group *g, const Move *moves) {
    /* pieces stream straight from their sources (a JOIN's: staged, it ran 15% slower) */
    if (!STREAMS || !g->lead || g->pieces || g->count < 2 || g->slabs < 2) return;
    const Move *first = moves + g->first, *end = first + g->count;
    char *low = NULL, *high = NULL;
    Py_ssize_t total = 0;
    for (const Move *m = first; m < end; m++) {
        if (!m->stream || m->rows != 1 || m->rank != 1 || m->dstride[0] != m->itemsize) return;
        for (int k = 0; k < g->lead; k++)
            if (m->lead_dstride[k] != first->lead_dstride[k]) return;
        const Py_ssize_t n = m->shape[0] * m->itemsize;
        if (!low || m->dst < low) low = m->dst;
        if (!high || m->dst + n > high) high = m->dst + n;
        total += n;
    }
    /* the runs tile [low, high) when they add up to it and none overlaps another */
    if (high - low != total || total > STAGE_BYTES) return;
    for (const Move *a = first; a < end; a++)
        for (const Move *b = a + 1; b < end; b++)
            if (a->dst < b->dst + b->shape[0] * b->itemsize &&
                b->dst < a->dst + a->shape[0] * a->itemsize)
                return;
    const char *dlo, *dhi;
    extent(g, low, first->lead_dstride, total, 1, 1, &dlo, &dhi);
    for (const Move *m = first; m < end; m++) {
        const char *slo, *shi;
        extent(g, m->src, m->lead_sstride, m->shape[0], m->sstride[0], m->itemsize, &slo, &shi);
        if (slo < dhi && dlo < shi) return; /* a source the group writes: keep the order */
    }
    g->staged = 1;
    g->span = low;
    g->span_bytes = total;
}

static void run_staged(const Group *g, const Move *first, const Move *end) {
    char stage[STAGE_BYTES] __attribute__((aligned(64)));
    Py_ssize_t index[MAX_RANK] = {0};
    const int last = g->lead - 1;
    for (Py_ssize_t t = 0; t < g->slabs; t++) {
        Py_ssize_t doff = 0;
        for (int k = 0; k <= last; k++) doff += index[k] * first->lead_dstride[k];
        for (const Move *m = first; m < end; m++) {
            Py_ssize_t soff = 0;
            for (int k = 0; k <= last; k++) soff += index[k] * m->lead_sstride[k];
            row_as(m, stage + (m->dst - g->span), m->src + soff, 0);
        }
        piece(g->span + doff, stage, g->span_bytes, 1);
        for (int k = last; k >= 0 && ++index[k] == g->lead_shape[k]; k--) index[k] = 0;
    }
}

static void run_group(const Group *g, const Move *moves) {
    const Move *first = moves + g->first, *end = first + g->count;
    if (g->staged) {
        run_staged(g, first, end);
        return;
    }
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
            if (g->pieces)
                piece(m->dst + doff, m->src + soff, m->shape[0] * m->itemsize, m->stream);
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

/* ------------------------------------------------------------------ analysis */

/* The move as pointers and coalesced dimensions; -1 with an exception set when it is not a
 * copy this module makes (NumPy's error for the same copy is raised by the caller). */
static int analyse(PyObject *pair, Move *m, Group *g) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "a move is a (destination, source) tuple");
        return -1;
    }
    Py_buffer dv, sv;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 0), &dv, PyBUF_STRIDES | PyBUF_WRITABLE) < 0)
        return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(pair, 1), &sv, PyBUF_STRIDES) < 0) {
        PyBuffer_Release(&dv);
        return -1;
    }
    int result = -1;
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
            goto done;
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
done:
    PyBuffer_Release(&sv);
    PyBuffer_Release(&dv);
    return result;
}

/* ------------------------------------------------------------------ copy threads */

typedef struct {
    pthread_t thread;
    _Atomic uint64_t go;   /* the batch asked for */
    _Atomic uint64_t done; /* the batch finished */
    const Group *groups;
    const Move *moves;
    Py_ssize_t count;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int sleeping;
} Worker;

/* A program writing at least this many bytes streams its rows (None for ``stream``); below,
 * the output is better left in cache for its reader. Fixed, not read from the CPU: a VM's
 * reported cache size can be the host's (seen: 256 MB reported, 32 MB present). */
static const Py_ssize_t stream_bytes = 8 << 20;

static Worker workers[MAX_WORKERS];
static int started;
/* one batch at a time uses the copy threads; another runs on its own thread */
static pthread_mutex_t pool = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *work(void *arg) {
    Worker *w = (Worker *)arg;
    for (;;) {
        const uint64_t seen = atomic_load_explicit(&w->done, memory_order_relaxed);
        long long until = 0;
        for (unsigned spins = 0;
             atomic_load_explicit(&w->go, memory_order_acquire) == seen; spins++) {
            if ((spins & 1023) == 0) {
                long long t = now_ns();
                if (!until) until = t + SPIN_NS;
                if (t > until) {
                    pthread_mutex_lock(&w->lock);
                    w->sleeping = 1;
                    while (atomic_load_explicit(&w->go, memory_order_acquire) == seen)
                        pthread_cond_wait(&w->wake, &w->lock);
                    w->sleeping = 0;
                    pthread_mutex_unlock(&w->lock);
                    break;
                }
            }
            RELAX();
        }
        run_groups(w->groups, w->count, w->moves);
        atomic_store_explicit(&w->done, seen + 1, memory_order_release);
    }
    return NULL;
}

/* Start copy threads up to ``count``; how many there are. Called with ``pool`` held. */
static int ensure_workers(int count) {
    while (started < count) {
        Worker *w = &workers[started];
        atomic_store(&w->go, 0);
        atomic_store(&w->done, 0);
        w->sleeping = 0;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&w->thread, &attr, work, w);
        pthread_attr_destroy(&attr);
        if (failed) break;
        started++;
    }
    return started;
}

/* In a forked child the parent's copy threads do not exist. */
static void forget_workers(void) {
    started = 0;
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pool = fresh;
}

/* ------------------------------------------------------------------ Program */

typedef struct {
    PyObject_HEAD
    PyObject *lists; /* keeps the arrays alive */
    Move *moves;
    Group *groups;
    Py_ssize_t *starts; /* list k is groups[starts[k]:starts[k + 1]] */
    int nlists;
    Py_ssize_t nbytes;
} Program;

static void program_dealloc(Program *self) {
    Py_XDECREF(self->lists);
    PyMem_Free(self->moves);
    PyMem_Free(self->groups);
    PyMem_Free(self->starts);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *given, *stream = Py_None;
    static char *names[] = {"lists", "stream", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Program", names, &given, &stream))
        return NULL;
    if (stream != Py_None && stream != Py_True && stream != Py_False) {
        PyErr_SetString(PyExc_TypeError, "stream is None (by size), True or False");
        return NULL;
    }
    PyObject *lists = PySequence_Tuple(given);
    if (!lists) return NULL;
    Py_ssize_t nlists = PyTuple_GET_SIZE(lists);
    if (nlists < 1 || nlists > MAX_WORKERS + 1) {
        PyErr_Format(PyExc_ValueError, "1 to %d lists of moves, got %zd", MAX_WORKERS + 1,
                     nlists);
        Py_DECREF(lists);
        return NULL;
    }
    Program *self = (Program *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(lists);
        return NULL;
    }
    self->nlists = (int)nlists;
    self->starts = PyMem_Calloc((size_t)nlists + 1, sizeof(Py_ssize_t));
    Py_ssize_t ngroups = 0, nmoves = 0;
    for (Py_ssize_t k = 0; k < nlists; k++) { /* each list as a tuple of items */
        PyObject *old = PyTuple_GET_ITEM(lists, k);
        PyObject *list = PySequence_Tuple(old);
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
    if (!self->starts || !self->moves || !self->groups) {
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
                if (analyse(pair, &self->moves[moved], g) < 0) goto fail;
                g->count++;
                if (j == 0)
                    for (int a = 0; a < g->lead; a++) g->slabs *= g->lead_shape[a];
            }
            if (g->lead) coalesce_lead(g, self->moves);
            g->pieces = g->lead > 0;
            for (Py_ssize_t j = g->first; j < moved; j++) {
                const Move *m = &self->moves[j];
                self->nbytes += g->slabs * m->rows * m->shape[m->rank - 1] * m->itemsize;
                g->pieces &= m->rows == 1 && m->rank == 1 && m->dstride[0] == m->itemsize &&
                             m->sstride[0] == m->itemsize;
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
            slab += m->rows * row;
        }
        const int all = slab >= STREAM_ROW_BYTES * g->count;
        for (Py_ssize_t j = g->first; g->lead && j < g->first + g->count; j++)
            self->moves[j].stream = all;
        stage_group(&self->groups[k], self->moves);
    }
    return (PyObject *)self;
fail:
    if (!self->lists) Py_DECREF(lists);
    Py_DECREF(self);
    return NULL;
}

static PyObject *program_call(Program *self, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "a Program takes no arguments");
        return NULL;
    }
    const int helpers = self->nlists - 1;
    Py_BEGIN_ALLOW_THREADS
    int pooled = helpers > 0 && pthread_mutex_trylock(&pool) == 0;
    int handed = pooled ? ensure_workers(helpers) : 0;
    if (handed > helpers) handed = helpers;
    uint64_t batch[MAX_WORKERS];
    for (int k = 0; k < handed; k++) {
        Worker *w = &workers[k];
        w->groups = self->groups + self->starts[k + 1];
        w->moves = self->moves;
        w->count = self->starts[k + 2] - self->starts[k + 1];
        batch[k] = atomic_load_explicit(&w->done, memory_order_relaxed) + 1;
        pthread_mutex_lock(&w->lock);
        atomic_store_explicit(&w->go, batch[k], memory_order_release);
        if (w->sleeping) pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
    }
    run_groups(self->groups, self->starts[1], self->moves);
    for (int k = handed + 1; k < self->nlists; k++) /* no thread for these: run them here */
        run_groups(self->groups + self->starts[k], self->starts[k + 1] - self->starts[k],
                   self->moves);
    for (int k = 0; k < handed; k++) {
        for (unsigned spins = 0;
             atomic_load_explicit(&workers[k].done, memory_order_acquire) != batch[k];
             spins++) {
            if (spins > 100000) sched_yield();
            else RELAX();
        }
    }
    if (pooled) pthread_mutex_unlock(&pool);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *program_nbytes(Program *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *program_lists(Program *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(self->nlists);
}

static PyGetSetDef program_getset[] = {
    {"nbytes", (getter)program_nbytes, NULL, "destination bytes written per call", NULL},
    {"threads", (getter)program_lists, NULL, "lists of moves (one per thread)", NULL},
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

static PyMethodDef functions[] = {
    {"address", copies_address, METH_O, "the address of an array's element 0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_copies", "Native strided copies for the NumPy backend's plan.",
    -1, functions, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__copies(void) {
    if (PyType_Ready(&ProgramType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0) {
        Py_DECREF(&ProgramType);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "MAX_THREADS", MAX_WORKERS + 1);
    PyModule_AddIntConstant(m, "STREAM_BYTES", (long)stream_bytes);
    PyModule_AddIntConstant(m, "STREAMS", STREAMS);
    pthread_atfork(NULL, NULL, forget_workers);
    return m;
}
