/* Compiled kernel of the exact odds engine (baccarat.odds, baccarat.odds_live): optional, see setup.py.
 *
 * Same method and same numbers as the numpy path (baccarat/_odds_tables.py): for a composition n[0..9],
 *   W[m]    = prod_v falling(n[v], k_v(m))        over the 5005 multisets m of six card values,
 *   sums[r] = sum_m T[r][m] * W[m]                 for the ruleset's distinct table rows r the caller sends
 *                                                  (the last class of each family is derived: derive_outputs),
 * with W factorised over the value groups 0..4 and 5..9 (GA[a] * GB[b], 462 sub-multisets each).
 *
 * Arithmetic is exact in unsigned 64-bit integers modulo 2**64. Every true result is a count of ordered 6-card
 * sequences, at most Permut(N, 6) < 2**63 for N <= 1450 cards (the caller enforces the bound), so the residue
 * is the count itself. The product T * W is taken as T * W_lo + (T * W_hi << 32) with 32-bit halves, which a
 * compiler vectorises as widening 32x32->64 multiplies; the two partial accumulators cannot overflow in a way
 * that matters (everything is modulo 2**64).
 *
 * A card of value v leaving the shoe changes falling(n[v], k) only, hence W[m] only for the 2002 multisets
 * holding v: Tracker.remove(v) recomputes v's group factors and adds T[.][m] * (W_new[m] - W_old[m]) to the
 * sums, with W_new[m] - W_old[m] = (g_new[a] - g_old[a]) * other[b]. Layout: see PlanObject and docs/odds-engine.md.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VALUES 10
#define GROUP 5
#define KMAX 7          /* falling(n, k) for k = 0..6 */
#define NSUB 462        /* sub-multisets of at most 6 cards over 5 values */
#define NMULTI 5005     /* multisets of 6 cards over 10 values */
#define RPAD 32         /* table rows padded to this many (distinct rows are at most 30) */
#define NOUT 30         /* counts returned, in the caller's order (gather) */
#define NAFF 2002       /* multisets holding a given value: C(14, 5) */
#define DERIVED 255     /* gather entry of a count derived from the total (see derive_outputs) */


typedef struct {
    PyObject_HEAD
    int rows;                       /* distinct table rows actually computed (<= RPAD) */
    int groups;                     /* rows in groups of four (the float64 kernel's vectors): ceil(rows / 4) */
    int stride;                     /* doubles per multiset in tabled: 4 * groups */
    double tabled[NMULTI * RPAD];   /* T transposed, multiset-major, rows zero-padded to stride (float64 kernel) */
    uint16_t table[NMULTI][RPAD];   /* the same as uint16 (the generic path) */
    uint16_t sub_a[NMULTI], sub_b[NMULTI];
    uint8_t mask[NMULTI];                   /* bit k: some row of group k (rows 4k..4k+3) is non-zero */
    /* The multisets are held sorted by mask (long runs of one mask: predictable skips, sequential reads): every
     * per-multiset array here is in that order (positions are internal: no caller sees them). */
    uint8_t subk[NSUB][GROUP];
    uint16_t affected[VALUES][NAFF];        /* positions of the multisets holding value v (ascending) */
    uint16_t affected_sub[VALUES][NSUB];    /* sub-multisets (of v's group) holding v */
    int n_affected_sub[VALUES];
    uint8_t gather[NOUT];
} PlanObject;

/* The weights x[m] = a[sub_a[m]] * b[sub_b[m]] a loop multiplies the table by: the multisets' W (the group
 * factors), or for an update the change of one group's factor times the other group's factor. */
typedef struct {
    const uint64_t *a, *b;
    const double *ad, *bd;
} Weights;

typedef struct {
    PyObject_HEAD
    PlanObject *plan;
    int64_t counts[VALUES];
    uint64_t f[VALUES][KMAX];
    uint64_t ga[NSUB], gb[NSUB];            /* group factors: W[m] = ga[sub_a[m]] * gb[sub_b[m]] */
    double gad[NSUB], gbd[NSUB];            /* the same as doubles (exact: each <= Permut(N, 6) <= 2**53 there) */
    uint64_t sums[RPAD];
} TrackerObject;

static PyTypeObject PlanType;
static PyTypeObject TrackerType;

/* ------------------------------------------------------------------------------------------- plan */

static int
read_buffer(PyObject *obj, void *dst, Py_ssize_t size, const char *what)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view.len != size) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", what, size, view.len);
        PyBuffer_Release(&view);
        return -1;
    }
    memcpy(dst, view.buf, (size_t)size);
    PyBuffer_Release(&view);
    return 0;
}

/* Plan(table_u16, rows, sub_a_u16, sub_b_u16, subk_u8, gather_u8)
 *   table_u16: rows x 5005 little-endian uint16, row-major (the ruleset's distinct rows);
 *   sub_a/sub_b: uint16[5005] sub-multiset index of each multiset in groups 0..4 and 5..9;
 *   subk: uint8[462 x 5] the counts k_j of each sub-multiset; gather: uint8[30] row of each returned count,
 *   or 255 (DERIVED) for the last class of each family that sums to the total (see derive_outputs). */
