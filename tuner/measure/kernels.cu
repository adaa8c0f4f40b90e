// BFS, SSSP, PageRank and CC kernels laid out exactly as simulator/engine.py's docstring
// models them. Compiled by NVRTC through CuPy (tuner/measure/runner.py, `warpsweep measure`;
// bench/gpu/harness.py); templates are instantiated by name. The first part (bfs_topo,
// sssp_topo, bfs_outliers, bfs_data, sssp_data) is what bench/gpu's committed measurements
// ran, unchanged; the `*_sweep`, `*_wl`, `*_outliers`, scatter and compaction kernels below
// it are `warpsweep measure`'s (all four algorithms, deferral, block pushes, in-queue flags,
// the temporal hybrid), with a 32-word control block (CTL_WORDS).
//
// Layout: W lanes per vertex (W = 1: the thread mapping), K = 32 / W virtual warps per warp,
// each taking C consecutive vertices; virtual warp g of a static launch takes chunk g, so warp
// unit p holds vertices [p*K*C, (p+1)*K*C). A vwarp kernel first stages its chunk's status
// words and C + 1 row bounds into shared memory with its W lanes, then walks the chunk.
// Dynamic distribution launches only the resident warps; a warp grabs its next unit (K
// chunks) with an atomicAdd on a global counter. Deferred outliers (degree > threshold) are
// queued with an atomicAdd and expanded by a second kernel, a whole block per vertex.
//
// Control words (int ctl[8]): the "changed" flag holds the last level/round that changed
// something, so it never needs a reset; the per-launch counters come in two copies used by
// alternate iterations, and launch `it` zeroes the copies that launch it + 1 will use.

#define CTL_FLAG 0
#define CTL_GRAB 1
#define CTL_DEFER 3
#define CTL_TAIL 5

#define PUSH_PLAIN 0
#define PUSH_WARP_AGGREGATED 1
#define PUSH_CLAIMED 2

// Status and distance words read with plain loads (cached in L1, the default), or with
// -DSTATUS_LOADS_BYPASS_L1 from L2 only (ld.global.cg): bench/gpu/launch_times.py --l1
// measures how much of a launch's time L1 hits save.
#ifdef STATUS_LOADS_BYPASS_L1
#define STATUS_LOAD(p) __ldcg(p)
#else
#define STATUS_LOAD(p) (*(p))
#endif

// warpsweep measure's control block and atomic tally (see its section below)
#define CTL_COUNT 8
#define CTL_RETIRED 10  // three copies: data-driven PageRank's retired vertices per launch
#define CTL_ACC 16  // int offset of the doubles (byte 64)
#define CTL_WORDS 32
#define PUSH_BLOCK 3

// The room of every queue a push stores into, set by the host before a run: a push past it
// counts on the tail (the host sees the overflow and refuses the run) but stores nothing, so
// a worklist that outgrows its queue never writes past its end.
__device__ int ws_queue_cap = 0x7fffffff;

#ifdef WS_COUNT
__device__ unsigned long long ws_counts[1];
__device__ __forceinline__ void ws_count_lanes(bool pred) {  // one per lane that does it
    const unsigned active = __activemask();
    const unsigned b = __ballot_sync(active, pred);
    if (b && (threadIdx.x & 31) == (unsigned)(__ffs(active) - 1))
        atomicAdd(ws_counts, (unsigned long long)__popc(b));
}
__device__ __forceinline__ void ws_count_warp(bool pred) {  // one per warp step that does it
    const unsigned active = __activemask();
    const unsigned b = __ballot_sync(active, pred);
    if (b && (threadIdx.x & 31) == (unsigned)(__ffs(active) - 1)) atomicAdd(ws_counts, 1ull);
}
__device__ __forceinline__ void ws_count_one() { atomicAdd(ws_counts, 1ull); }
#else
__device__ __forceinline__ void ws_count_lanes(bool) {}
__device__ __forceinline__ void ws_count_warp(bool) {}
__device__ __forceinline__ void ws_count_one() {}
#endif

__device__ __forceinline__ void reset_next(int* ctl, int it) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const int nxt = (it + 1) & 1;
        ctl[CTL_GRAB + nxt] = 0;
        ctl[CTL_DEFER + nxt] = 0;
        ctl[CTL_TAIL + nxt] = 0;
    }
}

template <int W>
__device__ __forceinline__ unsigned vwarp_mask() {
    const unsigned lane = threadIdx.x & 31;
    return W == 32 ? 0xffffffffu : (((1u << W) - 1u) << (lane & ~(unsigned)(W - 1)));
}

// ---- what each algorithm does per vertex and per edge ---------------------------------------

struct BfsTopo {  // status = level; a vertex expands when its level is the current depth
    const int* __restrict__ indices;
    int* level;
    int* ctl;
    int depth;
    __device__ int status(int v) const { return STATUS_LOAD(level + v); }
    __device__ bool active(int s) const { return s == depth; }
    __device__ float vertex(int) { return 0.0f; }
    __device__ void edge(float, int k) {
        const int u = indices[k];
        if (STATUS_LOAD(level + u) == -1) {  // plain store: racing lanes store the same level
            level[u] = depth + 1;
            ctl[CTL_FLAG] = depth + 1;
        }
    }
};

struct SsspTopo {  // Bellman-Ford round: active flags for this round (cur) and the next (nxt)
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    float* dist;
    int* cur;
    int* nxt;
    int* ctl;
    int round;
    __device__ int status(int v) const { return STATUS_LOAD(cur + v); }
    __device__ bool active(int s) const { return s != 0; }
    __device__ float vertex(int v) {
        cur[v] = 0;  // the owner clears its flag: cur is all zero again after the round
        return STATUS_LOAD(dist + v);
    }
    __device__ void edge(float dv, int k) {
        const int u = indices[k];
        const float nd = dv + weights[k];
        if (nd < STATUS_LOAD(dist + u)) {  // non-negative floats order like their int bit patterns
            atomicMin(reinterpret_cast<int*>(dist) + u, __float_as_int(nd));
            nxt[u] = 1;
            ctl[CTL_FLAG] = round + 1;
        }
    }
};

struct BfsData {  // worklist BFS: push a neighbour seen unvisited (or claimed by atomicCAS)
    const int* __restrict__ indices;
    int* level;
    int depth;
    __device__ float vertex(int) { return 0.0f; }
    template <int VARIANT>
    __device__ bool edge(float, int k, int& u) {
        u = indices[k];
        if (STATUS_LOAD(level + u) != -1) return false;
        if (VARIANT == PUSH_CLAIMED) return atomicCAS(level + u, -1, depth + 1) == -1;
        level[u] = depth + 1;  // racing lanes all push: duplicates, as the simulator models
        return true;
    }
};

struct SsspData {  // worklist SSSP: push the target when this lane's atomicMin lowered it
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    float* dist;
    __device__ float vertex(int v) { return STATUS_LOAD(dist + v); }
    template <int VARIANT>
    __device__ bool edge(float dv, int k, int& u) {
        u = indices[k];
        const float nd = dv + weights[k];
        if (!(nd < STATUS_LOAD(dist + u))) return false;
        const int old = atomicMin(reinterpret_cast<int*>(dist) + u, __float_as_int(nd));
        return nd < __int_as_float(old);
    }
};

