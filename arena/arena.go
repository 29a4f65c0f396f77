package arena

import (
	"fmt"
	"math/bits"
	"os"
	"sync"
)

// DefaultMinBlock is the smallest block handed out when Options.MinBlock is 0.
const DefaultMinBlock = 4096

// smallestMinBlock is the smallest MinBlock accepted: one cache line.
const smallestMinBlock = 64

// Options configure New.
type Options struct {
	// Size is the slab size in bytes. It is rounded down to a multiple of
	// MinBlock; it need not be a power of two (the slab is then split into
	// several top-level blocks).
	Size int64
	// MinBlock is the smallest block size, a power of two >= 64
	// (DefaultMinBlock when 0). Every request is rounded up to a power of
	// two no smaller than this.
	MinBlock int
	// Lock mlocks the slab so it is never paged out. It needs
	// RLIMIT_MEMLOCK >= Size (or CAP_IPC_LOCK).
	Lock bool
}

// Usage is a snapshot of the arena's occupancy. Used + free == Total always.
type Usage struct {
	// Total is the number of bytes the allocator manages.
	Total int64
	// Used is the sum of the sizes of the blocks handed out.
	Used int64
	// LargestFree is the size of the largest block Alloc can hand out now.
	LargestFree int64
	// Blocks is the number of blocks handed out.
	Blocks int
	// Locked reports whether the slab is mlocked.
	Locked bool
}

// Block is a power-of-two piece of the slab. Its bytes stay valid until the
// block is freed or the arena is closed. A Block is a small value; copying it
// does not copy the memory.
type Block struct {
	mem   []byte
	off   int
	order uint8
}

// Bytes returns the block's memory (len == cap == Size()).
func (b Block) Bytes() []byte { return b.mem }

// Size returns the block size in bytes.
func (b Block) Size() int { return len(b.mem) }

// Offset returns the block's offset in the slab.
func (b Block) Offset() int { return b.off }

// Arena is a pointer-free slab with a buddy allocator. It is safe for
// concurrent use; Alloc and Free take a mutex (they are not on any hot path).
type Arena struct {
	mu       sync.Mutex
	mem      []byte
	total    int
	minOrder uint
	maxOrder uint
	// free[k] is a bitset over the blocks of order k (bit i = the block at
	// offset i<<k is free); nfree[k] counts its set bits.
	free   [][]uint64
	nfree  []int
	allocd map[int]uint8 // offset -> order of each block handed out
	used   int
	locked bool
	closed bool
}

// New maps the slab, optionally locks it, touches every page once (so the
// first-touch cost is paid here, never on an ingest path) and returns an
// arena whose whole size is free.
func New(opts Options) (*Arena, error) {
	minBlock := opts.MinBlock
	if minBlock == 0 {
		minBlock = DefaultMinBlock
	}
	if minBlock < smallestMinBlock || minBlock&(minBlock-1) != 0 {
		return nil, fmt.Errorf("%w: MinBlock %d is not a power of two >= %d", ErrBadSize, minBlock, smallestMinBlock)
	}
	if opts.Size < int64(minBlock) {
		return nil, fmt.Errorf("%w: Size %d is smaller than MinBlock %d", ErrBadSize, opts.Size, minBlock)
	}
	if opts.Size > int64(maxInt) {
		return nil, fmt.Errorf("%w: Size %d does not fit this platform's address space", ErrBadSize, opts.Size)
	}
	total := int(opts.Size) &^ (minBlock - 1)
	mem, err := mapSlab(total, opts.Lock)
	if err != nil {
		return nil, err
	}
	touch(mem)
	a := newAllocator(total, uint(bits.TrailingZeros(uint(minBlock))))
	a.mem = mem
	a.locked = opts.Lock
	return a, nil
}

const maxInt = int(^uint(0) >> 1)

// touch writes one byte per page so the kernel backs the whole slab now.
func touch(mem []byte) {
	ps := pageSize()
	for i := 0; i < len(mem); i += ps {
		mem[i] = 0
	}
}

// newAllocator builds the allocator state for total bytes (a multiple of
// 1<<minOrder) with everything free.
func newAllocator(total int, minOrder uint) *Arena {
	maxOrder := uint(bits.Len(uint(total))) - 1
	a := &Arena{
		total:    total,
		minOrder: minOrder,
		maxOrder: maxOrder,
		free:     make([][]uint64, maxOrder+1),
		nfree:    make([]int, maxOrder+1),
		allocd:   make(map[int]uint8),
	}
	for k := minOrder; k <= maxOrder; k++ {
		n := (total >> k) + 1
		a.free[k] = make([]uint64, (n+63)/64)
	}
	off := 0
	for k := int(maxOrder); k >= int(minOrder); k-- {
		if off+1<<k <= total {
			a.setFree(uint(k), off)
			off += 1 << k
		}
	}
	return a
}

