// SSSP kernels written independently of the simulator (LonestarGPU / Gunrock style), so that
// their timings are ground truth that does not share the simulator's assumptions.
//
// Graph: int CSR (indptr, indices), float weights >= 0; dist starts at +inf, the source at 0.
// Blocks are 256 threads. A "group" is W consecutive lanes of one warp (W = 1, 8 or 32) that
// expand one vertex together, each lane striding over the vertex's edges by W.
//
// ctl (unsigned long long[8]) is the host's window on the device:
//   ctl[0], ctl[1]  queue tails (a kernel pushes to ctl[o] and zeroes ctl[1-o] for the next one)
//   ctl[2], ctl[3]  out-degree sums of the pushed vertices, paired with ctl[0], ctl[1]
//   ctl[4]          the last topology round that lowered a distance

#define FULL_MASK 0xffffffffu
#define BLOCK 256
#define WARPS_PER_BLOCK (BLOCK / 32)

typedef unsigned long long u64;

enum Relax { RELAX_ATOMICMIN = 0, RELAX_STORE_RECHECK = 1 };
enum Dedup { DEDUP_NONE = 0, DEDUP_FLAG = 1 };
enum Push { PUSH_THREAD = 0, PUSH_WARP = 1, PUSH_BLOCK = 2 };

// Lower dist[u] to nd with atomicMin on the bit pattern (monotone for non-negative floats);
// true iff this call lowered it.
__device__ __forceinline__ bool relax_atomicmin(float* dist, int u, float nd) {
    int old = atomicMin(reinterpret_cast<int*>(dist + u), __float_as_int(nd));
    return nd < __int_as_float(old);
}

// Lower dist[u] to nd with plain stores, re-reading after each store and storing again while
// a larger value has overwritten ours; true iff this lane stored at least once. Not exact on
// its own (a racing larger store can land after our last re-read), so worklists using it end
// with verify_edges sweeps that re-push every vertex with an unrelaxed edge.
__device__ __forceinline__ bool relax_store_recheck(float* dist, int u, float nd) {
    volatile float* vdist = dist;
    bool stored = false;
    float cur = vdist[u];
    while (nd < cur) {
        vdist[u] = nd;
        stored = true;
        cur = vdist[u];
    }
    return stored;
}

template <int RELAX>
__device__ __forceinline__ bool relax(float* dist, int u, float nd) {
    if (RELAX == RELAX_ATOMICMIN) return relax_atomicmin(dist, u, nd);
    return relax_store_recheck(dist, u, nd);
}

__device__ __forceinline__ u64 warp_sum(u64 x) {
    for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(FULL_MASK, x, off);
    return x;
}