// ---- worklist push ------------------------------------------------------------------------

template <int VARIANT>
__device__ __forceinline__ void push(bool want, int u, int* queue, int* tail) {
    if (VARIANT == PUSH_WARP_AGGREGATED) {
        const unsigned active = __activemask();
        const unsigned ballot = __ballot_sync(active, want);
        if (ballot == 0) return;
        const unsigned lane = threadIdx.x & 31;
        const int leader = __ffs(ballot) - 1;
        int base = 0;
        if (lane == (unsigned)leader) base = atomicAdd(tail, __popc(ballot));
        base = __shfl_sync(active, base, leader);
        const int at = base + __popc(ballot & ((1u << lane) - 1u));
        if (want && at < ws_queue_cap) queue[at] = u;
    } else if (want) {
        const int at = atomicAdd(tail, 1);
        if (at < ws_queue_cap) queue[at] = u;
    }
}

// ---- topology-driven sweep ----------------------------------------------------------------

// A vertex's expansion by its W lanes: the vertex's value, then its edges W at a time. PageRank
// (PrSweep, below) gathers instead and reduces over the virtual warp.
template <int W, class Op>
__device__ __forceinline__ void expand_vertex(Op& op, int v, int s, int e, int vlane,
                                              unsigned) {
    const float val = op.vertex(v);
    for (int k = s + vlane; k < e; k += W) op.edge(val, k);
}
struct PrSweep;
template <int W>
__device__ void expand_vertex(PrSweep& op, int v, int s, int e, int vlane, unsigned mask);
template <bool DEFER>
__device__ void thread_donating(PrSweep& op, const int* __restrict__ indptr, int n,
                                int* dcount, int thr, int* dq, int dthr);

template <int W, int C, bool DEFER, class Op>
__device__ __forceinline__ void vwarp_chunk(Op& op, const int* __restrict__ indptr, int n,
                                            int chunk, int* s_status, int* s_bounds,
                                            unsigned mask, int vlane, int* dcount, int thr,
                                            int* dq) {
    const int base = chunk * C;
    if (base >= n) return;  // uniform over the virtual warp
    for (int j = vlane; j < C; j += W) s_status[j] = base + j < n ? op.status(base + j) : 0;
    for (int j = vlane; j <= C; j += W) s_bounds[j] = indptr[min(base + j, n)];
    __syncwarp(mask);
    for (int j = 0; j < C; ++j) {
        if (base + j >= n) break;
        if (!op.active(s_status[j])) continue;
        const int v = base + j;
        const int s = s_bounds[j], e = s_bounds[j + 1];
        if (DEFER && e - s > thr) {
            ws_count_warp(vlane == 0);
            if (vlane == 0) dq[atomicAdd(dcount, 1)] = v;
            continue;
        }
        expand_vertex<W>(op, v, s, e, vlane, mask);
    }
    __syncwarp(mask);  // the next grab re-stages into the same shared words
}

// A thread's chunk of C vertices (W = 1): each vertex's status and row bounds read by the
// thread itself, nothing staged.
template <int C, bool DEFER, class Op>
__device__ __forceinline__ void thread_chunk(Op& op, const int* __restrict__ indptr, int n,
                                             int chunk, int* dcount, int thr, int* dq) {
    for (int j = 0; j < C; ++j) {
        const int v = chunk * C + j;
        if (v >= n) return;
        if (!op.active(op.status(v))) continue;
        const int s = indptr[v], e = indptr[v + 1];
        if (DEFER && e - s > thr) {
            ws_count_warp(true);
            dq[atomicAdd(dcount, 1)] = v;
            continue;
        }
        expand_vertex<1>(op, v, s, e, 0, 1u << (threadIdx.x & 31));
    }
}

// ---- work donation (Nasre et al.): the thread mapping with a block's box -------------------

// x's exclusive prefix over the block, in thread order, and (total) its sum over the block.
// Every thread of the block must call it.
__device__ __forceinline__ int block_exclusive_scan(int x, int& total) {
    __shared__ int s_warp[33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int inclusive = x;
    for (int off = 1; off < 32; off <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, inclusive, off);
        if (lane >= off) inclusive += y;
    }
    if (lane == 31) s_warp[warp] = inclusive;
    __syncthreads();
    if (threadIdx.x == 0) {
        int sum = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
            const int c = s_warp[w];
            s_warp[w] = sum;
            sum += c;
        }
        s_warp[32] = sum;
    }
    __syncthreads();
    const int before = s_warp[warp] + inclusive - x;
    total = s_warp[32];
    __syncthreads();  // s_warp is reused by the next call
    return before;
}

// A block's expansion with donation. T, the block's threads: those of its warps that hold one
// of the launch's `items` (vertices of a sweep, entries of a worklist). cap = ceil(the block's
// expanding edges / T) + dthr; a thread walks at most cap of its edges [s, e) and puts the
// rest, its last ones, in the block's box, in thread order; box entry b is walked by thread
// b % T in round b / T, after the thread's own edges. The box is each donor's offset into
// it, first donated edge and value (for LowerSweep, the value its edges relax from); a
// drainer finds its entry's donor by a binary search of the offsets. `edge(live, k, owner)`
// walks edge k from the value `op` holds (owner: the donor's thread in the block, for an
// edge of the box; -1 for one of the thread's own); IN_STEP (a block push): the block's threads walk in
// rounds together, each calling `edge` every round (live false where it has none), and a
// warp drains after its slowest lane's own edges. Every thread of the block must call it.
// (Static shared memory: 3 words for each of up to 1024 threads.)
template <bool IN_STEP, class Op, class Edge>
__device__ __forceinline__ void donating_expand(Op& op, bool expands, int s, int e, int items,
                                                int dthr, Edge edge) {
    __shared__ int s_off[1024], s_first[1024], s_bits[1024];
    const int t = threadIdx.x;
    const int deg = expands ? e - s : 0;
    int edges = 0, box = 0;
    block_exclusive_scan(deg, edges);
    const int rest = items - (int)(blockIdx.x * blockDim.x);
    const int threads = min((int)blockDim.x, (rest + 31) & ~31);
    // (64-bit: a threshold up to INT_MAX, the strategy's bound, past a block's mean degree)
    const long long cap = ((long long)edges + threads - 1) / threads + dthr;
    const int own = (int)min((long long)deg, cap);
    const int off = block_exclusive_scan(deg - own, box);
    s_off[t] = off;  // a thread that gives none repeats the next giver's offset
    s_first[t] = s + own;
    const int mine = op.source_bits();
    s_bits[t] = mine;
    __syncthreads();
    // box entry b's donor: the last thread d whose offset is at most b (it gives past b)
    auto donor = [&](int b) {
        int lo = 0, hi = (int)blockDim.x;
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (s_off[mid] <= b) lo = mid; else hi = mid;
        }
        return lo;
    };
    if (!IN_STEP) {
        for (int k = s; k < s + own; ++k) edge(true, k, -1);
        __syncwarp();  // the warp drains after its slowest lane's own edges
        if (t >= threads) return;
        for (int b = t; b < box; b += threads) {
            const int d = donor(b);
            op.set_source_bits(s_bits[d]);
            edge(true, s_first[d] + b - s_off[d], d);
        }
        return;
    }
    const int warp_own = __reduce_max_sync(0xffffffffu, own);
    for (int r = 0;; ++r) {  // rounds in step over the block, while any lane has an edge
        bool live = false;
        int k = 0, owner = -1;
        if (r < own) {
            live = true;
            k = s + r;
        } else if (r >= warp_own && t < threads) {
            const int b = t + (r - warp_own) * threads;
            if (b < box) {
                owner = donor(b);
                op.set_source_bits(s_bits[owner]);
                live = true;
                k = s_first[owner] + b - s_off[owner];
            }
        }
        if (!__syncthreads_or(live)) break;
        edge(live, k, owner);
    }
}

