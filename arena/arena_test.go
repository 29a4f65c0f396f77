package arena

import (
	"errors"
	"math/bits"
	"os"
	"sort"
	"syscall"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
	"pgregory.net/rapid"
)

func newTestArena(t testing.TB, size int64, minBlock int) *Arena {
	t.Helper()
	a, err := New(Options{Size: size, MinBlock: minBlock})
	if err != nil {
		t.Fatalf("New(%d, %d): %v", size, minBlock, err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

// freeBytes sums the free bitsets: an independent count of free memory.
func (a *Arena) freeBytes() int {
	n := 0
	for k := a.minOrder; k <= a.maxOrder; k++ {
		n += a.nfree[k] << k
	}
	return n
}

func TestNewErrors(t *testing.T) {
	f := func(opts Options, want error) {
		t.Helper()
		a, err := New(opts)
		if !errors.Is(err, want) {
			t.Errorf("New(%+v) error = %v, want %v", opts, err, want)
		}
		if a != nil {
			a.Close()
		}
	}
	f(Options{Size: 0}, ErrBadSize)
	f(Options{Size: 1 << 20, MinBlock: 100}, ErrBadSize)
	f(Options{Size: 1 << 20, MinBlock: 32}, ErrBadSize)
	f(Options{Size: 1000, MinBlock: 4096}, ErrBadSize)
}

func TestAllocErrors(t *testing.T) {
	a := newTestArena(t, 1<<20, 4096)
	if _, err := a.Alloc(1<<20 + 1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Alloc(too large) = %v, want ErrTooLarge", err)
	}
	if _, err := a.Alloc(0); !errors.Is(err, ErrBadSize) {
		t.Fatalf("Alloc(0) = %v, want ErrBadSize", err)
	}
	b, err := a.Alloc(1 << 19)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(1<<19 + 1); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Alloc beyond free = %v, want ErrExhausted", err)
	}
	if err := a.Free(b); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(b); !errors.Is(err, ErrBadFree) {
		t.Fatalf("double Free = %v, want ErrBadFree", err)
	}
	other := newTestArena(t, 1<<20, 4096)
	ob, err := other.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(ob); !errors.Is(err, ErrBadFree) {
		t.Fatalf("Free of a foreign block = %v, want ErrBadFree", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(4096); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Alloc after Close = %v, want os.ErrClosed", err)
	}
}

func TestUsageAndRounding(t *testing.T) {
	// 3 MiB is not a power of two: a 2 MiB and a 1 MiB top-level block.
	a := newTestArena(t, 3<<20, 4096)
	u := a.Usage()
	if u.Total != 3<<20 || u.Used != 0 || u.LargestFree != 2<<20 {
		t.Fatalf("fresh Usage = %+v", u)
	}
	b, err := a.Alloc(5000)
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() != 8192 || len(b.Bytes()) != 8192 || cap(b.Bytes()) != 8192 {
		t.Fatalf("Alloc(5000) size = %d len %d cap %d, want 8192", b.Size(), len(b.Bytes()), cap(b.Bytes()))
	}
	u = a.Usage()
	if u.Used != 8192 || u.Blocks != 1 || u.LargestFree != 2<<20 {
		t.Fatalf("Usage after one alloc = %+v", u)
	}
	big, err := a.Alloc(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if u := a.Usage(); u.LargestFree != 512<<10 {
		t.Fatalf("LargestFree = %d, want %d", u.LargestFree, 512<<10)
	}
	for _, blk := range []Block{b, big} {
		if err := a.Free(blk); err != nil {
			t.Fatal(err)
		}
	}
	if u := a.Usage(); u.Used != 0 || u.LargestFree != 2<<20 || a.freeBytes() != 3<<20 {
		t.Fatalf("Usage after freeing all = %+v", u)
	}
}

// TestBuddyProperties: any sequence of Alloc/Free never hands out overlapping
// blocks, keeps used+free == total, and freeing everything coalesces back to
// the initial state.
func TestBuddyProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		minBlock := 1 << rapid.IntRange(6, 12).Draw(rt, "minOrder")
		size := int64(rapid.IntRange(1, 256).Draw(rt, "units")) * int64(minBlock)
		a, err := New(Options{Size: size, MinBlock: minBlock})
		if err != nil {
			rt.Fatalf("New: %v", err)
		}
		defer a.Close()
		initial := append([]int(nil), a.nfree...)
		type live struct {
			b   Block
			tag byte
		}
		var blocks []live
		tag := byte(0)
		check := func() {
			used := 0
			sorted := append([]live(nil), blocks...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].b.Offset() < sorted[j].b.Offset() })
			for i, l := range sorted {
				used += l.b.Size()
				if l.b.Offset()%l.b.Size() != 0 {
					rt.Fatalf("block at %d of size %d is not aligned", l.b.Offset(), l.b.Size())
				}
				if i > 0 && sorted[i-1].b.Offset()+sorted[i-1].b.Size() > l.b.Offset() {
					rt.Fatalf("blocks overlap: [%d,+%d) and [%d,+%d)", sorted[i-1].b.Offset(), sorted[i-1].b.Size(), l.b.Offset(), l.b.Size())
				}
				for _, c := range l.b.Bytes() {
					if c != l.tag {
						rt.Fatalf("block at %d was written by someone else", l.b.Offset())
					}
				}
			}
			u := a.Usage()
			if u.Used != int64(used) || int64(a.freeBytes())+u.Used != u.Total {
				rt.Fatalf("used %d (want %d) + free %d != total %d", u.Used, used, a.freeBytes(), u.Total)
			}
		}
		steps := rapid.IntRange(1, 100).Draw(rt, "steps")
		for range steps {
			if len(blocks) > 0 && rapid.Bool().Draw(rt, "free") {
				i := rapid.IntRange(0, len(blocks)-1).Draw(rt, "which")
				if err := a.Free(blocks[i].b); err != nil {
					rt.Fatalf("Free: %v", err)
				}
				blocks = append(blocks[:i], blocks[i+1:]...)
			} else {
				n := rapid.IntRange(1, int(size)).Draw(rt, "n")
				b, err := a.Alloc(n)
				switch {
				case errors.Is(err, ErrExhausted) || errors.Is(err, ErrTooLarge):
					if err == nil || b.Size() != 0 {
						rt.Fatalf("failed Alloc returned a block")
					}
					if errors.Is(err, ErrExhausted) && int64(n) <= a.Usage().LargestFree {
						rt.Fatalf("Alloc(%d) exhausted but largest free is %d", n, a.Usage().LargestFree)
					}
				case err != nil:
					rt.Fatalf("Alloc(%d): %v", n, err)
				default:
					if b.Size() < n {
						rt.Fatalf("Alloc(%d) gave %d bytes", n, b.Size())
					}
					tag++
					for i := range b.Bytes() {
						b.Bytes()[i] = tag
					}
					blocks = append(blocks, live{b, tag})
				}
			}
			check()
		}
		for _, l := range blocks {
			if err := a.Free(l.b); err != nil {
				rt.Fatalf("Free: %v", err)
			}
		}
		for k := range initial {
			if a.nfree[k] != initial[k] {
				rt.Fatalf("after freeing all, order %d has %d free blocks, want %d (no coalescing)", k, a.nfree[k], initial[k])
			}
		}
	})
}