static PyObject *
Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *table_obj, *sub_a_obj, *sub_b_obj, *subk_obj, *gather_obj;
    int rows;
    if (!PyArg_ParseTuple(args, "OiOOOO", &table_obj, &rows, &sub_a_obj, &sub_b_obj, &subk_obj, &gather_obj))
        return NULL;
    if (rows < 1 || rows > RPAD) {
        PyErr_Format(PyExc_ValueError, "rows must be 1..%d, got %d", RPAD, rows);
        return NULL;
    }
    PlanObject *self = (PlanObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->rows = rows;
    uint16_t *flat = PyMem_Malloc(sizeof(uint16_t) * (size_t)rows * NMULTI);
    if (flat == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (read_buffer(table_obj, flat, (Py_ssize_t)sizeof(uint16_t) * rows * NMULTI, "table") < 0
        || read_buffer(sub_a_obj, self->sub_a, sizeof self->sub_a, "sub_a") < 0
        || read_buffer(sub_b_obj, self->sub_b, sizeof self->sub_b, "sub_b") < 0
        || read_buffer(subk_obj, self->subk, sizeof self->subk, "subk") < 0
        || read_buffer(gather_obj, self->gather, sizeof self->gather, "gather") < 0) {
        PyMem_Free(flat);
        Py_DECREF(self);
        return NULL;
    }
    memset(self->table, 0, sizeof self->table);
    memset(self->tabled, 0, sizeof self->tabled);
    self->groups = (rows + 3) / 4;
    self->stride = 4 * self->groups;
    for (int m = 0; m < NMULTI; m++) {
        if (self->sub_a[m] >= NSUB || self->sub_b[m] >= NSUB) {
            PyMem_Free(flat);
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "sub-multiset index out of range");
            return NULL;
        }
    }
    uint8_t mask[NMULTI];
    uint16_t sub_a[NMULTI], sub_b[NMULTI];
    int runs[256] = {0};  /* counting sort of the multisets by mask */
    for (int m = 0; m < NMULTI; m++) {
        uint8_t mk = 0;
        for (int r = 0; r < rows; r++)
            if (flat[(size_t)r * NMULTI + m])
                mk |= (uint8_t)(1u << (r / 4));
        mask[m] = mk;
        runs[mk]++;
    }
    for (int k = 0, at = 0; k < 256; k++) {
        int c = runs[k];
        runs[k] = at;
        at += c;
    }
    memcpy(sub_a, self->sub_a, sizeof sub_a);
    memcpy(sub_b, self->sub_b, sizeof sub_b);
    for (int m = 0; m < NMULTI; m++) {
        int i = runs[mask[m]]++;
        self->mask[i] = mask[m];
        self->sub_a[i] = sub_a[m];
        self->sub_b[i] = sub_b[m];
        for (int r = 0; r < rows; r++)
            self->tabled[(size_t)i * self->stride + r] = self->table[i][r] = flat[(size_t)r * NMULTI + m];
    }
    PyMem_Free(flat);
    for (int i = 0; i < NOUT; i++) {
        int last = i == 2 || i == 5 || i == 20 || i == 29;  /* the last class of each family (FAMILIES) */
        if (self->gather[i] == DERIVED && !last) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "only the last class of a family may be derived from the total");
            return NULL;
        }
        if (self->gather[i] >= rows && self->gather[i] != DERIVED) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "gather index beyond the table's rows");
            return NULL;
        }
    }
    for (int v = 0; v < VALUES; v++) {
        int g = v % GROUP, na = 0, ns = 0;
        for (int m = 0; m < NMULTI; m++) {
            int sub = v < GROUP ? self->sub_a[m] : self->sub_b[m];
            if (self->subk[sub][g] > 0) {
                if (na == NAFF) {
                    Py_DECREF(self);
                    PyErr_SetString(PyExc_ValueError, "sub-multiset tables are inconsistent");
                    return NULL;
                }
                self->affected[v][na++] = (uint16_t)m;
            }
        }
        for (int s = 0; s < NSUB; s++)
            if (self->subk[s][g] > 0)
                self->affected_sub[v][ns++] = (uint16_t)s;
        if (na != NAFF) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "sub-multiset tables are inconsistent");
            return NULL;
        }
        self->n_affected_sub[v] = ns;
    }
    return (PyObject *)self;
}

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "baccarat._odds_native.Plan",
    .tp_doc = "One ruleset's odds table in the compiled kernel's layout (see baccarat.odds_live).",
    .tp_basicsize = sizeof(PlanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Plan_new,
};

/* ---------------------------------------------------------------------------------------- kernel */

static void
falling_row(uint64_t *row, int64_t n)
{
    uint64_t acc = 1;
    for (int k = 0; k < KMAX; k++) {
        row[k] = acc;
        acc *= (uint64_t)(n - k > 0 ? n - k : 0);
    }
}

static inline uint64_t
group_weight(const uint64_t f[VALUES][KMAX], const uint8_t *k, int base)
{
    return f[base][k[0]] * f[base + 1][k[1]] * f[base + 2][k[2]] * f[base + 3][k[3]] * f[base + 4][k[4]];
}

/* Generic path (any CPU, any N the caller allows): out[r] += sum_i T[ms[i]][r] * x[i] modulo 2**64, the
 * product taken as T * lo(x) + (T * hi(x) << 32) so that no partial sum overflows before the final combine. */