// A thread-mapped sweep with donation (C = 1, static): the thread's vertex, unless inactive
// or deferred, expands through the block's box.
// Whether a thread's active vertex v expands in its donating sweep (its edges [s, e)), or is
// deferred to the outlier kernel (queued here).
template <bool DEFER>
__device__ __forceinline__ bool expands_here(bool active, int v, const int* __restrict__ indptr,
                                             int* dcount, int thr, int* dq, int& s, int& e) {
    if (!active) return false;
    s = indptr[v];
    e = indptr[v + 1];
    if (DEFER && e - s > thr) {
        ws_count_warp(true);
        dq[atomicAdd(dcount, 1)] = v;
        return false;
    }
    return true;
}

template <bool DEFER, class Op>
__device__ __forceinline__ void thread_donating(Op& op, const int* __restrict__ indptr, int n,
                                                int* dcount, int thr, int* dq, int dthr) {
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    int s = 0, e = 0;
    const bool expands = expands_here<DEFER>(v < n && op.active(op.status(v)), v, indptr,
                                             dcount, thr, dq, s, e);
    if (expands) op.vertex(v);
    donating_expand<false>(op, expands, s, e, n, dthr,
                           [&](bool, int k, int) { op.edge(0.0f, k); });
}

template <int W, int C, bool DYN, bool DEFER, bool DONATE, class Op>
__device__ __forceinline__ void topology_sweep(Op& op, const int* __restrict__ indptr, int n,
                                               int* ctl, int it, int thr, int* dq,
                                               int dthr = 0) {
    extern __shared__ int smem[];
    reset_next(ctl, it);
    int* dcount = ctl + CTL_DEFER + (it & 1);
    if constexpr (DONATE) {  // (plan_for: thread mapping, C = 1, static)
        thread_donating<DEFER>(op, indptr, n, dcount, thr, dq, dthr);
        return;
    }
    if (W == 1 && !DYN) {  // thread mapping (C = 1) or a thread's chunk
        thread_chunk<C, DEFER>(op, indptr, n, blockIdx.x * blockDim.x + threadIdx.x, dcount,
                               thr, dq);
        return;
    }
    const int vlane = threadIdx.x & (W - 1);
    const int vw_block = threadIdx.x / W;
    const int vws = blockDim.x / W;
    int* s_status = smem + vw_block * C;
    int* s_bounds = smem + vws * C + vw_block * (C + 1);
    const unsigned mask = vwarp_mask<W>();
    if (!DYN) {
        const int chunk = (blockIdx.x * blockDim.x + threadIdx.x) / W;
        vwarp_chunk<W, C, DEFER>(op, indptr, n, chunk, s_status, s_bounds, mask, vlane,
                                 dcount, thr, dq);
        return;
    }
    const int K = 32 / W;
    const int units = (n + K * C - 1) / (K * C);
    int* grab = ctl + CTL_GRAB + (it & 1);
    const int lane = threadIdx.x & 31;
    for (;;) {
        int unit = 0;
        if (lane == 0) {
            unit = atomicAdd(grab, 1);
            ws_count_one();
        }
        unit = __shfl_sync(0xffffffffu, unit, 0);
        if (unit >= units) break;
        if (W == 1)
            thread_chunk<C, DEFER>(op, indptr, n, unit * K + lane, dcount, thr, dq);
        else
            vwarp_chunk<W, C, DEFER>(op, indptr, n, unit * K + lane / W, s_status, s_bounds,
                                     mask, vlane, dcount, thr, dq);
        __syncwarp();
    }
}

template <int W, int C, bool DYN, bool DEFER>
__global__ void bfs_topo(const int* __restrict__ indptr, const int* __restrict__ indices,
                         int* level, int n, int depth, int* ctl, int thr, int* dq) {
    BfsTopo op{indices, level, ctl, depth};
    topology_sweep<W, C, DYN, DEFER, false>(op, indptr, n, ctl, depth, thr, dq);
}

template <int W, int C, bool DYN>
__global__ void sssp_topo(const int* __restrict__ indptr, const int* __restrict__ indices,
                          const float* __restrict__ weights, float* dist, int* cur, int* nxt,
                          int n, int round, int* ctl) {
    SsspTopo op{indices, weights, dist, cur, nxt, ctl, round};
    topology_sweep<W, C, DYN, false, false>(op, indptr, n, ctl, round, 0, nullptr);
}

// The outlier kernel: each queued vertex is expanded by a whole block (thread i takes edges
// i, i + B, ...); the grid is the resident blocks (or fewer), striding over the queue, so
// the host needs no read-back of the queue length before launching it.
__global__ void bfs_outliers(const int* __restrict__ indptr, const int* __restrict__ indices,
                             int* level, int depth, int* ctl, const int* __restrict__ dq) {
    BfsTopo op{indices, level, ctl, depth};
    const int count = ctl[CTL_DEFER + (depth & 1)];
    for (int q = blockIdx.x; q < count; q += gridDim.x) {
        const int v = dq[q];
        const int e = indptr[v + 1];
        for (int k = indptr[v] + threadIdx.x; k < e; k += blockDim.x) op.edge(0.0f, k);
    }
}

// ---- data-driven (worklist) launch --------------------------------------------------------

template <int W, int VARIANT, class Op>
__device__ __forceinline__ void worklist_launch(Op& op, const int* __restrict__ indptr,
                                                const int* __restrict__ wl_in, int in_count,
                                                int* wl_out, int* ctl, int it) {
    reset_next(ctl, it);
    int* tail = ctl + CTL_TAIL + (it & 1);
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / W;
    if (g >= in_count) return;
    const int vlane = threadIdx.x & (W - 1);
    const int v = wl_in[g];
    const int s = indptr[v], e = indptr[v + 1];
    const float val = op.vertex(v);
    for (int k = s + vlane; k < e; k += W) {
        int u = 0;
        const bool want = op.template edge<VARIANT>(val, k, u);
        push<VARIANT>(want, u, wl_out, tail);
    }
}

template <int W, int VARIANT>
__global__ void bfs_data(const int* __restrict__ indptr, const int* __restrict__ indices,
                         int* level, int depth, const int* __restrict__ wl_in, int in_count,
                         int* wl_out, int* ctl) {
    BfsData op{indices, level, depth};
    worklist_launch<W, VARIANT>(op, indptr, wl_in, in_count, wl_out, ctl, depth);
}

