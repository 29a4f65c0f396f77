// Package arena provides one pointer-free memory slab, obtained with an
// anonymous mmap outside the Go heap, and a buddy allocator that hands out
// power-of-two blocks of it.
//
// The recorder keeps every ring's bytes in an arena so that memory is fixed at
// start, the garbage collector never scans message bytes, and (optionally,
// with mlock) an ECU never pages recorded data out.
//
// It is not for: topics, time, files or anything that knows what the bytes
// mean. It does not zero blocks on free.
//
// # Caveats
//
// A block's bytes alias the slab: they stay valid until the block is freed or
// the arena is closed, after which any use is a use-after-free that the Go
// runtime cannot detect. Never store Go pointers in arena memory. The race
// detector does not see accesses to arena memory (it lies outside the Go
// heap); code sharing arena bytes between goroutines must synchronize through
// atomics and be checked by stress tests.
//
// An Arena is safe for concurrent use (Alloc and Free take a mutex; they are
// not meant for hot paths). Blocks are handed out from the lowest free
// address of the best-fitting size; a request is rounded up to a power of
// two no smaller than MinBlock.
package arena