static void
accumulate_int(const PlanObject *p, const uint16_t *ms, int count, const Weights *wt, uint64_t *out)
{
    uint64_t lo[RPAD] = {0}, hi[RPAD] = {0};
    const int rows = p->rows;
    for (int i = 0; i < count; i++) {
        const int m = ms ? ms[i] : i;
        const uint16_t *t = p->table[m];
        const uint64_t x = wt->a[p->sub_a[m]] * wt->b[p->sub_b[m]];
        uint64_t xl = x & 0xffffffffu, xh = x >> 32;
        for (int r = 0; r < rows; r++) {
            lo[r] += (uint64_t)t[r] * xl;
            hi[r] += (uint64_t)t[r] * xh;
        }
    }
    for (int r = 0; r < rows; r++)
        out[r] += lo[r] + (hi[r] << 32);
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define HAVE_AVX2_KERNEL 1
/* AVX2 path, used when the CPU has AVX2+FMA and N <= 458 cards (Permut(N, 6) <= 2**53): the sum is carried in
 * float64, which is exact there because every term T * x and every partial sum is an integer of magnitude at
 * most 2**53 (for an update x = W_new - W_old, a partial sum over any subset of the multisets is a difference
 * of two sums of non-negative terms, each <= 2**53). The table is read as doubles (tabled, 4 * groups per
 * multiset) and the result rounded back to the integer it is. A group of four rows that is zero for a multiset
 * is skipped (mask; the multisets are sorted by mask, so the branch is predictable). With at most 6 groups, even
 * and odd multisets go to two sets of accumulators: one FMA chain per group would otherwise bind the loop to
 * the FMA latency (5 cycles on Zen 1) per multiset. */
#define FMA_GROUP(k) if ((k) < G && (mk >> (k) & 1)) acc##k = _mm256_fmadd_pd(_mm256_loadu_pd(t + 4 * (k)), xv, acc##k)
#define FMA_GROUP2(k) if ((k) < G && (mk2 >> (k) & 1)) bcc##k = _mm256_fmadd_pd(_mm256_loadu_pd(t2 + 4 * (k)), xv2, bcc##k)
/* G = groups of four rows (a compile-time constant in each instance below, so the accumulators stay in
 * registers and the loop carries exactly the loads and FMAs of the non-zero groups). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
accumulate_avx2_g(const PlanObject *p, const uint16_t *ms, int count, const Weights *wt, uint64_t *out,
                  const int G)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0, acc2 = acc0, acc3 = acc0, acc4 = acc0, acc5 = acc0,
            acc6 = acc0, acc7 = acc0;
    __m256d bcc0 = acc0, bcc1 = acc0, bcc2 = acc0, bcc3 = acc0, bcc4 = acc0, bcc5 = acc0;
    const size_t stride = (size_t)p->stride;
    int i = 0;
    if (G <= 6) {
        for (; i + 1 < count; i += 2) {
            const int m = ms ? ms[i] : i, m2 = ms ? ms[i + 1] : i + 1;
            const double *t = p->tabled + (size_t)m * stride, *t2 = p->tabled + (size_t)m2 * stride;
            const unsigned mk = p->mask[m], mk2 = p->mask[m2];
            /* a weight <= 2**53, or a change of one, exact as the product of two exact doubles */
            __m256d xv = _mm256_set1_pd(wt->ad[p->sub_a[m]] * wt->bd[p->sub_b[m]]);
            __m256d xv2 = _mm256_set1_pd(wt->ad[p->sub_a[m2]] * wt->bd[p->sub_b[m2]]);
            FMA_GROUP(0); FMA_GROUP(1); FMA_GROUP(2); FMA_GROUP(3); FMA_GROUP(4); FMA_GROUP(5);
            FMA_GROUP2(0); FMA_GROUP2(1); FMA_GROUP2(2); FMA_GROUP2(3); FMA_GROUP2(4); FMA_GROUP2(5);
        }
        acc0 = _mm256_add_pd(acc0, bcc0); acc1 = _mm256_add_pd(acc1, bcc1); acc2 = _mm256_add_pd(acc2, bcc2);
        acc3 = _mm256_add_pd(acc3, bcc3); acc4 = _mm256_add_pd(acc4, bcc4); acc5 = _mm256_add_pd(acc5, bcc5);
    }
    for (; i < count; i++) {
        const int m = ms ? ms[i] : i;
        const double *t = p->tabled + (size_t)m * stride;
        const unsigned mk = p->mask[m];
        __m256d xv = _mm256_set1_pd(wt->ad[p->sub_a[m]] * wt->bd[p->sub_b[m]]);
        FMA_GROUP(0); FMA_GROUP(1); FMA_GROUP(2); FMA_GROUP(3); FMA_GROUP(4); FMA_GROUP(5); FMA_GROUP(6);
        FMA_GROUP(7);
    }
    double sum[RPAD] __attribute__((aligned(32)));
    _mm256_store_pd(sum, acc0); _mm256_store_pd(sum + 4, acc1); _mm256_store_pd(sum + 8, acc2);
    _mm256_store_pd(sum + 12, acc3); _mm256_store_pd(sum + 16, acc4); _mm256_store_pd(sum + 20, acc5);
    _mm256_store_pd(sum + 24, acc6); _mm256_store_pd(sum + 28, acc7);
    for (int r = 0; r < p->rows; r++)
        out[r] += (uint64_t)(int64_t)sum[r];
}

#define AVX2_INSTANCE(g) \
    __attribute__((target("avx2,fma"))) static void \
    accumulate_avx2_##g(const PlanObject *p, const uint16_t *ms, int count, const Weights *wt, uint64_t *out) \
    { accumulate_avx2_g(p, ms, count, wt, out, g); }
AVX2_INSTANCE(1) AVX2_INSTANCE(2) AVX2_INSTANCE(3) AVX2_INSTANCE(4) AVX2_INSTANCE(5) AVX2_INSTANCE(6)
AVX2_INSTANCE(7) AVX2_INSTANCE(8)

static void
accumulate_avx2(const PlanObject *p, const uint16_t *ms, int count, const Weights *wt, uint64_t *out)
{
    switch (p->groups) {
    case 1: accumulate_avx2_1(p, ms, count, wt, out); break;
    case 2: accumulate_avx2_2(p, ms, count, wt, out); break;
    case 3: accumulate_avx2_3(p, ms, count, wt, out); break;
    case 4: accumulate_avx2_4(p, ms, count, wt, out); break;
    case 5: accumulate_avx2_5(p, ms, count, wt, out); break;
    case 6: accumulate_avx2_6(p, ms, count, wt, out); break;
    case 7: accumulate_avx2_7(p, ms, count, wt, out); break;
    default: accumulate_avx2_8(p, ms, count, wt, out); break;
    }
}

/* Two trackers of one plan losing a card of the same value (the projection's two views of one shoe, a card
 * dealt): one walk over the affected multisets, each group of the table loaded once and multiplied by both
 * trackers' weights (the index, mask and table reads are shared; the sums are each tracker's own, exactly as
 * two separate calls give them). Punto banco's 22 rows: G = 6; 12 accumulators. */
#define FMA_PAIR(k) if ((k) < G && (mk >> (k) & 1)) { const __m256d tv = _mm256_loadu_pd(t + 4 * (k)); \
    acc##k = _mm256_fmadd_pd(tv, xv, acc##k); bcc##k = _mm256_fmadd_pd(tv, yv, bcc##k); }