template <int W, int VARIANT>
__global__ void sssp_data(const int* __restrict__ indptr, const int* __restrict__ indices,
                          const float* __restrict__ weights, float* dist, int it,
                          const int* __restrict__ wl_in, int in_count, int* wl_out, int* ctl) {
    SsspData op{indices, weights, dist};
    worklist_launch<W, VARIANT>(op, indptr, wl_in, in_count, wl_out, ctl, it);
}


// =============================================================================================
// `warpsweep measure`'s kernels (tuner/measure/runner.py). Control block: CTL_WORDS ints, the
// words above plus the activation counts (CTL_COUNT, two copies) and, from CTL_ACC on, doubles:
// PageRank's L1 change (three copies: launch it adds to it % 3) and its dangling rank sum
// (three copies: launch it reads 3 + it % 3 and builds 3 + (it + 1) % 3). Launch it zeroes what
// launch it + 1 uses (and the sum launch it + 1 builds), so there are no memset launches.
//
// With -DWS_COUNT the atomics the simulator counts are tallied in ws_counts[0] (one per lane
// for atomicMin, atomicCAS and exchanges; one per warp step for the warp-aggregated
// same-address ones: tail pushes, grabs, deferrals, activation counts; one per block round of
// a block push), read back after a separate, untimed run.
// =============================================================================================


__device__ __forceinline__ double* ctl_acc(int* ctl) {
    return reinterpret_cast<double*>(ctl + CTL_ACC);
}

__device__ __forceinline__ void reset_next_all(int* ctl, int it) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const int nxt = (it + 1) & 1;
        ctl[CTL_GRAB + nxt] = 0;
        ctl[CTL_DEFER + nxt] = 0;
        ctl[CTL_TAIL + nxt] = 0;
        ctl[CTL_COUNT + nxt] = 0;
        ctl[CTL_RETIRED + (it + 1) % 3] = 0;
        double* acc = ctl_acc(ctl);
        acc[(it + 1) % 3] = 0.0;
        acc[3 + (it + 2) % 3] = 0.0;
    }
}

template <class T>
__device__ __forceinline__ int as_bits(T x);
template <>
__device__ __forceinline__ int as_bits<float>(float x) { return __float_as_int(x); }
template <>
__device__ __forceinline__ int as_bits<int>(int x) { return x; }
template <class T>
__device__ __forceinline__ T from_bits(int x);
template <>
__device__ __forceinline__ float from_bits<float>(int x) { return __int_as_float(x); }
template <>
__device__ __forceinline__ int from_bits<int>(int x) { return x; }

// The sum of x over the block, on thread 0 (every thread of the block must call it).
__device__ __forceinline__ double block_sum(double x) {
    __shared__ double s_sum[32];
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    if ((threadIdx.x & 31) == 0) s_sum[threadIdx.x >> 5] = x;
    __syncthreads();
    double t = 0.0;
    if (threadIdx.x == 0)
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += s_sum[w];
    __syncthreads();  // s_sum is reused by the next call
    return t;
}

// ---- sweeps' per-vertex and per-edge work ----------------------------------------------------

template <bool COUNT>
struct BfsSweep {  // COUNT (temporal hybrid): claim the target with atomicCAS and count it once
    const int* __restrict__ indices;
    int* level;
    int* ctl;
    int depth;
    __device__ int status(int v) const { return STATUS_LOAD(level + v); }
    __device__ bool active(int s) const { return s == depth; }
    __device__ float vertex(int) { return 0.0f; }
    __device__ int source_bits() const { return 0; }  // WER: what another lane's edge needs
    __device__ void set_source_bits(int) {}
    __device__ void edge(float, int k) {
        const int u = indices[k];
        if (STATUS_LOAD(level + u) != -1) return;
        if (COUNT) {
            const bool claimed = atomicCAS(level + u, -1, depth + 1) == -1;
            ws_count_lanes(true);
            ws_count_warp(claimed);
            if (claimed) atomicAdd(ctl + CTL_COUNT + (depth & 1), 1);
        } else {
            level[u] = depth + 1;
            ctl[CTL_FLAG] = depth + 1;
        }
    }
};

// SSSP (T = float, WEIGHTED) and CC (T = int labels): lower the target with atomicMin and flag
// it for the next sweep; COUNT (temporal hybrid): the lane whose atomicMin lowered the target
// claims its flag with an exchange (waiting for the old value) and counts it once.
template <class T, bool WEIGHTED, bool COUNT>
struct LowerSweep {
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    T* value;
    int* cur;
    int* nxt;
    int* ctl;
    int round;
    T mine;
    __device__ int status(int v) const { return STATUS_LOAD(cur + v); }
    __device__ bool active(int s) const { return s != 0; }
    __device__ float vertex(int v) {
        cur[v] = 0;  // the owner clears its flag
        mine = STATUS_LOAD(value + v);
        return 0.0f;
    }
    __device__ int source_bits() const { return as_bits<T>(mine); }
    __device__ void set_source_bits(int bits) { mine = from_bits<T>(bits); }
    __device__ void edge(float, int k) {
        const int u = indices[k];
        T nd = mine;
        if (WEIGHTED) nd = nd + (T)weights[k];
        if (!(nd < STATUS_LOAD(value + u))) return;
        const int old = atomicMin(reinterpret_cast<int*>(value) + u, as_bits<T>(nd));
        ws_count_lanes(true);
        if (COUNT) {
            if (!(nd < from_bits<T>(old))) return;
            const bool claimed = atomicExch(nxt + u, 1) == 0;
            ws_count_lanes(true);
            ws_count_warp(claimed);
            if (claimed) atomicAdd(ctl + CTL_COUNT + (round & 1), 1);
        } else {
            nxt[u] = 1;
            ctl[CTL_FLAG] = round + 1;
        }
    }
};

// PageRank's ranks, shares (rank / out-degree) and sums are doubles: the functional run's
// float64, so that the data-driven form retires the same vertices at the same iterations.
typedef double rank_t;

// Pull PageRank: a vertex gathers its in-neighbours' rank shares (rank / out-degree) with its
// W lanes, reduces them over the virtual warp, and its first lane stores the new rank and
// share and adds to the L1 change and (dangling vertices) the next dangling sum.
struct PrSweep {
    const int* __restrict__ indices;
    const rank_t* __restrict__ share_in;
    const rank_t* __restrict__ rank_in;
    const rank_t* __restrict__ inv_outdeg;
    rank_t* rank_out;
    rank_t* share_out;
    rank_t base;
    rank_t damping;
    double err;
    double dang;
    __device__ int status(int) const { return 1; }
    __device__ bool active(int) const { return true; }
    __device__ float vertex(int) { return 0.0f; }
    __device__ int source_bits() const { return 0; }  // (donation: a gather needs none)
    __device__ void set_source_bits(int) {}
    __device__ void edge(float, int) {}
    __device__ void store(int v, rank_t sum) {
        const rank_t r = base + damping * sum;
        const rank_t inv = inv_outdeg[v];
        rank_out[v] = r;
        share_out[v] = r * inv;
        err += fabs((double)r - (double)rank_in[v]);
        if (inv == 0) dang += r;
    }
};

