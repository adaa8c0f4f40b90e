// Independent BFS kernels over CSR (int32 indptr / indices), compiled by NVRTC through
// CuPy's RawModule (bfs_run.py). Levels are int32, UNVISITED for a vertex not reached yet.
//
// Every kernel is launched with BLOCK threads a block and indexes threads with 64-bit
// arithmetic. A virtual warp of W lanes (W in {1, 8, 32}) owns one vertex: lane `l` reads
// its edges beg + l, beg + l + W, ... (W = 1: a thread per vertex).
//
// Control words (unsigned long long ctl[CTL_SLOTS]):
//   ctl[p]       the counter a launch of parity p adds to (queue tail, or newly visited count);
//                the same launch zeroes ctl[1 - p] for the next launch (which the host runs
//                only after it has read ctl[p]);
//   ctl[CHANGED] a topology sweep of level `cur` stores cur + 1 there when it visits anything
//                (the value grows with the level, so the host never resets it).
//
// No kernel returns early: the warp and block primitives below need every thread of the warp
// (block) to reach them; threads past the end of the work just do nothing in between.

#define UNVISITED 0x7fffffff
#define BLOCK 256
#define WARPS_PER_BLOCK (BLOCK / 32)
#define FULL_MASK 0xffffffffu
#define CHANGED 2

#define VISIT_CAS 0
#define VISIT_STORE 1

#define PUSH_THREAD 0
#define PUSH_WARP 1
#define PUSH_BLOCK 2

typedef unsigned long long u64;

__device__ __forceinline__ long long global_thread() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ void zero_other_slot(u64* ctl, int p) {
    if (blockIdx.x == 0 && threadIdx.x == 0) ctl[1 - p] = 0ULL;
}

// Mark v as reached at level `next`; true iff this lane must push v.
template <int VISIT>
__device__ __forceinline__ bool visit(int* level, int v, int next) {
    if (VISIT == VISIT_CAS) {
        return atomicCAS(&level[v], UNVISITED, next) == UNVISITED;
    } else {
        // Plain read then plain store: lanes racing on v may all see UNVISITED and all push
        // it (duplicates); every writer stores the same value, so the levels stay right.
        if (level[v] == UNVISITED) {
            level[v] = next;
            return true;
        }
        return false;
    }
}

// Warp-aggregated push of `v` by the lanes with `push` set. All 32 lanes must call it.
__device__ __forceinline__ void warp_push(bool push, int v, int* qout, u64* tail, u64 cap) {
    const int lane = threadIdx.x & 31;
    const unsigned ballot = __ballot_sync(FULL_MASK, push);
    if (ballot == 0u) return;  // warp-uniform
    const int leader = __ffs(ballot) - 1;
    u64 base = 0ULL;
    if (lane == leader) base = atomicAdd(tail, (u64)__popc(ballot));
    base = __shfl_sync(FULL_MASK, base, leader);
    if (push) {
        const u64 slot = base + (u64)__popc(ballot & ((1u << lane) - 1u));
        if (slot < cap) qout[slot] = v;  // past cap: the host sees tail > cap and refuses
    }
}

// Exclusive prefix sum of x over the block; *total gets the block's sum. All BLOCK threads
// must call it (it holds two __syncthreads). The caller must separate two calls by a barrier
// placed after every thread's last read of the result (the loops below do).
__device__ __forceinline__ int block_exclusive_scan(int x, int* total) {
    __shared__ int warp_sums[WARPS_PER_BLOCK];
    const int lane = threadIdx.x & 31;
    const int wid = threadIdx.x >> 5;
    int inc = x;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(FULL_MASK, inc, d);
        if (lane >= d) inc += y;
    }
    if (lane == 31) warp_sums[wid] = inc;
    __syncthreads();
    if (wid == 0) {
        int s = lane < WARPS_PER_BLOCK ? warp_sums[lane] : 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int y = __shfl_up_sync(FULL_MASK, s, d);
            if (lane >= d) s += y;
        }
        if (lane < WARPS_PER_BLOCK) warp_sums[lane] = s;  // inclusive warp prefix
    }
    __syncthreads();
    *total = warp_sums[WARPS_PER_BLOCK - 1];
    return (wid > 0 ? warp_sums[wid - 1] : 0) + inc - x;
}