__attribute__((target("avx2,fma"), always_inline)) static inline void
accumulate2_avx2_g(const PlanObject *p, const uint16_t *ms, int count, const Weights *w1, const Weights *w2,
                   uint64_t *out1, uint64_t *out2, const int G)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0, acc2 = acc0, acc3 = acc0, acc4 = acc0, acc5 = acc0;
    __m256d bcc0 = acc0, bcc1 = acc0, bcc2 = acc0, bcc3 = acc0, bcc4 = acc0, bcc5 = acc0;
    const size_t stride = (size_t)p->stride;
    for (int i = 0; i < count; i++) {
        const int m = ms[i];
        const double *t = p->tabled + (size_t)m * stride;
        const unsigned mk = p->mask[m];
        const int sa = p->sub_a[m], sb = p->sub_b[m];
        const __m256d xv = _mm256_set1_pd(w1->ad[sa] * w1->bd[sb]), yv = _mm256_set1_pd(w2->ad[sa] * w2->bd[sb]);
        FMA_PAIR(0); FMA_PAIR(1); FMA_PAIR(2); FMA_PAIR(3); FMA_PAIR(4); FMA_PAIR(5);
    }
    double sum[24] __attribute__((aligned(32))), sum2[24] __attribute__((aligned(32)));
    _mm256_store_pd(sum, acc0); _mm256_store_pd(sum + 4, acc1); _mm256_store_pd(sum + 8, acc2);
    _mm256_store_pd(sum + 12, acc3); _mm256_store_pd(sum + 16, acc4); _mm256_store_pd(sum + 20, acc5);
    _mm256_store_pd(sum2, bcc0); _mm256_store_pd(sum2 + 4, bcc1); _mm256_store_pd(sum2 + 8, bcc2);
    _mm256_store_pd(sum2 + 12, bcc3); _mm256_store_pd(sum2 + 16, bcc4); _mm256_store_pd(sum2 + 20, bcc5);
    for (int r = 0; r < p->rows; r++) {
        out1[r] += (uint64_t)(int64_t)sum[r];
        out2[r] += (uint64_t)(int64_t)sum2[r];
    }
}
#define AVX2_PAIR(g) \
    __attribute__((target("avx2,fma"))) static void \
    accumulate2_avx2_##g(const PlanObject *p, const uint16_t *ms, int count, const Weights *w1, \
                         const Weights *w2, uint64_t *out1, uint64_t *out2) \
    { accumulate2_avx2_g(p, ms, count, w1, w2, out1, out2, g); }
AVX2_PAIR(1) AVX2_PAIR(2) AVX2_PAIR(3) AVX2_PAIR(4) AVX2_PAIR(5) AVX2_PAIR(6)
typedef void (*Pair_fn)(const PlanObject *, const uint16_t *, int, const Weights *, const Weights *, uint64_t *,
                        uint64_t *);
static const Pair_fn PAIR_FNS[7] = {NULL, accumulate2_avx2_1, accumulate2_avx2_2, accumulate2_avx2_3,
                                   accumulate2_avx2_4, accumulate2_avx2_5, accumulate2_avx2_6};
#endif

/* Cards up to which the float64 kernel is exact: Permut(458, 6) <= 2**53 < Permut(459, 6). */
#define FLOAT64_MAX_CARDS 458
static int use_avx2 = 0;

static void
accumulate(const PlanObject *p, const uint16_t *ms, int count, const Weights *wt, int64_t n,
           uint64_t *out)
{
#ifdef HAVE_AVX2_KERNEL
    if (use_avx2 && n <= FLOAT64_MAX_CARDS) {
        accumulate_avx2(p, ms, count, wt, out);
        return;
    }
#endif
    accumulate_int(p, ms, count, wt, out);
}

static int64_t
total_cards(const int64_t *counts)
{
    int64_t n = 0;
    for (int v = 0; v < VALUES; v++)
        n += counts[v];
    return n;
}

static void
tracker_reset(TrackerObject *self, const int64_t *counts)
{
    const PlanObject *p = self->plan;
    memcpy(self->counts, counts, sizeof self->counts);
    for (int v = 0; v < VALUES; v++)
        falling_row(self->f[v], counts[v]);
    for (int s = 0; s < NSUB; s++) {
        self->ga[s] = group_weight(self->f, p->subk[s], 0);
        self->gb[s] = group_weight(self->f, p->subk[s], GROUP);
        self->gad[s] = (double)(int64_t)self->ga[s];
        self->gbd[s] = (double)(int64_t)self->gb[s];
    }
    memset(self->sums, 0, sizeof self->sums);
    const Weights wt = {self->ga, self->gb, self->gad, self->gbd};
    accumulate(p, NULL, NMULTI, &wt, total_cards(counts), self->sums);
}

/* One card of value v leaves: only the factor of v's group changes, for the sub-multisets holding v, so
 * W'[m] - W[m] = (g'[a] - g[a]) * other[b] for the multisets m = (a, b) holding v (no W array is kept). */
/* The first half of a removal: the composition, v's falling factorials and group factors move to the new
 * composition; dg/dgd receive the change of each group factor holding v and *wt the update's weights (which
 * point into dg/dgd and the tracker: valid while both are). */
static void
remove_prepare(TrackerObject *self, int v, uint64_t *dg, double *dgd, Weights *wt)
{
    const PlanObject *p = self->plan;
    self->counts[v] -= 1;
    falling_row(self->f[v], self->counts[v]);
    const int in_a = v < GROUP;
    uint64_t *g = in_a ? self->ga : self->gb;
    double *gd = in_a ? self->gad : self->gbd;
    for (int i = 0; i < p->n_affected_sub[v]; i++) {
        int s = p->affected_sub[v][i];
        uint64_t now = group_weight(self->f, p->subk[s], in_a ? 0 : GROUP);
        dg[s] = now - g[s];  /* modulo 2**64: a negative change wraps, the sum comes out right */
        dgd[s] = (double)(int64_t)dg[s];
        g[s] = now;
        gd[s] = (double)(int64_t)now;
    }
    /* only the affected multisets are visited, and they read dg/dgd only at sub-multisets holding v */
    *wt = in_a ? (Weights){dg, self->gb, dgd, self->gbd} : (Weights){self->ga, dg, self->gad, dgd};
}

/* One card of value v leaves: only the factor of v's group changes, for the sub-multisets holding v, so
 * W'[m] - W[m] = (g'[a] - g[a]) * other[b] for the multisets m = (a, b) holding v (no W array is kept). */