template <int W>
__device__ void expand_vertex(PrSweep& op, int v, int s, int e, int vlane, unsigned mask) {
    rank_t sum = 0;
    for (int k = s + vlane; k < e; k += W) sum += op.share_in[op.indices[k]];
    for (int off = W / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(mask, sum, off);
    if (vlane == 0) op.store(v, sum);
}

// PageRank's sweep with donation: a thread sums the shares of the in-edges it keeps, its
// block's drainers add the donated ones to its word in shared memory, and after the block's
// barrier the thread stores its vertex's rank from both (a deferred vertex is the outlier
// kernel's).
template <bool DEFER>
__device__ void thread_donating(PrSweep& op, const int* __restrict__ indptr, int n,
                                int* dcount, int thr, int* dq, int dthr) {
    __shared__ rank_t s_part[1024];
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    int s = 0, e = 0;
    const bool expands = expands_here<DEFER>(v < n, v, indptr, dcount, thr, dq, s, e);
    s_part[threadIdx.x] = 0;  // (published by donating_expand's barriers, before any drain)
    rank_t sum = 0;
    donating_expand<false>(op, expands, s, e, n, dthr, [&](bool, int k, int owner) {
        rank_t share = op.share_in[op.indices[k]];
        if (owner < 0) {
            sum += share;
            return;
        }
        // a drain round's lanes hold consecutive box entries: each donor's are a run of
        // lanes, summed by a segmented scan and added once a run (one shared atomic an edge
        // had serialised on a hub's word: 5-6x slower on rmat16 and web-NotreDame). The scan
        // needs the active lanes contiguous: lanes leave the drain loop from the top only.
        const unsigned active = __activemask();
        const int lane = threadIdx.x & 31;
        for (int off = 1; off < 32; off <<= 1) {
            const rank_t more = __shfl_down_sync(active, share, off);
            const int theirs = __shfl_down_sync(active, owner, off);
            if (lane + off < 32 && ((active >> (lane + off)) & 1) && theirs == owner)
                share += more;
        }
        if (lane == __ffs(__match_any_sync(active, owner)) - 1)  // the run's first lane
            atomicAdd(s_part + owner, share);
    });
    __syncthreads();
    if (expands) op.store(v, sum + s_part[threadIdx.x]);
}

__device__ __forceinline__ rank_t pr_base(int* ctl, int it, rank_t damping, int n) {
    const double dsum = ctl_acc(ctl)[3 + it % 3];
    return (rank_t)((1.0 - damping) / n + damping * dsum / n);
}

// ---- measure's sweeps: all four algorithms, with deferral and (hybrid) activation counts ----

template <int W, int C, bool DYN, bool DEFER, bool COUNT, bool DONATE>
__global__ void bfs_sweep(const int* __restrict__ indptr, const int* __restrict__ indices,
                          int* level, int n, int it, int depth, int* ctl, int thr, int* dq,
                          int dthr) {
    reset_next_all(ctl, it);
    BfsSweep<COUNT> op{indices, level, ctl, depth};
    topology_sweep<W, C, DYN, DEFER, DONATE>(op, indptr, n, ctl, it, thr, dq, dthr);
}

template <int W, int C, bool DYN, bool DEFER, bool COUNT, bool DONATE>
__global__ void sssp_sweep(const int* __restrict__ indptr, const int* __restrict__ indices,
                           const float* __restrict__ weights, float* dist, int* cur, int* nxt,
                           int n, int it, int* ctl, int thr, int* dq, int dthr) {
    reset_next_all(ctl, it);
    LowerSweep<float, true, COUNT> op{indices, weights, dist, cur, nxt, ctl, it, 0.0f};
    topology_sweep<W, C, DYN, DEFER, DONATE>(op, indptr, n, ctl, it, thr, dq, dthr);
}

template <int W, int C, bool DYN, bool DEFER, bool COUNT, bool DONATE>
__global__ void cc_sweep(const int* __restrict__ indptr, const int* __restrict__ indices,
                         int* label, int* cur, int* nxt, int n, int it, int* ctl, int thr,
                         int* dq, int dthr) {
    reset_next_all(ctl, it);
    LowerSweep<int, false, COUNT> op{indices, nullptr, label, cur, nxt, ctl, it, 0};
    topology_sweep<W, C, DYN, DEFER, DONATE>(op, indptr, n, ctl, it, thr, dq, dthr);
}

// ---- WER / WER+ (warp-level edge redistribution): thread t holds vertices [t*C, t*C + C) ----

// Per chunk position, in lockstep over the warp: each lane whose vertex there is active
// reads it (the owner clears its flag) and puts its edges in the warp's table (a scan of the
// degrees, in shared memory with each owner's first edge and value); the table's edges are
// then popped by the active lanes in turn (WER: the r-th of L takes edges r, r + L, ...) or
// by all 32 lanes (WER+). Every lane of a warp runs every position (the warp's collectives).
template <int C, bool ALL, class Op>
__device__ __forceinline__ void wer_sweep(Op& op, const int* __restrict__ indptr, int n) {
    extern __shared__ int smem[];
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    int* pref = smem + (threadIdx.x >> 5) * 97;  // 33 prefix sums, 32 first edges, 32 values
    int* first = pref + 33;
    int* bits = first + 32;
    const long long base = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * C;
    for (int j = 0; j < C; ++j) {
        const long long v = base + j;
        const bool act = v < n && op.active(op.status((int)v));
        int deg = 0;
        if (act) {
            op.vertex((int)v);
            first[lane] = indptr[v];
            deg = indptr[v + 1] - first[lane];
            bits[lane] = op.source_bits();
        }
        int x = deg;
        for (int off = 1; off < 32; off <<= 1) {
            const int y = __shfl_up_sync(full, x, off);
            if (lane >= off) x += y;
        }
        const int total = __shfl_sync(full, x, 31);
        const unsigned ballot = __ballot_sync(full, act);
        if (total == 0) continue;  // uniform over the warp
        pref[lane + 1] = x;
        if (lane == 0) pref[0] = 0;
        __syncwarp();
        const int lanes = ALL ? 32 : __popc(ballot);
        const int rank = ALL ? lane : __popc(ballot & ((1u << lane) - 1u));
        if (ALL || act) {
            for (int i = rank; i < total; i += lanes) {
                int lo = 0, hi = 32;  // the owner o: pref[o] <= i < pref[o + 1]
                while (hi - lo > 1) {
                    const int mid = (lo + hi) >> 1;
                    if (pref[mid] <= i) lo = mid; else hi = mid;
                }
                op.set_source_bits(bits[lo]);
                op.edge(0.0f, first[lo] + i - pref[lo]);
            }
        }
        __syncwarp();  // the next position rewrites the table
    }
}

template <int C, bool ALL>
__global__ void bfs_wer(const int* __restrict__ indptr, const int* __restrict__ indices,
                        int* level, int n, int it, int depth, int* ctl, int, int*) {
    reset_next_all(ctl, it);
    BfsSweep<false> op{indices, level, ctl, depth};
    wer_sweep<C, ALL>(op, indptr, n);
}

template <int C, bool ALL>
__global__ void sssp_wer(const int* __restrict__ indptr, const int* __restrict__ indices,
                         const float* __restrict__ weights, float* dist, int* cur, int* nxt,
                         int n, int it, int* ctl, int, int*) {
    reset_next_all(ctl, it);
    LowerSweep<float, true, false> op{indices, weights, dist, cur, nxt, ctl, it, 0.0f};
    wer_sweep<C, ALL>(op, indptr, n);
}

template <int C, bool ALL>
__global__ void cc_wer(const int* __restrict__ indptr, const int* __restrict__ indices,
                       int* label, int* cur, int* nxt, int n, int it, int* ctl, int, int*) {
    reset_next_all(ctl, it);
    LowerSweep<int, false, false> op{indices, nullptr, label, cur, nxt, ctl, it, 0};
    wer_sweep<C, ALL>(op, indptr, n);
}

template <int W, int C, bool DYN, bool DEFER, bool DONATE>
__global__ void pagerank_sweep(const int* __restrict__ indptr, const int* __restrict__ indices,
                               const rank_t* __restrict__ share_in,
                               const rank_t* __restrict__ rank_in,
                               const rank_t* __restrict__ inv_outdeg, rank_t* rank_out,
                               rank_t* share_out, rank_t damping, int n, int it, int* ctl,
                               int thr, int* dq, int dthr) {
    reset_next_all(ctl, it);
    PrSweep op{indices, share_in, rank_in, inv_outdeg, rank_out, share_out,
               pr_base(ctl, it, damping, n), damping, 0.0, 0.0};
    topology_sweep<W, C, DYN, DEFER, DONATE>(op, indptr, n, ctl, it, thr, dq, dthr);
    const double err = block_sum(op.err);
    const double dang = block_sum(op.dang);
    if (threadIdx.x == 0) {
        if (err != 0.0) {
            atomicAdd(ctl_acc(ctl) + it % 3, err);
            ws_count_one();  // the change sum, once a block, as the simulator counts it
        }
        if (dang != 0.0) atomicAdd(ctl_acc(ctl) + 3 + (it + 1) % 3, dang);
    }
}

// Deferred outliers: a whole block per queued vertex; the grid strides over the queue.
template <class Op>
__device__ __forceinline__ void expand_outliers(Op& op, const int* __restrict__ indptr,
                                                int* ctl, int it, const int* __restrict__ dq) {
    const int count = ctl[CTL_DEFER + (it & 1)];
    for (int q = blockIdx.x; q < count; q += gridDim.x) {
        const int v = dq[q];
        const int e = indptr[v + 1];
        const float val = op.vertex(v);
        for (int k = indptr[v] + threadIdx.x; k < e; k += blockDim.x) op.edge(val, k);
        __syncthreads();  // every thread has read v's value before a later vertex's stores
    }
}

__global__ void bfs_sweep_outliers(const int* __restrict__ indptr,
                                   const int* __restrict__ indices, int* level, int it,
                                   int depth, int* ctl, const int* __restrict__ dq) {
    BfsSweep<false> op{indices, level, ctl, depth};
    expand_outliers(op, indptr, ctl, it, dq);
}

__global__ void sssp_outliers(const int* __restrict__ indptr, const int* __restrict__ indices,
                              const float* __restrict__ weights, float* dist, int* cur,
                              int* nxt, int it, int* ctl, const int* __restrict__ dq) {
    LowerSweep<float, true, false> op{indices, weights, dist, cur, nxt, ctl, it, 0.0f};
    expand_outliers(op, indptr, ctl, it, dq);
}

__global__ void cc_outliers(const int* __restrict__ indptr, const int* __restrict__ indices,
                            int* label, int* cur, int* nxt, int it, int* ctl,
                            const int* __restrict__ dq) {
    LowerSweep<int, false, false> op{indices, nullptr, label, cur, nxt, ctl, it, 0};
    expand_outliers(op, indptr, ctl, it, dq);
}

__global__ void pagerank_outliers(const int* __restrict__ indptr,
                                  const int* __restrict__ indices,
                                  const rank_t* __restrict__ share_in,
                                  const rank_t* __restrict__ rank_in,
                                  const rank_t* __restrict__ inv_outdeg, rank_t* rank_out,
                                  rank_t* share_out, rank_t damping, int n, int it, int* ctl,
                                  const int* __restrict__ dq) {
    PrSweep op{indices, share_in, rank_in, inv_outdeg, rank_out, share_out,
               pr_base(ctl, it, damping, n), damping, 0.0, 0.0};
    const int count = ctl[CTL_DEFER + (it & 1)];
    for (int q = blockIdx.x; q < count; q += gridDim.x) {
        const int v = dq[q];
        const int e = indptr[v + 1];
        rank_t sum = 0;
        for (int k = indptr[v] + threadIdx.x; k < e; k += blockDim.x) sum += share_in[indices[k]];
        const double total = block_sum(sum);
        if (threadIdx.x == 0) op.store(v, (rank_t)total);
    }
    if (threadIdx.x == 0) {
        if (op.err != 0.0) {
            atomicAdd(ctl_acc(ctl) + it % 3, op.err);
            ws_count_one();  // the change sum, once a block, as the simulator counts it
        }
        if (op.dang != 0.0) atomicAdd(ctl_acc(ctl) + 3 + (it + 1) % 3, op.dang);
    }
}

// ---- measure's worklist launches -----------------------------------------------------------

struct BfsWl {  // push a neighbour seen unvisited (plain store: duplicates), or claim it (CAS)
    const int* __restrict__ indices;
    int* level;
    int depth;
    __device__ float vertex(int) { return 0.0f; }
    __device__ int source_bits() const { return 0; }  // donation: what a drainer needs
    __device__ void set_source_bits(int) {}
    template <int VARIANT>
    __device__ bool edge(float, int k, int& u) {
        u = indices[k];
        if (STATUS_LOAD(level + u) != -1) return false;
        if (VARIANT == PUSH_CLAIMED) {
            ws_count_lanes(true);
            return atomicCAS(level + u, -1, depth + 1) == -1;
        }
        level[u] = depth + 1;
        return true;
    }
};

template <class T, bool WEIGHTED>
struct LowerWl {  // SSSP / CC: push the target when this lane's atomicMin lowered it
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    T* value;
    T mine;
    __device__ float vertex(int v) {
        mine = STATUS_LOAD(value + v);
        return 0.0f;
    }
    __device__ int source_bits() const { return as_bits<T>(mine); }
    __device__ void set_source_bits(int bits) { mine = from_bits<T>(bits); }
    template <int VARIANT>
    __device__ bool edge(float, int k, int& u) {
        u = indices[k];
        T nd = mine;
        if (WEIGHTED) nd = nd + (T)weights[k];
        if (!(nd < STATUS_LOAD(value + u))) return false;
        const int old = atomicMin(reinterpret_cast<int*>(value) + u, as_bits<T>(nd));
        ws_count_lanes(true);
        return nd < from_bits<T>(old);
    }
};

template <int VARIANT>
__device__ __forceinline__ void push_counted(bool want, int u, int* queue, int* tail) {
    ws_count_warp(want);
    push<VARIANT == PUSH_WARP_AGGREGATED ? PUSH_WARP_AGGREGATED : PUSH_PLAIN>(want, u, queue,
                                                                              tail);
}

// A block's round of pushes: warp counts, one scan and one tail atomic for the block, then
// each pushing lane stores at its place. Every thread of the block must call it.
__device__ __forceinline__ void push_block(bool want, int u, int* queue, int* tail) {
    __shared__ int s_base[33];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned ballot = __ballot_sync(0xffffffffu, want);
    if (lane == 0) s_base[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
            const int c = s_base[w];
            s_base[w] = total;
            total += c;
        }
        s_base[32] = total ? atomicAdd(tail, total) : 0;
        if (total) ws_count_one();
    }
    __syncthreads();
    const int at = s_base[32] + s_base[warp] + __popc(ballot & ((1u << lane) - 1u));
    if (want && at < ws_queue_cap) queue[at] = u;
    __syncthreads();
}