func TestLock(t *testing.T) {
	a, err := New(Options{Size: 1 << 20, Lock: true})
	if errors.Is(err, syscall.ENOMEM) { // over RLIMIT_MEMLOCK
		t.Skipf("needs RLIMIT_MEMLOCK >= 1 MiB or CAP_IPC_LOCK: %v", err)
	}
	testutil.SkipIfNotSupported(t, err) // EPERM: RLIMIT_MEMLOCK is 0
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.Usage().Locked {
		t.Fatal("Usage.Locked = false after Lock: true")
	}
}

// TestReleaseAtTopOfIntRange frees the last block of an allocator whose
// slab ends just below 2^(w-1) (w = bits.UintSize; 1.5 GiB on 32-bit): the
// bound check on its buddy must not overflow int. The allocator state is
// built without mapping the slab.
func TestReleaseAtTopOfIntRange(t *testing.T) {
	w := bits.UintSize
	minOrder := uint(w - 12) // small bitsets whatever the word size
	total := 1<<(w-2) + 1<<(w-3)
	a := newAllocator(total, minOrder)
	k, off := uint(w-3), 1<<(w-2) // the second top-level block; its buddy lies past the end
	if !a.isFree(k, off) || a.nfree[k] != 1 || a.nfree[w-2] != 1 {
		t.Fatalf("top-level blocks: nfree[%d]=%d nfree[%d]=%d", k, a.nfree[k], w-2, a.nfree[w-2])
	}
	a.clearFree(k, off) // as Alloc would hand it out
	a.release(off, k)
	if !a.isFree(k, off) || a.nfree[k] != 1 || a.nfree[w-2] != 1 || a.freeBytes() != total {
		t.Fatalf("after release: nfree[%d]=%d nfree[%d]=%d free %d of %d", k, a.nfree[k], w-2, a.nfree[w-2], a.freeBytes(), total)
	}
	// Hand out its smallest first block as Alloc would (splitting, the
	// upper halves stay free), then free it: it coalesces back up to k.
	a.clearFree(k, off)
	for j := k; j > minOrder; {
		j--
		a.setFree(j, off+1<<j)
	}
	a.release(off, minOrder)
	if !a.isFree(k, off) || a.freeBytes() != total {
		t.Fatalf("after coalescing: free %d of %d, block at %#x free: %v", a.freeBytes(), total, off, a.isFree(k, off))
	}
}