static void
tracker_remove(TrackerObject *self, int v)
{
    uint64_t dg[NSUB];
    double dgd[NSUB];
    Weights wt;
    remove_prepare(self, v, dg, dgd, &wt);
    /* N before the removal bounds both the old and the new weights */
    accumulate(self->plan, self->plan->affected[v], NAFF, &wt, total_cards(self->counts) + 1, self->sums);
}

/* A card of value v leaves two trackers of one plan (a != b, both holding one): the same sums as
 * tracker_remove on each, in one walk over the table where the float64 kernel runs for both. */
static void
tracker_remove_pair(TrackerObject *a, TrackerObject *b, int v)
{
#ifdef HAVE_AVX2_KERNEL
    const PlanObject *p = a->plan;
    if (use_avx2 && p == b->plan && p->groups <= 6 && total_cards(a->counts) <= FLOAT64_MAX_CARDS
        && total_cards(b->counts) <= FLOAT64_MAX_CARDS) {
        uint64_t dg1[NSUB], dg2[NSUB];
        double dgd1[NSUB], dgd2[NSUB];
        Weights w1, w2;
        remove_prepare(a, v, dg1, dgd1, &w1);
        remove_prepare(b, v, dg2, dgd2, &w2);
        PAIR_FNS[p->groups](p, p->affected[v], NAFF, &w1, &w2, a->sums, b->sums);
        return;
    }
#endif
    tracker_remove(a, v);
    tracker_remove(b, v);
}

/* The 30 counts in gather order: a DERIVED entry is the total Permut(N, 6) less the other classes of its family
 * (who wins: 0..2; cards required: 3..5; each side's bonus classes: 12..20, 21..29), exact modulo 2**64. */
static const int FAMILIES[4][2] = {{0, 3}, {3, 6}, {12, 21}, {21, 30}};

static void
derive_outputs(const PlanObject *p, const uint64_t *sums, int64_t n, uint64_t *out)
{
    uint64_t total = 1;
    for (int k = 0; k < 6; k++)
        total *= (uint64_t)(n - k > 0 ? n - k : 0);
    for (int i = 0; i < NOUT; i++)
        out[i] = p->gather[i] == DERIVED ? 0 : sums[p->gather[i]];
    for (int f = 0; f < 4; f++) {
        int hole = -1;
        uint64_t rest = 0;
        for (int i = FAMILIES[f][0]; i < FAMILIES[f][1]; i++) {
            if (p->gather[i] == DERIVED)
                hole = i;
            else
                rest += out[i];
        }
        if (hole >= 0)
            out[hole] = total - rest;
    }
}

/* ------------------------------------------------------------------------------------------ type */

static int
parse_counts(PyObject *obj, int64_t *counts)
{
    PyObject *seq = PySequence_Fast(obj, "counts must be a sequence of 10 ints");
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != VALUES) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "counts must be a sequence of 10 ints");
        return -1;
    }
    for (int v = 0; v < VALUES; v++) {
        long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, v));
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (x < 0) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "count of value %d is negative", v);
            return -1;
        }
        counts[v] = x;
    }
    Py_DECREF(seq);
    return 0;
}

/* Tracker(plan, counts): the kernel's state for one composition (counts: 10 non-negative ints; the caller
 * keeps N within the exact range). */
static PyObject *
Tracker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *plan, *counts_obj;
    int64_t counts[VALUES];
    if (!PyArg_ParseTuple(args, "O!O", &PlanType, &plan, &counts_obj))
        return NULL;
    if (parse_counts(counts_obj, counts) < 0)
        return NULL;
    TrackerObject *self = (TrackerObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(plan);
    self->plan = (PlanObject *)plan;
    tracker_reset(self, counts);
    return (PyObject *)self;
}

static void
Tracker_dealloc(TrackerObject *self)
{
    Py_XDECREF(self->plan);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Tracker_remove(TrackerObject *self, PyObject *arg)
{
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (v < 0 || v >= VALUES) {
        PyErr_Format(PyExc_ValueError, "card value must be 0..9, got %ld", v);
        return NULL;
    }
    if (self->counts[v] == 0) {
        PyErr_Format(PyExc_ValueError, "no card of value %ld left", v);
        return NULL;
    }
    tracker_remove(self, (int)v);
    Py_RETURN_NONE;
}

static PyObject *
Tracker_remove_pair(TrackerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &TrackerType)) {
        PyErr_SetString(PyExc_TypeError, "remove_pair(other_tracker, value)");
        return NULL;
    }
    TrackerObject *other = (TrackerObject *)args[0];
    long v = PyLong_AsLong(args[1]);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    if (v < 0 || v >= VALUES) {
        PyErr_Format(PyExc_ValueError, "card value must be 0..9, got %ld", v);
        return NULL;
    }
    if (self->counts[v] == 0 || other->counts[v] == 0) {
        PyErr_Format(PyExc_ValueError, "no card of value %ld left", v);
        return NULL;
    }
    if (other == self) {
        PyErr_SetString(PyExc_ValueError, "remove_pair needs two trackers");
        return NULL;
    }
    tracker_remove_pair(self, other, (int)v);
    Py_RETURN_NONE;
}

static PyObject *
Tracker_reset(TrackerObject *self, PyObject *arg)
{
    int64_t counts[VALUES];
    if (parse_counts(arg, counts) < 0)
        return NULL;
    tracker_reset(self, counts);
    Py_RETURN_NONE;
}