// In-queue flags (dedup): an entry clears its own flag before reading its value; a would-be
// push claims its target's flag with an exchange after a fence and pushes only if it was clear.
template <bool DEDUP>
__device__ __forceinline__ bool claim(bool want, int u, int* inq) {
    if (!DEDUP) return want;
    if (want) {
        __threadfence();
        want = atomicExch(inq + u, 1) == 0;
    }
    return want;
}

template <int W, int VARIANT, bool DEDUP, bool DONATE, class Op>
__device__ __forceinline__ void wl_launch(Op& op, const int* __restrict__ indptr,
                                          const int* __restrict__ wl_in, int in_count,
                                          int* wl_out, int* ctl, int it, int* inq, int dthr) {
    reset_next_all(ctl, it);
    int* tail = ctl + CTL_TAIL + (it & 1);
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / W;
    const bool has = g < in_count;
    const int vlane = threadIdx.x & (W - 1);
    int v = 0, s = 0, e = 0;
    if (has) {
        v = wl_in[g];
        s = indptr[v];
        e = indptr[v + 1];
    }
    if (DEDUP) {
        ws_count_lanes(has && vlane == 0);
        if (has && vlane == 0) atomicExch(inq + v, 0);
        __threadfence();
    }
    const float val = has ? op.vertex(v) : 0.0f;
    if constexpr (DONATE) {  // (plan_for: W = 1)
        donating_expand<VARIANT == PUSH_BLOCK>(op, has, s, e, in_count, dthr,
                                               [&](bool live, int k, int) {
            int u = 0;
            bool want = false;
            if (live) {
                want = op.template edge<VARIANT == PUSH_BLOCK ? PUSH_PLAIN : VARIANT>(val, k, u);
            }
            if (DEDUP) ws_count_lanes(want);
            want = claim<DEDUP>(want, u, inq);
            if constexpr (VARIANT == PUSH_BLOCK) push_block(want, u, wl_out, tail);
            else push_counted<VARIANT>(want, u, wl_out, tail);
        });
    } else if constexpr (VARIANT != PUSH_BLOCK) {
        if (!has) return;
        for (int k = s + vlane; k < e; k += W) {
            int u = 0;
            bool want = op.template edge<VARIANT>(val, k, u);
            if (DEDUP) ws_count_lanes(want);
            want = claim<DEDUP>(want, u, inq);
            push_counted<VARIANT>(want, u, wl_out, tail);
        }
    } else {
        for (int r = 0;; ++r) {  // rounds in step over the block, while any lane has an edge
            const int k = s + vlane + r * W;
            const bool live = has && k < e;
            if (!__syncthreads_or(live)) break;
            int u = 0;
            bool want = false;
            if (live) want = op.template edge<PUSH_PLAIN>(val, k, u);
            if (DEDUP) ws_count_lanes(want);
            want = claim<DEDUP>(want, u, inq);
            push_block(want, u, wl_out, tail);
        }
    }
}

