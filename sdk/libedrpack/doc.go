// Command libedrpack is edr-lite's pack-sdk for C, C++ and Python: built
// with -buildmode=c-shared (libedrpack.so) or -buildmode=c-archive
// (libedrpack.a), it exports the C API declared in sdk/include/edr_pack.h
// over packages pack, mcap, dumpfile, internal/filter and schema:
// read pack and MCAP dumps frame by frame (from a file, memory, a file
// descriptor or a callback) with each message's type, through a topic and
// time filter (topics.go, filter.go), build frames and write pack files with
// types (writer.go), describe packed layouts (layout.go). docs/sdk.md maps
// every call to the DataTools pack-sdk function it stands for.
//
//	go build -buildmode=c-shared -o libedrpack.so ./sdk/libedrpack
//
// Built without cgo (CGO_ENABLED=0, as for the cross builds) it is a
// program that says it needs cgo.
//
// # Caveats
//
//   - Handles are integers in a table (handle.go): C memory never holds a
//     Go pointer. Bytes handed to C are either inside the file's read-only
//     mapping (or the caller's own memory for edr_pack_open_mem) or copied
//     into C memory the handle owns (names, decompressed data, anything read
//     from a stream); no Go memory is ever handed to C.
//   - Borrowed views live until the next call on the handle; owned buffers
//     are C allocations recorded in a table so edr_free can refuse a
//     pointer it did not hand out.
//   - Each handle has a mutex taken with TryLock: concurrent use of one
//     handle is refused with EDR_EBUSY, never serialised behind the caller's
//     back (a borrowed view would change under the other thread).
//   - The C functions are thin wrappers (edr_pack.c) over the Go exports
//     named edrgo_*: cgo cannot export const parameters, and the wrappers
//     keep the last error of a call without a handle per thread (a pthread
//     key whose destructor frees it when the thread exits).
//   - A reader's views point at per-topic names and per-type descriptions in
//     C memory made once (topics.go), found from a message's interned name
//     by the addresses of its bytes: a frame's topics cost no copy.
//   - A filter on a pack file walks the frames' metas once (a second reader
//     over the same bytes) to skip frames that cannot hold a selected
//     message; it never moves the reads past damage the walk met, but damage
//     in the data of a frame it skips goes unread.
package main