static PyObject *
Tracker_sums(TrackerObject *self, PyObject *Py_UNUSED(ignored))
{
    uint64_t counts[NOUT];
    derive_outputs(self->plan, self->sums, total_cards(self->counts), counts);
    PyObject *out = PyList_New(NOUT);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < NOUT; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(counts[i]);
        if (x == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *
Tracker_copy(TrackerObject *self, PyObject *Py_UNUSED(ignored))
{
    TrackerObject *c = (TrackerObject *)Py_TYPE(self)->tp_alloc(Py_TYPE(self), 0);
    if (c == NULL)
        return NULL;
    Py_INCREF(self->plan);
    c->plan = self->plan;
    memcpy(c->counts, self->counts, sizeof c->counts);
    memcpy(c->f, self->f, sizeof c->f);
    memcpy(c->ga, self->ga, sizeof c->ga);
    memcpy(c->gb, self->gb, sizeof c->gb);
    memcpy(c->gad, self->gad, sizeof c->gad);
    memcpy(c->gbd, self->gbd, sizeof c->gbd);
    memcpy(c->sums, self->sums, sizeof c->sums);
    return (PyObject *)c;
}

static PyObject *
Tracker_get_counts(TrackerObject *self, void *closure)
{
    PyObject *t = PyTuple_New(VALUES);
    if (t == NULL)
        return NULL;
    for (int v = 0; v < VALUES; v++) {
        PyObject *x = PyLong_FromLongLong(self->counts[v]);
        if (x == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, v, x);
    }
    return t;
}

/* ------------------------------------------------------------------------------ wager lines (views) */

/* Lines(keys, key_index, names, make, coef, dens, has_void): what a caller publishes per composition, computed
 * from the 30 counts in exact integers (the projection's per-card path, services/projection/odds_views.py):
 *   keys: tuple of str, key_index: uint8 per key, 0 = the total Permut(N, 6), 1 + i = count i (gather order):
 *     the counts dict, in that key order;
 *   names: tuple (one per line), make: callable(name, p_win, p_void, ev, ev_num, ev_den) -> the line's object;
 *   coef: int64 (native byte order), lines x 3 x 30: per line the coefficients of win, void and num over the counts;
 *   dens: int64 per line (D > 0), has_void: uint8 per line (0: p_void is 0.0 whatever the counts).
 * Per line: win = coef_win . s, void = coef_void . s, num = coef_num . s - D * total, den = D * total, reduced
 * by their gcd; p_win = win / total, p_void = void / total, ev = num / den as correctly rounded floats (the
 * quotient of two doubles when both integers are exact doubles, <= 2**53, else Python's int division). */
#define MAX_LINES 64
#define MAX_KEYS 64
typedef struct {
    PyObject_HEAD
    int nlines, nkeys;
    PyObject *keys, *names, *make;
    uint8_t key_index[MAX_KEYS];
    int64_t coef[MAX_LINES][3][NOUT];
    int64_t dens[MAX_LINES];
    uint8_t has_void[MAX_LINES];
    /* coef without its zeros (a line reads a few of the 30 counts): nnz[l][c] pairs (at, by) */
    uint8_t nnz[MAX_LINES][3];
    uint8_t at[MAX_LINES][3][NOUT];
    int64_t by[MAX_LINES][3][NOUT];
} LinesObject;

static PyTypeObject LinesType;

static PyObject *
Lines_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *keys, *key_index, *names, *make, *coef, *dens, *has_void;
    if (!PyArg_ParseTuple(args, "O!OO!OOOO", &PyTuple_Type, &keys, &key_index, &PyTuple_Type, &names, &make,
                          &coef, &dens, &has_void))
        return NULL;
    Py_ssize_t nk = PyTuple_GET_SIZE(keys), nl = PyTuple_GET_SIZE(names);
    if (nk > MAX_KEYS || nl > MAX_LINES) {
        PyErr_Format(PyExc_ValueError, "at most %d keys and %d lines", MAX_KEYS, MAX_LINES);
        return NULL;
    }
    if (!PyCallable_Check(make)) {
        PyErr_SetString(PyExc_TypeError, "make must be callable");
        return NULL;
    }
    LinesObject *self = (LinesObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->nkeys = (int)nk;
    self->nlines = (int)nl;
    Py_INCREF(keys);
    Py_INCREF(names);
    Py_INCREF(make);
    self->keys = keys;
    self->names = names;
    self->make = make;
    if (read_buffer(key_index, self->key_index, nk, "key_index") < 0
        || read_buffer(coef, self->coef, (Py_ssize_t)sizeof(int64_t) * 3 * NOUT * nl, "coef") < 0
        || read_buffer(dens, self->dens, (Py_ssize_t)sizeof(int64_t) * nl, "dens") < 0
        || read_buffer(has_void, self->has_void, nl, "has_void") < 0) {
        Py_DECREF(self);
        return NULL;
    }
    for (int k = 0; k < nk; k++) {
        if (self->key_index[k] > NOUT || !PyUnicode_Check(PyTuple_GET_ITEM(keys, k))) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "keys must be str and key_index 0..30");
            return NULL;
        }
    }
    for (int l = 0; l < nl; l++) {
        if (self->dens[l] <= 0 || self->dens[l] > (1 << 20)) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_ValueError, "line denominators must be 1..2**20");
            return NULL;
        }
        for (int c = 0; c < 3; c++) {
            int k = 0;
            for (int i = 0; i < NOUT; i++) {
                if (self->coef[l][c][i] > (1 << 20) || self->coef[l][c][i] < -(1 << 20)) {
                    Py_DECREF(self);
                    PyErr_SetString(PyExc_ValueError, "line coefficients must be within +-2**20");
                    return NULL;
                }
                if (self->coef[l][c][i] != 0) {
                    self->at[l][c][k] = (uint8_t)i;
                    self->by[l][c][k++] = self->coef[l][c][i];
                }
            }
            self->nnz[l][c] = (uint8_t)k;
        }
    }
    return (PyObject *)self;
}