template <int W, int VARIANT, bool DEDUP, bool DONATE>
__global__ void bfs_wl(const int* __restrict__ indptr, const int* __restrict__ indices,
                       int* level, int it, int depth, const int* __restrict__ wl_in,
                       int in_count, int* wl_out, int* ctl, int* inq, int dthr) {
    BfsWl op{indices, level, depth};
    wl_launch<W, VARIANT, DEDUP, DONATE>(op, indptr, wl_in, in_count, wl_out, ctl, it, inq,
                                         dthr);
}

template <int W, int VARIANT, bool DEDUP, bool DONATE>
__global__ void sssp_wl(const int* __restrict__ indptr, const int* __restrict__ indices,
                        const float* __restrict__ weights, float* dist, int it,
                        const int* __restrict__ wl_in, int in_count, int* wl_out, int* ctl,
                        int* inq, int dthr) {
    LowerWl<float, true> op{indices, weights, dist, 0.0f};
    wl_launch<W, VARIANT, DEDUP, DONATE>(op, indptr, wl_in, in_count, wl_out, ctl, it, inq,
                                         dthr);
}

template <int W, int VARIANT, bool DEDUP, bool DONATE>
__global__ void cc_wl(const int* __restrict__ indptr, const int* __restrict__ indices,
                      int* label, int it, const int* __restrict__ wl_in, int in_count,
                      int* wl_out, int* ctl, int* inq, int dthr) {
    LowerWl<int, false> op{indices, nullptr, label, 0};
    wl_launch<W, VARIANT, DEDUP, DONATE>(op, indptr, wl_in, in_count, wl_out, ctl, it, inq,
                                         dthr);
}

// ---- the spatial hybrid: a worklist of partitions ----------------------------------------------

// BFS: a slot is active at its level; a lane that discovers its target stores its level.
struct BfsSpatial {
    const int* __restrict__ indices;
    int* level;
    int depth;
    __device__ bool active(int v) const { return STATUS_LOAD(level + v) == depth; }
    __device__ void vertex(int) {}
    __device__ bool edge(int k, int& u) {
        u = indices[k];
        if (STATUS_LOAD(level + u) != -1) return false;
        level[u] = depth + 1;
        return true;
    }
};

// SSSP / CC: a slot is active while flagged; its owner clears the flag and reads its value, a
// lane that lowers its target (atomicMin) flags it for the next launch.
template <class T, bool WEIGHTED>
struct LowerSpatial {
    const int* __restrict__ indices;
    const float* __restrict__ weights;
    T* value;
    int* cur;
    int* nxt;
    T mine;
    __device__ bool active(int v) const { return STATUS_LOAD(cur + v) != 0; }
    __device__ void vertex(int v) {
        cur[v] = 0;
        mine = STATUS_LOAD(value + v);
    }
    __device__ bool edge(int k, int& u) {
        u = indices[k];
        T nd = mine;
        if (WEIGHTED) nd = nd + (T)weights[k];
        if (!(nd < STATUS_LOAD(value + u))) return false;
        atomicMin(reinterpret_cast<int*>(value) + u, as_bits<T>(nd));
        ws_count_lanes(true);
        nxt[u] = 1;
        return true;
    }
};