func (a *Arena) setFree(k uint, off int) {
	i := off >> k
	a.free[k][i/64] |= 1 << (i % 64)
	a.nfree[k]++
}

func (a *Arena) clearFree(k uint, off int) {
	i := off >> k
	a.free[k][i/64] &^= 1 << (i % 64)
	a.nfree[k]--
}

func (a *Arena) isFree(k uint, off int) bool {
	i := off >> k
	return a.free[k][i/64]&(1<<(i%64)) != 0
}

// firstFree returns the lowest free block of order k (nfree[k] > 0).
func (a *Arena) firstFree(k uint) int {
	for w, word := range a.free[k] {
		if word != 0 {
			return (w*64 + bits.TrailingZeros64(word)) << k
		}
	}
	panic("BUG: arena: free count and bitset disagree")
}

// orderFor returns the order of the smallest block holding n bytes.
func (a *Arena) orderFor(n int) uint {
	k := uint(bits.Len(uint(n - 1)))
	if k < a.minOrder {
		k = a.minOrder
	}
	return k
}

// Alloc hands out a block of at least n bytes (rounded up to a power of two
// no smaller than MinBlock). It returns ErrTooLarge when n can never fit and
// ErrExhausted when no free block is large enough now. The block's previous
// contents are not cleared.
func (a *Arena) Alloc(n int) (Block, error) {
	if n <= 0 {
		return Block{}, fmt.Errorf("%w: Alloc(%d)", ErrBadSize, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Block{}, os.ErrClosed
	}
	if n > 1<<a.maxOrder {
		return Block{}, fmt.Errorf("%w: %d bytes requested, largest block is %d", ErrTooLarge, n, 1<<a.maxOrder)
	}
	k := a.orderFor(n)
	j := k
	for j <= a.maxOrder && a.nfree[j] == 0 {
		j++
	}
	if j > a.maxOrder {
		return Block{}, fmt.Errorf("%w: %d bytes requested, largest free block is %d of %d free", ErrExhausted, 1<<k, a.largestFree(), a.total-a.used)
	}
	off := a.firstFree(j)
	a.clearFree(j, off)
	for j > k {
		j--
		a.setFree(j, off+1<<j) // upper half stays free
	}
	a.allocd[off] = uint8(k)
	a.used += 1 << k
	return Block{mem: a.mem[off : off+1<<k : off+1<<k], off: off, order: uint8(k)}, nil
}

// Free returns b to the arena, coalescing it with its free buddies. Freeing a
// block twice, or one from another arena, returns ErrBadFree.
func (a *Arena) Free(b Block) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return os.ErrClosed
	}
	k, ok := a.allocd[b.off]
	if !ok || k != b.order || len(b.mem) != 1<<k || (len(a.mem) > 0 && &b.mem[0] != &a.mem[b.off]) {
		return fmt.Errorf("%w: offset %d size %d", ErrBadFree, b.off, len(b.mem))
	}
	delete(a.allocd, b.off)
	a.used -= 1 << k
	a.release(b.off, uint(k))
	return nil
}

// release marks the block (off, k) free, merging it with free buddies.
func (a *Arena) release(off int, k uint) {
	for k < a.maxOrder {
		buddy := off ^ (1 << k)
		// Not buddy+1<<k > a.total: for the last block below 2^31 that
		// sum overflows a 32-bit int (1<<k <= a.total holds, so this cannot).
		if buddy > a.total-1<<k || !a.isFree(k, buddy) {
			break
		}
		a.clearFree(k, buddy)
		off &^= 1 << k
		k++
	}
	a.setFree(k, off)
}

func (a *Arena) largestFree() int {
	for k := int(a.maxOrder); k >= int(a.minOrder); k-- {
		if a.nfree[k] > 0 {
			return 1 << k
		}
	}
	return 0
}

// Usage returns the current occupancy.
func (a *Arena) Usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Usage{
		Total:       int64(a.total),
		Used:        int64(a.used),
		LargestFree: int64(a.largestFree()),
		Blocks:      len(a.allocd),
		Locked:      a.locked,
	}
}

// MaxBlock returns the size of the largest block the arena can ever hand out.
func (a *Arena) MaxBlock() int { return 1 << a.maxOrder }

// MinBlock returns the smallest block size.
func (a *Arena) MinBlock() int { return 1 << a.minOrder }

// Close unmaps the slab. Every block's bytes become invalid; the caller must
// make sure nothing uses them any more. Close is idempotent.
func (a *Arena) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	mem := a.mem
	a.mem = nil
	if mem == nil {
		return nil
	}
	return unmapSlab(mem)
}