static void
Lines_dealloc(LinesObject *self)
{
    Py_XDECREF(self->keys);
    Py_XDECREF(self->names);
    Py_XDECREF(self->make);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject LinesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "baccarat._odds_native.Lines",
    .tp_doc = "Per-wager linear forms over the 30 counts and the counts dict's keys (see Tracker.view).",
    .tp_basicsize = sizeof(LinesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Lines_new,
    .tp_dealloc = (destructor)Lines_dealloc,
};

typedef __int128 i128;
typedef unsigned __int128 u128;

/* binary gcd of two 64-bit values (a 128-bit division costs ~100 cycles: Euclid on them would dominate a view) */
static uint64_t
gcd_u64(uint64_t a, uint64_t b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    const int shift = __builtin_ctzll(a | b);
    a >>= __builtin_ctzll(a);
    do {
        b >>= __builtin_ctzll(b);
        if (a > b) {
            uint64_t t = a;
            a = b;
            b = t;
        }
        b -= a;
    } while (b != 0);
    return a << shift;
}

static u128
gcd_u128(u128 a, u128 b)
{
    if ((a >> 64) == 0 && (b >> 64) == 0)
        return gcd_u64((uint64_t)a, (uint64_t)b);
    while (b != 0) {
        u128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* x as a Python int (any 128-bit value) */
static PyObject *
long_from_i128(i128 x)
{
    if (x >= INT64_MIN && x <= INT64_MAX)
        return PyLong_FromLongLong((long long)x);
    int neg = x < 0;
    u128 u = neg ? (u128)0 - (u128)x : (u128)x;
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(u >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)u);
    PyObject *sh = PyLong_FromLong(64);
    PyObject *out = NULL, *t = NULL, *v = NULL;
    if (hi && lo && sh && (t = PyNumber_Lshift(hi, sh)) && (v = PyNumber_Or(t, lo)))
        out = neg ? PyNumber_Negative(v) : (Py_INCREF(v), v);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sh);
    Py_XDECREF(t);
    Py_XDECREF(v);
    return out;
}

#define EXACT_DOUBLE (((i128)1) << 53)

/* a / b correctly rounded (b > 0): double division when both are exact doubles, else Python's int / int */
static PyObject *
ratio(i128 a, i128 b)
{
    if (a <= EXACT_DOUBLE && a >= -EXACT_DOUBLE && b <= EXACT_DOUBLE)
        return PyFloat_FromDouble((double)a / (double)b);
    PyObject *x = long_from_i128(a), *y = long_from_i128(b), *q = NULL;
    if (x && y)
        q = PyNumber_TrueDivide(x, y);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return q;
}

static PyObject *
view_of(const PlanObject *plan, const uint64_t *sums, int64_t n, const LinesObject *L)
{
    uint64_t counts[NOUT];
    derive_outputs(plan, sums, n, counts);
    uint64_t total = 1;
    for (int k = 0; k < 6; k++)
        total *= (uint64_t)(n - k > 0 ? n - k : 0);
    if (total == 0) {
        PyErr_SetString(PyExc_ValueError, "a view needs at least 6 cards");
        return NULL;
    }
    PyObject *vals[NOUT + 1] = {NULL};
    PyObject *dict = NULL, *list = NULL, *out = NULL;
    vals[0] = PyLong_FromUnsignedLongLong(total);
    if (vals[0] == NULL)
        goto done;
    for (int i = 0; i < NOUT; i++)
        if ((vals[i + 1] = PyLong_FromUnsignedLongLong(counts[i])) == NULL)
            goto done;
    dict = _PyDict_NewPresized(L->nkeys);
    if (dict == NULL)
        goto done;
    for (int k = 0; k < L->nkeys; k++)
        if (PyDict_SetItem(dict, PyTuple_GET_ITEM(L->keys, k), vals[L->key_index[k]]) < 0)
            goto done;
    list = PyList_New(L->nlines);
    if (list == NULL)
        goto done;
    for (int l = 0; l < L->nlines; l++) {
        i128 sum[3] = {0, 0, 0};
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < L->nnz[l][c]; k++)
                sum[c] += (i128)L->by[l][c][k] * (i128)counts[L->at[l][c][k]];
        i128 win = sum[0], vd = sum[1], num = sum[2];
        const i128 den = (i128)L->dens[l] * (i128)total;
        num -= den;
        u128 g = gcd_u128(num < 0 ? (u128)0 - (u128)num : (u128)num, (u128)den);
        const i128 rn = num / (i128)g, rd = den / (i128)g;
        PyObject *args[6] = {PyTuple_GET_ITEM(L->names, l), ratio(win, (i128)total),
                             L->has_void[l] ? ratio(vd, (i128)total) : PyFloat_FromDouble(0.0),
                             ratio(rn, rd), long_from_i128(rn), long_from_i128(rd)};
        PyObject *obj = NULL;
        if (args[1] && args[2] && args[3] && args[4] && args[5])
            obj = PyObject_Vectorcall(L->make, args, 6, NULL);
        for (int a = 1; a < 6; a++)
            Py_XDECREF(args[a]);
        if (obj == NULL)
            goto done;
        PyList_SET_ITEM(list, l, obj);
    }
    out = PyTuple_Pack(3, vals[0], dict, list);
done:
    for (int i = 0; i <= NOUT; i++)
        Py_XDECREF(vals[i]);
    Py_XDECREF(dict);
    Py_XDECREF(list);
    return out;
}

/* Tracker.view(lines) -> (total, counts dict, [make(...) per line]) of the composition now (>= 6 cards). */
static PyObject *
Tracker_view(TrackerObject *self, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &LinesType)) {
        PyErr_SetString(PyExc_TypeError, "view() takes a Lines");
        return NULL;
    }
    return view_of(self->plan, self->sums, total_cards(self->counts), (LinesObject *)arg);
}

/* Tracker.follow(counts, max_cards) -> cards taken out (0 when counts is the composition now), or -1 when
 * counts is not the composition less at most max_cards cards (a new shoe, cards back): the tracker is then
 * unchanged and the caller evaluates counts in full. Raises ValueError for anything but 10 ints >= 0. */
static PyObject *
Tracker_follow(TrackerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "follow(counts, max_cards)");
        return NULL;
    }
    int64_t counts[VALUES];
    if (parse_counts(args[0], counts) < 0)
        return NULL;
    long max_cards = PyLong_AsLong(args[1]);
    if (max_cards == -1 && PyErr_Occurred())
        return NULL;
    int64_t gone = 0;
    for (int v = 0; v < VALUES; v++) {
        int64_t d = self->counts[v] - counts[v];
        if (d < 0)
            return PyLong_FromLong(-1);
        gone += d;
    }
    if (gone > max_cards)
        return PyLong_FromLong(-1);
    for (int v = 0; v < VALUES; v++)
        while (self->counts[v] > counts[v])
            tracker_remove(self, v);
    return PyLong_FromLongLong(gone);
}

/* The cards to take out of t to reach counts (d[v] per value; their number), or -1 when counts is not t's
 * composition less at most max_cards cards. */