// One launch over the listed partitions' slots (partition q: vertices [q*P, q*P + P)), W lanes
// per slot; an active slot expands its vertex, and every lane that stores claims its target's
// partition for launch it + 1 with an exchange of the partition's tag: the first store into a
// partition pushes it (one tag per launch, so the tags need no reset).
template <int W, int VARIANT, class Op>
__device__ __forceinline__ void spatial_launch(Op& op, const int* __restrict__ indptr, int n,
                                               int p, const int* __restrict__ parts_in,
                                               int in_count, int* parts_out, int* tag,
                                               int* ctl, int it) {
    reset_next_all(ctl, it);
    int* tail = ctl + CTL_TAIL + (it & 1);
    const long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / W;
    if (g >= (long long)in_count * p) return;
    const int v = parts_in[g / p] * p + (int)(g % p);
    if (v >= n || !op.active(v)) return;  // the graph's last partition may be short
    const int vlane = threadIdx.x & (W - 1);
    const int s = indptr[v], e = indptr[v + 1];
    op.vertex(v);
    for (int k = s + vlane; k < e; k += W) {
        int u = 0;
        bool want = op.edge(k, u);
        ws_count_lanes(want);
        if (want) want = atomicExch(tag + u / p, it + 1) != it + 1;
        push_counted<VARIANT>(want, u / p, parts_out, tail);
    }
}

template <int W, int VARIANT>
__global__ void bfs_spatial(const int* __restrict__ indptr, const int* __restrict__ indices,
                            int* level, int n, int p, int it, int depth,
                            const int* __restrict__ parts_in, int in_count, int* parts_out,
                            int* ctl, int* tag) {
    BfsSpatial op{indices, level, depth};
    spatial_launch<W, VARIANT>(op, indptr, n, p, parts_in, in_count, parts_out, tag, ctl, it);
}

template <int W, int VARIANT>
__global__ void sssp_spatial(const int* __restrict__ indptr, const int* __restrict__ indices,
                             const float* __restrict__ weights, float* dist, int* cur, int* nxt,
                             int n, int p, int it, const int* __restrict__ parts_in,
                             int in_count, int* parts_out, int* ctl, int* tag) {
    LowerSpatial<float, true> op{indices, weights, dist, cur, nxt, 0.0f};
    spatial_launch<W, VARIANT>(op, indptr, n, p, parts_in, in_count, parts_out, tag, ctl, it);
}

template <int W, int VARIANT>
__global__ void cc_spatial(const int* __restrict__ indptr, const int* __restrict__ indices,
                           int* label, int* cur, int* nxt, int n, int p, int it,
                           const int* __restrict__ parts_in, int in_count, int* parts_out,
                           int* ctl, int* tag) {
    LowerSpatial<int, false> op{indices, nullptr, label, cur, nxt, 0};
    spatial_launch<W, VARIANT>(op, indptr, n, p, parts_in, in_count, parts_out, tag, ctl, it);
}

// Data-driven PageRank: each entry recomputes its vertex into the other buffer and pushes it
// again while its rank moves by more than tol; the dangling sum moves by what the dangling
// entries changed. A vertex that stops moving never comes back, so its last rank must reach
// both buffers: it is queued (retired_out), and the next launch copies it across before any
// launch reads that buffer (every read sees the last launch's values, as the functional run's
// synchronous step does).
template <int W, int VARIANT>
__global__ void pagerank_wl(const int* __restrict__ indptr, const int* __restrict__ indices,
                            const rank_t* __restrict__ share_in,
                            const rank_t* __restrict__ rank_in,
                            const rank_t* __restrict__ inv_outdeg, rank_t* rank_out,
                            rank_t* share_out, rank_t damping, rank_t tol, int n, int it,
                            const int* __restrict__ wl_in, int in_count, int* wl_out,
                            int* ctl, const int* __restrict__ retired_in, int* retired_out) {
    reset_next_all(ctl, it);
    int* tail = ctl + CTL_TAIL + (it & 1);
    const rank_t base = pr_base(ctl, it, damping, n);
    const int stride = gridDim.x * blockDim.x;
    const int retired = it ? ctl[CTL_RETIRED + (it + 2) % 3] : 0;  // by the last launch
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < retired; i += stride) {
        const int r = retired_in[i];
        rank_out[r] = rank_in[r];
        share_out[r] = share_in[r];
    }
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / W;
    const bool has = g < in_count;
    const int vlane = threadIdx.x & (W - 1);
    int v = 0;
    rank_t sum = 0;
    if (has) {
        v = wl_in[g];
        const int e = indptr[v + 1];
        for (int k = indptr[v] + vlane; k < e; k += W) sum += share_in[indices[k]];
    }
    for (int off = W / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    bool want = false;
    double dang = 0.0;
    if (has && vlane == 0) {
        const rank_t r = base + damping * sum;
        const rank_t old = rank_in[v];
        const rank_t inv = inv_outdeg[v];
        rank_out[v] = r;
        share_out[v] = r * inv;
        want = fabs(r - old) > tol;
        if (inv == 0) dang = (double)r - (double)old;
    }
    if (VARIANT == PUSH_BLOCK) {
        push_block(want, v, wl_out, tail);
    } else {
        push_counted<VARIANT>(want, v, wl_out, tail);
    }
    push<PUSH_WARP_AGGREGATED>(has && vlane == 0 && !want, v, retired_out,
                               ctl + CTL_RETIRED + it % 3);
    const double total = block_sum(dang);
    if (threadIdx.x == 0) {
        double add = total;
        if (blockIdx.x == 0) add += ctl_acc(ctl)[3 + it % 3];  // the sum so far
        atomicAdd(ctl_acc(ctl) + 3 + (it + 1) % 3, add);
    }
}

// ---- the temporal hybrid's switches ----------------------------------------------------------

// worklist -> the flags of the sweep to come (SSSP, CC; BFS sweeps read the levels)
// (dedup: the entries leave the queue, so their in-queue flags are cleared; a flag left set
// had kept its vertex off every later worklist, its lowered distance never relayed)
__global__ void scatter_flags(const int* __restrict__ wl, int count, int* flags, int* inq,
                              int dedup) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        flags[wl[i]] = 1;
        if (dedup) inq[wl[i]] = 0;
    }
}

// flags -> worklist (clearing them), warp-aggregated pushes onto the tail of launch `it`
// (dedup: each vertex pushed is flagged in the queue, as a worklist launch's push flags it)
__global__ void compact_flags(int* flags, int n, int* queue, int* ctl, int it, int* inq,
                              int dedup) {
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    bool want = false;
    if (v < n && flags[v]) {
        flags[v] = 0;
        want = true;
        if (dedup) inq[v] = 1;
    }
    push_counted<PUSH_WARP_AGGREGATED>(want, v, queue, ctl + CTL_TAIL + (it & 1));
}

// BFS: the vertices of level `depth` -> worklist
__global__ void compact_levels(const int* __restrict__ level, int n, int depth, int* queue,
                               int* ctl, int it) {
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    const bool want = v < n && level[v] == depth;
    push_counted<PUSH_WARP_AGGREGATED>(want, v, queue, ctl + CTL_TAIL + (it & 1));
}