// (a) Level-synchronous topology sweep over all n vertices (n * W threads): a vertex at level
// `cur` gives its unvisited neighbours cur + 1 by a plain store.
// COUNT = 0: every lane that stored also stores cur + 1 in ctl[CHANGED].
// COUNT = 1 (hybrid): lanes count their stores, the warp sums them and one lane adds the sum
// to ctl[p] (newly visited; a vertex two lanes both stored is counted twice).
template <int W, int COUNT>
__global__ void __launch_bounds__(BLOCK) topo_sweep(int n, const int* __restrict__ indptr,
                                                    const int* __restrict__ indices,
                                                    int* level, u64* ctl, int p, int cur) {
    const long long t = global_thread();
    const long long u = t / W;
    const int lane = (int)(t % W);
    const int next = cur + 1;
    int stored = 0;
    if (COUNT) zero_other_slot(ctl, p);
    if (u < n && level[u] == cur) {
        const int end = indptr[u + 1];
        for (int e = indptr[u] + lane; e < end; e += W) {
            const int v = indices[e];
            if (level[v] == UNVISITED) {
                level[v] = next;
                if (COUNT) {
                    ++stored;
                } else {
                    ctl[CHANGED] = (u64)next;
                }
            }
        }
    }
    if (COUNT) {
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) stored += __shfl_xor_sync(FULL_MASK, stored, d);
        if ((threadIdx.x & 31) == 0 && stored > 0) atomicAdd(&ctl[p], (u64)stored);
    }
}

// (b) One worklist level: count items of qin (count * W threads), each expanded by W lanes;
// reached vertices are pushed to qout at the tail ctl[p] (slots >= cap are not written).
template <int W, int VISIT, int PUSH>
__global__ void __launch_bounds__(BLOCK) wl_step(const int* __restrict__ qin, int count,
                                                 int* qout, u64* ctl, int p, u64 cap,
                                                 const int* __restrict__ indptr,
                                                 const int* __restrict__ indices, int* level,
                                                 int cur) {
    const long long t = global_thread();
    const long long item = t / W;
    const int lane = (int)(t % W);
    const int next = cur + 1;
    u64* tail = &ctl[p];
    zero_other_slot(ctl, p);
    int e = 0, end = 0;
    if (item < count) {
        const int u = qin[item];
        e = indptr[u] + lane;
        end = indptr[u + 1];
    }
    if (PUSH == PUSH_THREAD) {
        for (; e < end; e += W) {
            const int v = indices[e];
            if (visit<VISIT>(level, v, next)) {
                const u64 slot = atomicAdd(tail, 1ULL);
                if (slot < cap) qout[slot] = v;
            }
        }
    } else if (PUSH == PUSH_WARP) {
        // The warp loops while any of its lanes has an edge left, so all 32 lanes meet at
        // the ballot; one atomicAdd per warp step with a push.
        while (__any_sync(FULL_MASK, e < end)) {
            bool push = false;
            int v = 0;
            if (e < end) {
                v = indices[e];
                push = visit<VISIT>(level, v, next);
                e += W;
            }
            warp_push(push, v, qout, tail, cap);
        }
    } else {
        // The block loops while any of its threads has an edge left (__syncthreads_or is
        // the barrier every thread reaches each round); one atomicAdd per block round.
        __shared__ u64 block_base;
        while (__syncthreads_or(e < end)) {
            int push = 0;
            int v = 0;
            if (e < end) {
                v = indices[e];
                push = visit<VISIT>(level, v, next) ? 1 : 0;
                e += W;
            }
            int total;
            const int offset = block_exclusive_scan(push, &total);
            if (threadIdx.x == 0 && total > 0) block_base = atomicAdd(tail, (u64)total);
            __syncthreads();
            if (push) {
                const u64 slot = block_base + (u64)offset;
                if (slot < cap) qout[slot] = v;
            }
            // the next round's __syncthreads_or orders these reads of block_base and of the
            // scan's shared words before their next writes
        }
    }
}

// (c) Hybrid's way back to a worklist: the vertices at level `target` (n threads), pushed
// warp-aggregated to qout at the tail ctl[p].
__global__ void __launch_bounds__(BLOCK) compact_level(int n, const int* __restrict__ level,
                                                       int target, int* qout, u64* ctl, int p,
                                                       u64 cap) {
    const long long v = global_thread();
    zero_other_slot(ctl, p);
    const bool push = v < n && level[v] == target;
    warp_push(push, (int)v, qout, &ctl[p], cap);
}
