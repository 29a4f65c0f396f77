//go:build linux

package capture

import (
	"sync/atomic"
	"unsafe"
)

// The block status word is shared with the kernel: it hands a block over
// by storing TP_STATUS_USER and takes it back when we store
// TP_STATUS_KERNEL. Both sides access it atomically, which orders the
// block's contents before (kernel) and our reads before (us) the hand-over.
const blockStatusOffset = 8 // tpacket_block_desc.hdr.bh1.block_status

func blockStatus(blk []byte) uint32 {
	_ = blk[blockStatusOffset+3]
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&blk[blockStatusOffset])))
}

func releaseBlock(blk []byte) {
	_ = blk[blockStatusOffset+3]
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&blk[blockStatusOffset])), 0) // TP_STATUS_KERNEL
}