__device__ __forceinline__ unsigned lanemask_lt() {
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

__device__ __forceinline__ void put(int* q, u64 pos, u64 cap, int item) {
    if (pos < cap) q[pos] = item;
}

// Warp-aggregated push among the lanes that are here together: one atomicAdd by the lowest
// of them, each pushing lane's slot from the popcount of the pushing lanes below it.
__device__ __forceinline__ void push_warp(bool want, int item, int* q, u64* tail, u64 cap) {
    unsigned active = __activemask();
    unsigned ballot = __ballot_sync(active, want);
    int leader = __ffs(active) - 1;
    int lane = threadIdx.x & 31;
    u64 base = 0;
    if (lane == leader && ballot) base = atomicAdd(tail, (u64)__popc(ballot));
    base = __shfl_sync(active, base, leader);
    if (want) put(q, base + __popc(ballot & lanemask_lt()), cap, item);
}

// Block-wide push: every thread of the block must call it (the same number of times). The
// prefix sum runs over warp popcounts in shared memory; thread 0 does the block's one atomicAdd.
__device__ __forceinline__ void push_block(bool want, int item, int* q, u64* tail, u64 cap) {
    __shared__ unsigned warp_offset[WARPS_PER_BLOCK];
    __shared__ u64 block_base;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned ballot = __ballot_sync(FULL_MASK, want);
    if (lane == 0) warp_offset[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned total = 0;
        for (int i = 0; i < WARPS_PER_BLOCK; ++i) {
            unsigned c = warp_offset[i];
            warp_offset[i] = total;
            total += c;
        }
        block_base = total ? atomicAdd(tail, (u64)total) : 0;
    }
    __syncthreads();
    if (want) put(q, block_base + warp_offset[warp] + __popc(ballot & lanemask_lt()), cap, item);
}

// One Bellman-Ford round over all vertices: a group expands its vertex iff flag_in marks it,
// clears that flag (the array is the next round's flag_out), and marks every target it lowered
// in flag_out. COUNT = 0 stamps ctl[4] with `round` when anything was lowered; COUNT = 1 (the
// temporal hybrid) claims flag_out with atomicExch and adds each newly flagged vertex and its
// out-degree to ctl[o] and ctl[2 + o], zeroing ctl[1 - o] and ctl[3 - o].
template <int W, int COUNT>
__global__ void __launch_bounds__(BLOCK)
topo_sweep(int n, const int* __restrict__ indptr, const int* __restrict__ indices,
           const float* __restrict__ weights, float* dist, int* flag_in, int* flag_out,
           u64* ctl, int o, int round) {
    long long gid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    int v = (int)(gid / W);
    int lane_g = (int)(gid % W);
    if (COUNT && gid == 0) {
        ctl[1 - o] = 0;
        ctl[3 - o] = 0;
    }
    bool valid = v < n;
    int flagged = valid ? flag_in[v] : 0;
    if (W > 1) __syncwarp();
    if (flagged && lane_g == 0) flag_in[v] = 0;
    bool lowered_any = false;
    u64 new_flags = 0, new_edges = 0;
    if (flagged) {
        float d = dist[v];
        int end = indptr[v + 1];
        for (int e = indptr[v] + lane_g; e < end; e += W) {
            int u = indices[e];
            if (relax_atomicmin(dist, u, d + weights[e])) {
                lowered_any = true;
                if (COUNT) {
                    if (atomicExch(flag_out + u, 1) == 0) {
                        new_flags += 1;
                        new_edges += indptr[u + 1] - indptr[u];
                    }
                } else {
                    flag_out[u] = 1;
                }
            }
        }
    }
    if (COUNT) {
        new_flags = warp_sum(new_flags);
        new_edges = warp_sum(new_edges);
        if ((threadIdx.x & 31) == 0 && new_flags) {
            atomicAdd(ctl + o, new_flags);
            atomicAdd(ctl + 2 + o, new_edges);
        }
    } else if (__any_sync(FULL_MASK, lowered_any) && (threadIdx.x & 31) == 0) {
        ctl[4] = (u64)round;
    }
}

// One data-driven step: a group per entry of in_q (W lanes striding over its edges), pushing
// every target it lowered to out_q (tail ctl[o]; ctl[1 - o] zeroed for the next step). DEDUP_FLAG
// pushes a target only if it claims inq[u]; the popped entry's flag is cleared before the
// group reads its distance (fences on both sides so a concurrent lowering either is seen here
// or re-pushes the vertex). EDGES = 1 also sums the pushed vertices' out-degrees into ctl[2 + o].
template <int W, int RELAX, int DEDUP, int PUSH, int EDGES>
__global__ void __launch_bounds__(BLOCK)
wl_step(const int* __restrict__ in_q, int in_count, int* out_q, u64* ctl, int o, u64 cap,
        const int* __restrict__ indptr, const int* __restrict__ indices,
        const float* __restrict__ weights, float* dist, int* inq) {
    long long gid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    long long entry = gid / W;
    int lane_g = (int)(gid % W);
    if (gid == 0) {
        ctl[1 - o] = 0;
        ctl[3 - o] = 0;
    }
    bool valid = entry < in_count;
    int v = valid ? in_q[entry] : 0;
    if (DEDUP == DEDUP_FLAG) {
        if (valid && lane_g == 0) atomicExch(inq + v, 0);
        if (W > 1) __syncwarp();
        __threadfence();
    }
    float d = valid ? __ldcg(dist + v) : 0.0f;
    int e = valid ? indptr[v] + lane_g : 0;
    int end = valid ? indptr[v + 1] : 0;
    u64* tail = ctl + o;
    u64 pushed_edges = 0;
    while (true) {
        bool more = e < end;
        if (PUSH == PUSH_BLOCK) {
            if (!__syncthreads_or(more)) break;
        } else if (!more) {
            break;
        }
        bool want = false;
        int u = 0;
        if (more) {
            u = indices[e];
            if (relax<RELAX>(dist, u, d + weights[e])) {
                if (DEDUP == DEDUP_FLAG) {
                    __threadfence();
                    want = atomicExch(inq + u, 1) == 0;
                } else {
                    want = true;
                }
            }
            e += W;
        }
        if (EDGES && want) pushed_edges += indptr[u + 1] - indptr[u];
        if (PUSH == PUSH_THREAD) {
            if (want) put(out_q, atomicAdd(tail, 1ull), cap, u);
        } else if (PUSH == PUSH_WARP) {
            push_warp(want, u, out_q, tail, cap);
        } else {
            push_block(want, u, out_q, tail, cap);
        }
    }
    if (EDGES) {
        pushed_edges = warp_sum(pushed_edges);
        if ((threadIdx.x & 31) == 0 && pushed_edges) atomicAdd(ctl + 2 + o, pushed_edges);
    }
}

// The check that makes store_recheck exact: a group per vertex pushes its vertex (once) when
// any of its edges is still unrelaxed, i.e. dist[v] + w < dist[u]. An empty queue afterwards
// means dist is a fixpoint of the relaxation, hence the shortest distances.
template <int W>
__global__ void __launch_bounds__(BLOCK)
verify_edges(int n, const int* __restrict__ indptr, const int* __restrict__ indices,
             const float* __restrict__ weights, const float* dist, int* out_q, u64* ctl, int o,
             u64 cap) {
    long long gid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    int v = (int)(gid / W);
    int lane_g = (int)(gid % W);
    if (gid == 0) {
        ctl[1 - o] = 0;
        ctl[3 - o] = 0;
    }
    bool found = false;
    if (v < n) {
        float d = dist[v];
        int end = indptr[v + 1];
        for (int e = indptr[v] + lane_g; e < end && !found; e += W) {
            found = d + weights[e] < dist[indices[e]];
        }
    }
    unsigned ballot = __ballot_sync(FULL_MASK, found);
    int lane = threadIdx.x & 31;
    unsigned group_mask = W == 32 ? FULL_MASK : (1u << (W % 32)) - 1u;
    unsigned group_bits = (ballot >> (lane - lane_g)) & group_mask;
    if (lane_g == 0 && group_bits) put(out_q, atomicAdd(ctl + o, 1ull), cap, v);
}

// Temporal hybrid, topology -> worklist: every flagged vertex pushed once (warp-aggregated),
// its flag cleared.
__global__ void __launch_bounds__(BLOCK)
flags_to_queue(int n, int* flags, int* out_q, u64* ctl, int o, u64 cap) {
    long long gid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (gid == 0) {
        ctl[1 - o] = 0;
        ctl[3 - o] = 0;
    }
    int v = (int)gid;
    bool want = v < n && flags[v];
    if (want) flags[v] = 0;
    push_warp(want, v, out_q, ctl + o, cap);
}

// Temporal hybrid, worklist -> topology: flag every queued vertex.
__global__ void __launch_bounds__(BLOCK)
queue_to_flags(const int* __restrict__ q, int count, int* flags) {
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (i < count) flags[q[i]] = 1;
}