static int64_t
follow_delta(const TrackerObject *t, const int64_t *counts, long max_cards, int64_t *d)
{
    int64_t gone = 0;
    for (int v = 0; v < VALUES; v++) {
        d[v] = t->counts[v] - counts[v];
        if (d[v] < 0)
            return -1;
        gone += d[v];
    }
    return gone > max_cards ? -1 : gone;
}

/* Tracker.follow_pair(other, counts, other_counts, max_cards) -> (k, k_other): this tracker follows counts and
 * other follows other_counts, each exactly as follow() would (k cards taken out, or -1 and that tracker
 * unchanged); the cards both lose (the projection's two views of one shoe: a card dealt) are taken out of both
 * in one walk (tracker_remove_pair). Raises ValueError for counts that are not 10 ints >= 0 (nothing changes)
 * or other being this tracker, TypeError when other is not a Tracker. */
static PyObject *
Tracker_follow_pair(TrackerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyObject_TypeCheck(args[0], &TrackerType)) {
        PyErr_SetString(PyExc_TypeError, "follow_pair(other_tracker, counts, other_counts, max_cards)");
        return NULL;
    }
    TrackerObject *other = (TrackerObject *)args[0];
    if (other == self) {
        PyErr_SetString(PyExc_ValueError, "follow_pair needs two trackers");
        return NULL;
    }
    int64_t ca[VALUES], cb[VALUES], da[VALUES], db[VALUES];
    if (parse_counts(args[1], ca) < 0 || parse_counts(args[2], cb) < 0)
        return NULL;
    long max_cards = PyLong_AsLong(args[3]);
    if (max_cards == -1 && PyErr_Occurred())
        return NULL;
    const int64_t ka = follow_delta(self, ca, max_cards, da), kb = follow_delta(other, cb, max_cards, db);
    for (int v = 0; v < VALUES; v++) {
        if (ka >= 0 && kb >= 0)
            for (int64_t both = da[v] < db[v] ? da[v] : db[v]; both > 0; both--, da[v]--, db[v]--)
                tracker_remove_pair(self, other, v);
        for (; ka >= 0 && da[v] > 0; da[v]--)
            tracker_remove(self, v);
        for (; kb >= 0 && db[v] > 0; db[v]--)
            tracker_remove(other, v);
    }
    return Py_BuildValue("(LL)", (long long)ka, (long long)kb);
}

static PyMethodDef Tracker_methods[] = {
    {"remove", (PyCFunction)Tracker_remove, METH_O, "remove(value): one card of value 0..9 leaves the shoe."},
    {"follow_pair", (PyCFunction)(void (*)(void))Tracker_follow_pair, METH_FASTCALL,
     "follow_pair(other, counts, other_counts, max_cards): follow() on both, the cards both lose in one walk."},
    {"remove_pair", (PyCFunction)(void (*)(void))Tracker_remove_pair, METH_FASTCALL,
     "remove_pair(other, value): a card of value 0..9 leaves this tracker and other (same result as two removes)."},
    {"reset", (PyCFunction)Tracker_reset, METH_O, "reset(counts): evaluate a new composition in full."},
    {"sums", (PyCFunction)Tracker_sums, METH_NOARGS, "The 30 counts in the plan's gather order (ints)."},
    {"copy", (PyCFunction)Tracker_copy, METH_NOARGS, "An independent copy of this state."},
    {"view", (PyCFunction)Tracker_view, METH_O, "view(lines): (total, counts dict, per-line objects) now."},
    {"follow", (PyCFunction)(void (*)(void))Tracker_follow, METH_FASTCALL,
     "follow(counts, max_cards): cards taken out to reach counts, or -1 (unchanged) when it cannot."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Tracker_getset[] = {
    {"counts", (getter)Tracker_get_counts, NULL, "The composition: 10 counts by value.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TrackerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "baccarat._odds_native.Tracker",
    .tp_doc = "Exact outcome counts of one composition, updated card by card (see baccarat.odds_live).",
    .tp_basicsize = sizeof(TrackerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Tracker_new,
    .tp_dealloc = (destructor)Tracker_dealloc,
    .tp_methods = Tracker_methods,
    .tp_getset = Tracker_getset,
};

/* evaluate(plan, counts) -> list of the 30 counts: one full evaluation, no state kept. */
static PyObject *
odds_evaluate(PyObject *module, PyObject *args)
{
    PyObject *plan, *counts_obj;
    int64_t counts[VALUES];
    if (!PyArg_ParseTuple(args, "O!O", &PlanType, &plan, &counts_obj))
        return NULL;
    if (parse_counts(counts_obj, counts) < 0)
        return NULL;
    TrackerObject *t = PyMem_Malloc(sizeof(TrackerObject));
    if (t == NULL)
        return PyErr_NoMemory();
    t->plan = (PlanObject *)plan;
    tracker_reset(t, counts);
    PyObject *out = Tracker_sums(t, NULL);
    PyMem_Free(t);
    return out;
}

static PyMethodDef module_methods[] = {
    {"evaluate", odds_evaluate, METH_VARARGS, "evaluate(plan, counts): the 30 counts of one composition."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_methods = module_methods,
    .m_name = "baccarat._odds_native",
    .m_doc = "Compiled kernel of the exact odds engine (optional; baccarat.odds falls back to numpy).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__odds_native(void)
{
#ifdef HAVE_AVX2_KERNEL
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
        && getenv("CROUPIER_ODDS_NO_SIMD") == NULL;
#endif
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&TrackerType) < 0 || PyType_Ready(&LinesType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PlanType);
    Py_INCREF(&TrackerType);
    Py_INCREF(&LinesType);
    if (PyModule_AddObject(m, "Plan", (PyObject *)&PlanType) < 0
        || PyModule_AddObject(m, "Lines", (PyObject *)&LinesType) < 0
        || PyModule_AddObject(m, "Tracker", (PyObject *)&TrackerType) < 0
        || PyModule_AddIntConstant(m, "SIMD", use_avx2) < 0
        || PyModule_AddIntConstant(m, "FLOAT64_MAX_CARDS", FLOAT64_MAX_CARDS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
