// BFS and SSSP kernels laid out exactly as simulator/engine.py's docstring models them.
// Compiled by NVRTC through CuPy (bench/gpu/harness.py); templates are instantiated by name.
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
        if (want) queue[base + __popc(ballot & ((1u << lane) - 1u))] = u;
    } else {
        if (want) queue[atomicAdd(tail, 1)] = u;
    }
}

// ---- topology-driven sweep ----------------------------------------------------------------

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
            if (vlane == 0) dq[atomicAdd(dcount, 1)] = v;
            continue;
        }
        const float val = op.vertex(v);
        for (int k = s + vlane; k < e; k += W) op.edge(val, k);
    }
    __syncwarp(mask);  // the next grab re-stages into the same shared words
}

template <int W, int C, bool DYN, bool DEFER, class Op>
__device__ __forceinline__ void topology_sweep(Op& op, const int* __restrict__ indptr, int n,
                                               int* ctl, int it, int thr, int* dq) {
    extern __shared__ int smem[];
    reset_next(ctl, it);
    int* dcount = ctl + CTL_DEFER + (it & 1);
    if (W == 1) {  // thread mapping: one vertex per thread, row bounds read directly
        const int v = blockIdx.x * blockDim.x + threadIdx.x;
        if (v >= n || !op.active(op.status(v))) return;
        const int s = indptr[v], e = indptr[v + 1];
        if (DEFER && e - s > thr) {
            dq[atomicAdd(dcount, 1)] = v;
            return;
        }
        const float val = op.vertex(v);
        for (int k = s; k < e; ++k) op.edge(val, k);
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
        if (lane == 0) unit = atomicAdd(grab, 1);
        unit = __shfl_sync(0xffffffffu, unit, 0);
        if (unit >= units) break;
        vwarp_chunk<W, C, DEFER>(op, indptr, n, unit * K + lane / W, s_status, s_bounds, mask,
                                 vlane, dcount, thr, dq);
        __syncwarp();
    }
}

template <int W, int C, bool DYN, bool DEFER>
__global__ void bfs_topo(const int* __restrict__ indptr, const int* __restrict__ indices,
                         int* level, int n, int depth, int* ctl, int thr, int* dq) {
    BfsTopo op{indices, level, ctl, depth};
    topology_sweep<W, C, DYN, DEFER>(op, indptr, n, ctl, depth, thr, dq);
}

template <int W, int C, bool DYN>
__global__ void sssp_topo(const int* __restrict__ indptr, const int* __restrict__ indices,
                          const float* __restrict__ weights, float* dist, int* cur, int* nxt,
                          int n, int round, int* ctl) {
    SsspTopo op{indices, weights, dist, cur, nxt, ctl, round};
    topology_sweep<W, C, DYN, false>(op, indptr, n, ctl, round, 0, nullptr);
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
